"""Time as the procedures and the clients measure it: one profile of named waits, one clock that a
test can drive.

`PROFILE` names every wait of the procedures and adapters (seconds): the pauses between two polls
of the site, the heartbeats, the retry pauses, the timeouts of each waiting step. Each operation's
option (`poll_interval`, `step_timeout`, `MoveTimeouts`, `RetryPolicy`, ...) takes its default
from it, so a value is written once and every caller reads the same.

Every deadline, elapsed time and pause is measured on `CLOCK`: `time.monotonic()` plus an offset
that only a test moves (`CLOCK.advance(seconds)`, tests/conftest.py `driven_clock`). A pause
(`sleep`, `limit`) ends when its seconds have passed in real time or when the clock has been
advanced past its end, whichever comes first: a test of what happens at a timeout, after a
back-off or at a heartbeat lets the embedded site reach the situation it wants, then advances the
clock past it instead of waiting it out; without a test the clock is the real one. A screenshot
scene stops the clock (`CLOCK.stop()`, then `advance`) so the elapsed seconds it shows are the same
every time (pauses still end in real time, so the procedures go on polling); `CLOCK.resume()` lets
it run again from there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - annotations only: the pauses import asyncio when they run
    import asyncio


@dataclass(frozen=True)
class Profile:
    """The named waits (seconds) of the procedures and adapters; the defaults every option reads."""

    #: between two reads of something the platform changes by itself (an image leaving LOCKED, a
    #: VM booting, a service deploying, a disk growing)
    poll_interval: float = 2.0
    #: the first pause after a change seen by a wait that backs off (x1.5) to `poll_interval`
    first_poll: float = 0.1
    #: a "still waiting" line of a long wait (the deployment, the automation key)
    heartbeat: float = 10.0
    #: between two tries of a busy file lock (tui.adapters.file_lock)
    lock_poll: float = 0.05
    #: how long a move tries for its VM's lock before it is refused: long enough to pass another
    #: process's `probe` (an instant), far shorter than any move
    move_lock_grace: float = 0.5
    #: how often a download waiting for another one's lock looks at its cancel
    lock_slice: float = 0.5
    #: how long a change to the sites repository waits for another process's lock on the site
    #: (tui.procedures.site.lock; $SITETK_LOCK_TIMEOUT overrides it)
    site_lock_timeout: float = 30.0
    #: the retried reads' back-off (tui.adapters.retry): the first pause, doubling up to the last
    retry_first_pause: float = 0.05
    retry_max_pause: float = 0.4
    #: the pauses of a rollback that asks again about a delete whose outcome is unknown
    settle_pauses: tuple[float, ...] = (0.5, 1.0, 2.0)
    #: how long it goes on asking before it names the object as left
    settle_timeout: float = 30.0
    #: one call to the cloud or OneFlow, every retry included (the settings' xmlrpc_timeout default)
    call_timeout: float = 30.0
    #: the time a call's worker thread gets past its deadline to answer (tui.adapters.cloud)
    call_grace: float = 0.5
    #: the steps that wait for the platform
    download_step_timeout: float = 3600.0
    deploy_timeout: float = 1800.0
    key_timeout: float = 600.0
    setup_step_timeout: float = 1800.0
    setup_key_timeout: float = 900.0
    appliance_timeout: float = 900.0
    disk_resize_timeout: float = 600.0
    trial_network_timeout: float = 1800.0
    move_undeploy_timeout: float = 600.0
    move_running_timeout: float = 900.0
    move_ready_timeout: float = 900.0


#: the profile every default reads
PROFILE = Profile()


class Clock:
    """`time.monotonic()` plus an offset that a test advances (never goes back); its pauses end
    early when it is advanced past their end."""

    def __init__(self) -> None:
        self._offset = 0.0
        #: the real time the clock was stopped at (None: it runs)
        self._stopped: float | None = None
        self._lock = threading.Lock()
        #: the pauses under way: their loop and the event that wakes them when the clock moves
        self._sleepers: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def monotonic(self) -> float:
        with self._lock:
            return (time.monotonic() if self._stopped is None else self._stopped) + self._offset

    def stop(self) -> None:
        """Stop the clock where it is: it then moves only with `advance` (a picture's elapsed seconds)."""
        with self._lock:
            if self._stopped is None:
                self._stopped = time.monotonic()

    def resume(self) -> None:
        """Let a stopped clock run again from where it stands (it never goes back)."""
        with self._lock:
            if self._stopped is not None:
                self._offset -= time.monotonic() - self._stopped
                self._stopped = None

    def advance(self, seconds: float) -> None:
        """Move the clock `seconds` forward: every deadline measured with it comes that much closer,
        and every pause whose end it passes ends now."""
        if seconds < 0:
            raise ValueError("the clock never goes back")
        with self._lock:
            self._offset += seconds
            sleepers = list(self._sleepers)
        for loop, woken in sleepers:
            try:
                loop.call_soon_threadsafe(woken.set)
            except RuntimeError:  # that loop has closed: nobody waits there any more
                pass

    async def sleep(self, seconds: float, *, cancel: asyncio.Event | None = None,
                    until: asyncio.Future[Any] | None = None) -> None:
        """Pause `seconds`: until they have passed in real time or the clock has been advanced past
        them, or sooner when `cancel` is set or `until` completes (the caller looks at which)."""
        real_end = time.monotonic() + max(0.0, seconds)
        clock_end = self.monotonic() + max(0.0, seconds)
        import asyncio  # here, not at import: the embedded site's process imports this module, never asyncio

        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        sleeper = (loop, woken)
        waits: list[asyncio.Future[Any]] = [] if until is None else [until]
        stop = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        if stop is not None:
            waits.append(stop)
        with self._lock:
            self._sleepers.add(sleeper)
        moved = asyncio.ensure_future(woken.wait())
        try:
            while True:
                left = min(real_end - time.monotonic(), clock_end - self.monotonic())
                if left <= 0 or any(w.done() for w in waits):
                    await asyncio.sleep(0)  # a pause is always a point where others run
                    return
                await asyncio.wait([moved, *waits], timeout=left, return_when=asyncio.FIRST_COMPLETED)
                if moved.done():
                    woken.clear()
                    moved = asyncio.ensure_future(woken.wait())
        finally:
            with self._lock:
                self._sleepers.discard(sleeper)
            moved.cancel()
            if stop is not None:
                stop.cancel()


#: the clock of this process
CLOCK = Clock()


def monotonic() -> float:
    """The time the deadlines, elapsed times and heartbeats are measured in (seconds, monotonic)."""
    return CLOCK.monotonic()


def format_elapsed(seconds: float) -> str:
    """An elapsed time as every wait shows it: `42s`, `3m 05s`, `1h 02m`."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


async def sleep(seconds: float, *, cancel: asyncio.Event | None = None,
                until: asyncio.Future[Any] | None = None) -> None:
    """A pause on the clock (`Clock.sleep`): a poll interval, a retry's back-off, a heartbeat."""
    await CLOCK.sleep(seconds, cancel=cancel, until=until)


def deadline_after(seconds: float) -> float:
    """The `monotonic()` deadline `seconds` from now."""
    return CLOCK.monotonic() + seconds


def left_until(deadline: float) -> float:
    """The seconds left before a `monotonic()` deadline (0 once it has passed)."""
    return max(0.0, deadline - CLOCK.monotonic())


@asynccontextmanager
async def limit(seconds: float | None) -> AsyncIterator[None]:
    """`asyncio.timeout(seconds)` measured on the clock: the body gets TimeoutError when the
    seconds pass in real time or the clock is advanced past them (None: no limit)."""
    import asyncio

    async with asyncio.timeout(None) as scope:
        watcher: asyncio.Task[None] | None = None
        if seconds is not None:
            loop = asyncio.get_running_loop()

            async def expire() -> None:
                await sleep(seconds)
                scope.reschedule(loop.time())

            watcher = asyncio.ensure_future(expire())
        try:
            yield
        finally:
            if watcher is not None:
                watcher.cancel()
