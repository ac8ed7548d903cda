"""The deployment view of the toolkit screen: the service and each role live, the log on failure.

`DeploymentView` is fed by the screen's worker (it never calls a procedure itself): `begin(plan)`,
`apply(progress)` for each event of `deploy_toolkit`, then `finished(record)`, `failed(error)` or
`cancelled()`. It shows every step (instantiate, the service, one line per role with its state
and VM IDs, recording the VMs, the automation key), then the recorded VMs with their addresses,
or the service's log when the service failed. While a role waits, the steps say for how long and
for what, and "Why it waits" lists each VM holding it back (its state, READY=YES missing, a
database VM on a host whose CPU cannot run it); `move_vm_id` names the VM the screen's `m` key
moves (the hosts screen's move flow). Remote text is always shown as plain text.
"""

from __future__ import annotations

from typing import Literal

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from tui.domain.site_record import SiteRecord
from tui.errors import SiteError
from tui.procedures.progress import Progress
from tui.procedures.toolkit.deploy_waits import RoleWait
from tui.procedures.toolkit.instantiate import DeploymentFailed, DeployPlan, DeployStep, follow_steps
from widgets.progress_panel import ProgressPanel

Phase = Literal["idle", "running", "done", "failed", "cancelled"]


def record_table(record: SiteRecord) -> RenderableType:
    """The recorded VMs: role, VM ID, name, addresses (and the key when captured)."""
    table = Table("ROLE", "VM", "NAME", "ADDRESSES", "STATE", box=None, padding=(0, 2), header_style="bold")
    for role in record.roles:
        for vm in role.vms:
            table.add_row(Text(role.name), Text(str(vm.vm_id)), Text(vm.name), Text(", ".join(vm.ips) or "-"),
                          Text(role.state))
    parts: list[RenderableType] = [
        Text.assemble(("Recorded ", "bold"), (f"service {record.service_id} {record.service_name!r}", "bold"),
                      (f"  {record.state}", "green" if record.state == "RUNNING" else "yellow")),
        table,
    ]
    if record.automation_public_key:
        parts.append(Text.assemble(("\nAutomation key  ", "bold"), (record.automation_public_key, "")))
    return Group(*parts)


