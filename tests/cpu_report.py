"""The CPU each test costs, for finding what makes the suite long on a loaded machine.

Wall-clock durations (`--durations`) grow with the machine's load, so they rank tests badly when
other work shares the cores. `--cpu-report=PATH` writes one JSON line per test to
`PATH.<worker>` (`PATH.main` without pytest-xdist): its id, the CPU seconds of this process
(every thread: the embedded site runs in-process) and of the child processes it waited for
(git, ansible-vault), and the wall seconds, each over setup, call and teardown together.
`python -m tests.cpu_report PATH` sums them by folder, by test function (its versions together)
and lists the costliest tests.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import IO, Iterator

import pytest


def _cpu() -> tuple[float, float]:
    times = os.times()
    return times.user + times.system, times.children_user + times.children_system


class CpuReport:
    """Measures each test around pytest's whole protocol for it (setup, call, teardown)."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        own, children = _cpu()
        wall = time.perf_counter()
        yield
        own_after, children_after = _cpu()
        self.out.write(json.dumps({"id": item.nodeid, "cpu": round(own_after - own, 4),
                                   "children": round(children_after - children, 4),
                                   "wall": round(time.perf_counter() - wall, 4)}) + "\n")
        self.out.flush()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-report", default=None, metavar="PATH",
                     help="write each test's CPU and wall seconds to PATH.<worker> (tests/cpu_report.py)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--cpu-report")
    if path:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        out = Path(f"{path}.{worker}").open("w", encoding="utf-8")
        config.pluginmanager.register(CpuReport(out), "cpu-report")
        config.add_cleanup(out.close)


def _rows(prefix: Path) -> list[tuple[str, float, float]]:
    """(test id, CPU seconds with its children, wall seconds) of every worker's file."""
    rows: list[tuple[str, float, float]] = []
    for part in sorted(prefix.parent.glob(prefix.name + ".*")):
        for line in part.read_text(encoding="utf-8").splitlines():
            if line:
                row = json.loads(line)
                rows.append((str(row["id"]), float(row["cpu"]) + float(row["children"]), float(row["wall"])))
    return rows


def summary(prefix: Path, top: int = 40) -> str:
    """Totals by folder and by test function, and the `top` costliest test functions."""
    rows = _rows(prefix)
    by_folder: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    by_function: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for node, cpu, wall in rows:
        path = node.split("::")[0]
        folder = path.split("/")[1] if path.count("/") > 1 else path
        for key, table in ((folder, by_folder), (node.split("[")[0], by_function)):
            table[key][0] += 1
            table[key][1] += cpu
            table[key][2] += wall
    total = sum(cpu for _, cpu, _ in rows) or 1.0
    lines = [f"{len(rows)} tests, CPU {total:.0f} s (with children), wall summed {sum(w for _, _, w in rows):.0f} s",
             "\nby folder: tests, CPU s, share, wall s"]
    for key, (n, cpu, wall) in sorted(by_folder.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"  {key:<28} {n:>5.0f} {cpu:>8.1f} {cpu / total:>6.1%} {wall:>8.1f}")
    lines.append(f"\nthe {top} costliest test functions (versions together): CPU s, wall s, runs")
    for key, (n, cpu, wall) in sorted(by_function.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"  {cpu:>7.1f} {wall:>7.1f} x{n:<3.0f} {key}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a developer's command
    print(summary(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
