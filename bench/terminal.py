"""Run a full-screen program in a pseudo-terminal, as an operator's terminal would, and time it.

`first_rows(command, env)` starts `command` on a new pty (120x40, TERM xterm-256color) with
`SITETK_BENCH_EXIT_ON_FIRST_ROWS=1`, drains everything it draws, and returns a `FirstRows`: the
seconds from just before the spawn to the `time.monotonic()` mark the program prints when its
first rows were painted (CLOCK_MONOTONIC is one clock for every process of the machine), and the
CPU seconds the program had used by then (its `time.process_time()`, all its threads), which a
busy shared machine disturbs less than the wall clock. `time_to_first_rows` is the first figure.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

BENCH_EXIT_ENV = "SITETK_BENCH_EXIT_ON_FIRST_ROWS"
_MARK = re.compile(rb"sitetk-bench first-rows ([0-9]+\.[0-9]+) cpu ([0-9]+\.[0-9]+)")
COLUMNS, LINES = 120, 40


class TerminalRunError(RuntimeError):
    """The program did not print its first-rows mark."""


class FirstRows(NamedTuple):
    """When a program first painted rows: wall seconds since the spawn, CPU seconds it used."""

    wall_s: float
    cpu_s: float


def time_to_first_rows(command: Sequence[str], env: Mapping[str, str], cwd: Path | None = None,
                       timeout: float = 120.0) -> float:
    return first_rows(command, env, cwd, timeout).wall_s


def first_rows(command: Sequence[str], env: Mapping[str, str], cwd: Path | None = None,
               timeout: float = 120.0) -> FirstRows:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    child_env = {**env, BENCH_EXIT_ENV: "1", "TERM": "xterm-256color",
                 "COLUMNS": str(COLUMNS), "LINES": str(LINES)}
    start = time.monotonic()
    proc = subprocess.Popen(list(command), stdin=slave, stdout=slave, stderr=slave, env=child_env,
                            cwd=cwd, start_new_session=True, close_fds=True)
    os.close(slave)
    output = bytearray()
    deadline = start + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TerminalRunError(f"{command[-1]!r} did not finish within {timeout:g} s")
            ready, _, _ = select.select([master], [], [], min(left, 1.0))
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    match = _MARK.search(bytes(output))
    if match is None:
        tail = bytes(output[-1500:]).decode("utf-8", "replace")
        raise TerminalRunError(f"{' '.join(command)} exited {proc.returncode} without its first-rows mark; "
                               f"last output:\n{tail}")
    return FirstRows(float(match.group(1)) - start, float(match.group(2)))
