"""Drive the real console headless (`App.run_test`) against a site and time what the operator sees.

Used by bench_vm_list (in the bench process) and by bench.console_probe (in a process of its
own, for the memory figure). The console is `SiteToolkitApp` on its default screen, the VM list,
with auto-refresh pushed out of the way (an hour) so that only the refreshes the benchmark asks
for happen.

- `timed_refresh(console, monitor=...)`: one refresh, from asking for it until its rows are
  painted; with `monitor`, a task measures event-loop lag every 5 ms during it (kept apart from
  the timed refreshes: its wake-ups compete with the refresh for the interpreter);
- `timed_keystroke(console, key, expect)`: one key into the focused filter (posted as the
  terminal driver posts it), until the table shows the filtered rows.

"Painted" means the screen has run a compositor refresh after the table got its new rows: a
callback queued with `call_after_refresh` runs only after the next repaint.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, AsyncIterator, Callable

from textual import events
from textual.message import Message
from textual.pilot import Pilot

from tui.app import SiteToolkitApp
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.screens.connect_error import ConnectErrorScreen
from tui.screens.vms import VmListScreen
from tui.settings import Settings

#: terminal size of the headless console (a large terminal: more rows to paint)
SIZE = (160, 50)
#: event-loop lag sampling period
MONITOR_PERIOD_S = 0.005
#: no figure of these benchmarks may take longer than this (a hung app fails the run, not the machine)
DEADLINE_S = 900.0


class ConsoleBenchError(RuntimeError):
    """The console did not reach the state being measured."""


@dataclass(frozen=True)
class RefreshTiming:
    """One refresh: total (ask to painted), data arrival (adapter returned) to painted, longest loop stall."""

    total_s: float
    arrival_to_visible_s: float
    longest_stall_s: float


def bench_settings(settings: Settings) -> Settings:
    return replace(settings, refresh_interval=3600.0)


def settings_for(xmlrpc: str, session: str, flow_url: str) -> Settings:
    return bench_settings(Settings.for_site(xmlrpc, session, flow_url, source="benchmark site"))


class ListWatch:
    """Wakes the benchmark when the VM list reports a load or a failure (through the message hook
    of `run_test`, so the measurement does not poll the event loop it measures)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.connect_error: SiteError | None = None

    def hook(self, message: Message) -> None:
        if isinstance(message, (VmListScreen.Loaded, VmListScreen.Failed)):
            self.event.set()
        elif isinstance(message, SiteToolkitApp.ConnectFailed):
            self.connect_error = message.error
            self.event.set()

    async def wait(self, what: str, timeout: float = DEADLINE_S) -> None:
        try:
            await asyncio.wait_for(self.event.wait(), timeout)
        except asyncio.TimeoutError:
            raise ConsoleBenchError(f"timed out waiting for {what}") from None
        self.event.clear()
        # the handler of the message runs right after the hook, in the same step of the loop
        await asyncio.sleep(0)


@dataclass
class Console:
    """The running console: its pilot, its VM list screen, and the watch on that list."""

    pilot: Pilot[Any]
    screen: VmListScreen
    watch: ListWatch

    @property
    def app(self) -> SiteToolkitApp:
        app = self.pilot.app
        assert isinstance(app, SiteToolkitApp)
        return app


@asynccontextmanager
async def running_console(settings: Settings) -> AsyncIterator[Console]:
    """The console, headless, on its VM list with the first data shown."""
    app = SiteToolkitApp(SiteConnection(settings))
    watch = ListWatch()
    async with app.run_test(size=SIZE, message_hook=watch.hook) as pilot:
        screen = await _first_load(app, watch)
        await painted(screen)
        yield Console(pilot, screen, watch)


