"""The move (operation 7) as a modal: target, preview, confirmation, progress, resume or put back.

1. Plan: for one VM, the target host is a choice among the compatible hosts above the free-capacity
   thresholds, best first (or the host the operator had under the cursor). Only when there is
   none does the form offer host-passthrough, with the spec's warning. A hard undeploy is a
   checkbox. For every flagged VM, each gets its best target.
2. Preview: every step with the equivalent platform CLI command, steps already done marked.
3. `Move…` asks for confirmation in a `ConfirmModal` naming the VM, whose default is Cancel.
4. Progress: one line per step (`ProgressPanel`). `Cancel move` (or escape) stops between two
   platform calls; the procedure audit-logs where it stopped.
5. On a failure or a cancel the modal says which step stopped and the state the VM is in, and
   offers `Resume` (the same move again: done steps are skipped) and `Put back` (deploy the VM
   on the host it came from with its previous CPU model; asks for confirmation).

The modal returns True when it changed the cloud (so the hosts screen reloads).
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Label, Select, Static
from textual.worker import Worker

from tui.errors import SiteError
from tui.procedures.hosts import HostInventory
from tui.procedures.inventory import vm_detail
from tui.procedures.move_plan import (
    DEFAULT_TIMEOUTS,
    PASSTHROUGH_WARNING,
    MovePlan,
    MoveTimeouts,
    passthrough_candidates,
    plan_flagged,
    plan_move,
    plan_redeploy,
    preview_many,
    preview_move,
)
from tui.procedures.move_vm import MoveFailed, describe_state, move_many
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress
from tui.screens.error_text import error_text
from widgets.confirm_modal import ConfirmModal
from widgets.progress_panel import ProgressPanel


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


def host_label(host: Any, *, best: bool = False) -> str:
    return (f"{host.id} {host.name} · {host.kvm_cpu_model or '?'} · {host.free_cpu / 100:g}/{host.max_cpu / 100:g} CPU, "
            f"{host.free_mem_mib / 1024:.0f}G free" + (" · best" if best else ""))


class MoveModal(ModalScreen[bool]):
    """Move one VM, or every flagged one, to a compatible host (see the module docstring)."""

    AUTO_FOCUS = "#mv-close"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close / cancel the move", id="hosts-move.close"),
    ]
    DEFAULT_CSS = """
    MoveModal { align: center middle; }
    MoveModal > Vertical {
        width: 110; max-width: 96%; height: auto; max-height: 96%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    MoveModal #mv-title { text-style: bold; width: 1fr; }
    MoveModal #mv-info { color: $text-muted; width: 1fr; }
    MoveModal #mv-form { height: auto; margin: 1 0 0 0; }
    MoveModal .mv-label { text-style: bold; }
    MoveModal #mv-options { height: auto; }
    MoveModal #mv-passthrough-warning { color: $text-warning; width: 1fr; height: auto; }
    MoveModal #mv-body { height: auto; max-height: 26; margin: 1 0 0 0; }
    MoveModal #mv-preview { width: 1fr; height: auto; }
    MoveModal #mv-progress { display: none; }
    MoveModal.-running #mv-progress, MoveModal.-finished #mv-progress { display: block; }
    MoveModal.-running #mv-form, MoveModal.-finished #mv-form,
    MoveModal.-running #mv-preview, MoveModal.-finished #mv-preview { display: none; }
    MoveModal #mv-result { width: 1fr; height: auto; margin: 1 0 0 0; }
    MoveModal #mv-buttons { height: auto; margin: 1 0 0 0; align: right middle; }
    MoveModal #mv-buttons Button { margin: 0 0 0 2; }
    """

    class Planned(Message):
        def __init__(self, plans: tuple[MovePlan, ...], notes: tuple[str, ...], error: SiteError | None,
                     then_run: bool = False) -> None:
            super().__init__()
            self.plans = plans
            self.notes = notes
            self.error = error
            self.then_run = then_run

    class Stepped(Message):
        def __init__(self, event: Progress) -> None:
            super().__init__()
            self.event = event

    class Finished(Message):
        def __init__(self, error: SiteError | None = None, cancelled: bool = False) -> None:
            super().__init__()
            self.error = error
            self.cancelled = cancelled

    class BackPlanned(Message):
        def __init__(self, plan: MovePlan) -> None:
            super().__init__()
            self.plan = plan

    class StateRead(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, inventory: HostInventory, vm_ids: Sequence[int] | None, *, host_id: int | None = None,
                 timeouts: MoveTimeouts = DEFAULT_TIMEOUTS) -> None:
        """`vm_ids`: one VM, or None for every flagged one; `host_id`: the preselected target."""
        super().__init__()
        self.inventory = inventory
        self.vm_ids = tuple(vm_ids) if vm_ids is not None else None
        self.host_id = host_id
        self.timeouts = timeouts
        self.plans: tuple[MovePlan, ...] = ()
        self.preview: Preview | None = None
        self.running = False
        self.changed = False
        self.failure: MoveFailed | None = None
        self.stopped_step = ""
        self.events: list[Progress] = []
        self._run: Worker[None] | None = None

    # ------------------------------------------------------------------ layout

    @property
    def single(self) -> bool:
        return self.vm_ids is not None and len(self.vm_ids) == 1

    def _targets(self) -> list[tuple[str, int]]:
        ranking = self.inventory.ranking
        if ranking.eligible:
            return [(host_label(r.host, best=n == 0), r.host.id) for n, r in enumerate(ranking.eligible)]
        usable = passthrough_candidates([row.host for row in self.inventory.hosts], self.inventory.known_good)
        return [(host_label(h), h.id) for h in usable]

    def compose(self) -> ComposeResult:
        if self.single:
            row = self.inventory.db_vm(self.vm_ids[0])  # type: ignore[index]
            name = f"VM {row.id} {row.name}" if row is not None else f"VM {self.vm_ids[0]}"  # type: ignore[index]
            title = f"Move {name} to a compatible host"
            where = (f"on host {row.host_id} {row.host_name} with CPU model {row.cpu_model or '(none)'} when opened · "
                     f"{row.verdict.kind.value}" if row is not None and row.host_id is not None else "")
        else:
            flagged = self.inventory.flagged
            title = f"Move every flagged document-database VM ({len(flagged)})"
            where = ", ".join(f"VM {r.id} {r.name}" for r in flagged)
        no_target = not self.inventory.ranking.eligible
        with Vertical():
            yield Label(Content(title), id="mv-title")
            yield Label(Content(where), id="mv-info")
            with Vertical(id="mv-form"):
                if self.single:
                    yield Label("Target host", classes="mv-label")
                    targets = self._targets()
                    initial = self.host_id if self.host_id in {v for _, v in targets} else (
                        targets[0][1] if targets and not no_target else Select.NULL)
                    yield Select[int](targets, prompt="Choose the target host", value=initial, id="mv-target",
                                      allow_blank=True)
                with Horizontal(id="mv-options"):
                    if self.single and no_target:
                        yield Checkbox("Use host-passthrough (discouraged)", id="mv-passthrough")
                    yield Checkbox("Hard undeploy (power cut)", id="mv-hard")
                if self.single and no_target:
                    yield Static(Text(f"No compatible host has enough free capacity. {PASSTHROUGH_WARNING}"),
                                 id="mv-passthrough-warning")
            with VerticalScroll(id="mv-body"):
                yield Static(Text("Planning…", style="dim"), id="mv-preview")
                yield ProgressPanel(id="mv-progress")
                yield Static("", id="mv-result")
            with Horizontal(id="mv-buttons"):
                yield Button("Close", id="mv-close")
                yield Button("Cancel move", id="mv-cancel", variant="error")
                yield Button("Put back", id="mv-back", variant="warning")
                yield Button("Resume", id="mv-resume", variant="primary")
                yield Button("Move…", id="mv-start", variant="warning")

    def on_mount(self) -> None:
        for button in ("#mv-cancel", "#mv-back", "#mv-resume"):
            self.query_one(button, Button).display = False
        self.query_one("#mv-start", Button).disabled = True
        self._replan()

    # ------------------------------------------------------------------ planning

    def _choices(self) -> tuple[int | None, bool, bool]:
        host_id: int | None = None
        passthrough = False
        if self.single:
            value = self.query_one("#mv-target", Select).value
            host_id = None if value is Select.NULL else int(value)  # type: ignore[arg-type]
            boxes = self.query("#mv-passthrough")
            passthrough = bool(boxes) and boxes.first(Checkbox).value
        hard = self.query_one("#mv-hard", Checkbox).value
        return host_id, passthrough, hard

    @on(Select.Changed, "#mv-target")
    @on(Checkbox.Changed)
    def _replan(self) -> None:
        if self.running:
            return
        self.plans = ()
        self.preview = None
        self.query_one("#mv-start", Button).disabled = True
        host_id, passthrough, hard = self._choices()
        if self.single and not self.inventory.ranking.eligible and not passthrough:
            self._show_preview(Text("No compatible host: tick host-passthrough to plan the move anyway, or close.",
                                    style="yellow"))
            return
        self._show_preview(Text("Planning…", style="dim"))
        self._plan_worker(host_id, passthrough, hard)

    @work(exclusive=True, group="hosts-move-plan", exit_on_error=False)
    async def _plan_worker(self, host_id: int | None, passthrough: bool, hard: bool) -> None:
        site = self.app.site  # type: ignore[attr-defined]
        try:
            if self.vm_ids is None:
                plans, problems = await plan_flagged(site, hard=hard)
                notes = tuple(f"VM {row.id} {row.name} is left out: {error.title}: {error.detail}"
                              for row, error in problems)
            else:
                plans = tuple([await plan_move(site, vm_id, host_id, passthrough=passthrough, hard=hard)
                               for vm_id in self.vm_ids])
                notes = ()
        except SiteError as error:
            self.post_message(self.Planned((), (), error))
            return
        self.post_message(self.Planned(plans, notes, None))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        if message.error is not None:
            if message.then_run:
                self._finish_buttons(resumable=True)
                self._show_result(Text.assemble(("✘ Cannot resume: ", "bold red"), (message.error.title, "bold"),
                                                "\n", message.error.detail))
                return
            self._show_preview(error_text(message.error))
            return
        self.plans = message.plans
        if not self.plans:
            self._show_preview(Text("\n".join(message.notes) or "Nothing to move.", style="yellow"))
            return
        self.preview = preview_many(self.plans, self.timeouts)
        text = preview_text(self.preview)
        for note in message.notes:
            text.append(f"\n⚠ {note}", style="yellow")
        self._show_preview(text)
        if message.then_run:
            self._start_run(self.plans)
            return
        start = self.query_one("#mv-start", Button)
        start.disabled = self.preview.is_noop and all(not p.wait_ready for p in self.plans)
        start.label = "Move…" if not self.plans[0].redeploy else "Redeploy…"

    def _show_preview(self, text: Text) -> None:
        self.query_one("#mv-preview", Static).update(text)

    def _show_result(self, text: Text) -> None:
        self.query_one("#mv-result", Static).update(text)

    # ------------------------------------------------------------------ confirm and run

    @on(Button.Pressed, "#mv-start")
    def confirm_move(self) -> None:
        if not self.plans or self.preview is None or self.running:
            return
        if getattr(self.app, "read_only", False):
            self.app.notify("Read-only mode: moves are not available", severity="warning", markup=False)
            return
        self._confirm(self.plans, self.preview)

    def _confirm(self, plans: tuple[MovePlan, ...], preview: Preview) -> None:
        verb = "Redeploy" if plans[0].redeploy else "Move"
        targets = "; ".join(f"{p.label} to {p.target_label} with CPU model {p.cpu_model or '(none)'}" for p in plans)
        detail = f"{verb} {targets}."
        if preview.warnings:
            detail += "\n" + "\n".join(f"⚠ {w}" for w in preview.warnings)

        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self._start_run(plans)

        self.app.push_screen(ConfirmModal(verb, preview.target, detail=detail, command=preview.cli_script()), answered)

    def _start_run(self, plans: tuple[MovePlan, ...]) -> None:
        self.plans = plans
        self.running = True
        self.changed = True
        self.failure = None
        self.stopped_step = ""
        self.events = []
        self.set_class(False, "-finished")
        self.set_class(True, "-running")
        many = len(plans) > 1
        steps = [f"VM {p.vm_id}: {s}" if many else s for p in plans for s in p.steps]
        self.query_one("#mv-progress", ProgressPanel).set_steps(steps)
        for button, show in (("#mv-start", False), ("#mv-close", False), ("#mv-back", False), ("#mv-resume", False),
                             ("#mv-cancel", True)):
            self.query_one(button, Button).display = show
        cancel = self.query_one("#mv-cancel", Button)
        cancel.disabled = False
        cancel.focus()
        verb = "Redeploying" if plans[0].redeploy else "Moving"
        self._show_result(Text(f"{verb} {', '.join(p.label for p in plans)}…", style="bold"))
        self._run = self._run_worker(plans)

    @work(exclusive=True, group="hosts-move-run", exit_on_error=False)
    async def _run_worker(self, plans: tuple[MovePlan, ...]) -> None:
        try:
            async for event in move_many(self.app.site, plans, timeouts=self.timeouts):  # type: ignore[attr-defined]
                self.post_message(self.Stepped(event))
        except SiteError as error:
            self.post_message(self.Finished(error))
            return
        except asyncio.CancelledError:
            self.post_message(self.Finished(cancelled=True))
            raise
        self.post_message(self.Finished())

    @on(Stepped)
    def _stepped(self, message: Stepped) -> None:
        event = message.event
        self.events.append(event)
        self.stopped_step = event.step
        self.query_one("#mv-progress", ProgressPanel).update_step(event.step, event.state, event.message,
                                                                  done=event.done, total=event.total)

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self.running = False
        self.set_class(False, "-running")
        self.set_class(True, "-finished")
        error = message.error
        if message.cancelled:
            step = self.stopped_step or "the first step"
            self._show_result(Text.assemble(("✘ Cancelled ", "bold red"), f"during step “{step}”. Reading the VM's "
                                            "state…"))
            self._finish_buttons(resumable=True)
            self._read_state(step)
            return
        if isinstance(error, MoveFailed):
            self.failure = error
            self._show_result(Text.assemble(
                ("✘ Stopped at step ", "bold red"), (f"“{error.step}”", "bold red"), f": {error.reason}\n",
                (f"{error.plan.label} is now {error.vm_state}.", "bold"),
                "\nResume runs the same move again from where it stopped; Put back deploys the VM on "
                f"{error.plan.origin_label} with CPU model {error.plan.origin_cpu_model or '(none)'}."))
            self._finish_buttons(resumable=True)
            return
        if error is not None:
            self._show_result(Text.assemble(("✘ Failed: ", "bold red"), (error.title, "bold"), "\n", error.detail))
            self._finish_buttons(resumable=True)
            return
        lines = Text.assemble(("✔ Done.", "bold green"))
        for plan in self.plans:
            ready = " The application reports ready." if plan.wait_ready else ""
            lines.append(f"\n{plan.label} runs on {plan.target_label} with CPU model {plan.cpu_model or '(none)'}."
                         f"{ready}")
        self._show_result(lines)
        self._finish_buttons(resumable=False)

    def _finish_buttons(self, *, resumable: bool) -> None:
        self.query_one("#mv-cancel", Button).display = False
        self.query_one("#mv-resume", Button).display = resumable
        back = self._back_plan_source()
        back_button = self.query_one("#mv-back", Button)
        back_button.display = resumable and back is not None
        if back is not None:
            back_button.label = f"Put back on host {back.origin_host_id}"
        close = self.query_one("#mv-close", Button)
        close.display = True
        close.focus()

    def _back_plan_source(self) -> MovePlan | None:
        """The plan whose VM can be put back: the failed one, else the one the progress stopped in."""
        plan = self.failure.plan if self.failure is not None else None
        if plan is None and self.plans:
            stopped = next((p for p in self.plans if self.stopped_step.startswith(f"VM {p.vm_id}:")), None)
            plan = stopped or self.plans[0]
        if plan is None or plan.redeploy or plan.origin_host_id is None or plan.origin_host_id == plan.target_host_id:
            return None
        return plan

    @work(exclusive=True, group="hosts-move-state", exit_on_error=False)
    async def _read_state(self, step: str) -> None:
        plan = self._back_plan_source() or (self.plans[0] if self.plans else None)
        if plan is None:
            return
        try:
            vm = await vm_detail(self.app.site, plan.vm_id)  # type: ignore[attr-defined]
        except SiteError as error:
            self.post_message(self.StateRead(f"{plan.label}: its state could not be read ({error.title})."))
            return
        self.post_message(self.StateRead(f"{plan.label} is now {describe_state(vm)}."))

    @on(StateRead)
    def _state_read(self, message: StateRead) -> None:
        step = self.stopped_step or "the first step"
        self._show_result(Text.assemble(("✘ Cancelled ", "bold red"), f"during step “{step}”.\n",
                                        (message.text, "bold"),
                                        "\nResume runs the same move again from where it stopped."))

    # ------------------------------------------------------------------ resume, put back, close

    @on(Button.Pressed, "#mv-resume")
    def resume(self) -> None:
        if self.running or not self.plans:
            return
        self._show_result(Text("Resuming: reading the VMs again…", style="dim"))
        self.query_one("#mv-resume", Button).display = False
        self.query_one("#mv-back", Button).display = False
        self._resume_worker(self.plans)

    @work(exclusive=True, group="hosts-move-plan", exit_on_error=False)
    async def _resume_worker(self, plans: tuple[MovePlan, ...]) -> None:
        site = self.app.site  # type: ignore[attr-defined]
        try:
            fresh = []
            for plan in plans:
                if plan.redeploy:
                    fresh.append(await plan_redeploy(site, plan.vm_id, plan.target_host_id, plan.cpu_model))
                else:
                    fresh.append(await plan_move(site, plan.vm_id, plan.target_host_id, passthrough=plan.passthrough,
                                                 hard=plan.hard))
        except SiteError as error:
            self.post_message(self.Planned((), (), error, then_run=True))
            return
        self.post_message(self.Planned(tuple(fresh), (), None, then_run=True))

    @on(Button.Pressed, "#mv-back")
    def put_back(self) -> None:
        source = self._back_plan_source()
        if self.running or source is None or source.origin_host_id is None:
            return
        self._show_result(Text(f"Planning the way back to {source.origin_label}…", style="dim"))
        self._back_worker(source)

    @work(exclusive=True, group="hosts-move-plan", exit_on_error=False)
    async def _back_worker(self, source: MovePlan) -> None:
        try:
            plan = await plan_redeploy(self.app.site, source.vm_id, source.origin_host_id,  # type: ignore[arg-type, attr-defined]
                                       source.origin_cpu_model)
        except SiteError as error:
            self.post_message(self.StateRead(f"Cannot put it back: {error.title}: {error.detail}"))
            return
        self.post_message(self.BackPlanned(plan))

    @on(BackPlanned)
    def _back_planned(self, message: BackPlanned) -> None:
        self._show_result(Text(f"Confirm to put {message.plan.label} back on {message.plan.target_label}.",
                               style="dim"))
        self._confirm((message.plan,), preview_move(message.plan, self.timeouts))

    @on(Button.Pressed, "#mv-cancel")
    def cancel_move(self) -> None:
        if self.running and self._run is not None:
            self.query_one("#mv-cancel", Button).disabled = True
            self._show_result(Text("Cancelling after the current platform call…", style="bold yellow"))
            self._run.cancel()

    @on(Button.Pressed, "#mv-close")
    def action_close(self) -> None:
        if self.running:
            self.cancel_move()
            return
        self.dismiss(self.changed)
