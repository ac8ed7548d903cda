"""The base of every console screen: context bar, footer, read-only gating and worker failures.

A screen subclasses `SiteScreen`, sets `SCREEN_NAME` (its registry name) and `TITLE`, and writes
`compose_body()` instead of `compose()`. It gets:

- the context bar on top and the key footer at the bottom, kept up to date by the app;
- `self.site`: the `SiteConnection` (procedures take it; never call adapters from a screen);
- read-only gating: actions named in `MUTATING_ACTIONS` are hidden and refused with `--read-only`;
- worker failures handled: a worker started with
  `@work(exclusive=True, group="...", exit_on_error=False)` that raises ends up in
  `worker_failed()`, which by default reports it (toast for a `SiteError`, error modal with the
  traceback for anything unexpected). Override `worker_failed` to show an error state instead;
- `palette_commands()`: extra entries for the ctrl+p palette while the screen is current;
- `run_change(operation, plan)`: the one way a screen runs a change it shows inline (not in the
  operation modal): an `OperationRun` (tui.screens.operation_run) whose progress goes to
  `change_step` (or the `on_step` given) and which `esc` cancels while it runs (`CANCEL_CHANGE` in
  the screen's BINDINGS: the key bar shows "esc Cancel" then); a question the operation asks mid-run is a confirmation, Cancel by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, TypeVar

from textual import events, on
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.reactive import var
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from tui.errors import SiteError
from tui.screens.shell import Shell, shell_of
from widgets.context_bar import ContextBar
from widgets.key_bar import KeyBar

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection
    from tui.procedures.operation import Confirmation, Operation
    from tui.procedures.progress import Progress
    from tui.screens.operation_run import OperationRun

#: the context bar's slots: (key, label), in display order
CONTEXT_SLOTS: tuple[tuple[str, str], ...] = (
    ("endpoint", ""),
    ("user", "user"),
    ("version", "version"),
    ("health", ""),
    ("refresh", "refreshed"),
    ("mode", ""),
)

#: esc cancels the change a screen runs inline (`run_change`), shown only while one runs; a screen
#: that runs one lists it last in its BINDINGS (in the base, its key would come first in every key
#: bar). Priority: an editor or a field with the focus does not keep esc from the running change.
CANCEL_CHANGE = Binding("escape", "cancel_change", "Cancel", priority=True, id="screen.cancel-change")

PlanT = TypeVar("PlanT")
ResultT = TypeVar("ResultT")


class SiteScreen(Screen[None]):
    """A top-level console screen (see the module docstring)."""

    #: registry name (`:` name) of this screen
    SCREEN_NAME: ClassVar[str] = ""
    #: actions hidden and refused in read-only mode
    MUTATING_ACTIONS: ClassVar[frozenset[str]] = frozenset()
    #: the change this screen runs or ran last (`run_change`); `change.running` while under way
    change: OperationRun[Any, Any] | None = None

    def compose(self) -> ComposeResult:
        yield ContextBar(CONTEXT_SLOTS, id="context-bar")
        yield from self.compose_body()
        yield KeyBar()

    def compose_body(self) -> ComposeResult:
        """The screen's own widgets (between the context bar and the footer)."""
        yield from ()

    @property
    def shell(self) -> Shell:
        return shell_of(self.app)

    @property
    def site(self) -> "SiteConnection":
        return self.shell.site

    @property
    def read_only(self) -> bool:
        return self.shell.read_only

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_change":
            return self.changing
        if action in self.MUTATING_ACTIONS and self.read_only:
            return False
        return True

    # ------------------------------------------------------------------ the one way to run a change

    @property
    def changing(self) -> bool:
        """A change of this screen's runs now."""
        return self.change is not None and self.change.running

    async def run_change(self, operation: Operation[PlanT, ResultT], plan: PlanT, *,
                         on_step: Callable[[Progress], None] | None = None) -> ResultT:
        """Run a planned change from one of this screen's workers (see the module docstring): its
        typed result, or the `SiteError` that stopped it (`OperationCancelled` after esc)."""
        from tui.screens.operation_run import OperationRun  # on first use: not on the start-up path

        run = OperationRun(self.site, operation, plan, on_step=on_step or self.change_step, ask=self.ask_change)
        self.change = run
        self.refresh_bindings()
        try:
            return await run.run()
        finally:
            self.refresh_bindings()

    def change_step(self, event: Progress) -> None:
        """Where a change's progress goes by default: override to show it (a status line)."""

    async def ask_change(self, question: Confirmation) -> bool:
        """A question the running change asks: the operation's confirmation, Cancel by default."""
        from tui.screens.operation_modal import ask_confirmation  # on first use (its dialogs, a TextArea)

        return await ask_confirmation(self.app, question)

    def action_cancel_change(self) -> None:
        """esc while a change runs: ask it to stop between two platform calls."""
        if self.change is not None and self.change.cancel():
            self.refresh_bindings()
            self.change_cancelling()

    def change_cancelling(self) -> None:
        """The cancel was asked for: say so (override for the operation's words)."""
        self.shell.toast("Cancelling: the change stops between two platform calls")

    def unsaved_changes(self) -> str | None:
        """What quitting now would lose, named for the operator ("unsaved changes to ..."), or
        None. The app asks before quitting when a screen says something here."""
        return None

    #: the screen has been shown once (`_first_resume`)
    _resumed = False

    @on(events.ScreenResume)
    def _first_resume(self, event: events.ScreenResume) -> None:
        """The first time the screen is shown, its styles were applied a moment ago, to each widget
        as it was mounted (focus changes restyle their widget): Textual's restyle of the whole
        screen on every resume is then a second style pass of the same tree with the same result
        (~15 ms of the console's start-up, issue 24). Later resumes restyle as before (a theme may
        have changed while the screen was hidden)."""
        if not self._resumed:
            self._resumed = True
            event.refresh_styles = False
            # Textual's toast rack is shown or hidden on every resume (`App._refresh_notifications`,
            # `display = bool(notifications)`): hidden here, before the first layout, so that a
            # screen without toasts is not laid out a second time when the rack is hidden after it
            # (a whole layout and repaint of the screen, ~20 ms of the console's start-up)
            for rack in self.query("#textual-toastrack"):
                rack.display = False

    def on_screen_resume(self) -> None:
        self.shell.paint_context(self)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.worker_failed(event.worker, event.worker.error)

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        """A worker of this screen raised: report it (override to show an error state)."""
        self.shell.report_error(error)

    def palette_commands(self) -> Iterable[SystemCommand]:
        """Commands offered by ctrl+p while this screen is current."""
        yield from ()


