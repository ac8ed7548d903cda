"""Run every benchmark module (or those named on the command line), print a table, write JSON.

    python -m bench                 # all of them
    python -m bench sim_pool vm_list   # only bench_sim_pool and bench_vm_list
    python -m bench vm_list --only startup [--runs 15]   # one part of a module (its PARTS)
    python -m bench vm_list --only refresh [--runs 5]    # the refreshes against their floor

Results go to bench/results/latest.json (and a timestamped copy). A run of one part (`--only`)
writes its timestamped copy only: latest.json stays the last whole run's table.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys
import time
from pathlib import Path
from typing import Callable

from bench.rows import Row

RESULTS = Path(__file__).resolve().parent / "results"


def discover(only: list[str]) -> list[str]:
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_"))
    if only:
        wanted = {f"bench_{n}" if not n.startswith("bench_") else n for n in only}
        names = [n for n in names if n in wanted]
    return names


def format_table(rows: list[Row]) -> str:
    header = ("group", "figure", "value", "baseline", "ratio", "target", "met")
    lines = [header]
    for row in rows:
        lines.append(
            (
                row.group,
                row.name,
                f"{row.value:,.2f} {row.unit}",
                "" if row.baseline is None else f"{row.baseline:,.2f} {row.unit}",
                "" if row.ratio is None else f"{row.ratio:.2f}x",
                row.target,
                {True: "yes", False: "NO", None: ""}[row.met],
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in lines)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description="Run the benchmarks, print a table, write JSON.")
    parser.add_argument("modules", nargs="*", help="bench_<name> modules to run (default: all)")
    parser.add_argument("--only", metavar="PART", help="run only this part of the one module named (its PARTS), "
                                                      "e.g. `vm_list --only startup`")
    parser.add_argument("--runs", type=int, help="with --only: repetitions of that part (default: the module's)")
    args = parser.parse_args(argv)
    if args.runs is not None and args.only is None:
        parser.error("--runs goes with --only")
    if args.only is not None and len(args.modules) != 1:
        parser.error("--only needs exactly one module")
    return args


def run_part(name: str, part: str, runs: int | None) -> list[Row]:
    module = importlib.import_module(f"bench.{name}")
    parts: dict[str, Callable[..., list[Row]]] = getattr(module, "PARTS", {})
    if part not in parts:
        raise SystemExit(f"bench.{name} has no part {part!r} (parts: {', '.join(sorted(parts)) or 'none'})")
    print(f"running {name} --only {part} ...", file=sys.stderr, flush=True)
    return parts[part]() if runs is None else parts[part](runs)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    rows: list[Row] = []
    names = discover(args.modules)
    if args.modules and not names:
        raise SystemExit(f"no benchmark module named {', '.join(args.modules)}")
    if args.only is not None:
        rows.extend(run_part(names[0], args.only, args.runs))
    else:
        for name in names:
            module = importlib.import_module(f"bench.{name}")
            print(f"running {name} ...", file=sys.stderr, flush=True)
            rows.extend(module.run())
    print(format_table(rows))
    RESULTS.mkdir(exist_ok=True)
    payload = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "python": sys.version.split()[0],
               "load": [round(x, 2) for x in os.getloadavg()], "rows": [r.as_json() for r in rows]}
    if args.only is not None:
        payload["only"] = f"{names[0]} --only {args.only}"
    text = json.dumps(payload, indent=2)
    if args.only is None:
        (RESULTS / "latest.json").write_text(text)
    (RESULTS / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(text)
    return 0 if all(r.met is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
