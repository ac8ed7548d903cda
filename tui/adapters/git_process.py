"""One git process run to its very end: its output, and asyncio's hold on it released on every path.

`run` starts git in a process group of its own and returns (or raises) only once the process
has exited and asyncio has closed its pipes and its transport, whether git ended by itself, timed
out or was cancelled. Waiting for the process alone is not enough: asyncio reports the exit
before it has read the pipes to their end (a remote helper of git's may still hold them), so a
run could return with the transport open; when the event loop closed before it was collected,
its pipes tried to close through the closed loop ("Event loop is closed", reported as an
unraisable exception from the transport's `__del__`). The protocol here says when asyncio is done
with the process (`connection_lost`: exited and every pipe closed) and `run` waits for that.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: seconds a stopped git (cancelled, or out of time) has to end before its group is killed and its
#: pipes are closed on our side
_STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class Finished:
    """A git that ran to its end."""

    returncode: int
    stdout: bytes
    stderr: bytes


class _Collector(asyncio.SubprocessProtocol):
    """The process's output, and `finished` once asyncio is done with it (exited, pipes closed)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.output: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        self.finished: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.output[fd].extend(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.finished.done():
            self.finished.set_result(None)


async def run(argv: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout: float) -> Finished:
    """Run `argv` to its end (module docstring). Raises FileNotFoundError when there is no such
    command, and `asyncio.TimeoutError` after `timeout` seconds once git's group is killed and
    reaped; a cancellation stops git's group (SIGTERM, then SIGKILL after the grace) and goes on
    once it is reaped."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Collector(loop), *argv, cwd=cwd, env=dict(env),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        # a group of its own: a stop ends git and its remote helper together (`_reap`), and the
        # terminal's ctrl+c reaches sitetk, which decides what to stop, rather than git directly
        process_group=0,
    )
    try:
        try:
            await asyncio.wait_for(asyncio.shield(protocol.finished), timeout)
        except asyncio.TimeoutError:
            await _reap(transport, protocol.finished, signal.SIGKILL)
            raise
        except asyncio.CancelledError:
            await _reap(transport, protocol.finished, signal.SIGTERM)
            raise
    finally:
        transport.close()  # finished: this only marks it closed (nothing left to close through the loop)
    return Finished(transport.get_returncode() or 0, bytes(protocol.output[1]), bytes(protocol.output[2]))


async def _reap(transport: asyncio.SubprocessTransport, finished: asyncio.Future[None], signum: int) -> None:
    """Stop git's whole group with `signum` and wait until asyncio is done with the process.

    SIGTERM first for a cancelled run: git removes its lock files on it (SIGKILL would leave
    `index.lock` behind for the next run to trip on). The group, and even when git itself has
    already exited: a push's remote helper (git-remote-http) holds git's pipes open while it
    waits for the server. After the grace, SIGKILL and our ends of the pipes closed, so that
    nothing outside the group can hold the wait either. A second cancellation while waiting does
    not cut the wait short: a run left behind is what this is here to prevent.
    """
    pid = transport.get_pid()
    if not finished.done():
        _signal_group(pid, signum)
    try:
        await asyncio.wait_for(asyncio.shield(finished), _STOP_GRACE_S)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        _signal_group(pid, signal.SIGKILL)
        transport.close()
    while not finished.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(finished)


def _signal_group(pid: int, signum: int) -> None:
    """`signum` to git and its helpers (git leads a process group of its own, see `run`)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)
