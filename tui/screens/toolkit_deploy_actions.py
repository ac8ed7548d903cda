"""The deploy actions of the toolkit screen: check the inputs against the site, confirm, deploy, follow.

`DeployActions` holds what a deployment needs besides the form: ctrl+g validates every field, checks
the inputs against the site (`check_inputs_on_site`; a changed value checks again), plans as the
run will (a live service made from these inputs is followed, a second toolkit is asked for by
name) and confirms saying so, then runs the `DeployToolkit` operation through `run_change` into the
deployment view (`DeploymentView`: every step, the roles, why a role waits); ctrl+f follows the
recorded deployment again (a read), esc stops following without touching the service, `m` moves
the database VM a deployment waits for (the hosts screen's move), `k` opens the key view. The
screen that holds the form (`ToolkitScreen`) answers for the values and their problems.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from textual import work
from textual.message import Message
from textual.widgets import ContentSwitcher

from tui.domain.severity import Severity
from tui.domain.site_record import SiteRecord
from tui.domain.toolkit_inputs import Problem
from tui.errors import SiteError
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.procedures.operation import RunContext
from tui.procedures.progress import Progress
from tui.procedures.site_record import load_site_record
from tui.procedures.toolkit.input_checks import SiteCheckReport, check_inputs_on_site
from tui.procedures.toolkit.instantiate import (
    DEFAULT_HEARTBEAT,
    DEFAULT_KEY_TIMEOUT,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TIMEOUT,
    DeployLedger,
    DeployPlan,
    DeployToolkit,
    InvalidInputs,
    follow_deployment,
    plan_deploy,
)
from tui.procedures.toolkit.own_service import SecondToolkitRefused, find_own_services
from tui.procedures.toolkit.service import NAME_FIELD
from tui.screens.toolkit_deploy import DeploymentView
from tui.screens.toolkit_file_actions import InputFileActions
from widgets.confirm_modal import ConfirmModal


class DeployActions(InputFileActions):
    """Check, confirm, deploy and follow (see the module docstring); the screen holds the form."""

    #: seconds between two polls of the service while following it (tests make it short)
    poll_interval: float = DEFAULT_POLL_INTERVAL
    #: seconds between two reports of what a waiting deployment waits for
    heartbeat: float = DEFAULT_HEARTBEAT
    deploy_timeout: float = DEFAULT_TIMEOUT
    key_timeout: float = DEFAULT_KEY_TIMEOUT

    @dataclass
    class DeployProgress(Message):
        event: Progress

    @dataclass
    class SiteChecked(Message):
        key: tuple[Any, ...]
        report: SiteCheckReport

    @dataclass
    class DeployEnded(Message):
        phase: str
        error: SiteError | None
        record: SiteRecord | None

    record: SiteRecord | None
    site_report: SiteCheckReport | None
    _site_key: tuple[Any, ...] | None
    site_checking: bool
    _cancel: asyncio.Event

    # ------------------------------------------------------------------ what the form answers

    @property
    def deploy_view(self) -> DeploymentView:
        return self.query_one(DeploymentView)

    @property
    def showing_deployment(self) -> bool:
        return self.query_one(ContentSwitcher).current == "tk-deploy-pane"

    def input_values(self) -> dict[str, str]:
        raise NotImplementedError

    def network_values(self) -> dict[str, str]:
        raise NotImplementedError

    def problems(self) -> tuple[Problem, ...]:
        raise NotImplementedError

    def first_invalid(self) -> Any:
        raise NotImplementedError

    def _values_key(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def _refresh_status(self, problems: tuple[Problem, ...] | None = None) -> None:
        raise NotImplementedError

    def _header(self) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ check, confirm, deploy, follow

    def action_deploy(self) -> None:
        if self.form is None or self.showing_deployment or self.site_checking:
            return
        invalid = self.first_invalid()
        if invalid is not None:
            count = sum(1 for p in self.problems() if p.severity is Severity.ERROR)
            self.shell.toast(f"{count} input(s) need fixing: the first one has the focus", severity="warning")
            return
        if self._site_key != self._values_key():
            self.site_checking = True
            self._refresh_status()
            self.check_site(self._values_key())
            return
        self._confirm_deploy()

    @work(exclusive=True, group="toolkit-site-check", exit_on_error=False)
    async def check_site(self, key: tuple[Any, ...]) -> None:
        """The inputs against the site (cloud user, default network, sites branch, vault secret)."""
        assert self.form is not None
        report = await check_inputs_on_site(self.site, self.form, self.input_values(), self.network_values())
        self.post_message(self.SiteChecked(key, report))

    def on_deploy_actions_site_checked(self, message: SiteChecked) -> None:
        self.site_checking = False
        self.site_report, self._site_key = message.report, message.key
        self._revalidate()
        if message.key != self._values_key():
            return  # changed while checking: ctrl+g checks again
        if self.first_invalid() is not None:
            count = len(message.report.errors)
            self.shell.toast(f"{count} input(s) do not fit the site: the first one has the focus", severity="warning")
            return
        self._confirm_deploy()

    def _confirm_deploy(self) -> None:
        assert self.form is not None
        try:
            plan_deploy(self.form, self.current_file())
        except InvalidInputs as error:
            self.shell.report_error(error)
            return
        self.ask_deploy()

    @work(exclusive=True, group="toolkit-confirm", exit_on_error=False)
    async def ask_deploy(self) -> None:
        """Plan as the run will, then confirm saying what it does: a live service made from these
        inputs is followed, not created again (issue 22 item 10: the question said "this creates
        another service" and the run then followed the first); a live toolkit made from other
        inputs refuses the deploy, as in `sitetk toolkit deploy`."""
        assert self.form is not None
        try:
            try:
                plan = await DeployToolkit(self.form, self.current_file()).plan(self.site)
            except SecondToolkitRefused as refused:
                # a toolkit made from other inputs is live: a second one is deployed only when asked
                # for by its name, which this question does (Cancel by default), previewed beside it;
                # a name a live toolkit has stays refused
                if refused.title != "A toolkit is already deployed":
                    raise
                name = self.current_file().name
                plan = await DeployToolkit(self.form, self.current_file(), another=name).plan(self.site)
            own = await find_own_services(self.site, plan)
        except SiteError as error:
            self.shell.report_error(error)
            return
        preview = plan.preview()
        lines = [change.description for change in preview.changes]
        lines += [f"⚠ {w}" for w in preview.warnings]
        if self.site_report is not None:
            lines.append(self.site_report.summary())
            lines += [f"⚠ {c.name}: {c.message}" for c in self.site_report.failed]
            lines += [f"? {c.name} not checked: {c.found}" for c in self.site_report.skipped]
        if own and plan.follows is None:
            first = own[0]
            lines.insert(0, f"⚠ service {first.id} {first.name!r} ({first.state_name}) was made from these inputs: "
                            "it is followed, no service is created")
        elif self.record is not None:
            lines.append(f"service {self.record.service_id} {self.record.service_name!r} recorded earlier is no "
                         "longer live: this creates a new service")
        title = "Follow the toolkit" if own else "Deploy a second toolkit" if plan.beside else "Deploy the toolkit"
        modal = ConfirmModal(title, f"service {own[0].id} {own[0].name!r}" if own
                             else f"{plan.service_name!r} from service template {plan.template_id}",
                             detail="\n".join(lines), command=f"oneflow show {own[0].id}" if own else plan.cli(),
                             destructive=bool(plan.beside) and not own)

        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self.start_deploy(plan)

        self.app.push_screen(modal, answered)

    def start_deploy(self, plan: DeployPlan) -> None:
        self._cancel = asyncio.Event()
        self.query_one(ContentSwitcher).current = "tk-deploy-pane"
        self.deploy_view.begin(plan)
        self.deploy_view.query_one("#dv-scroll").focus()
        self.run_deploy(plan)

    def action_follow(self) -> None:
        """Follow the recorded deployment again (after esc, or when it was started elsewhere)."""
        record = self.record
        if record is None or self.showing_deployment:
            if record is None:
                self.shell.toast("No deployment recorded yet", severity="warning")
            return
        self._cancel = asyncio.Event()
        self.query_one(ContentSwitcher).current = "tk-deploy-pane"
        self.deploy_view.begin_follow(record)
        self.deploy_view.query_one("#dv-scroll").focus()
        self.run_deploy(None, record)

    @work(exclusive=True, group="toolkit-deploy", exit_on_error=False)
    async def run_deploy(self, plan: DeployPlan | None, record: SiteRecord | None = None) -> None:
        """Deploy `plan` (the `DeployToolkit` operation: read-only refusal, typed `Deployed` result),
        or (without a plan) follow the recorded deployment `record` again."""
        def emit(event: Progress) -> None:
            self.post_message(self.DeployProgress(event))

        # following a recorded deployment changes nothing: a read with its own context and cancel
        following = RunContext(emit=emit, cancel=self._cancel)
        try:
            if plan is not None:
                assert self.form is not None
                operation = DeployToolkit(self.form, self.current_file(), timeout=self.deploy_timeout,
                                          key_timeout=self.key_timeout, poll_interval=self.poll_interval,
                                          heartbeat=self.heartbeat)
                deployed = await self.run_change(operation, plan, on_step=emit)
            else:
                assert record is not None
                deployed = await follow_deployment(self.site, record, following, timeout=self.deploy_timeout,
                                                   key_timeout=self.key_timeout, poll_interval=self.poll_interval,
                                                   heartbeat=self.heartbeat)
        except SiteError as error:
            # the service the deployment made or followed, when it got so far (its typed record)
            made = self.change.context.kept(DeployLedger) if plan is not None and self.change is not None else None
            service_id = made.service_id if made is not None else (record.service_id if record is not None else None)
            found = load_site_record(self.site.settings, service_id) if service_id is not None else None
            self.post_message(self.DeployEnded("failed", error, found))
            return
        self.post_message(self.DeployEnded("cancelled" if deployed.cancelled else "done", None, deployed.record))

    def on_deploy_actions_deploy_progress(self, message: DeployProgress) -> None:
        self.deploy_view.apply(message.event)
        self.refresh_bindings()

    def action_move_stuck(self) -> None:
        """Open the hosts screen's move for the database VM the deployment waits for."""
        vm_id = self.deploy_view.move_vm_id if self.showing_deployment else None
        if vm_id is None:
            self.shell.toast("No database VM holds the deployment back", severity="warning")
            return
        self.open_move(vm_id)

    @work(exclusive=True, group="toolkit-move", exit_on_error=False)
    async def open_move(self, vm_id: int) -> None:
        from tui.screens.hosts_move import MoveModal

        inventory = await load_inventory(self.site)
        if inventory.db_vm(vm_id) is None:
            raise SiteError(f"VM {vm_id} is not a document-database VM now",
                            "The hosts screen lists the database VMs and their verdicts.")
        self.app.push_screen(MoveModal(inventory, (vm_id,)))

    def on_deploy_actions_deploy_ended(self, message: DeployEnded) -> None:
        if message.record is not None:
            self.record = message.record
            self._header()
        view = self.deploy_view
        if message.phase == "done":
            view.finished(message.record)
            self.shell.toast(f"Toolkit deployed: service {view.service_id} RUNNING")
        elif message.phase == "cancelled":
            view.cancelled(message.record)
        elif message.error is not None:
            view.failed(message.error, message.record)
            self.shell.toast(message.error.title, severity="error")

    def action_escape(self) -> None:
        if not self.showing_deployment:
            return
        if self.deploy_view.running:
            self._cancel.set()
            if self.change is not None:
                self.change.cancel()
            self.shell.toast("Stopping: the service is left as it is")
            return
        self.query_one(ContentSwitcher).current = "tk-form-pane"
        name = self.fields.get(NAME_FIELD)
        if name is not None:
            name.focus()

    def action_key_view(self) -> None:
        self.shell.open_screen("toolkit-key")
