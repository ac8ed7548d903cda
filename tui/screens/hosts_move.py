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

from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Checkbox, Label, Select, Static

from tui.errors import SiteError
from tui.procedures.hosts.cpu_inventory import HostInventory
from tui.procedures.hosts.move_operation import Moved, MoveSet, MoveVms, RedeployVm, ResumeMoves
from tui.procedures.hosts.move_plan import DEFAULT_TIMEOUTS, PASSTHROUGH_WARNING, MovePlan, MoveTimeouts, passthrough_candidates
from tui.procedures.hosts.move_vm import MoveCancelled, MoveFailed, describe_state
from tui.procedures.inventory import vm_detail
from tui.procedures.operation import OperationCancelled
from tui.procedures.preview import Preview
from tui.screens.error_text import error_text
from tui.screens.operation_modal import OperationModal, preview_text
from widgets.progress_panel import ProgressPanel


def host_label(host: Any, *, best: bool = False) -> str:
    return (f"{host.id} {host.name} · {host.kvm_cpu_model or '?'} · {host.free_cpu / 100:g}/{host.max_cpu / 100:g} CPU, "
            f"{host.free_mem_mib / 1024:.0f}G free" + (" · best" if best else ""))


class MoveModal(OperationModal[MoveSet, Moved]):
    """Move one VM, or every flagged one, to a compatible host (see the module docstring)."""

    PREFIX = "mv"
    FOCUS_START_WHEN_READY = False
    AUTO_FOCUS = "#mv-close"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close / cancel the move", id="move.close"),
    ]
    DEFAULT_CSS = """
    MoveModal > Vertical { width: 110; max-width: 96%; height: auto; max-height: 96%; border: thick $warning; }
    MoveModal #mv-title { text-style: bold; width: 1fr; }
    MoveModal #mv-info { color: $text-muted; width: 1fr; }
    MoveModal #mv-form { height: auto; margin: 1 0 0 0; }
    MoveModal .mv-label { text-style: bold; }
    MoveModal #mv-options { height: auto; }
    MoveModal #mv-passthrough-warning { color: $text-warning; width: 1fr; height: auto; }
    MoveModal #mv-body { height: 1fr; max-height: 26; margin: 1 0 0 0; }
    MoveModal #mv-buttons { dock: bottom; }
    MoveModal #mv-preview { width: 1fr; height: auto; }
    MoveModal.-running #mv-form, MoveModal.-finished #mv-form,
    MoveModal.-running #mv-preview, MoveModal.-finished #mv-preview { display: none; }
    MoveModal #mv-result { width: 1fr; height: auto; margin: 1 0 0 0; }
    """

    @dataclass
    class StateRead(Message):
        text: str

    def __init__(self, inventory: HostInventory, vm_ids: Sequence[int] | None, *, host_id: int | None = None,
                 timeouts: MoveTimeouts = DEFAULT_TIMEOUTS) -> None:
        """`vm_ids`: one VM, or None for every flagged one; `host_id`: the preselected target."""
        super().__init__()
        self.inventory = inventory
        self.vm_ids = tuple(vm_ids) if vm_ids is not None else None
        self.host_id = host_id
        self.timeouts = timeouts
        #: the moves of the last run (what Resume and Put back start from)
        self._ran: tuple[MovePlan, ...] = ()
        self.failure: MoveFailed | None = None
        self.stopped_step = ""
        #: a put-back is being planned and confirmed (declining it returns to the failure)
        self._putting_back = False
        #: the form's choices the current plan was made for
        self._planned_for: tuple[int | None, bool, bool] | None = None

    # ------------------------------------------------------------------ layout

    @property
    def plans(self) -> tuple[MovePlan, ...]:
        """The moves under review, else those of the last run."""
        if self.plan is not None and self.phase == "ready" and not self._putting_back:
            return self.plan.plans
        return self._ran

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
                yield ProgressPanel(id="mv-progress", classes="op-progress")
                yield Static("", id="mv-result")
            with Horizontal(id="mv-buttons", classes="op-buttons"):
                yield Button("Close", id="mv-close")
                yield Button("Cancel move", id="mv-cancel", variant="error")
                yield Button("Put back", id="mv-back", variant="warning")
                yield Button("Resume", id="mv-resume", variant="primary")
                yield Button("Move…", id="mv-start", variant="warning")

    def on_mount(self) -> None:
        self._replan()

    def watch_phase(self, phase: str) -> None:
        super().watch_phase(phase)
        if self._putting_back and phase in ("planning", "ready"):
            self.set_class(True, "-finished")  # the failure stays on screen while the way back is planned

    def paint_buttons(self, phase: str) -> None:
        super().paint_buttons("finished" if self._putting_back and phase in ("planning", "ready") else phase)
        if phase != "finished":
            for button in ("#mv-back", "#mv-resume"):
                self.query_one(button, Button).display = False

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
        choices = self._choices()
        if choices == self._planned_for and self.phase in ("planning", "ready"):
            return  # the same choices (a Select announcing its first value): the plan holds
        self._planned_for = choices
        self.invalidate()
        host_id, passthrough, hard = choices
        if self.single and not self.inventory.ranking.eligible and not passthrough:
            self.show_preview_text(Text("No compatible host: tick host-passthrough to plan the move anyway, or close.",
                                        style="yellow"))
            return
        self.show_preview_text(Text("Planning…", style="dim"))
        self.plan_operation(MoveVms(self.vm_ids, host_id, passthrough, hard, self.timeouts))

    def show_plan(self, plan: MoveSet, preview: Preview) -> None:
        if self._putting_back:
            first = plan.plans[0]
            self.show_result_text(Text(f"Confirm to put {first.label} back on {first.target_label}.", style="dim"))
            self.start()
            return
        start = self.query_one("#mv-start", Button)
        if not plan.plans:
            self.show_preview_text(Text("\n".join(plan.notes) or "Nothing to move.", style="yellow"))
            start.disabled = True
            return
        text = preview_text(preview)
        for note in plan.notes:
            text.append(f"\n⚠ {note}", style="yellow")
        self.show_preview_text(text)
        start.disabled = preview.is_noop and all(not p.wait_ready for p in plan.plans)
        start.label = "Move…" if not plan.plans[0].redeploy else "Redeploy…"

    def show_plan_failure(self, error: SiteError, resuming: bool) -> None:
        if self._putting_back:
            self._putting_back = False
            self.phase = "finished"
            self.show_result_text(Text(f"Cannot put it back: {error.title}: {error.detail}"))
            self._finish_buttons(resumable=True)
        elif resuming:
            self._finish_buttons(resumable=True)
            self.show_result_text(Text.assemble(("✘ Cannot resume: ", "bold red"), (error.title, "bold"),
                                                "\n", error.detail))
        else:
            self.show_preview_text(error_text(error))

    def confirmation_declined(self) -> None:
        if self._putting_back:  # back to the failure, as it was
            self._putting_back = False
            self.phase = "finished"
            self._finish_buttons(resumable=True)

    # ------------------------------------------------------------------ run

    def run_started(self, plan: MoveSet) -> None:
        self._putting_back = False
        self._ran = plan.plans
        self.failure = None
        self.stopped_step = ""
        super().run_started(plan)
        verb = "Redeploying" if plan.plans[0].redeploy else "Moving"
        self.show_result_text(Text(f"{verb} {', '.join(p.label for p in plan.plans)}…", style="bold"))

    def show_step(self, event: Any) -> None:
        self.stopped_step = event.step
        super().show_step(event)

    def cancelling(self) -> None:
        self.show_result_text(Text("Cancelling after the current platform call…", style="bold yellow"))

    def show_failure(self, error: SiteError) -> None:
        if isinstance(error, OperationCancelled):
            step = self.stopped_step or "the first step"
            self.show_result_text(Text.assemble(("✘ Cancelled ", "bold red"), f"during step “{step}”. Reading the "
                                                "VM's state…"))
            self._finish_buttons(resumable=True)
            self._read_state(step)
            return
        if isinstance(error, MoveFailed):
            self.failure = error
            head = (("✘ Cancelled ", "bold red"), f"during step “{error.step}”.\n") if isinstance(error, MoveCancelled) \
                else (("✘ Stopped at step ", "bold red"), (f"“{error.step}”", "bold red"), f": {error.reason}\n")
            self.show_result_text(Text.assemble(
                *head,
                (f"{error.plan.label} is now {error.vm_state}.", "bold"),
                "\nResume runs the same move again from where it stopped; Put back deploys the VM on "
                f"{error.plan.origin_label} with CPU model {error.plan.origin_cpu_model or '(none)'}."))
        else:
            self.show_result_text(Text.assemble(("✘ Failed: ", "bold red"), (error.title, "bold"), "\n",
                                                error.detail))
        self._finish_buttons(resumable=True)

    def show_result(self, result: Moved) -> None:
        lines = Text.assemble(("✔ Done.", "bold green"))
        for plan in result.plans:
            ready = " The application reports ready." if plan.wait_ready else ""
            lines.append(f"\n{plan.label} runs on {plan.target_label} with CPU model {plan.cpu_model or '(none)'}."
                         f"{ready}")
        self.show_result_text(lines)
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
            vm = await vm_detail(self.shell.site, plan.vm_id)
        except SiteError as error:
            self.post_message(self.StateRead(f"{plan.label}: its state could not be read ({error.title})."))
            return
        self.post_message(self.StateRead(f"{plan.label} is now {describe_state(vm)}."))

    @on(StateRead)
    def _state_read(self, message: StateRead) -> None:
        step = self.stopped_step or "the first step"
        self.show_result_text(Text.assemble(("✘ Cancelled ", "bold red"), f"during step “{step}”.\n",
                                            (message.text, "bold"),
                                            "\nResume runs the same move again from where it stopped."))

    # ------------------------------------------------------------------ resume, put back

    @on(Button.Pressed, "#mv-resume")
    def resume(self) -> None:
        if self.running or not self.plans:
            return
        self.show_result_text(Text("Resuming: reading the VMs again…", style="dim"))
        self.query_one("#mv-resume", Button).display = False
        self.query_one("#mv-back", Button).display = False
        self.plan_operation(ResumeMoves(self.plans, self.timeouts), then_run=True)

    @on(Button.Pressed, "#mv-back")
    def put_back(self) -> None:
        source = self._back_plan_source()
        if self.running or source is None or source.origin_host_id is None:
            return
        self.show_result_text(Text(f"Planning the way back to {source.origin_label}…", style="dim"))
        self._putting_back = True
        self.plan_operation(RedeployVm(source.vm_id, source.origin_host_id, source.origin_cpu_model, self.timeouts))