class ReloadingScreen(SiteScreen):
    """A screen whose data one load worker reads, never two loads at once, keeping the last failure.

    A subclass writes `start_load()` (its `@work(group=LOAD_GROUP, ...)` worker, which posts its own
    loaded message or `self.Failed(error)`), calls `load_done()` when its data arrived, and paints
    `_paint_status()` from `reloading` and `last_error`; `load_failed()` shows a failure where the
    data would be."""

    #: the worker group of the load (a failure of that worker ends the load)
    LOAD_GROUP: ClassVar[str] = "load"

    #: a load is under way; not named `loading`, which is Textual's own flag that covers the whole
    #: screen with a loading indicator
    reloading: var[bool] = var(False)

    @dataclass
    class Failed(Message):
        error: SiteError

    last_error: SiteError | None = None

    def reload(self) -> None:
        """Read the data again (never two loads at once)."""
        if self.reloading:
            return
        self.reloading = True
        self.load_started()
        self._paint_status()
        self.start_load()

    def load_started(self) -> None:
        """A load begins (before the worker starts)."""

    def start_load(self) -> object:
        """Start the load worker (a `@work` method: it returns the worker)."""
        raise NotImplementedError

    def load_done(self) -> None:
        """The data arrived."""
        self.reloading = False
        self.last_error = None

    @on(Failed)
    def _load_failed(self, message: Failed) -> None:
        self.reloading = False
        self.last_error = message.error
        self.shell.mark_unreachable(message.error)
        self.load_failed(message.error)
        self._paint_status()

    def load_failed(self, error: SiteError) -> None:
        """Show a failed load where the data would be (the status line says it already)."""

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        if worker.group == self.LOAD_GROUP:
            self.reloading = False
            self._paint_status()
        super().worker_failed(worker, error)

    def _paint_status(self) -> None:
        """Paint the status line from `reloading` and `last_error`."""
