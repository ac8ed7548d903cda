"""The key view: the automation VM, the public key it generated, and giving it to the cloud user.

Shows the recorded toolkit deployment (refreshed from the service: its roles' VMs by ID), the
automation VM (ID, name, state, addresses) and the key it published in its USER_TEMPLATE,
checked as an SSH public key (type, fingerprint, comment), then the cloud user named in the
automation's cloud-username input with the keys it already has and whether the automation key
is among them.

`g` gives the key to that user (operation 5, the `GrantKey` operation): the preview shown here
(merge-mode update of SSH_PUBLIC_KEY only, the keys already there kept, and `oneuser update
<user> <file> --append`), the operation's confirmation as the operation modal asks it
(`confirmation_modal`), then the run (`run_change`: read-only refusal, the update, read back; its
steps on the status line, esc cancels). A second grant changes nothing and says so. `c`
waits for the key when the VM has not published it yet; `r` refreshes. With `--read-only` the
view shows everything but offers no grant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker

from tui.domain.site_record import SiteRecord
from tui.domain.ssh_keys import SshKeyError, parse_public_key
from tui.errors import SiteError
from tui.procedures.operation_stream import stream_run
from tui.procedures.progress import Progress
from tui.procedures.site_record import load_site_record, save_site_record
from tui.procedures.toolkit.grant_key import GrantKey, GrantPlan, plan_grant
from tui.procedures.toolkit.instantiate import DEFAULT_KEY_TIMEOUT, DEFAULT_POLL_INTERVAL, capture_automation_key
from tui.procedures.toolkit.service import AutomationKey, read_automation_key, refresh_site_record
from tui.screens.base import CANCEL_CHANGE, SiteScreen
from tui.screens.operation_modal import confirmation_modal


def _pairs(rows: list[tuple[str, Text | str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(Text(key), value if isinstance(value, Text) else Text(value))
    return table


def _heading(text: str) -> Text:
    return Text(text, style="bold underline")


def _key_label(line: str) -> Text:
    try:
        key = parse_public_key(line)
    except SshKeyError:
        return Text(line[:60] + ("…" if len(line) > 60 else ""), style="dim")
    return Text(key.short())


class KeyScreen(SiteScreen):
    """The automation key and its grant (see the module docstring)."""

    SCREEN_NAME = "toolkit-key"
    TITLE = "Automation key"
    CSS_PATH = "toolkit.tcss"
    MUTATING_ACTIONS = frozenset({"grant"})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("g", "grant", "Give key to user", id="key.grant"),
        Binding("c", "capture", "Wait for key", id="key.capture"),
        Binding("r", "refresh", "Refresh", id="key.refresh"),
        CANCEL_CHANGE,
    ]

    capture_timeout: float = DEFAULT_KEY_TIMEOUT
    poll_interval: float = DEFAULT_POLL_INTERVAL

    @dataclass
    class Loaded(Message):
        record: SiteRecord | None
        automation: AutomationKey | None
        problem: str
        plan: GrantPlan | None
        plan_error: SiteError | None

    @dataclass
    class Status(Message):
        text: Text
        toast: str = ""

    def __init__(self) -> None:
        super().__init__()
        self.record: SiteRecord | None = None
        self.automation: AutomationKey | None = None
        self.problem = ""
        self.plan: GrantPlan | None = None
        self.plan_error: SiteError | None = None
        self.load_pending = True
        self.busy = False

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="key-body"):
            yield Static(Text("Reading the recorded toolkit deployment …"), id="key-content")
        yield Static("", id="key-status")

    def on_mount(self) -> None:
        self.refresh_view()

    # ------------------------------------------------------------------ loading

    @work(exclusive=True, group="key-load", exit_on_error=False)
    async def refresh_view(self) -> None:
        record = load_site_record(self.site.settings)
        if record is None:
            self.post_message(self.Loaded(None, None, "", None, None))
            return
        record = await refresh_site_record(self.site, record)
        automation: AutomationKey | None = None
        problem = ""
        try:
            automation = await read_automation_key(self.site, record)
        except SiteError as error:
            problem = f"{error.title}. {error.detail}"
        if automation is not None and automation.key is not None and automation.key.line != record.automation_public_key:
            record = replace(record, automation_public_key=automation.key.line)
        save_site_record(self.site.settings, record)
        plan: GrantPlan | None = None
        plan_error: SiteError | None = None
        if automation is not None and automation.key is not None:
            try:
                plan = await plan_grant(self.site, automation.key, record.cloud_username)
            except SiteError as error:
                plan_error = error
        self.post_message(self.Loaded(record, automation, problem, plan, plan_error))

    def on_key_screen_loaded(self, message: Loaded) -> None:
        self.load_pending = False
        self.record, self.automation, self.problem = message.record, message.automation, message.problem
        self.plan, self.plan_error = message.plan, message.plan_error
        self.refresh_bindings()
        self.shell.mark_refreshed()
        self.query_one("#key-content", Static).update(self.render_content())
        self._status(self._hint())

    def on_key_screen_status(self, message: Status) -> None:
        self._status(message.text)
        if message.toast:
            self.shell.toast(message.toast)

    def _status(self, text: Text) -> None:
        self.query_one("#key-status", Static).update(text)

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        self.load_pending = False
        self.busy = False
        if isinstance(error, SiteError):
            self._status(Text.assemble(("✘ ", "bold red"), error.title))
        super().worker_failed(worker, error)

    # ------------------------------------------------------------------ rendering

    def render_content(self) -> RenderableType:
        record = self.record
        if record is None:
            # read-only mode hides the Toolkit screen (registry `mutates=True`): name what can run
            deploy = ("Deploying changes the cloud, so read-only mode hides the Toolkit screen: run "
                      "`sitetk toolkit deploy --input FILE` (without --read-only)" if self.read_only
                      else "Deploy the toolkit on the Toolkit screen (:toolkit)")
            return Text.assemble(
                ("No toolkit deployment recorded for this site.\n\n", "bold"),
                f"{deploy}, or record a service deployed elsewhere with `sitetk toolkit vms --service ID`.")
        parts: list[RenderableType] = [_heading("Deployment"), _pairs([
            ("Service", f"{record.service_id} {record.service_name!r}  {record.state}"),
            ("Template", f"{record.template_id} {record.template_name!r}" if record.template_id >= 0 else "-"),
            ("Platform", record.platform_version or "-"),
        ])]
        vm = record.automation_vm
        parts.append(Text(""))
        parts.append(_heading("Automation VM"))
        if vm is None:
            parts.append(Text(self.problem or f"No VM in role {record.automation_role!r} yet.", style="yellow"))
        else:
            state = self.automation.vm_state if self.automation else "?"
            parts.append(_pairs([("VM", f"{vm.vm_id} {vm.name}"), ("State", state),
                                 ("Addresses", ", ".join(vm.ips) or "-")]))
        parts.append(Text(""))
        parts.append(_heading("Public key"))
        parts.append(self._render_key())
        parts.append(Text(""))
        parts.append(_heading("Cloud user"))
        parts.append(self._render_user())
        return Group(*parts)

    def _render_key(self) -> RenderableType:
        automation = self.automation
        attribute = self.site.naming.automation_key_attribute
        if automation is None:
            return Text("-", style="dim")
        if automation.problem:
            return Text.assemble(("✘ ", "bold red"), automation.problem)
        if automation.key is None:
            return Text.assemble(("◐ ", "yellow"), f"not published yet: VM {automation.vm_id} has no {attribute} in its "
                                 "USER_TEMPLATE. The appliance publishes it once its automation server runs; "
                                 "c waits for it.")
        key = automation.key
        return Group(
            _pairs([("Type", key.type), ("Fingerprint", key.fingerprint), ("Comment", key.comment or "-"),
                    ("Source", f"VM {automation.vm_id} USER_TEMPLATE/{attribute}")]),
            Text(key.line, style="green"),
        )

    def _render_user(self) -> RenderableType:
        record = self.record
        if record is None:
            return Text("-")
        if not record.cloud_username:
            return Text("The deployment records no cloud user (its cloud-username input).", style="yellow")
        if self.plan_error is not None:
            return Text.assemble(("✘ ", "bold red"), self.plan_error.title, "\n", (self.plan_error.detail, "dim"))
        plan = self.plan
        if plan is None:
            return Text(f"{record.cloud_username} (the key is needed first)", style="dim")
        rows: list[tuple[str, Text | str]] = [("User", f"{plan.user_id} {plan.user_name}")]
        keys = Text()
        for n, line in enumerate(plan.existing):
            keys.append("\n" if n else "")
            keys.append_text(_key_label(line))
        rows.append((f"SSH_PUBLIC_KEY ({len(plan.existing)})", keys if plan.existing else Text("(none)", style="dim")))
        if plan.already:
            rows.append(("Automation key", Text("✔ granted: the user already has this key", style="green")))
        else:
            action = "" if self.read_only else ": g gives it"
            rows.append(("Automation key", Text(f"✘ not granted yet{action}", style="yellow")))
            if not self.read_only:
                rows.append(("Equivalent", Text(f"$ {plan.cli()}", style="dim")))
        return _pairs(rows)

    def _hint(self) -> Text:
        if self.read_only:
            return Text("read-only: the grant is hidden · r refresh", style="dim")
        if self.plan is not None and self.plan.already:
            return Text("the cloud user has the automation key · r refresh", style="dim")
        if self.plan is not None:
            return Text("g gives the key to the cloud user (preview first) · r refresh", style="dim")
        return Text("c waits for the key · r refresh", style="dim")

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = super().check_action(action, parameters)  # False: hidden in read-only mode
        if not allowed:
            return allowed
        if action == "grant" and (self.plan is None or self.plan.already):
            return None  # shown disabled: nothing to grant (yet)
        if action == "capture" and self.automation is not None and self.automation.key is not None:
            return None
        return allowed

    def action_refresh(self) -> None:
        if not self.busy:
            self.refresh_view()

    def action_capture(self) -> None:
        if self.record is None or self.busy:
            return
        if self.automation is not None and self.automation.key is not None:
            self.shell.toast("The key is already captured")
            return
        self.busy = True
        self.capture(self.record)

    @work(exclusive=True, group="key-capture", exit_on_error=False)
    async def capture(self, record: SiteRecord) -> None:
        try:
            async for event in stream_run(partial(capture_automation_key, self.site, record,
                                                  timeout=self.capture_timeout, poll_interval=self.poll_interval)):
                self.post_message(self.Status(Text(event.message)))
        finally:
            self.busy = False
        self.refresh_view()

    def action_grant(self) -> None:
        plan = self.plan
        if plan is None or self.busy:
            if plan is None:
                self.shell.toast("Nothing to grant yet: the key or the user is missing", severity="warning")
            return
        if plan.already:
            self.shell.toast(f"{plan.user_name} already has the key: nothing to change")
            return
        operation = GrantKey(plan.key.line, plan.user_name, self.record)
        question = operation.confirmation(plan)
        if question is None:
            return
        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self.busy = True
                self.grant(operation, plan)

        self.app.push_screen(confirmation_modal(question), answered)

    @work(exclusive=True, group="key-grant", exit_on_error=False)
    async def grant(self, operation: GrantKey, plan: GrantPlan) -> None:
        """Run the grant operation (read-only refusal, audit and read-back in the operation)."""
        def step(event: Progress) -> None:
            self.post_message(self.Status(Text.assemble(event.message, ("  · esc cancels", "dim"))))

        try:
            await self.run_change(operation, plan, on_step=step)
        finally:
            self.busy = False
        seen = self.change.events if self.change is not None else []
        if seen:
            self.post_message(self.Status(Text(seen[-1].message), toast=seen[-1].message))
        self.refresh_view()