async def until(condition: Callable[[], Any], what: str, timeout: float = DEADLINE_S, period: float = 0.001) -> None:
    """Return once `condition()` holds (polled every `period` seconds); `ConsoleBenchError` past `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise ConsoleBenchError(f"timed out waiting for {what}")
        await asyncio.sleep(period)


async def _first_load(app: SiteToolkitApp, watch: ListWatch) -> VmListScreen:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        await watch.wait("the VM list's first data", max(0.0, deadline - time.monotonic()))
        if watch.connect_error is not None or isinstance(app.screen, ConnectErrorScreen):
            error = watch.connect_error
            raise ConsoleBenchError(f"the console could not connect: {error.title if error else app.last_error}")
        screen = app.screen
        if isinstance(screen, VmListScreen):
            if screen.loaded_once:
                return screen
            if screen.last_error is not None:
                raise ConsoleBenchError(f"the VM list failed: {screen.last_error.title}: {screen.last_error.detail}")


async def painted(screen: Any) -> None:
    """Return once the screen has repainted (or at once if nothing was waiting to be painted)."""
    done = asyncio.Event()
    screen.call_after_refresh(done.set)
    await asyncio.wait_for(done.wait(), DEADLINE_S)


async def _monitor(stop: asyncio.Event, lags: list[float]) -> None:
    """Sample event-loop lag: how much later than asked each 5 ms sleep wakes up."""
    while not stop.is_set():
        start = time.perf_counter()
        await asyncio.sleep(MONITOR_PERIOD_S)
        lags.append(time.perf_counter() - start - MONITOR_PERIOD_S)


async def timed_refresh(console: Console, *, monitor: bool = False) -> RefreshTiming:
    """One refresh of the VM list, timed from asking for it until its rows are painted; with
    `monitor`, a task samples event-loop lag during it (the longest lag is the stall figure)."""
    screen, watch = console.screen, console.watch
    if screen.refreshing:
        raise ConsoleBenchError("a refresh is already running (auto-refresh should be off)")
    before = screen.refresh_count
    lags: list[float] = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(_monitor(stop, lags)) if monitor else None
    await asyncio.sleep(0)  # the monitor is running before the refresh starts
    watch.event.clear()
    start = time.perf_counter()
    screen.refresh_vms()
    try:
        while screen.refresh_count == before:
            await watch.wait("the refresh")
            if screen.refresh_count == before and not screen.refreshing and screen.last_error is not None:
                raise ConsoleBenchError(f"the refresh failed: {screen.last_error.title}: {screen.last_error.detail}")
        await painted(screen)
        end = time.perf_counter()
    finally:
        stop.set()
        if sampler is not None:
            await sampler
    arrival = screen.timings.get("fetch_end")
    if arrival is None or not start <= arrival <= end:
        raise ConsoleBenchError(f"the VM list's timings have no fetch_end mark for this refresh: {screen.timings}")
    return RefreshTiming(end - start, end - arrival, max(lags, default=0.0))


async def timed_key(app: SiteToolkitApp, screen: Any, key: str, expect: str) -> float:
    """Seconds from a key reaching `app` until `screen.table` shows the rows filtered by `expect`.

    The key is posted to the app as the terminal driver posts it (`pilot.press` would add two
    `wait_for_idle` sleeps of at least 20 ms each: it would time the test harness, not the app).
    Any list screen with a filtered `table` (the VM list, the marketplace) can be timed.
    """
    table = screen.table
    event = events.Key(key, key if len(key) == 1 else None)
    event.set_sender(app)
    start = time.perf_counter()
    app.post_message(event)
    await until(lambda: table.filter_text == expect, f"the filter to read {expect!r}")
    await painted(screen)
    return time.perf_counter() - start


async def timed_keystroke(console: Console, key: str, expect: str) -> float:
    """`timed_key` on the running console's VM list."""
    return await timed_key(console.app, console.screen, key, expect)


async def open_filter(console: Console) -> None:
    """`/`: the filter input gets the focus."""
    screen = console.screen
    await console.pilot.press("slash")
    await until(lambda: screen.focused is not None and screen.focused.id == "vm-filter", "the filter to take focus")
    await painted(screen)