class DeploymentView(Vertical):
    """Steps, result and log of one deployment (see the module docstring)."""

    DEFAULT_CSS = """
    DeploymentView { height: 1fr; width: 1fr; padding: 0 1; }
    DeploymentView #dv-title { text-style: bold; width: 1fr; margin: 0 0 1 0; }
    DeploymentView #dv-scroll { height: 1fr; }
    DeploymentView #dv-result { width: 1fr; height: auto; margin: 1 0 0 0; }
    DeploymentView #dv-why { width: 1fr; height: auto; margin: 1 0 0 0; display: none; }
    DeploymentView #dv-why.-shown { display: block; }
    DeploymentView #dv-log { width: 1fr; height: auto; margin: 1 0 0 0; border: round $error; padding: 0 1;
        display: none; }
    DeploymentView #dv-log.-shown { display: block; }
    DeploymentView #dv-hint { width: 1fr; height: 1; color: $text-muted; background: $panel; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.phase: Phase = "idle"
        self.plan: DeployPlan | None = None
        self.service_id: int | None = None
        self.events: list[Progress] = []
        self.log_lines: tuple[str, ...] = ()
        #: role -> what it waits for and why, while it waits
        self.waits: dict[str, RoleWait] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="dv-title")
        with VerticalScroll(id="dv-scroll"):
            yield ProgressPanel(id="dv-steps")
            yield Static("", id="dv-why")
            yield Static("", id="dv-result")
            yield Static("", id="dv-log")
        yield Static("", id="dv-hint")

    @property
    def running(self) -> bool:
        return self.phase == "running"

    def _title(self, text: Text) -> None:
        self.query_one("#dv-title", Static).update(text)

    def _hint(self, text: str) -> None:
        self.query_one("#dv-hint", Static).update(Text(text))

    def _start(self, steps: tuple[str, ...], title: Text, service_id: int | None) -> None:
        self.phase = "running"
        self.service_id = service_id
        self.events = []
        self.log_lines = ()
        self.waits = {}
        self._paint_why()
        self.query_one(ProgressPanel).set_steps(steps)
        self.query_one("#dv-result", Static).update("")
        log = self.query_one("#dv-log", Static)
        log.update("")
        log.remove_class("-shown")
        self._title(title)
        self._hint("esc stops following (the service is left as it is)")

    def begin(self, plan: DeployPlan) -> None:
        """A new deployment: instantiate, then follow."""
        self.plan = plan
        self._start(plan.step_names, Text.assemble(
            ("Deploying ", "bold"), (repr(plan.service_name), "bold"),
            f" from service template {plan.template_id} {plan.template_name!r} "
            f"(platform {plan.platform_version}, {plan.values_key})"), None)

    def begin_follow(self, record: SiteRecord) -> None:
        """Following a recorded deployment again (after esc, or one started elsewhere)."""
        self.plan = None
        self._start(follow_steps([r.name for r in record.roles]), Text.assemble(
            ("Following ", "bold"), (f"service {record.service_id} {record.service_name!r}", "bold"),
            f" (recorded {record.state or '?'})"), record.service_id)

    def apply(self, event: Progress) -> None:
        self.events.append(event)
        self.query_one(ProgressPanel).update_step(event.step, event.state, event.message, done=event.done,
                                                  total=event.total)
        step = event.outcome
        if not isinstance(step, DeployStep):
            return
        self.service_id = step.service_id
        if step.role is not None and (step.waiting is not None or event.state != "running"):
            if step.waiting is not None and event.state == "running":
                self.waits[step.role] = step.waiting
            else:
                self.waits.pop(step.role, None)
            self._paint_why()
        if step.log:
            self.show_log(step.log)

    @property
    def move_vm_id(self) -> int | None:
        """The first waiting database VM that a move to a compatible host would unblock."""
        for wait in self.waits.values():
            for vm in wait.moves:
                return vm.vm_id
        return None

    def _paint_why(self) -> None:
        why = self.query_one("#dv-why", Static)
        if not self.waits:
            why.update("")
            why.remove_class("-shown")
            return
        body = Text("Why it waits\n", style="bold")
        for wait in self.waits.values():
            body.append(f"role {wait.role} {wait.state}: waits for {wait.waits_for}\n")
            for vm in wait.vms:
                body.append("  ⚠ " if vm.move_command else "  · ", style="bold yellow" if vm.move_command else "dim")
                body.append(f"{vm.why}\n")
        if self.move_vm_id is not None:
            body.append(f"m moves VM {self.move_vm_id} to a compatible host (the hosts screen's move)", style="cyan")
        why.update(body)
        why.add_class("-shown")
        if self.running:
            self._hint(("m moves the database VM · " if self.move_vm_id is not None else "")
                       + "esc stops following (the service is left as it is)")

    def show_log(self, lines: tuple[str, ...]) -> None:
        self.log_lines = lines
        log = self.query_one("#dv-log", Static)
        body = Text("Service log\n", style="bold")
        body.append("\n".join(lines) or "(empty)")
        log.update(body)
        log.add_class("-shown")

    def finished(self, record: SiteRecord | None) -> None:
        self.phase = "done"
        self.waits = {}
        self._paint_why()
        if record is not None:
            self.query_one("#dv-result", Static).update(record_table(record))
        self._title(Text.assemble(("✔ ", "green"), ("Deployed ", "bold"),
                                  (f"service {self.service_id}", "bold"), " is RUNNING; VMs and key recorded"))
        self._hint("k key view (give the key to the cloud user) · esc back to the form")

    def cancelled(self, record: SiteRecord | None) -> None:
        self.phase = "cancelled"
        if record is not None:
            self.query_one("#dv-result", Static).update(record_table(record))
        self._title(Text.assemble(("↷ ", "cyan"), ("Stopped following ", "bold"),
                                  f"service {self.service_id}: it is left as it is and keeps deploying"))
        self._hint("`sitetk toolkit vms` or the key view follow it later · esc back to the form")

    def failed(self, error: SiteError, record: SiteRecord | None) -> None:
        self.phase = "failed"
        detail = error.detail
        if isinstance(error, DeploymentFailed):
            self.show_log(error.log)
            detail = error.detail.splitlines()[-1]  # the log is shown on its own
        result = Group(record_table(record), Text(f"\n{detail}")) if record is not None else Text(detail)
        self.query_one("#dv-result", Static).update(result)
        self._title(Text.assemble(("✘ ", "bold red"), (error.title, "bold")))
        self._hint("the service was not changed · esc back to the form")
