"""The command `python -m tui.screenshots [NAME|screen ...] [--list] [--no-png] [--output DIR]`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

import tui.screenshots as package
from tui.screenshots import SCENES
from tui.screenshots.harness import OUTPUT_DIR, png_font_problem, write_scene


def main(argv: Sequence[str] | None = None) -> int:
    description = (package.__doc__ or "").splitlines()[0]
    parser = argparse.ArgumentParser(prog="python -m tui.screenshots", description=description)
    parser.add_argument("names", nargs="*", help="only these scenes (<screen>-<state>, or a screen name)")
    parser.add_argument("--output", type=Path, default=OUTPUT_DIR, help="directory (default: screenshots/)")
    parser.add_argument("--no-png", action="store_true", help="write only the SVG files")
    parser.add_argument("--list", action="store_true", help="list the scenes and exit")
    args = parser.parse_args(argv)
    if args.list:
        for scene in SCENES:
            print(scene.name)
        return 0
    chosen = [s for s in SCENES if not args.names or s.name in args.names or s.screen in args.names]
    if not chosen:
        print(f"no scene matches {' '.join(args.names)}; try --list", file=sys.stderr)
        return 2
    if not args.no_png and (problem := png_font_problem()):
        print(f"cannot render PNGs faithfully: {problem}", file=sys.stderr)
        return 2
    failures = 0
    for scene in chosen:
        try:
            paths = write_scene(scene, args.output, png=not args.no_png)
        except Exception as exc:  # noqa: BLE001 - report every scene, then fail
            failures += 1
            print(f"FAILED {scene.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        print(" ".join(str(p) for p in paths))
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    sys.exit(main())
