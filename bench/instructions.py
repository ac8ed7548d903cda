"""Instructions a program executes until its first rows, counted by valgrind: a measure of work that
the machine's speed and load do not move.

`instructions_to_first_rows(command, env)` runs `command` as `bench.terminal.first_rows` does (a
pty, exit at the first-rows mark) under `valgrind --tool=cachegrind --cache-sim=no`, with hash
randomisation off, and returns the instructions the process executed (cachegrind's `summary:` line;
its child processes are not followed: the demo site's are not counted). The same program counts the
same to within ~0.2 % from run to run and on a busy machine alike, where its wall clock moved by a
quarter within an hour on this project's machines (README: Benchmarks, session 15). Under
valgrind a program runs ~30x slower, so what it does on timers while it starts (a "connecting"
line refreshed twice a second) adds a little to its count; both sides of a ratio are measured so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Mapping, Sequence

from bench.terminal import first_rows

#: a start under valgrind (~30x slower than without)
TIMEOUT_S = 300.0


class NoCount(RuntimeError):
    """valgrind ran but wrote no count."""


def valgrind() -> str | None:
    """valgrind's path, or None when it is not installed (the count is then not measured)."""
    return shutil.which("valgrind")


def instructions_to_first_rows(command: Sequence[str], env: Mapping[str, str], cwd: Path | None = None,
                               timeout: float = TIMEOUT_S) -> int:
    tool = valgrind()
    if tool is None:
        raise FileNotFoundError("valgrind is not installed")
    with tempfile.TemporaryDirectory(prefix="sitetk-bench-cg-") as scratch:
        out = Path(scratch) / "cachegrind.out"
        first_rows([tool, "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}", *command],
                   {**env, "PYTHONHASHSEED": "0"}, cwd, timeout)
        return summary_instructions(out.read_text(encoding="utf-8", errors="replace") if out.exists() else "")


def summary_instructions(text: str) -> int:
    """The instruction count of a cachegrind output file (`summary: <Ir> ...`)."""
    for line in text.splitlines():
        if line.startswith("summary:"):
            fields = line.split()
            if len(fields) > 1 and fields[1].isdigit():
                return int(fields[1])
    raise NoCount(f"no instruction count in cachegrind's output{os.linesep}{text[-500:]}")
