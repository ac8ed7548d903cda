"""Command-line entry: `sitetk` (the console), `sitetk --demo`, `sitetk sim`, headless subcommands.

Each noun lives in its own module under `tui.cli` and exposes `register(subparsers)`, which adds
its parser and sets `func` to a callable taking the parsed arguments and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

#: modules under tui.cli that register a noun (each: `register(subparsers) -> None`)
NOUNS: tuple[str, ...] = (
    "hosts",
    "info",
    "market",
    "sim",
    "site",
    "toolkit",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sitetk", description="Site Toolkit Console")
    parser.add_argument("--demo", action="store_true", help="start the embedded demo site and connect to it")
    parser.add_argument("--scenario", default="fresh", choices=("fresh", "deployed"), help="demo scenario")
    parser.add_argument("--vms", type=int, default=0, help="demo: add N ordinary VMs for scale")
    parser.add_argument("--read-only", action="store_true", help="hide every mutating action")
    subparsers = parser.add_subparsers(dest="noun")
    for name in NOUNS:
        importlib.import_module(f"tui.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is not None:
        return int(func(args) or 0)
    from tui.console import run_console  # imported late: Textual is not needed headless

    return run_console(args)


if __name__ == "__main__":
    sys.exit(main())
