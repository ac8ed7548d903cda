"""The one operation modal: a change planned, previewed, confirmed and run in a modal.

An operation (tui.procedures.operation) goes form -> planning -> ready -> running -> finished,
and `OperationModal` holds that machinery once: the `phase` (a reactive that sets the `-running`
and `-finished` classes and which buttons show), the plan and run workers, the confirmation
(destructive operations name the object in a `ConfirmModal` whose default is Cancel), the
progress panel, cancel (the operation stops between two platform calls), the close-while-running
guard and `dismiss(changed)`. A subclass keeps only its form and its result view:

- `compose()` with widgets whose ids start with `PREFIX` (`<prefix>-close`, `-cancel`, `-start`,
  optionally `-review`, `-progress` (a `ProgressPanel`), `-preview`, `-result`);
- it calls `self.plan_operation(operation)` when its form describes an operation, `self.invalidate()` when
  the form changes;
- `show_plan`, `show_result`, `show_failure` draw what the operator reads.

Every worker failure reaches the one error path (`report_error`: toast or error modal) and leaves
the modal closable; a `SiteError` from planning or running is shown inline instead. The run itself
is an `OperationRun` (tui.screens.operation_run), the one way the console runs a change.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from rich.text import Text
from textual import on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Static
from textual.worker import Worker

from tui.errors import SiteError
from tui.procedures.operation import Confirmation, NamesSteps, Operation, OperationCancelled
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress
from tui.screens.error_text import error_text
from tui.screens.operation_run import OperationRun
from tui.screens.site_modal import SiteModal
from widgets.confirm_modal import ConfirmModal
from widgets.dialog import plain
from widgets.progress_panel import ProgressPanel

PlanT = TypeVar("PlanT")
ResultT = TypeVar("ResultT")

#: the phases of an operation in the modal, in order
PHASES = ("form", "planning", "ready", "running", "finished")


def preview_text(preview: Preview) -> Text:
    """A preview as Rich text: title, warnings, each step with its CLI (done steps dimmed)."""
    text = Text(preview.title, style="bold")
    for warning in preview.warnings:
        text.append("\n⚠ ", style="bold yellow")
        text.append(warning, style="yellow")
    for n, change in enumerate(preview.changes, 1):
        done = change.kind == "none" and "already done" in change.description
        text.append(f"\n{n}. ", style="dim" if done else "bold")
        text.append(change.description, style="dim" if done else "")
        if change.cli:
            text.append(f"\n   $ {change.cli}", style="dim cyan")
    return text


def confirmation_modal(question: Confirmation, *, command: str | None = None) -> ConfirmModal:
    """The one confirmation of an operation, wherever it is asked (this modal before a run or
    mid-run, a screen that shows its plan inline such as the key view): the verb on the button,
    the object named, the detail and the equivalent command; Cancel has the focus."""
    return ConfirmModal(question.verb, question.target, detail=question.detail,
                        command=question.command if command is None else command, destructive=question.destructive)


async def ask_confirmation(app: App[Any], question: Confirmation) -> bool:
    """A question a running operation asks (from a worker): `confirmation_modal`, True only on its verb."""
    return bool(await app.push_screen_wait(confirmation_modal(question)))  # type: ignore[arg-type]  # App[object] wants Screen[object]


class OperationModal(SiteModal[bool], Generic[PlanT, ResultT]):
    """Plan, preview, confirm, run and show one operation (see the module docstring)."""

    #: id prefix of the modal's widgets ("dl" for `#dl-start`, ...)
    PREFIX: ClassVar[str] = "op"
    #: the id suffix of the run button (`#<prefix>-start`, or `-apply`, ...)
    RUN_BUTTON: ClassVar[str] = "start"
    #: the run button takes the focus once the plan is shown (False: it stays where it was)
    FOCUS_START_WHEN_READY: ClassVar[bool] = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close / cancel", id="operation.close"),
    ]

    #: the frame every operation modal shares; a subclass sets its size, its own widgets, and tags
    #: its button row `op-buttons` and its progress panel `op-progress`
    DEFAULT_CSS = """
    OperationModal { align: center middle; }
    OperationModal > Vertical { max-width: 95%; border: thick $primary; background: $surface; padding: 1 2; }
    OperationModal .op-buttons { height: auto; margin: 1 0 0 0; align: right middle; }
    OperationModal .op-buttons Button { margin: 0 0 0 2; }
    OperationModal .op-progress { display: none; }
    OperationModal .op-why { width: 1fr; height: auto; color: $text-muted; }
    OperationModal.-running .op-progress, OperationModal.-finished .op-progress { display: block; }
    """

    phase: reactive[str] = reactive("form", init=False)

    @dataclass
    class Planned(Message):
        operation: Operation[Any, Any]
        plan: Any
        preview: Preview
        then_run: bool

    @dataclass
    class PlanFailed(Message):
        error: SiteError
        then_run: bool

    @dataclass
    class Stepped(Message):
        event: Progress

    @dataclass
    class Finished(Message):
        result: Any = None
        error: SiteError | None = None

    def __init__(self) -> None:
        super().__init__()
        self.operation: Operation[PlanT, ResultT] | None = None
        self.plan: PlanT | None = None
        self.preview: Preview | None = None
        self.result: ResultT | None = None
        self.changed = False
        self.events: list[Progress] = []
        #: the run started last: its context keeps the operation's typed record (`kept`), which a
        #: failure view reads (a failure returns no result)
        self.change: OperationRun[PlanT, ResultT] | None = None
        self.cancel_event = asyncio.Event()
        self._run: Worker[None] | None = None

    # ------------------------------------------------------------------ access

    @property
    def running(self) -> bool:
        return self.phase == "running"

    def _button(self, role: str) -> Button | None:
        found = self.query(f"#{self.PREFIX}-{self.RUN_BUTTON if role == 'start' else role}")
        return found.first(Button) if found else None

    def _show(self, role: str, renderable: Any) -> None:
        for widget in self.query(f"#{self.PREFIX}-{role}").results(Static):
            widget.update(renderable)

    def show_preview_text(self, renderable: Any) -> None:
        self._show("preview", renderable)

    def show_result_text(self, renderable: Any) -> None:
        self._show("result", renderable)

    # ------------------------------------------------------------------ phases

    def on_mount(self) -> None:
        self.watch_phase(self.phase)

    def watch_phase(self, phase: str) -> None:
        self.set_class(phase == "running", "-running")
        self.set_class(phase == "finished", "-finished")
        self.paint_buttons(phase)

    def paint_buttons(self, phase: str) -> None:
        """Which buttons show in each phase; override to add the modal's own."""
        running, finished = phase == "running", phase == "finished"
        start, cancel, close, review = (self._button(r) for r in ("start", "cancel", "close", "review"))
        if start is not None:
            start.display = not (running or finished)
            start.disabled = phase != "ready"
        if review is not None:
            review.display = not (running or finished)
        if cancel is not None:
            cancel.display = running
            cancel.disabled = False
        if close is not None:
            close.display = not running
        self.call_after_refresh(self.explain_start)

    def explain_start(self) -> None:
        """A run button shown disabled says what enables it: on the row (`#<prefix>-why`) and as its
        tooltip (which its accelerator key shows too)."""
        start, review = self._button("start"), self._button("review")
        why = ""
        if start is not None and start.display and start.disabled:
            name = plain(start.label)
            if self.phase == "planning":
                why = f"{name}: reviewing the plan…"
            elif review is not None and review.display:
                key = self.accelerator_of(review)
                why = f"{name}: after {plain(review.label)}" + (f" ({key})" if key else "")
            else:
                why = f"{name}: once the form is complete"
        if start is not None:
            start.tooltip = why or None
        rows = self.query(".op-buttons")
        if not rows:
            return
        found = self.query(f"#{self.PREFIX}-why")
        if found:
            found.first(Static).update(why)
        elif why:
            rows.first().mount(Static(why, id=f"{self.PREFIX}-why", classes="op-why"), before=0)

    # ------------------------------------------------------------------ plan

    def invalidate(self) -> None:
        """The form changed: the plan (and the preview) no longer hold."""
        if self.phase in ("running",):
            return
        self.operation = None
        self.plan = None
        self.preview = None
        self.phase = "form"
        self.paint_buttons(self.phase)

    def plan_operation(self, operation: Operation[PlanT, ResultT], *, then_run: bool = False) -> None:
        """Plan `operation` (nothing changes); `then_run` starts it at once (a resume)."""
        if self.running:
            return
        self.operation = operation
        self.plan = None
        self.phase = "planning"
        self.paint_buttons(self.phase)
        self._plan_worker(operation, then_run)

    @work(exclusive=True, group="operation-plan", exit_on_error=False)
    async def _plan_worker(self, operation: Operation[PlanT, ResultT], then_run: bool) -> None:
        try:
            plan = await operation.plan(self.shell.site)
            preview = operation.preview(plan)
        except SiteError as error:
            self.post_message(self.PlanFailed(error, then_run))
            return
        self.post_message(self.Planned(operation, plan, preview, then_run))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        if message.operation != self.operation:
            return  # the form changed while it was planning
        self.plan = message.plan
        self.preview = message.preview
        self.phase = "ready"
        self.show_plan(message.plan, message.preview)
        if message.then_run:
            self.begin()
            return
        start = self._button("start")
        if self.FOCUS_START_WHEN_READY and self.phase == "ready" and start is not None and start.display and not start.disabled:
            start.focus()

    @on(PlanFailed)
    def _plan_failed(self, message: PlanFailed) -> None:
        self.phase = "finished" if message.then_run else "form"
        self.paint_buttons(self.phase)
        self.show_plan_failure(message.error, message.then_run)

    def show_plan(self, plan: PlanT, preview: Preview) -> None:
        """Draw the plan (default: the preview)."""
        self.show_preview_text(preview_text(preview))

    def show_plan_failure(self, error: SiteError, resuming: bool) -> None:
        self.show_preview_text(error_text(error))

    def can_start(self) -> bool:
        """Whether the run button may start now (override to add the modal's own conditions)."""
        return True

    # ------------------------------------------------------------------ confirm and run

    @on(Button.Pressed)
    def _button_pressed(self, event: Button.Pressed) -> None:
        role = (event.button.id or "").removeprefix(f"{self.PREFIX}-")
        handler = {self.RUN_BUTTON: self.start, "cancel": self.cancel_operation, "close": self.action_close}.get(role)
        if handler is not None:
            event.stop()
            handler()

    def start(self) -> None:
        """The run button: confirm when the operation asks for it, then run."""
        operation, plan = self.operation, self.plan
        if operation is None or plan is None or self.phase != "ready" or not self.can_start():
            return
        question = operation.confirmation(plan)
        if question is None or not question.destructive:
            self.begin()
            return

        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self.begin()
            else:
                self.confirmation_declined()

        assert self.preview is not None
        self.app.push_screen(confirmation_modal(question, command=self.preview.cli_script()), answered)

    def confirmation_declined(self) -> None:
        """The operator answered Cancel to the confirmation (default: stay where it was)."""

    def begin(self) -> None:
        """Run the planned operation now (confirmed)."""
        operation, plan = self.operation, self.plan
        if operation is None or plan is None or self.running:
            return
        self.changed = True
        self.events = []
        run = OperationRun(self.shell.site, operation, plan, on_step=self._post_step, ask=self.ask)
        self.change = run
        self.cancel_event = run.cancel_event
        self.phase = "running"
        self.run_started(plan)
        cancel = self._button("cancel")
        if cancel is not None:
            cancel.focus()
        self._run = self._run_worker(run)

    def run_started(self, plan: PlanT) -> None:
        """The run begins: by default the progress panel lists the plan's steps."""
        steps = list(plan.step_names) if isinstance(plan, NamesSteps) else []
        for panel in self.query(f"#{self.PREFIX}-progress").results(ProgressPanel):
            panel.set_steps(steps)

    @work(exclusive=True, group="operation-run", exit_on_error=False)
    async def _run_worker(self, run: OperationRun[PlanT, ResultT]) -> None:
        try:
            result = await run.run()
        except SiteError as error:
            self.post_message(self.Finished(error=error))
            return
        except asyncio.CancelledError:
            self.post_message(self.Finished(error=OperationCancelled("Cancelled")))
            raise
        self.post_message(self.Finished(result=result))

    def _post_step(self, event: Progress) -> None:
        self.post_message(self.Stepped(event))

    async def ask(self, question: Confirmation) -> bool:
        """A question the running operation asks (a removal): a `ConfirmModal`, Cancel by default."""
        return await ask_confirmation(self.app, question)

    @on(Stepped)
    def _stepped(self, message: Stepped) -> None:
        self.events.append(message.event)
        self.show_step(message.event)

    def show_step(self, event: Progress) -> None:
        for panel in self.query(f"#{self.PREFIX}-progress").results(ProgressPanel):
            panel.update_step(event.step, event.state, event.message, done=event.done, total=event.total)

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self.phase = "finished"
        close = self._button("close")
        if close is not None:
            close.focus()
        if message.error is not None:
            self.show_failure(message.error)
        else:
            self.result = message.result
            self.show_result(message.result)

    def show_result(self, result: ResultT) -> None:
        self.show_result_text(Text("✔ Done.", style="bold green"))

    def show_failure(self, error: SiteError) -> None:
        self.show_result_text(error_text(error))

    # ------------------------------------------------------------------ cancel, failures, close

    def cancel_operation(self) -> None:
        """Ask the running operation to stop between two platform calls."""
        if not self.running or self.cancel_event.is_set():
            return
        self.cancel_event.set()
        cancel = self._button("cancel")
        if cancel is not None:
            cancel.disabled = True
        self.cancelling()

    def cancelling(self) -> None:
        """Say that the cancel was asked for (override for the operation's words)."""
        self.show_result_text(Text("Cancelling…", style="bold yellow"))

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        """A worker raised something other than `SiteError` (already reported on the one error
        path): the modal stays closable, it never hangs in "running"."""
        if self.phase in ("planning", "running"):
            self.phase = "finished" if self.phase == "running" else "form"
            self.show_result_text(Text.assemble(("✘ Failed: ", "bold red"), str(error) or type(error).__name__))

    def action_close(self) -> None:
        if self.running:
            self.close_while_running()
            return
        self.dismiss(self.changed)

    def close_while_running(self) -> None:
        """Close (or escape) while the operation runs: by default it asks the operation to stop."""
        self.cancel_operation()
