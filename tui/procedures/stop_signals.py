"""INT, TERM and HUP are one thing: a request to stop, turned into the same cancellation.

A dropped SSH session sends SIGHUP, a service manager or `kill` sends SIGTERM, the operator's
ctrl+c sends SIGINT. Left to their defaults the first two end the process at once, in the middle
of a platform call, leaving what the run created (a LOCKED image, a VM template, an undeployed
VM) with no audit entry. Here every one of them calls the innermost registered handler instead:

- the headless runner (tui.cli.runner) sets the running operation's cancel, so the operation
  undoes what it created, reports it and writes its audit entry; further signals do not cut the
  undo short (SIGKILL still does);
- around a whole command (tui.cli.common.run_async) the command's task is cancelled;
- the console app sets the running operation's cancel, then exits once it has finished.

Handlers nest (`on_stop_signals` is a context manager holding a stack); the signal handlers of
the process are installed by the outermost one and the previous ones restored when it leaves.
A hang-up also points stdout and stderr at /dev/null when they were the lost terminal, so the
undo is never stopped by a write failing with EIO.

`uninterrupted(work)` is the other half: a section that must not be left half-made (a commit, a
site directory made from the template and encrypted) runs to its end when the run is cancelled
meanwhile, and tells its caller that a cancel came, so the run stops right after it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, TypeVar

if TYPE_CHECKING:  # pragma: no cover - annotations only: asyncio is imported where a loop runs (the
    # embedded site's process imports this module through tui.cli.common, and never needs asyncio)
    import asyncio

#: the signals that ask a run to stop
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_handlers: list[Callable[[int], None]] = []
#: the event loop the process's handlers were installed on (a handler left by a loop that is gone never blocks a new one)
_installed_on: list[asyncio.AbstractEventLoop] = []


def signal_name(signum: int) -> str:
    """SIGTERM, SIGHUP, ... (the number when it has no name)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_code_for(signum: int) -> int:
    """The shell's exit status of a command stopped by a signal: 128 + its number."""
    return 128 + signum


@dataclass
class StopRequests:
    """The stop signals received so far, in order (the first one decides the exit code)."""

    received: list[int] = field(default_factory=list)

    @property
    def first(self) -> int | None:
        return self.received[0] if self.received else None

    def note(self, signum: int) -> bool:
        """Record a signal; True for the first one."""
        self.received.append(signum)
        return len(self.received) == 1


def _dispatch(signum: int) -> None:
    if signum == signal.SIGHUP:
        _silence_lost_terminal()
    if _handlers:
        _handlers[-1](signum)


def _silence_lost_terminal() -> None:
    """After a hang-up the terminal is gone: writes to it fail (EIO) or block. Point the
    terminal's descriptors at /dev/null so that reporting never stops an undo; pipes and files
    are kept (whoever reads them is still there)."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                if os.isatty(fd):
                    os.dup2(null, fd)
    finally:
        os.close(null)


@contextlib.contextmanager
def on_stop_signals(handler: Callable[[int], None]) -> Iterator[bool]:
    """Within the block, INT, TERM and HUP call `handler(signum)` on the running event loop
    instead of their defaults (the innermost block's handler wins). Yields False when signals
    cannot be handled here (not the main thread, or no running loop): the defaults stay."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None and _installed_on and _installed_on[0] is not loop:
        _handlers.clear()  # left by a loop that ended without leaving its block
        _installed_on.clear()
    outermost = not _handlers
    previous: dict[int, Any] = {}
    if outermost:
        if loop is None or sys.platform == "win32":
            yield False
            return
        try:
            for sig in STOP_SIGNALS:
                previous[int(sig)] = signal.getsignal(sig)
                loop.add_signal_handler(sig, _dispatch, int(sig))
        except (ValueError, RuntimeError):  # not the main thread: the process keeps its handlers
            for number, old in previous.items():
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.remove_signal_handler(number)
                    signal.signal(number, old)
            yield False
            return
        _installed_on[:] = [loop]
    _handlers.append(handler)
    try:
        yield True
    finally:
        if handler in _handlers:
            _handlers.remove(handler)
        if outermost and loop is not None and _installed_on == [loop]:  # still ours to restore
            _installed_on.clear()
            for number, old in previous.items():
                with contextlib.suppress(ValueError, RuntimeError):
                    loop.remove_signal_handler(number)
                    signal.signal(number, old if old is not None else signal.SIG_DFL)


T = TypeVar("T")


async def uninterrupted(work: Awaitable[T]) -> tuple[T, bool]:
    """Run `work` to its end even when the running task is cancelled meanwhile (a stop signal):
    for a change that must not be left half-made (a commit, a site directory turned from the
    template into its encrypted core.yaml). Returns its result and whether a cancel arrived while
    it ran; that cancel is consumed, and the caller decides where to stop (an error the work
    raises still goes up)."""
    import asyncio

    task = asyncio.ensure_future(work)
    stopped = False
    while True:
        try:
            return await asyncio.shield(task), stopped
        except asyncio.CancelledError:
            if task.cancelled():  # the work itself was cancelled, not only our wait for it
                raise
            stopped = True
            consume_cancel()


def consume_cancel() -> None:
    """Mark the running task's cancel as handled: it was turned into a result or an error
    (asyncio counts cancels; one left standing would cut a later time limit in the same task)."""
    import asyncio

    task = asyncio.current_task()
    if task is not None and task.cancelling():
        task.uncancel()
