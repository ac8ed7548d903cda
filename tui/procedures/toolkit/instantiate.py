"""Operations 3 and 4 as one operation, `DeployToolkit`: instantiate the toolkit and follow it.

1. `plan_deploy(form, file, extra_values)` checks the inputs (the same checks as the form) and
   builds the instantiate request with the key names of the cloud's version (`custom_attrs_values`
   on 6.x, `user_inputs_values` from 7.0); secrets left out of the file come in `extra_values`.
   Nothing is sent; `DeployPlan.preview()` says what will be created and the platform CLI
   command (`oneflow-template instantiate <id> <input file>`).
2. `deploy_toolkit(site, plan, context)` instantiates through the multi-VM service API (the
   request's secrets are registered with the audit redactor and removed from any error text),
   writes the site record at once, then (unless `wait=False`) follows the service to RUNNING,
   records its VMs and captures the automation key (`tui.procedures.toolkit.follow`), reporting
   `Progress` to the context and returning `Deployed`.

The service is never changed after the instantiation: no recover, no delete. Instantiation is not
idempotent on the platform, so before instantiating, `deploy_toolkit` looks for a live service an
earlier run made from the same name and inputs (`tui.procedures.toolkit.own_service`) and follows it
instead of creating another: a re-run after a failure, a cancel or a dropped session continues
with the service it made (a failed one is reported as failed, with its log). A different name or
any other input value makes a new service.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui.domain.input_file import InputFile, InputFileError, merge_template, values_key
from tui.domain.secret_names import MASK
from tui.domain.services import Service
from tui.domain.severity import Severity
from tui.domain.site_record import SiteRecord, record_to_json
from tui.domain.toolkit_inputs import Problem
from tui.errors import SiteError
from tui.procedures.audit import REDACTOR
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site_record import load_site_record, save_site_record
from tui.procedures.toolkit.follow import (
    DEFAULT_HEARTBEAT,
    DEFAULT_KEY_TIMEOUT,
    DEFAULT_POLL_INTERVAL,
    DEFAULT_TIMEOUT,
    INPUT_FILE_PLACEHOLDER,
    STEP_INSTANTIATE,
    Deployed,
    DeploymentFailed,
    DeployStep,
    KeyNotPublished,
    capture_automation_key,
    follow_deployment,
    follow_steps,
)
from tui.procedures.toolkit.own_service import (
    SecondToolkitRefused,
    find_own_services,
    live_toolkits,
    same_request,
    second_toolkit_refusal,
)
from tui.procedures.toolkit.service import ToolkitForm, cloud_username_of, record_for_service

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

__all__ = [  # the following's names too, so that callers import a deployment's names from here
    "DEFAULT_HEARTBEAT", "DEFAULT_KEY_TIMEOUT", "DEFAULT_POLL_INTERVAL", "DEFAULT_TIMEOUT", "DeployLedger", "DeployPlan",
    "DeployStep", "DeployToolkit", "Deployed", "DeploymentFailed", "InvalidInputs", "KeyNotPublished", "adopt_service",
    "capture_automation_key", "deploy_toolkit", "follow_deployment", "follow_steps", "instantiate_details",
    "instantiate_service", "plan_deploy",
]

class InvalidInputs(SiteError):
    """The inputs have errors; `problems` lists them (errors and warnings)."""

    def __init__(self, problems: tuple[Problem, ...]) -> None:
        errors = [p for p in problems if p.severity is Severity.ERROR]
        detail = "\n".join(f"{p.name}: {p.message}" for p in errors)
        super().__init__(f"{len(errors)} input(s) need fixing", detail + "\nFix them in the form or the input file, then retry.")
        self.problems = problems


@dataclass(frozen=True)
class DeployPlan:
    """What `deploy_toolkit` will send, checked; the secrets never appear in repr or JSON."""

    template_id: int
    template_name: str
    service_name: str
    platform_version: str
    values_key: str
    merge: Mapping[str, Any] = field(repr=False)
    secrets: tuple[str, ...] = field(repr=False, default=())
    secret_names: frozenset[str] = frozenset()
    role_names: tuple[str, ...] = ()
    networks: tuple[tuple[str, str], ...] = ()
    cloud_username: str = ""
    warnings: tuple[str, ...] = ()
    #: (id, name, state) of the live service made earlier from this name and these inputs: the run
    #: follows it and creates nothing (`DeployToolkit.plan` finds it; None: a service is created)
    follows: tuple[int, str, str] | None = None
    #: the live toolkits (made from other inputs) this one is deployed beside, asked for by its
    #: name (`--another`): "RUNNING: service 3 'Site Toolkit'"
    beside: tuple[str, ...] = ()

    @property
    def step_names(self) -> tuple[str, ...]:
        return (STEP_INSTANTIATE, *follow_steps(self.role_names))

    def redacted_merge(self) -> dict[str, Any]:
        values = self.merge.get(self.values_key, {})
        return {**self.merge, self.values_key: {k: (MASK if k in self.secret_names and v else v) for k, v in values.items()}}

    def cli(self, file_path: str = INPUT_FILE_PLACEHOLDER) -> str:
        shown = file_path if file_path == INPUT_FILE_PLACEHOLDER else shlex.quote(file_path)
        return f"oneflow-template instantiate {self.template_id} {shown}"

    def preview(self, file_path: str = INPUT_FILE_PLACEHOLDER) -> Preview:
        target = f"service template {self.template_id}"
        if self.follows is not None:  # what the run does: it follows the service, it creates none
            service_id, name, state = self.follows
            change = Change(f"service {service_id} {name!r} ({state}) was made from these inputs: it is followed, no "
                            "service is created", f"oneflow show {service_id}", "none")
            return Preview(f"Follow the toolkit service {service_id} {name!r}", (change,), warnings=self.warnings,
                           target=target)
        networks = ", ".join(f"{name} -> network {ident}" for name, ident in self.networks) or "none"
        values = self.merge.get(self.values_key, {})
        change = Change(
            f"create service {self.service_name!r} from service template {self.template_id} {self.template_name!r}: "
            f"roles {', '.join(self.role_names) or '-'}; {len(values)} inputs as {self.values_key} "
            f"(platform {self.platform_version}); networks {networks}",
            self.cli(file_path), "create")
        beside = tuple(f"the site already has a toolkit {live}: this deploys a second toolkit beside it, asked for "
                       f"by its name {self.service_name!r}" for live in self.beside)
        return Preview(f"Instantiate {'a second toolkit' if self.beside else 'the toolkit'} as {self.service_name!r}",
                       (change,), warnings=beside + self.warnings, target=target)

    def as_json(self) -> dict[str, Any]:
        return {"template_id": self.template_id, "template_name": self.template_name, "name": self.service_name,
                "platform_version": self.platform_version, "values_key": self.values_key,
                "roles": list(self.role_names), "networks": [{n: {"id": i}} for n, i in self.networks],
                "cloud_username": self.cloud_username, "warnings": list(self.warnings),
                "follows": ({"id": self.follows[0], "name": self.follows[1], "state": self.follows[2]}
                            if self.follows else None), "beside": list(self.beside),
                "merge_template": self.redacted_merge()}


def plan_deploy(form: ToolkitForm, file: InputFile, extra_values: Mapping[str, str] | None = None) -> DeployPlan:
    """Check the inputs and build the request; raises `InvalidInputs` listing every error."""
    extra = dict(extra_values or {})
    values = {**file.value_map(), **extra}
    networks = dict(file.networks)
    problems = form.problems(file.name, values, networks)
    if any(p.severity is Severity.ERROR for p in problems):
        raise InvalidInputs(problems)
    try:
        merge = merge_template(file, form.platform_version, fields=form.fields, extra_values=extra)
    except (InputFileError, ValueError) as exc:
        raise InvalidInputs((Problem("file", Severity.ERROR, str(exc)),)) from None
    warnings = [f"{p.name}: {p.message}" for p in problems if p.severity is Severity.WARNING]
    warnings += [f"{name}: the template declares no such input; it is sent anyway" for name in form.unknown_inputs(values)]
    declared = {spec.name for spec in form.networks}
    warnings += [f"network {name}: the template declares no such network; it is sent anyway"
                 for name in networks if name not in declared]
    if form.missing_inputs:
        warnings.append(f"the template does not declare {', '.join(form.missing_inputs)} (another toolkit release?)")
    secret_values = tuple(dict.fromkeys(v for k, v in values.items() if k in form.secrets and v))
    return DeployPlan(
        template_id=form.template.id,
        template_name=form.template.name,
        service_name=file.name,
        platform_version=form.platform_version,
        values_key=values_key(form.platform_version),
        merge=merge,
        secrets=secret_values,
        secret_names=form.secrets,
        role_names=tuple(role.name for role in form.template.roles),
        networks=file.networks,
        cloud_username=cloud_username_of(values, form.naming),
        warnings=tuple(warnings),
    )


# -- instantiate ------------------------------------------------------------------------------


def instantiate_details(plan: DeployPlan) -> dict[str, Any]:
    """What the deployment's audit record says about the request: names of the inputs, never values."""
    return {"name": plan.service_name, "platform_version": plan.platform_version, "values_key": plan.values_key,
            "inputs": sorted(plan.merge.get(plan.values_key, {})), "networks": [list(n) for n in plan.networks],
            "cloud_username": plan.cloud_username}


