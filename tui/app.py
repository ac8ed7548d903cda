"""The console application: connection at start, screen registry, `:` jumps, palette, help, errors.

`SiteToolkitApp(connection, read_only=..., clock=...)` connects in a worker when it starts. On
success it opens the default screen of `tui.screens.registry`; on failure it shows
`ConnectErrorScreen` (what was tried, how to fix it, retry). Every screen derives from
`tui.screens.base.SiteScreen` and carries a context bar the app keeps current (endpoint, user,
platform version, connection health, last refresh, read-only badge).

Public API for screens and other engineers:

- `app.open_screen(name)`: open a registered screen (installed once, then switched to).
- `app.toast(message, severity=...)`: a short notification (never parsed as markup).
- `app.report_error(error)`: a `SiteError` becomes an error toast (its detail stays available
  under `e`); anything else opens the error modal with the traceback.
- `app.show_error(title, detail)`: the scrollable, copyable error modal.
- `app.mark_refreshed()` / `app.mark_unreachable(error)`: feed the context bar's health and
  last-refresh slots after a poll.
- `app.now()`: the injectable clock (tests freeze it so screenshots are stable).
- `app.rows_shown(table)`: a list screen put rows of data in its table. Once a frame has
  painted one of them, the front-door check starts (not before: its imports and read would hold up
  the first rows). The start-up benchmark hook: with `SITETK_BENCH_EXIT_ON_FIRST_ROWS=1` the app
  exits right then, and `sitetk` prints `sitetk-bench first-rows <time.monotonic()> cpu
  <time.process_time()>` to stderr once the terminal is restored; bench/bench_vm_list.py reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import time
import traceback
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Sequence

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Center, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Label

from tui.domain.endpoints import endpoint_address
from tui.errors import SiteError
from tui.procedures.connection import ConnectionInfo, SiteConnection
from tui.procedures.stop_signals import exit_code_for, on_stop_signals
from tui.screens import registry
from tui.screens.base import CONTEXT_SLOTS, SiteScreen
from tui.screens.registry import ScreenSpec
from tui.settings import Settings
from widgets.context_bar import ContextBar, Variant
from widgets.key_bar import KeyBar
from widgets.shared_stylesheet import shared_stylesheet

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from typing import TypeGuard

    from tui.screens.connect_error import ConnectErrorScreen
    from widgets.virtual_table import VirtualTable

#: Textual's own switch for its animations (smooth scrolling, fades); unset, the console animates nothing
ANIMATIONS_ENV = "TEXTUAL_ANIMATIONS"

Clock = Callable[[], datetime]

#: environment variable of the start-up benchmark hook (see `SiteToolkitApp.rows_shown`)
BENCH_EXIT_ENV = "SITETK_BENCH_EXIT_ON_FIRST_ROWS"
BENCH_MARK = "sitetk-bench first-rows"

#: Garbage collector thresholds of the console. A full collection scans every live object: with
#: the rows of a large site that blocks the event loop for 100 ms and more, and the default
#: (700, 10, 10) runs one on nearly every refresh of 10,000 VMs. List rows hold no reference
#: cycles (reference counting frees them), so full collections can be a hundred times rarer.
GC_THRESHOLDS = (700, 10, 1000)

#: the verb of the confirmation that quitting would lose unsaved work
QUIT_ANYWAY = "Quit without saving"

#: seconds between two updates of the elapsed time on the start-up screen
CONNECT_TICK_S = 0.5

#: seconds after connecting when `SiteConnection.warm_up` runs at the latest (see `rows_shown`)
WARM_UP_DELAY_S = 2.0
#: how often the app looks whether the operations a stop signal cancelled have finished (seconds)
STOP_POLL_S = 0.05

#: a SiteError detail longer than this (or on several lines) opens the modal, not only a toast
_TOAST_DETAIL_LIMIT = 160


def _is_connect_error(screen: Screen[Any]) -> "TypeGuard[ConnectErrorScreen]":
    """Whether `screen` is the start-up failure screen; its module is imported only when a start
    fails (~1 ms of the start-up otherwise), and until then no screen can be one."""
    module = sys.modules.get("tui.screens.connect_error")
    return module is not None and isinstance(screen, module.ConnectErrorScreen)


def _local_now() -> datetime:
    return datetime.now().astimezone()


class ScreensProvider(Provider):
    """Command palette entries that open the registered screens."""

    def _entries(self) -> list[tuple[str, str, ScreenSpec]]:
        app = self.app
        assert isinstance(app, SiteToolkitApp)
        return [(f"Open screen: {s.title}", s.description or f":{s.name}", s) for s in app.available_screens()]

    async def discover(self) -> Hits:
        app = self.app
        assert isinstance(app, SiteToolkitApp)
        for label, help_text, spec in self._entries():
            yield DiscoveryHit(label, partial(app.open_screen, spec.name), help=help_text)

    async def search(self, query: str) -> Hits:
        app = self.app
        assert isinstance(app, SiteToolkitApp)
        matcher = self.matcher(query)
        for label, help_text, spec in self._entries():
            score = max(matcher.match(label), matcher.match(spec.name))
            if score > 0:
                yield Hit(score, matcher.highlight(label), partial(app.open_screen, spec.name), help=help_text)


class SiteToolkitApp(App[int]):
    """The Site Toolkit Console."""

    TITLE = "sitetk"
    SUB_TITLE = "Site Toolkit Console"
    CSS_PATH = "app.tcss"
    HELP_GROUP = "Everywhere"
    COMMANDS = App.COMMANDS | {ScreensProvider}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True, id="app.quit-now"),
        Binding("colon", "jump", "Go to", key_display=":", id="app.jump"),
        Binding("question_mark", "help", "Help", key_display="?", id="app.help"),
        Binding("ctrl+p", "command_palette", "Commands", show=False, priority=True, id="app.palette"),
        Binding("e", "last_error", "Last error", show=False, id="app.last-error"),
    ]

    class Connected(Message):
        def __init__(self, info: ConnectionInfo) -> None:
            super().__init__()
            self.info = info

    class ConnectFailed(Message):
        def __init__(self, error: SiteError) -> None:
            super().__init__()
            self.error = error

    def __init__(
        self,
        connection: SiteConnection,
        *,
        read_only: bool = False,
        clock: Clock | None = None,
        screens: Sequence[ScreenSpec] | None = None,
        initial_screen: str | None = None,
        notification_timeout: float | None = None,
        reload_settings: Callable[[], Settings] | None = None,
        front_door: bool = False,
    ) -> None:
        super().__init__()
        # the parsed CSS rules are the process's (widgets.shared_stylesheet): a screen shown for the
        # first time parses only its own CSS, not all of the app's again
        self.stylesheet = shared_stylesheet(self.stylesheet)
        self.site = connection
        #: open the setup checklist after connecting when the site has no toolkit yet (the console
        #: does; tests and benchmarks that start on a given screen do not)
        self.front_door = front_door
        #: re-reads the settings before a retry of a failed start (None: keep the ones given)
        self.reload_settings = reload_settings
        #: the connection refuses every operation that changes the site (tui.procedures.operation)
        connection.read_only = connection.read_only or read_only
        self.read_only = connection.read_only
        self.now: Clock = clock or _local_now
        self.screens: tuple[ScreenSpec, ...] = tuple(screens if screens is not None else registry.SCREENS)
        self.initial_screen = initial_screen or registry.DEFAULT_SCREEN
        self.info: ConnectionInfo | None = None
        #: the toolkit input file of this session (tui.screens.shell.Shell.input_file)
        self.input_file = ""
        self.last_error: tuple[str, str] | None = None
        self.return_code_on_exit = 0
        #: time.monotonic() when a list screen's first rows were painted (None until then)
        self.first_rows_at: float | None = None
        #: CPU seconds of the process (all threads) by then (time.process_time())
        self.first_rows_cpu: float | None = None
        self._exit_on_first_rows = os.environ.get(BENCH_EXIT_ENV) == "1"
        #: INT/TERM/HUP while the app runs (tui.procedures.stop_signals): the first one received
        self.stop_signal: int | None = None
        self._stop_signals: contextlib.AbstractContextManager[bool] | None = None
        self._context_values: dict[str, tuple[str, Variant, str]] = {}
        self._connect_started = time.monotonic()
        self._connect_ticker: Timer | None = None
        #: the front-door check waits for the first screen's first load (`_front_door_due`)
        self._front_door_pending = False
        #: a list screen showed rows that are not painted yet: the front door waits for them
        self._first_rows_due = False
        #: the collector is off until the first rows are painted (`on_mount`, `_start_collector`)
        self._collector_held = False
        #: the collector's thresholds before `on_mount` set the console's, put back by `on_unmount`
        self._thresholds_found: tuple[int, ...] | None = None
        #: set once the start-up check passed (created in on_mount, inside the event loop)
        self._connected = asyncio.Event()
        if ANIMATIONS_ENV not in os.environ:
            # Textual's default ("full") slides a form to the focused field in some 12 whole-screen
            # frames per tab, each drawn and sent over SSH; here it jumps there in one (a tab in the
            # toolkit form: 24 layouts for 30 tabs -> 11). TEXTUAL_ANIMATIONS=full brings it back.
            self.animation_level = "none"
        if notification_timeout is not None:
            self.NOTIFICATION_TIMEOUT = notification_timeout  # type: ignore[misc]  # per app: tests shorten toasts
        theme = connection.settings.theme
        if theme and theme in self.available_themes:
            self.theme = theme
        self._theme_warning = "" if not theme or theme in self.available_themes else theme

    # ------------------------------------------------------------------ start-up

    def get_default_screen(self) -> Screen[Any]:
        """The first screen itself when it is shown at once (`_early_screen`): no empty screen
        under it to build, and no switch from one to the other while the console starts."""
        early = self._early_screen()
        if early is None:
            return super().get_default_screen()
        screen = early.create()
        self.install_screen(screen, early.name)
        return screen

    def compose(self) -> ComposeResult:
        if self._early_screen() is not None:
            return  # the first screen is the default screen (`get_default_screen`)
        yield ContextBar(CONTEXT_SLOTS, id="context-bar")
        # A line of text whose elapsed time moves twice a second, not a LoadingIndicator: that
        # one repaints 16 times a second while the console starts, on the same core.
        with Vertical(id="connecting"):
            with Center():
                yield Label(Content(f"Connecting to {self.site.endpoint} …"), id="connecting-label")
        yield KeyBar()

    def on_mount(self) -> None:
        self._thresholds_found = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLDS)
        if not gc.isenabled():
            # `sitetk` started without the collector (tui.console), and it stays off until the
            # first screen's first rows are painted (the client's imports and the first page make
            # few cycles, and ~40 young collections cost ~4 ms of the start-up, issue 24); at the
            # latest after the warm-up delay, or at once when the connection fails
            self._collector_held = True
            self.set_timer(WARM_UP_DELAY_S, self._start_collector, name="collector")
        self._set_endpoint_context()
        self.set_context("health", "○ connecting", "muted")
        if self.site.settings.keys:
            self.set_keymap(dict(self.site.settings.keys))  # [keys] of the config file, by binding id
        if self.read_only:
            self.set_context("mode", "READ-ONLY", "badge")
        if self._theme_warning:
            self.toast(f"Unknown theme {self._theme_warning!r}; using {self.theme!r}", severity="warning")
        self._stop_signals = on_stop_signals(self._stop_requested)
        self._stop_signals.__enter__()
        self.connect()

    def get_driver_class(self) -> Any:
        """Textual's Linux driver, made to survive a dropped session (widgets.terminal_driver),
        unless $TEXTUAL_DRIVER names another."""
        from textual import constants

        if constants.DRIVER is None:
            from widgets.terminal_driver import driver_class

            chosen = driver_class()
            if chosen is not None:
                return chosen
        return super().get_driver_class()

    def _start_collector(self) -> None:
        """Turn the collector back on, once (`on_mount`): what is alive now (modules, classes, the
        app, the first rows) is frozen, so no full collection scans it again; then the collector
        runs with `GC_THRESHOLDS`."""
        if self._collector_held:
            self._collector_held = False
            gc.freeze()
            gc.enable()

    def _stop_requested(self, signum: int) -> None:
        """SIGTERM, SIGHUP (a dropped SSH session) or SIGINT: every running operation is cancelled
        as its Cancel button would (it stops between two platform calls, undoes what it created,
        writes its audit entry), then the app exits with 128+N; further signals change nothing. A
        change a screen runs inline (a toolkit deployment, a grant, a site submit, a setup step) is
        cancelled the same way, wherever its screen is."""
        from tui.screens.operation_modal import OperationModal  # imported late: not needed to start
        from tui.screens.operation_run import runs_on

        if self.stop_signal is not None:
            return
        self.stop_signal = signum
        modals = [s for s in self.screen_stack if isinstance(s, OperationModal) and s.running]
        for modal in modals:
            modal.cancel_operation()
        runs = runs_on(self.site)
        for run in runs:
            run.cancel()
        self._exit_when_stopped([*modals, *runs], signum)

    @work(exclusive=True, group="stop-signal", exit_on_error=False)
    async def _exit_when_stopped(self, running: list[Any], signum: int) -> None:
        while any(each.running for each in running):
            await asyncio.sleep(STOP_POLL_S)
        self.exit(exit_code_for(signum), return_code=exit_code_for(signum))

    @work(exclusive=True, group="connect", exit_on_error=False)
    async def connect(self) -> None:
        """Connect (again) to the site; the result arrives as `Connected` or `ConnectFailed`."""
        self.set_context("health", "○ connecting", "muted")
        self._connect_started = time.monotonic()
        if self._connect_ticker is None:
            self._connect_ticker = self.set_interval(CONNECT_TICK_S, self._paint_connecting, name="connecting")
        try:
            if self.info is None and self.reload_settings is not None and _is_connect_error(self.screen):
                # a retry after a failed start: the operator may have fixed ONE_AUTH or the config
                await self.site.use(self.reload_settings())
                self._set_endpoint_context()
            info = await self.site.connect()
        except SiteError as error:
            self.post_message(self.ConnectFailed(error))
            return
        self.post_message(self.Connected(info))

    def _paint_connecting(self) -> None:
        elapsed = time.monotonic() - self._connect_started
        self.set_context("health", f"○ connecting {elapsed:.1f} s", "muted")
        for label in self.query("#connecting-label").results(Label):
            label.update(Content(f"Connecting to {self.site.endpoint} … {elapsed:.1f} s"))

    def _stop_connect_ticker(self) -> None:
        if self._connect_ticker is not None:
            self._connect_ticker.stop()
            self._connect_ticker = None

    def _early_screen(self) -> ScreenSpec | None:
        """The first screen, when it is shown at once rather than after connecting: one that waits
        for the connection itself (`SiteScreen.SHOWN_WHILE_CONNECTING`). Its widgets are then built
        while the site starts and answers the start-up check; a failed check covers it with the
        failure screen. None for any other first screen (or one that fails to load: `open_screen`
        reports that after connecting)."""
        spec = registry.find(self.initial_screen, self.screens)
        if spec is None or (self.read_only and spec.mutates):
            return None
        try:
            screen_class = spec.load()  # imported once: later calls find the module loaded
        except Exception:  # noqa: BLE001 - reported when the screen is opened
            return None
        return spec if getattr(screen_class, "SHOWN_WHILE_CONNECTING", False) else None

    async def wait_connected(self) -> None:
        """Return once the start-up check has passed (at once after that)."""
        await self._connected.wait()

    def on_site_toolkit_app_connected(self, message: Connected) -> None:
        self.info = message.info
        self._set_endpoint_context()  # the demo site's is known only now
        self.set_context("user", message.info.user)
        self.set_context("version", message.info.version)
        self.set_context("health", "● connected", "ok")
        self._stop_connect_ticker()
        self._connected.set()
        if _is_connect_error(self.screen):
            self.pop_screen()
        self.open_screen(self.initial_screen)
        if self.front_door:
            # after the first screen's first paint (its first load calls `mark_refreshed`; rows
            # of data: once a frame painted them, `_first_rows_painted`), so the check's OneFlow
            # read and imports (~40 ms of CPU) do not compete with it; a screen that never loads a
            # list gets it after the warm-up delay
            self._front_door_pending = True
            self.set_timer(WARM_UP_DELAY_S, self._front_door_due, name="front-door")
        # the first screen's first rows normally start the warm-up; a screen without rows (an
        # empty site, another initial screen) gets it a little later
        self.set_timer(WARM_UP_DELAY_S, self.site.warm_up, name="warm-up")

    def _front_door_due(self) -> None:
        if self._front_door_pending:
            self._front_door_pending = False
            self._open_front_door()

    @work(exclusive=True, group="front-door", exit_on_error=False)
    async def _open_front_door(self) -> None:
        """A site without the toolkit opens on the setup checklist (a failed read keeps the first screen)."""
        from tui.procedures.toolkit.service import toolkit_deployed

        try:
            deployed = await toolkit_deployed(self.site)
        except SiteError:
            return
        if not deployed and registry.find("setup", self.screens) is not None:
            self.call_later(self.open_screen, "setup")

    def on_site_toolkit_app_connect_failed(self, message: ConnectFailed) -> None:
        self._start_collector()
        self._stop_connect_ticker()
        self.set_context("health", "✘ not connected", "error")
        screen = self.screen
        if _is_connect_error(screen):
            screen.show_error(message.error, self.site.describe())
        else:
            from tui.screens.connect_error import ConnectErrorScreen  # only a failed start shows it

            self.push_screen(ConnectErrorScreen(message.error, self.site.describe()))

    # ------------------------------------------------------------------ screens

    def available_screens(self) -> list[ScreenSpec]:
        """Registered screens the operator may open now (mutating ones hidden in read-only)."""
        return registry.available(self.read_only, self.screens)

    def open_screen(self, name: str) -> None:
        """Open a registered screen by name or alias."""
        spec = registry.find(name, self.screens)
        if spec is None:
            self.toast(f"No screen named {name!r}", severity="warning")
            return
        if self.read_only and spec.mutates:
            self.toast(f"{spec.title} changes the cloud: not available in read-only mode", severity="warning")
            return
        if self.info is None:
            self.toast("Not connected yet", severity="warning")
            return
        self._show(spec)

    def _show(self, spec: ScreenSpec) -> None:
        """Install the screen on first use, then bring it to the top."""
        if not self.is_screen_installed(spec.name):
            self.install_screen(spec.create(), spec.name)
        target = self.get_screen(spec.name)
        if self.screen is target:
            return
        if target in self.screen_stack:
            # the first screen, which is the default screen at the bottom of the stack: back to it
            while self.screen is not target:
                self.pop_screen()
        elif isinstance(self.screen, SiteScreen) and self.screen is not self.screen_stack[0]:
            self.switch_screen(spec.name)
        else:
            self.push_screen(spec.name)  # never switch away the bottom screen: the stack would be empty

    def current_site_screen(self) -> SiteScreen | None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, SiteScreen):
                return screen
        return None

    # ------------------------------------------------------------------ context bar

    def set_context(self, key: str, value: str, variant: Variant = "normal", *, compact: str = "") -> None:
        """Set one context bar slot on every screen (`compact`: the value where the bar is narrow)."""
        self._context_values[key] = (value, variant, compact)
        for screen in self.screen_stack:
            self.paint_context(screen, only=key)

    def _set_endpoint_context(self) -> None:
        endpoint = self.site.endpoint
        self.set_context("endpoint", endpoint, "muted", compact=endpoint_address(endpoint))

    def paint_context(self, screen: Screen[Any], only: str | None = None) -> None:
        for bar in screen.query(ContextBar):
            for key, (value, variant, compact) in self._context_values.items():
                if only is None or key == only:
                    bar.set_item(key, value, variant, compact=compact)

    def context_value(self, key: str) -> str:
        return self._context_values.get(key, ("", "normal", ""))[0]

    def mark_refreshed(self) -> None:
        """A poll succeeded: healthy, refreshed now."""
        self.set_context("health", "● connected", "ok")
        self.set_context("refresh", self.now().strftime("%H:%M:%S"))
        if self._front_door_pending and not self._first_rows_due:
            self.call_after_refresh(self._front_door_due)

    def mark_unreachable(self, error: SiteError) -> None:
        """A poll failed: the bar says so until the next success; `e` shows the error in full."""
        self.last_error = (error.title, error.detail)
        self.set_context("health", f"✘ {error.title}", "error")

    # ------------------------------------------------------------------ results and failures

    def toast(self, message: str, *, title: str = "", severity: str = "information",
              timeout: float | None = None) -> None:
        """A short notification; the text is shown as is (never parsed as markup)."""
        self.notify(message, title=title, severity=severity, timeout=timeout, markup=False)  # type: ignore[arg-type]

    def show_error(self, title: str, detail: str) -> None:
        """The error modal: scrollable, copyable detail."""
        from widgets.error_modal import ErrorModal  # on first use: its TextArea is ~30 ms of start-up

        self.last_error = (title, detail)
        self.push_screen(ErrorModal(title, detail))

    def report_error(self, error: BaseException) -> None:
        """A failure from a worker or procedure: toast for a short SiteError, modal otherwise."""
        if isinstance(error, SiteError):
            self.last_error = (error.title, error.detail)
            long_detail = len(error.detail) > _TOAST_DETAIL_LIMIT or "\n" in error.detail
            if long_detail:
                self.show_error(error.title, error.detail)
            else:
                hint = " (e: details)" if error.detail else ""
                self.toast(f"{error.detail}{hint}" if error.detail else error.title, title=error.title if error.detail else "",
                           severity="error")
            return
        detail = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        self.show_error(f"Unexpected error: {type(error).__name__}: {error}", detail)

    # ------------------------------------------------------------------ actions

    def action_jump(self) -> None:
        from widgets.jump_prompt import Choice, JumpPrompt  # dialogs load on first use, not at start-up

        choices = [Choice(s.name, s.name, s.title, s.aliases) for s in self.available_screens()]

        def chosen(name: str | None) -> None:
            if name:
                self.open_screen(name)

        self.push_screen(JumpPrompt(choices), chosen)

    def action_help(self) -> None:
        from widgets.help_screen import HelpScreen

        self.push_screen(HelpScreen.for_screen(self.screen))

    def action_last_error(self) -> None:
        if self.last_error is None:
            self.toast("No error so far")
            return
        self.show_error(*self.last_error)

    async def action_quit(self) -> None:
        """Quit; when a screen holds work that quitting would lose, ask first (Cancel by default;
        the same key once more while asked quits anyway)."""
        from widgets.confirm_modal import ConfirmModal

        losses = [loss for screen in self._site_screens() if (loss := screen.unsaved_changes())]
        if not losses or isinstance(self.screen, ConfirmModal) and self.screen.action_label == QUIT_ANYWAY:
            self.exit(self.return_code_on_exit)
            return

        def answered(ok: bool | None) -> None:
            if ok:
                self.exit(self.return_code_on_exit)

        self.push_screen(ConfirmModal(QUIT_ANYWAY, "; ".join(losses),
                                      detail="Quitting now loses them: cancel, then save (ctrl+s on the site screen)."),
                         answered)

    def _site_screens(self) -> list[SiteScreen]:
        """Every site screen opened so far (installed ones and those on the stack)."""
        screens = [self.get_screen(spec.name) for spec in self.screens if self.is_screen_installed(spec.name)]
        screens += [s for s in self.screen_stack if s not in screens]
        return [s for s in screens if isinstance(s, SiteScreen)]

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Go to screen", "Jump to a screen by name (:)", self.action_jump)
        yield SystemCommand("Keys", "Keys of this screen (?)", self.action_help)
        yield SystemCommand("Last error", "Show the last error in full (e)", self.action_last_error)
        site_screen = screen if isinstance(screen, SiteScreen) else self.current_site_screen()
        if site_screen is not None:
            yield from site_screen.palette_commands()

    def rows_shown(self, table: VirtualTable) -> None:
        """A list screen has put rows of data in `table`: note when they are first painted."""
        if self.first_rows_at is None:
            self._first_rows_due = True
            table.call_after_rows_painted(self._first_rows_painted)

    def _first_rows_painted(self) -> None:
        if self.first_rows_at is not None:
            return
        self.first_rows_at = time.monotonic()
        self.first_rows_cpu = time.process_time()
        self._first_rows_due = False
        self._start_collector()
        if self._exit_on_first_rows:
            self.exit(self.return_code_on_exit)
            return
        self.site.warm_up()
        self._front_door_due()

    async def on_unmount(self) -> None:
        if self._stop_signals is not None:
            self._stop_signals.__exit__(None, None, None)
            self._stop_signals = None
        if self._thresholds_found is not None:
            # the thresholds are the process's, not the app's: an app run inside a longer-lived
            # process (a pytest worker runs hundreds) left its full collections a hundred times
            # rarer for the rest of it, so the cyclic garbage of every later test piled up
            gc.set_threshold(*self._thresholds_found)
            self._thresholds_found = None
        await self.site.close()

