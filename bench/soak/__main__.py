"""`python -m bench.soak --ops 500 --seed 1 [--json FILE|-] [--keep]`: run the soak (see bench.soak).

Prints one line per step on stderr (with any new problem), then the table; `--json -` prints the
figures as JSON on stdout instead, `--json FILE` writes them there too. Exit 0 when no crash,
leftover, duplicate or lost change was seen, 1 otherwise. SIGINT or SIGTERM (also when started in
the background, where SIGINT is ignored) stops it after killing the step's commands: the figures of
the steps run so far are printed and written, with `stopped` saying where, and it exits 1.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from bench.soak.run import main_progress, soak
from bench.soak.world import request_stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", type=int, default=500, help="operations (steps) to run (default 500)")
    parser.add_argument("--seed", type=int, default=1, help="the seed of every random draw (default 1)")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON to FILE (- for stdout)")
    parser.add_argument("--quiet", action="store_true", help="no line per step")
    parser.add_argument("--keep", metavar="DIR", help="run in DIR and keep it (the site's state, the audit log, the clone)")
    args = parser.parse_args(argv)
    if args.ops < 1:
        parser.error("--ops must be at least 1")
    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    figures = soak(args.ops, args.seed, progress=None if args.quiet else main_progress,
                   root=Path(args.keep) if args.keep else None, keep=bool(args.keep))
    data = figures.as_json()
    if args.json == "-":
        print(json.dumps(data, indent=2))
    else:
        print(figures.table())
        if args.json:
            Path(args.json).write_text(json.dumps(data, indent=2) + "\n")
    return 0 if figures.clean() and not figures.stopped else 1


if __name__ == "__main__":
    sys.exit(main())
