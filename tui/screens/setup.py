"""The setup checklist screen (`:setup`): from a bare frontend to a working site, one key a step.

Every step of `tui.procedures.setup.status` with its state (glyph, word and colour: `✔ done`,
`○ to do`, `■ blocked`, `✖ failed`, `· optional`), its group, and below the one under the cursor:
the evidence it read, what to do or the fix, the command. The summary line says how many
mandatory steps remain and which is next; after every operation it says what comes next. On a
set-up site the same checklist is the site's health view (all green).

Keys: `n` does the next step (the one `sitetk setup run` would do), `d` the step under the cursor,
each through the same procedures with the preview and a confirmation (Cancel by default); `i`
names the toolkit input file (it names the cloud user, the site branch and the default network,
and holds the site secret: secrets it leaves out are asked here, masked); `c` cancels a running
step at its next safe point (a download deletes what it created; the site is left as
it is: `n` continues from there); the app's stop signals cancel it the same way (`RunSetup` runs
through `run_change`, as every change a screen makes); `r` reads the site again.
`--read-only` hides `n` and `d`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import var
from textual.timer import Timer
from textual.widgets import Button, Input, Label, Static
from textual.worker import Worker

from tui import timing
from tui.domain.setup_steps import SetupChecklist, SetupStep, StepId, StepState
from tui.errors import SiteError
from tui.screens.base import SiteScreen
from tui.screens.site_modal import SiteModal
from tui.screens.toolkit_files import FileChoice, InputFileModal
from widgets.field_input import FieldInput
from widgets.state_cell import StateLook, StatePalette
from widgets.virtual_table import Column, TableRow, VirtualTable

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.progress import Progress

STEP_PALETTE = StatePalette(
    {
        StepState.DONE.value: StateLook("green", StepState.DONE.glyph),
        StepState.TODO.value: StateLook("bold cyan", StepState.TODO.glyph),
        StepState.BLOCKED.value: StateLook("bold yellow", StepState.BLOCKED.glyph),
        StepState.FAILED.value: StateLook("bold red", StepState.FAILED.glyph),
        StepState.OPTIONAL.value: StateLook("dim", StepState.OPTIONAL.glyph),
    },
    default=StateLook("magenta", "?"),
)

COLUMNS: tuple[Column, ...] = (
    Column("state", "STATE", 10),
    Column("group", "GROUP", 16),
    Column("step", "STEP", 40, flex=True),
    Column("need", "", 9),
)

#: what `?` says beside the keys: the path, not only the keys
#: the line under the input file dialog's title: secrets the file leaves out are asked for per run
INPUT_FILE_HELP = ("The spec's JSON (`sitetk toolkit inputs --output FILE` writes one). Secrets it leaves "
                   "out are asked for when a step needs them, for that run only.")
HELP_PATH = (
    "First-time setup, in order: the platform and its networks (checked: fix them on the frontend), "
    "the automation cloud user, the toolkit appliance downloaded and tagged, its inputs checked, "
    "instantiated and followed to RUNNING (the manager VM is moved to a compatible host as soon as it "
    "runs), the automation key recorded and granted, then the sites repository: the site branch and "
    "core.yaml filled from the cloud, the components enabled, and core.yaml checked whole (cloud and "
    "component library) and submitted last. Press i to name the input "
    "file, then n for each next step; every state is read from the site, so n also continues after a "
    "crash or work done by hand. `sitetk setup run --input FILE` does the same headless."
)


def step_row(step: SetupStep) -> TableRow:
    need = "" if step.mandatory else "optional"
    return TableRow(step.id.value, (STEP_PALETTE.text(step.state.value), step.group, step.title, need),
                    f"{step.title} {step.state.value} {step.group}".lower())


#: what `n` / `d` do on the inputs step while no input file is named
FORM_HINT = ("n opens the toolkit form, prefilled from the site: fill it, ctrl+s saves the input file (mode 0600) "
             "and the setup continues with it.")


def step_detail(step: SetupStep, read_only: bool, input_path: str = "") -> Text:
    text = Text.assemble((step.title, "bold"), "  ", STEP_PALETTE.text(step.state.value))
    if step.blocked_by:
        text.append(f" by {step.blocked_by}", style="yellow")
    for line in step.evidence:
        text.append(f"\n  {line}", style="dim")
    if step.action and step.state is not StepState.DONE:
        label = "Fix" if step.state in (StepState.FAILED, StepState.BLOCKED) else "Next"
        text.append(f"\n{label}: {step.action}", style="cyan")
    if step.command and step.state is not StepState.DONE:
        text.append(f"\n$ {step.command}", style="dim")
    if step.id is StepId.INPUTS and step.state is StepState.TODO and not input_path and not read_only:
        text.append(f"\n{FORM_HINT}", style="cyan")
    elif (step.state is StepState.TODO or (step.state is StepState.OPTIONAL and step.command)) and not read_only:
        text.append("\nd does this step now.", style="cyan")  # an optional step only when asked
    return text


def summary(checklist: SetupChecklist, input_path: str, read_only: bool) -> str:
    from tui.procedures.setup.run import choose

    counts = checklist.counts()
    parts = [f"{counts['done']}/{len(checklist.steps)} done"]
    parts += [f"{counts[s.value]} {s.value}" for s in (StepState.TODO, StepState.BLOCKED, StepState.FAILED)
              if counts[s.value]]
    parts.append(f"input file: {Path(input_path).name if input_path else 'none'}")
    head = " · ".join(parts)
    nxt = choose(checklist, None)
    if nxt is None:
        return f"✔ The site is set up: every mandatory step is done (health view) · {head}"
    if nxt.state in (StepState.BLOCKED, StepState.FAILED):
        asks_file = nxt.blocked_by == StepId.INPUTS.value and not input_path and not read_only
        hint = " · i names the input file" if asks_file else " · fix it (below), then r"
    elif read_only:
        hint = ""
    elif nxt.id is StepId.INPUTS and not input_path:
        hint = " · n opens the toolkit form (ctrl+s there saves the input file) · i names an existing one"
    else:
        hint = " · n does it"
    return f"Next: {nxt.title} ({nxt.state.value}){hint} · {head}"


class SecretsModal(SiteModal["dict[str, str] | None"]):
    """Ask the secrets the input file leaves out (masked; never written anywhere)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="dialog.cancel")]
    DEFAULT_CSS = """
    SecretsModal { align: center middle; }
    SecretsModal > Vertical { width: 80; max-width: 95%; height: auto; max-height: 90%; border: thick $warning;
                              background: $surface; padding: 1 2; }
    SecretsModal .dialog-buttons { align: right middle; margin: 1 0 0 0; }
    SecretsModal Button { margin: 0 0 0 2; }
    /* a Label is as wide as its text: 1fr wraps it inside the frame (80x24: nothing cut) */
    SecretsModal .dialog-body Label { width: 1fr; }
    """

    #: the line above the fields
    INTRO = "The input file leaves these secrets out; they are used for this run only."
    SECRET = True

    def __init__(self, names: list[str], helps: dict[str, str] | None = None) -> None:
        super().__init__()
        self.names = names
        self.helps = helps or {}

    def compose(self) -> ComposeResult:
        with Vertical():
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="cancel")
                yield Button("Use them", id="ok", variant="primary")
            with VerticalScroll(classes="dialog-body"):
                yield Label(Content(self.INTRO + " Enter goes to the next field; on the last, uses them."))
                for name in self.names:
                    yield Label(Content(name + (f": {self.helps[name]}" if name in self.helps else "")))
                    yield FieldInput(password=self.SECRET, id=f"secret-{name}")

    def on_mount(self) -> None:
        first = self.query(Input)
        if first:
            first.first().focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter: the next field, or (on the last) the same as Use them."""
        event.stop()
        inputs = list(self.query(Input))
        at = inputs.index(event.input) if event.input in inputs else len(inputs) - 1
        if at + 1 < len(inputs):
            inputs[at + 1].focus()
        else:
            self.query_one("#ok", Button).press()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id != "ok":
            self.dismiss(None)
            return
        values = {name: self.query_one(f"#secret-{name}", Input).value for name in self.names}
        if not all(values.values()):
            self.app.notify("Every secret is required", severity="warning")
            return
        self.dismiss(values)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ValuesModal(SecretsModal):
    """Ask the site's own values for the template's examples core.yaml still holds (not secret)."""

    INTRO = ("core.yaml still holds the template's examples for these; give the site's own (they go into core.yaml "
             "before it is checked and submitted).")
    SECRET = False



#: a running step's status line says for how long it has run once it has run this long (seconds):
#: a quick step's line does not flicker a count
RUNNING_TIME_AFTER_S = 3.0

_Answer = TypeVar("_Answer")

#: what a wait's heartbeat ends with: "(12 s of at most 1800 s)" (tui.procedures.waiting's callers)
_HEARTBEAT = re.compile(r"\(\d+ s of at most [\d.]+ s\)$")


def _heartbeat_of(last: str, line: str) -> bool:
    """`line` and `last` are heartbeats of one wait (the same step and phase, each saying its elapsed
    seconds): the newer replaces the older in the step log."""
    prefix = line.split(": ", 2)[:2]
    return (last.startswith("… ") and line.startswith("… ") and last.split(": ", 2)[:2] == prefix
            and bool(_HEARTBEAT.search(last)) and bool(_HEARTBEAT.search(line)))


class SetupScreen(SiteScreen):
    """The first-time setup checklist and its health view (spec operation 8)."""

    SCREEN_NAME = "setup"
    TITLE = "Setup"
    HELP_GROUP = "Setup"
    HELP_INTRO = HELP_PATH
    AUTO_FOCUS = "#setup-steps"
    CSS_PATH = "setup.tcss"
    MUTATING_ACTIONS = frozenset({"next_step", "do_step"})

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_step", "Next step", id="setup.next", tooltip="do the next step"),
        Binding("d", "do_step", "Do this", id="setup.do", tooltip="do the step under the cursor"),
        Binding("i", "input_file", "Input file", id="setup.input", tooltip="name the toolkit input file"),
        Binding("c", "cancel_step", "Cancel", id="setup.cancel", tooltip="cancel the running step"),
        Binding("r", "refresh", "Refresh", id="setup.refresh", tooltip="read the site again"),
    ]

    #: the site is being read; not named `loading`, Textual's own flag that covers the whole screen
    reading: var[bool] = var(False)

    def __init__(self, input_path: str = "") -> None:
        super().__init__(id="screen-setup")
        self.input_path = input_path
        self.checklist: SetupChecklist | None = None
        self.running: str | None = None
        #: when the running step started (`tui.timing`'s clock; None while a dialog of the step waits
        #: for the operator: the time spent reading it is not the step's) and the ticker that shows it
        self._running_since: float | None = None
        self._running_ticker: Timer | None = None
        self.step_log: list[str] = []
        self.last_message = ""
        #: secrets asked here for this session (never written)
        self._secrets: dict[str, str] = {}
        #: the session's input file (`Shell.input_file`) as this screen last saw it
        self._seen_input = ""

    def compose_body(self) -> ComposeResult:
        yield Label("Reading the site…", id="setup-summary")
        table = VirtualTable(COLUMNS, id="setup-steps")
        table.placeholder = "Reading the site…"
        yield table
        yield Static("", id="setup-detail")
        yield Static("", id="setup-log")
        yield Label("", id="setup-status")

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#setup-steps", VirtualTable)

    def on_mount(self) -> None:
        if self.input_path and not self.shell.input_file:
            self.shell.input_file = self.input_path
        self._seen_input = self.shell.input_file
        self.reload()

    def on_screen_resume(self) -> None:
        """Shown again: take the input file the toolkit form saved meanwhile, and read the site again
        (another screen may have changed it: a download, a deployment, a submitted core.yaml)."""
        super().on_screen_resume()
        named = self.shell.input_file
        if named and named != self._seen_input:
            self._seen_input = named
            if named != self.input_path:
                self.input_path = named
                self.last_message = f"input file {named}"
        if self.checklist is not None:
            self.reload()

    # ------------------------------------------------------------------ reading

    def _target(self) -> Any:
        from dataclasses import replace

        from tui.domain.toolkit_inputs import secret_names
        from tui.procedures.setup.facts import SetupTarget, target_from_file
        from tui.procedures.site.workspace import prompted_password

        if not self.input_path:
            return SetupTarget()
        target = target_from_file(self.input_path, secret_names(self.site.naming), self.site.naming)
        if self._secrets:
            values = {**target.values, **self._secrets}
            token = self.site.naming.input_name(f"{self.site.naming.role_automation}_sites_token")
            password = prompted_password(values[token]) if values.get(token) else target.vault_password
            target = replace(target, values=values, vault_password=password)
        return target

    def reload(self) -> None:
        if self.reading or self.running:
            return
        self.reading = True
        self._paint_status()
        self._load_worker()

    @work(exclusive=True, group="setup-load", exit_on_error=False)
    async def _load_worker(self) -> None:
        from tui.procedures.setup.status import setup_status

        try:
            checklist, _facts = await setup_status(self.site, self._target())
        except SiteError as error:
            self.reading = False
            self.last_message = f"✘ {error.title}: {error.detail.splitlines()[0] if error.detail else ''}"
            self._paint_status()
            return
        self.reading = False
        self._show(checklist)

    def _show(self, checklist: SetupChecklist) -> None:
        self.checklist = checklist
        key = self.table.cursor_key
        self.table.set_rows([step_row(step) for step in checklist.steps])
        nxt = checklist.next_step
        if key is None and nxt is not None:
            self.table.move_cursor_to_key(nxt.id.value)
        self._paint_line("#setup-summary", Content(summary(checklist, self.input_path, self.read_only)))
        self.query_one("#setup-summary", Label).set_class(checklist.complete, "-complete")
        self.shell.mark_refreshed()
        self._paint_detail()
        self._paint_status()

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        self.reading = False
        self.running = None
        self._paint_status()
        super().worker_failed(worker, error)

    # ------------------------------------------------------------------ painting

    @on(VirtualTable.RowHighlighted)
    def _highlighted(self) -> None:
        self._paint_detail()

    def cursor_step(self) -> SetupStep | None:
        if self.checklist is None or self.table.cursor_key is None:
            return None
        return self.checklist.step(str(self.table.cursor_key))

    def _paint_detail(self) -> None:
        step = self.cursor_step()
        if step is not None:
            self.query_one("#setup-detail", Static).update(step_detail(step, self.read_only, self.input_path))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = super().check_action(action, parameters)
        if allowed and action == "cancel_step":
            return bool(self.running)  # shown only while a step runs: at 80 columns its label pushed others out
        return allowed

    def _paint_status(self) -> None:
        if not self.running and self._running_ticker is not None:
            self._running_ticker.stop()
            self._running_ticker = None
        self.refresh_bindings()
        parts = []
        if self.running and self.change is not None and self.change.running and self.change.cancelling:
            parts.append(f"cancelling {self.running}: it stops at the next safe point…")
        elif self.running and self._running_since is None:  # a dialog of the step is open (`_answered`)
            parts.append(f"{self.running}: waiting for your answer")
        elif self.running and self._running_since is not None:
            elapsed = timing.monotonic() - self._running_since
            took = f" {timing.format_elapsed(elapsed)}" if elapsed >= RUNNING_TIME_AFTER_S else ""
            parts.append(f"running {self.running}…{took} (c cancels)")
        elif self.reading:
            parts.append("reading the site…")
        if self.last_message:
            parts.append(self.last_message)
        if self.checklist is not None:
            parts += [f"⚠ {note}" for note in self.checklist.notes]
        if self.read_only:
            parts.append("read-only: n and d hidden")
        self._paint_line("#setup-status", Content(" · ".join(parts)))
        log = self.query_one("#setup-log", Static)
        # the newest lines that fit (it is 2 high: the last six drew the oldest two of them, and a
        # wait's heartbeat was never in sight)
        shown = max(1, log.size.height or 2)
        self._paint_line("#setup-log", Text("\n".join(self.step_log[-shown:]), style="dim"))

    def _paint_line(self, selector: str, content: Content | Text) -> None:
        """Paint the summary, the step log or the status line: each has a fixed size (setup.tcss), so
        a new text repaints it without laying the screen out, and the same text is not painted again
        (every event of a running step painted them)."""
        widget = self.query_one(selector, Static)
        shown = widget.content
        if isinstance(shown, (Content, Text)) and shown.plain == content.plain:
            return
        widget.update(content, layout=False)

    # ------------------------------------------------------------------ actions

    def action_refresh(self) -> None:
        self.reload()

    def action_input_file(self) -> None:
        def chosen(choice: FileChoice | None) -> None:
            if choice is not None:
                self.input_path = self.shell.input_file = self._seen_input = choice.path
                self.last_message = f"input file {choice.path}"
                self.reload()

        self.app.push_screen(InputFileModal("load", self.input_path, help=INPUT_FILE_HELP), chosen)

    def action_next_step(self) -> None:
        self._start(None)

    def action_do_step(self) -> None:
        step = self.cursor_step()
        if step is None:
            return
        if step.state is StepState.DONE:
            self.shell.toast(f"{step.title}: already done", severity="information")
            return
        self._start(step.id)

    def action_cancel_step(self) -> None:
        """c: the running step stops at its next safe point (a download deletes what it created)."""
        if self.running and self.change is not None and self.change.cancel():
            self._paint_status()

    def _start(self, only: StepId | None) -> None:
        if self.running or self.reading:
            self.shell.toast("Wait for the current step to finish (c cancels it)", severity="warning")
            return
        if not self.input_path:
            from tui.procedures.setup.run import choose

            if self.checklist is None:
                self.shell.toast("The site could not be read: r reads it again", severity="warning")
                return
            step = choose(self.checklist, only)
            if step is not None and step.id is StepId.INPUTS and step.state is StepState.TODO:
                self.open_form()
                return
        self.running = only.value if only else "the next step"
        self._running_since = timing.monotonic()
        if self._running_ticker is None:
            self._running_ticker = self.set_interval(1.0, self._paint_status, name="setup-running")
        self.step_log = []
        self._paint_status()
        self._run_worker(only)

    def open_form(self) -> None:
        """The toolkit form, prefilled from the site; saving it names the input file here."""
        from tui.screens.toolkit import ToolkitScreen

        self.shell.open_screen("toolkit")
        if self.app.is_screen_installed("toolkit"):
            form = self.app.get_screen("toolkit")
            if isinstance(form, ToolkitScreen):
                form.for_setup = True
                form._header()

    async def _confirm(self, plan: Any) -> bool:
        from widgets.confirm_modal import ConfirmModal

        detail = "\n".join(f"- {c.description}" for c in plan.preview.changes)
        modal = ConfirmModal("Do it", plan.preview.title, detail=detail, command=plan.preview.cli_script(),
                             destructive=plan.preview.destructive)
        # App[object] wants Screen[object]
        return bool(await self._answered(self.app.push_screen_wait(modal)))  # type: ignore[arg-type]

    async def _answered(self, dialog: Awaitable[_Answer]) -> _Answer:
        """`dialog`'s answer: while the operator reads it the running step's count stops, and it
        counts again from zero once answered (after its confirmation the step runs; before, the
        count started at `n` and took in the time spent reading the preview)."""
        self._running_since = None
        self._paint_status()
        try:
            answer = await dialog
        finally:
            self._running_since = timing.monotonic()
        self._paint_status()  # not when the wait was cancelled: the screen may be going
        return answer

    async def _ask(self, names: list[str]) -> dict[str, str]:
        answers = await self._answered(self.app.push_screen_wait(SecretsModal(names)))
        if not answers:
            raise SiteError("Secrets not given", "Nothing was changed; press n again and give them, or put them in "
                            "the input file (mode 0600).")
        self._secrets.update(answers)
        return answers

    async def _ask_values(self, wanted: list[tuple[str, str]]) -> dict[str, str]:
        answers = await self._answered(self.app.push_screen_wait(ValuesModal([p for p, _ in wanted], dict(wanted))))
        if not answers:
            raise SiteError("Site values not given", "Nothing was changed; press n again and give them.")
        return answers

    def change_step(self, event: Progress) -> None:
        """An event of the running step: a line of the step log."""
        mark = {"done": "✔", "failed": "✖", "skipped": "·"}.get(event.state, "…")
        line = f"{mark} {event.step}: {event.message}"
        if self.step_log and _heartbeat_of(self.step_log[-1], line):
            self.step_log[-1] = line  # a wait's newer heartbeat replaces its last one
        else:
            self.step_log.append(line)
        self._paint_status()

    @work(exclusive=True, group="setup-run", exit_on_error=False)
    async def _run_worker(self, only: StepId | None) -> None:
        """One step of the setup (`RunSetup`), run as every change a screen makes (`run_change`):
        `c` and the app's stop signal cancel it at a safe point."""
        from tui.procedures.operation import OperationCancelled
        from tui.procedures.setup.run import RunOptions, RunSetup, SetupStopped

        poll = getattr(self, "poll_interval", RunOptions.poll_interval)  # a test sets a shorter one
        options = RunOptions(only=only, max_steps=1, poll_interval=poll)
        what = self.running
        #: the checklist the run read after its step: reading the site again right after it made
        #: three readings of the site per step instead of two
        read: SetupChecklist | None = None
        input_path = self.input_path
        try:
            operation = RunSetup(self._target(), options, confirm=self._confirm, ask_secrets=self._ask,
                                 ask_values=self._ask_values)
            ran = await self.run_change(operation, None)  # its plan: none up front, each step planned as it comes
        except OperationCancelled:
            self.last_message = f"cancelled {what}: the site is left as it is; n continues from there"
        except SiteError as error:
            for name in error.rejected if isinstance(error, SetupStopped) else ():  # refused by the site's checks: not kept
                self._secrets.pop(name, None)
            self.last_message = f"✖ {error.title}"
            self.step_log.append(f"✖ {error.title}: {error.detail}")
            self.shell.toast(error.title, severity="error")
        else:
            self.last_message = ran.message or "done"
            read = ran.checklist
        finally:
            self.running = None
        if read is not None and self.input_path == input_path:
            self._show(read)  # the site as the run left it
        else:
            self.reload()
