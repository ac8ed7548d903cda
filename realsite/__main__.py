"""`python -m realsite start|stop|status|diff`: a real OpenNebula frontend on loopback.

    python -m realsite start --prefix /work/real-one/release-7.0.2/prefix --state /work/real-one/state/release-7.0.2
    . /work/real-one/state/release-7.0.2/env && sitetk hosts check
    python -m realsite status --state /work/real-one/state/release-7.0.2
    python -m realsite stop --state /work/real-one/state/release-7.0.2

Exit codes: 0 done; 1 the frontend failed (the message names the log to read); 2 bad usage or
an install the harness cannot run; `status` exits 3 when nothing runs from the state directory.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from realsite.layout import LayoutError, open_install
from realsite.mysql import MysqlError
from realsite.populate import PopulateError
from realsite.rpc import RpcError
from realsite.site import SiteError, start, status, stock_diff, stop


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m realsite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    start_p = sub.add_parser("start", help="configure and start a frontend from an installed prefix")
    start_p.add_argument("--prefix", required=True, type=Path, help="an install made with install.sh -d <prefix>")
    start_p.add_argument("--state", required=True, type=Path, help="the frontend's state directory")
    start_p.add_argument("--fresh", action="store_true", help="discard the state directory's frontend first")
    start_p.add_argument("--db", choices=("sqlite", "mysql"), default="sqlite",
                         help="the database backend; mysql runs a MariaDB server of the frontend's own and needs an "
                              "install whose oned was built with -DMYSQL_DB (README: The real platform)")
    for name, text in (("stop", "stop every process the frontend started"), ("status", "what runs")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--state", required=True, type=Path)
        if name == "status":
            p.add_argument("--json", action="store_true")
    diff_p = sub.add_parser("diff", help="what the harness changed in the stock configuration")
    diff_p.add_argument("--state", required=True, type=Path)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "start":
        try:
            start(args.prefix, args.state, fresh=args.fresh, db=args.db)
        except LayoutError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except (SiteError, RpcError, PopulateError, MysqlError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "stop":
        stop(args.state)
        return 0
    if args.command == "diff":
        from realsite.site import read_state

        info = read_state(args.state.resolve())
        if not info:
            print(f"error: no frontend in {args.state}", file=sys.stderr)
            return 2
        print(stock_diff(open_install(Path(info["prefix"])), args.state.resolve() / "one"), end="")
        return 0
    report = status(args.state)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for key, value in report.items():
            print(f"{key}: {value}")
    running = any(v.startswith("running") for v in report.get("daemons", {}).values())
    return 0 if running and "error" not in report else 3 if not running else 1


if __name__ == "__main__":
    sys.exit(main())