async def instantiate_service(site: "SiteConnection", plan: DeployPlan) -> SiteRecord:
    """Send the instantiate request, write the first site record; returns the record. The audit
    record is the `DeployToolkit` operation's."""
    for secret in plan.secrets:
        REDACTOR.register(secret)
    try:
        service = await site.flow.instantiate(plan.template_id, plan.merge, secrets=plan.secrets)
    except SiteError as error:
        raise SiteError(f"Instantiation refused: {error.title}", error.detail, retryable=error.retryable,
                        code=error.code) from None
    record = record_for_service(site, service, plan.template_id, plan.template_name, plan.platform_version,
                                plan.cloud_username)
    save_site_record(site.settings, record)
    return record


def adopt_service(site: "SiteConnection", plan: DeployPlan, service: Service) -> SiteRecord:
    """Follow a service an earlier run made from the same inputs: its record (kept when there is
    one); the operation's audit record says it was reused."""
    for secret in plan.secrets:
        REDACTOR.register(secret)
    record = load_site_record(site.settings, service.id)
    if record is None:
        record = record_for_service(site, service, plan.template_id, plan.template_name, plan.platform_version,
                                    plan.cloud_username)
        save_site_record(site.settings, record)
    return record


@dataclass
class DeployLedger:
    """What a deployment did so far, for the failure record: the service it made or followed."""

    service_id: int | None = None
    reused: bool = False


