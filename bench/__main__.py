"""Run every benchmark module (or those named on the command line), print a table, write JSON.

    python -m bench                 # all of them
    python -m bench sim_pool vm_list   # only bench_sim_pool and bench_vm_list

Results go to bench/results/latest.json (and a timestamped copy).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path

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


def main(argv: list[str]) -> int:
    rows: list[Row] = []
    for name in discover(argv):
        module = importlib.import_module(f"bench.{name}")
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows.extend(module.run())
    print(format_table(rows))
    RESULTS.mkdir(exist_ok=True)
    payload = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "python": sys.version.split()[0], "rows": [r.as_json() for r in rows]}
    text = json.dumps(payload, indent=2)
    (RESULTS / "latest.json").write_text(text)
    (RESULTS / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(text)
    return 0 if all(r.met is not False for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
