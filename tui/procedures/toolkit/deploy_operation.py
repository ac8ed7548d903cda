"""Operations 3 and 4 as an operation (tui.procedures.operation): instantiate the toolkit and follow it.

`DeployToolkit(form, file, extra_values)` plans with `plan_deploy` (the inputs checked, the
request built; `extra_values` are the secrets left out of the file), previews the instantiation
with `oneflow-template instantiate`, confirms naming the service, then runs `deploy_toolkit`
(instantiate, record, and unless `wait=False` follow to RUNNING and capture the key). The typed
result `Deployed` carries the service ID and the site record as it was saved. A cancel stops the
waiting and leaves the service as it is.

The run's one audit record (`toolkit.instantiate` on "service template <id>", written by
`run_operation`) names the request's inputs (names, never values), the service made or followed
again (`reused`), and for a run that failed after the instantiation, the service it left. `follow_again` follows a recorded deployment again with
the same events and result (the console's follow after esc).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, AsyncIterator, ClassVar, Mapping

from tui.domain.input_file import InputFile
from tui.domain.site_record import SiteRecord, record_to_json
from tui.errors import SiteError
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress
from tui.procedures.site_record import load_site_record
from tui.procedures.toolkit.instantiate import (
    DEFAULT_HEARTBEAT,
    DEFAULT_KEY_TIMEOUT,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TIMEOUT,
    DeployPlan,
    DeployStep,
    deploy_toolkit,
    follow_deployment,
    instantiate_details,
    plan_deploy,
)
from tui.procedures.toolkit.own_service import SecondToolkitRefused, live_toolkits, same_request, second_toolkit_refusal
from tui.procedures.toolkit.service import ToolkitForm

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


@dataclass(frozen=True)
class Deployed:
    """The deployment's result: the service created and its record (None before it was saved)."""

    service_id: int | None
    record: SiteRecord | None
    #: the wait was cancelled: the service was left as it is
    cancelled: bool = False
    #: no service was made: one an earlier run made from the same inputs was followed
    reused: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"service_id": self.service_id, "record": record_to_json(self.record) if self.record else None,
                "cancelled": self.cancelled, "reused": self.reused}


@dataclass(frozen=True)
class DeployToolkit(Operation[DeployPlan, Deployed]):
    """Instantiate the toolkit from `file` against `form`'s template (see the module docstring)."""

    form: ToolkitForm
    file: InputFile
    extra_values: Mapping[str, str] = field(default_factory=dict, repr=False)
    #: the input file's path, named in the preview's CLI command
    file_path: str | None = None
    wait: bool = True
    timeout: float = DEFAULT_TIMEOUT
    key_timeout: float = DEFAULT_KEY_TIMEOUT
    poll_interval: float = DEFAULT_POLL_INTERVAL
    heartbeat: float = DEFAULT_HEARTBEAT
    #: a second toolkit beside a live one is deployed only when asked for by its name (the file's)
    another: str | None = None

    title: ClassVar[str] = "Deploy the toolkit"
    # a stop ends the waiting: the service, once created, is left as it is (nothing is undone)
    on_stop: ClassVar[str] = ("stopping the wait; a service already created is left as it is (the same deploy run "
                              "again follows it)")
    still_stopping: ClassVar[str] = "still stopping the wait"
    refusal: ClassVar[str] = "deploying is a change to the cloud"
    action: ClassVar[str] = "toolkit.instantiate"

    async def plan(self, site: "SiteConnection") -> DeployPlan:
        plan = plan_deploy(self.form, self.file, self.extra_values)
        services = await site.flow.list_services()
        own = sorted((s for s in services if same_request(s, plan)), key=lambda s: s.id, reverse=True)
        if own:  # a re-run follows the service it made (the newest, as `deploy_toolkit` does): the preview says so
            return replace(plan, follows=(own[0].id, own[0].name, own[0].state_name))
        # anything else live is another toolkit: refused, unless asked for by name (then previewed beside it)
        others = tuple(live_toolkits(services, site.naming))
        values = {**self.file.value_map(), **self.extra_values}
        refusal = second_toolkit_refusal(plan, others, values, site.naming, self.another)
        if refusal is not None:
            raise SecondToolkitRefused("A toolkit is already deployed" if self.another != plan.service_name
                                       else "That name is taken by a live toolkit", refusal)
        return replace(plan, beside=tuple(f"{s.state_name}: service {s.id} {s.name!r}" for s in others))

    def preview(self, plan: DeployPlan) -> Preview:
        return plan.preview(self.file_path) if self.file_path else plan.preview()

    def confirmation(self, plan: DeployPlan) -> Confirmation | None:
        return Confirmation("Instantiate", f"service template {plan.template_id} as {plan.service_name!r}",
                            command=plan.cli())

    async def execute(self, site: "SiteConnection", plan: DeployPlan, context: RunContext) -> Deployed:
        return await _followed(site, deploy_toolkit(site, plan, wait=self.wait, timeout=self.timeout,
                                                    key_timeout=self.key_timeout, poll_interval=self.poll_interval,
                                                    cancel=context.cancel, heartbeat=self.heartbeat), context)

    def audit_details(self, plan: DeployPlan, result: Deployed) -> Mapping[str, Any] | None:
        details: dict[str, Any] = {**instantiate_details(plan), "service_id": result.service_id}
        if result.reused:
            details.update(reused=True, state=result.record.state if result.record else "",
                           reason="a service made earlier from the same inputs is followed instead of creating another")
        if result.cancelled:
            details["cancelled"] = "the wait was cancelled; the service was left as it is"
        return details

    def audit_target(self, plan: DeployPlan, result: Deployed) -> str:
        return self.preview(plan).target

    def audit_failure(self, plan: DeployPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        made = [e.outcome for e in context.events if isinstance(e.outcome, DeployStep)]
        details: dict[str, Any] = {**instantiate_details(plan), "detail": error.detail}
        if made:  # instantiated (or followed again) before it failed: the service it leaves
            details.update(service_id=made[-1].service_id, reused=any(step.reused for step in made))
        return details


async def follow_again(site: "SiteConnection", record: SiteRecord, context: RunContext, *,
                       timeout: float = DEFAULT_TIMEOUT, key_timeout: float = DEFAULT_KEY_TIMEOUT,
                       poll_interval: float = DEFAULT_POLL_INTERVAL, heartbeat: float = DEFAULT_HEARTBEAT) -> Deployed:
    """Follow a recorded deployment again (it reads and records, it changes no cloud object):
    events to `context`, `context.cancel` stops the waiting; the same typed result as a deployment."""
    return await _followed(site, follow_deployment(site, record, timeout=timeout, key_timeout=key_timeout,
                                                   poll_interval=poll_interval, cancel=context.cancel,
                                                   heartbeat=heartbeat), context, record.service_id)


async def _followed(site: "SiteConnection", events: AsyncIterator[Progress], context: RunContext,
                    service_id: int | None = None) -> Deployed:
    cancelled = reused = False
    async for event in events:
        if isinstance(event.outcome, DeployStep):
            service_id = event.outcome.service_id
            cancelled = cancelled or event.outcome.cancelled
            reused = reused or event.outcome.reused
        context.report(event)
    record = load_site_record(site.settings, service_id) if service_id is not None else None
    return Deployed(service_id, record, cancelled, reused)