async def deploy_toolkit(
    site: "SiteConnection",
    plan: DeployPlan,
    context: RunContext,
    *,
    wait: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    key_timeout: float = DEFAULT_KEY_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    heartbeat: float = DEFAULT_HEARTBEAT,
    ledger: DeployLedger | None = None,
) -> Deployed:
    """Instantiate, then follow (see the module docstring); events to `context`, `context.cancel`
    stops the waiting. `ledger` keeps the service as soon as it is made (or found)."""
    ledger = ledger if ledger is not None else DeployLedger()
    total = len(plan.step_names)
    context.report(Progress(STEP_INSTANTIATE, 0, total, f"{plan.cli()} ({plan.values_key})", ProgressState.RUNNING,
                            {"values_key": plan.values_key}))
    own = await find_own_services(site, plan)
    if own:
        record = adopt_service(site, plan, own[0])
        ledger.service_id, ledger.reused = record.service_id, True
        others = ", ".join(str(s.id) for s in own[1:])
        context.report(Progress(STEP_INSTANTIATE, 1, total,
                                f"service {own[0].id} {own[0].name!r} ({own[0].state_name}) was made earlier from the "
                                "same inputs: following it instead of creating another"
                                + (f" (services {others} were made from them too: `oneflow delete <id>` removes one)"
                                   if others else ""), ProgressState.SKIPPED,
                                {"service_id": record.service_id, "values_key": plan.values_key, "reused": True,
                                 "same_inputs": [s.id for s in own], "record": record_to_json(record)},
                                DeployStep(record.service_id)))
    else:
        record = await instantiate_service(site, plan)
        ledger.service_id = record.service_id
        context.report(Progress(STEP_INSTANTIATE, 1, total,
                                f"service {record.service_id} {record.service_name!r} created", ProgressState.DONE,
                                {"service_id": record.service_id, "values_key": plan.values_key,
                                 "record": record_to_json(record)}, DeployStep(record.service_id)))
    if not wait:
        return Deployed(record.service_id, record, reused=ledger.reused)
    followed = await follow_deployment(site, record, context, timeout=timeout, key_timeout=key_timeout,
                                       poll_interval=poll_interval, done=1, total=total, heartbeat=heartbeat)
    return replace(followed, reused=ledger.reused)


@dataclass(frozen=True)
class DeployToolkit(Operation[DeployPlan, Deployed]):
    """Operations 3 and 4: instantiate the toolkit from `file` against `form`'s template, then
    follow it (see the module docstring).

    Plans with `plan_deploy` (`extra_values` are the secrets left out of the file), previews the
    instantiation with `oneflow-template instantiate`, confirms naming the service. A cancel stops
    the waiting and leaves the service as it is. The run's one audit record (`toolkit.instantiate`
    on "service template <id>") names the request's inputs (names, never values), the service made
    or followed again (`reused`), and for a run that failed after the instantiation, the service
    it left (its `DeployLedger`)."""

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
        return await deploy_toolkit(site, plan, context, wait=self.wait, timeout=self.timeout,
                                    key_timeout=self.key_timeout, poll_interval=self.poll_interval,
                                    heartbeat=self.heartbeat, ledger=context.keep(DeployLedger()))

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
        details: dict[str, Any] = {**instantiate_details(plan), "detail": error.detail}
        ledger = context.kept(DeployLedger)
        if ledger is not None and ledger.service_id is not None:  # instantiated (or followed) before it failed
            details.update(service_id=ledger.service_id, reused=ledger.reused)
        return details
