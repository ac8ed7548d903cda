"""Operations 3 and 4: instantiate the toolkit, follow it to RUNNING, record its VMs and the key.

1. `plan_deploy(form, file, extra_values)` checks the inputs (the same checks as the form) and
   builds the instantiate request with the key names of the cloud's version (`custom_attrs_values`
   on 6.x, `user_inputs_values` from 7.0); secrets left out of the file come in `extra_values`.
   Nothing is sent; `DeployPlan.preview()` says what will be created and the platform CLI
   command (`oneflow-template instantiate <id> <input file>`).
2. `deploy_toolkit(site, plan)` instantiates through the multi-VM service API (the request's
   secrets are registered with the audit redactor and removed from any error text), writes the
   site record at once, then (unless `wait=False`) follows the service and each role live
   (`follow_deployment`), yielding `Progress`:
   - while waiting, every `heartbeat` seconds each waiting role and the service say how long they
     have waited, for what and why (`deploy_waits`: a VM's state, READY=YES missing, a database
     VM whose host cannot run its database, with `sitetk hosts move <id>`);
   - FAILED_DEPLOYING, WARNING or any failed state raises `DeploymentFailed` carrying the
     service's log; a timeout raises `SiteError` saying which roles and VMs are stuck and why;
     `cancel` stops waiting and leaves the service as it is (the last event says so);
   - at RUNNING the VM IDs and addresses of each role are recorded from the service's role nodes
     (never by VM name, so deployments side by side do not mix), in the site record;
   - the automation VM's public key is captured from its USER_TEMPLATE as soon as it is
     published (often before RUNNING), checked as an SSH public key, and recorded;
     `KeyNotPublished` when it does not appear within the key timeout.

The service is never changed after the instantiation: no recover, no delete. Instantiation is not
idempotent on the platform, so before instantiating, `deploy_toolkit` looks for a live service an
earlier run made from the same name and inputs (`tui.procedures.toolkit.own_service`) and follows it
instead of creating another: a re-run after a failure, a cancel or a dropped session continues
with the service it made (a failed one is reported as failed, with its log). A different name or
any other input value makes a new service.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, AsyncIterator, Mapping

from tui.domain.input_file import InputFile, InputFileError, merge_template, values_key
from tui.domain.secret_names import MASK
from tui.domain.services import Service, ServiceRole, delete_command, service_state_note
from tui.domain.severity import Severity
from tui.domain.site_record import SiteRecord, record_to_json
from tui.domain.toolkit_inputs import Problem
from tui.errors import SiteError
from tui.procedures.audit import REDACTOR
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site_record import load_site_record, save_site_record
from tui.procedures.toolkit.deploy_waits import RoleWait, explain_roles, format_elapsed
from tui.procedures.toolkit.own_service import find_own_services
from tui.procedures.toolkit.service import (
    AutomationKey,
    ToolkitForm,
    cloud_username_of,
    read_automation_key,
    record_for_service,
    recorded_roles,
    refresh_site_record,
    utc_now,
)
from tui.timing import monotonic

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

DEFAULT_TIMEOUT = 1800.0
DEFAULT_KEY_TIMEOUT = 600.0
DEFAULT_POLL_INTERVAL = 2.0
#: seconds between two reports of what a waiting deployment waits for
DEFAULT_HEARTBEAT = 10.0
INPUT_FILE_PLACEHOLDER = "<input file>"

STEP_INSTANTIATE = "instantiate"
STEP_SERVICE = "service"
STEP_RECORD = "record VMs"
STEP_KEY = "automation key"
STEP_DONE = "deployment"

_FAILED_WORDS = ("FAILED", "WARNING")


def role_step(name: str) -> str:
    return f"role {name}"


def follow_steps(role_names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The steps `follow_deployment` reports, in order."""
    return (STEP_SERVICE, *(role_step(r) for r in role_names), STEP_RECORD, STEP_KEY, STEP_DONE)


class InvalidInputs(SiteError):
    """The inputs have errors; `problems` lists them (errors and warnings)."""

    def __init__(self, problems: tuple[Problem, ...]) -> None:
        errors = [p for p in problems if p.severity is Severity.ERROR]
        detail = "\n".join(f"{p.name}: {p.message}" for p in errors)
        super().__init__(f"{len(errors)} input(s) need fixing", detail + "\nFix them in the form or the input file, then retry.")
        self.problems = problems


class DeploymentFailed(SiteError):
    """The service ended in a failed or WARNING state; `log` is the service's log."""

    def __init__(self, title: str, detail: str, service_id: int, state: str, log: tuple[str, ...]) -> None:
        super().__init__(title, detail)
        self.service_id = service_id
        self.state = state
        self.log = log


class KeyNotPublished(SiteError):
    """The automation VM did not publish its public key in time."""


@dataclass(frozen=True)
class DeployStep:
    """The typed outcome of every event of a deployment (`Progress.outcome`): the service it is
    about and, where the event says so, the role, what the role waits for, the service's log,
    a stopped wait or the record written. Screens and operations read this, never `data`."""

    service_id: int
    role: str | None = None
    #: the role is waiting (a heartbeat): what for and which VMs hold it back
    waiting: RoleWait | None = None
    #: the service failed: its log
    log: tuple[str, ...] = ()
    #: following (or waiting for the key) was cancelled; the service was left as it is
    cancelled: bool = False
    #: the site record as saved (after the instantiation, and at the end)
    record: SiteRecord | None = None
    #: the instantiation followed a service an earlier run made from the same inputs
    reused: bool = False


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
    record is the `DeployToolkit` operation's (tui.procedures.toolkit.deploy_operation)."""
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


async def deploy_toolkit(
    site: "SiteConnection",
    plan: DeployPlan,
    *,
    wait: bool = True,
    timeout: float = DEFAULT_TIMEOUT,
    key_timeout: float = DEFAULT_KEY_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cancel: asyncio.Event | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT,
) -> AsyncIterator[Progress]:
    """Instantiate, then follow (see the module docstring). Events carry `data["service_id"]`."""
    steps = plan.step_names
    total = len(steps)
    yield Progress(STEP_INSTANTIATE, 0, total, f"{plan.cli()} ({plan.values_key})", ProgressState.RUNNING,
                   {"values_key": plan.values_key})
    own = await find_own_services(site, plan)
    if own:
        record = adopt_service(site, plan, own[0])
        others = ", ".join(str(s.id) for s in own[1:])
        yield Progress(STEP_INSTANTIATE, 1, total,
                       f"service {own[0].id} {own[0].name!r} ({own[0].state_name}) was made earlier from the same inputs: "
                       "following it instead of creating another"
                       + (f" (services {others} were made from them too: `oneflow delete <id>` removes one)"
                          if others else ""), ProgressState.SKIPPED,
                       {"service_id": record.service_id, "values_key": plan.values_key, "reused": True,
                        "same_inputs": [s.id for s in own], "record": record_to_json(record)},
                       DeployStep(record.service_id, record=record, reused=True))
    else:
        record = await instantiate_service(site, plan)
        yield Progress(STEP_INSTANTIATE, 1, total, f"service {record.service_id} {record.service_name!r} created",
                       ProgressState.DONE, {"service_id": record.service_id, "values_key": plan.values_key,
                                "record": record_to_json(record)},
                       DeployStep(record.service_id, record=record))
    if not wait:
        return
    async for event in follow_deployment(site, record, timeout=timeout, key_timeout=key_timeout,
                                         poll_interval=poll_interval, cancel=cancel, done=1, total=total,
                                         heartbeat=heartbeat):
        yield event


# -- following --------------------------------------------------------------------------------


def _step_state(state_name: str) -> ProgressState:
    if state_name == "RUNNING":
        return ProgressState.DONE
    if any(word in state_name for word in _FAILED_WORDS):
        return ProgressState.FAILED
    return ProgressState.RUNNING


def format_log(service: Service) -> tuple[str, ...]:
    """The service log as lines `2025-04-03 11:09:00 [E] message` (UTC)."""
    lines = []
    for entry in service.log:
        try:
            when = datetime.fromtimestamp(entry.timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        except (OverflowError, OSError, ValueError):
            when = str(entry.timestamp)
        lines.append(f"{when} [{entry.severity or '?'}] {entry.message}")
    return tuple(lines)


def _role_message(role: ServiceRole) -> str:
    vms = ", ".join(f"VM {n.vm_id}" for n in role.nodes)
    return f"{role.state_name}" + (f" ({vms})" if vms else "")


async def _pause(seconds: float, cancel: asyncio.Event | None) -> None:
    if cancel is None:
        await asyncio.sleep(seconds)
        return
    try:
        await asyncio.wait_for(cancel.wait(), seconds)
    except TimeoutError:
        pass


class _Follower:
    """State shared by the steps of one follow: the record, counters, the key."""

    def __init__(self, site: "SiteConnection", record: SiteRecord, done: int, total: int) -> None:
        self.site = site
        self.record = record
        self.done = done
        self.total = total
        self.finished_steps: set[str] = set()
        self.key: AutomationKey | None = None

    def finish(self, step: str) -> int:
        if step not in self.finished_steps:
            self.finished_steps.add(step)
            self.done += 1
        return self.done

    def save(self, **changes: Any) -> SiteRecord:
        self.record = replace(self.record, updated=utc_now(), **changes)
        save_site_record(self.site.settings, self.record)
        return self.record

    async def update_roles(self, service: Service) -> SiteRecord:
        roles = await recorded_roles(self.site, service)
        return self.save(roles=roles, state=service.state_name)


async def _key_event(follower: _Follower, service: Service | None) -> Progress | None:
    """Look for the published key once (when an automation VM exists); an event when found."""
    record = follower.record
    if follower.key is not None and follower.key.key is not None:
        return None
    if service is not None:
        role = service.role(record.automation_role)
        if role is None or not role.nodes:
            return None
        if record.automation_vm is None or record.automation_vm.vm_id != role.nodes[0].vm_id:
            record = await follower.update_roles(service)
    if record.automation_vm is None:
        return None
    found = await read_automation_key(follower.site, record)
    if found.problem:
        raise SiteError("The automation VM published an invalid public key",
                        f"{found.problem}. The VM's appliance generates the key; check the VM (`onevm show "
                        f"{found.vm_id}`), then capture it again with `sitetk toolkit key`.")
    if found.key is None:
        return None
    follower.key = found
    follower.save(automation_public_key=found.key.line)
    done = follower.finish(STEP_KEY)
    return Progress(STEP_KEY, done, follower.total,
                    f"VM {found.vm_id} published {found.key.short()}", ProgressState.DONE,
                    {"vm_id": found.vm_id, "public_key": found.key.line, "fingerprint": found.key.fingerprint},
                    DeployStep(record.service_id))


async def _diagnose(site: "SiteConnection", service: Service) -> list[str]:
    """Why each role that is not RUNNING is stuck, VM by VM (`deploy_waits.explain_roles`)."""
    return [line for wait in await explain_roles(site, service) for line in wait.lines()]


def _waiting_events(waits: tuple[RoleWait, ...], service: Service, since: dict[str, float], started: float,
                    now: float, done: int, total: int) -> list[Progress]:
    """One event per waiting role and one for the service: elapsed time, what each waits for, why."""
    events: list[Progress] = []
    for wait in waits:
        key = role_step(wait.role)
        why = " ".join(f"{vm.why}." for vm in wait.vms)
        message = f"{wait.state} for {format_elapsed(now - since.get(key, started))}: waits for {wait.waits_for}"
        events.append(Progress(key, done, total, message + (f". {why}" if why else ""), ProgressState.RUNNING,
                               {"service_id": service.id, "role": wait.role, "state": wait.state,
                                "elapsed_s": round(now - since.get(key, started), 1), "waiting": wait.as_json(),
                                "moves": [vm.as_json() for vm in wait.moves]},
                               DeployStep(service.id, wait.role, wait)))
    names = ", ".join(f"{w.role} ({w.state})" for w in waits) or "the service's state to change"
    events.append(Progress(STEP_SERVICE, done, total,
                           f"service {service.id} {service.state_name} for {format_elapsed(now - started)}: waits for "
                           f"roles {names}", ProgressState.RUNNING,
                           {"service_id": service.id, "state": service.state_name,
                            "elapsed_s": round(now - started, 1)}, DeployStep(service.id)))
    return events


async def follow_deployment(
    site: "SiteConnection",
    record: SiteRecord,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    key_timeout: float = DEFAULT_KEY_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cancel: asyncio.Event | None = None,
    done: int = 0,
    total: int | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT,
) -> AsyncIterator[Progress]:
    """Follow a recorded service to RUNNING, record its VMs, capture the key (module docstring).

    Never changes the service. `done`/`total` place the events in a longer run. Every `heartbeat`
    seconds while the service is not RUNNING, each waiting role and the service report how long
    they have waited, for what, and why (`deploy_waits.explain_roles`: a VM's state, READY=YES
    missing, a database VM on a host whose CPU cannot run it, with the move).
    """
    role_names = [r.name for r in record.roles]
    count = total if total is not None else done + len(follow_steps(role_names))
    follower = _Follower(site, record, done, count)
    service_id = record.service_id
    started = monotonic()
    deadline = started + timeout
    next_beat = started + heartbeat
    since: dict[str, float] = {}
    seen: dict[str, str] = {}
    service: Service | None = None
    while True:
        if cancel is not None and cancel.is_set():
            if service is not None:
                await follower.update_roles(service)
            yield Progress(STEP_SERVICE, follower.done, count,
                           f"stopped following; service {service_id} is left as it is and keeps deploying", ProgressState.SKIPPED,
                           {"service_id": service_id, "cancelled": True}, DeployStep(service_id, cancelled=True))
            return
        try:
            service = await site.flow.get_service(service_id)
        except SiteError as error:
            if error.code == 404:
                raise SiteError(f"Service {service_id} disappeared",
                                "It was deleted while being followed (by another operator or an automatic "
                                "deletion). Nothing was recorded beyond what the site record holds.") from None
            if not error.retryable or monotonic() > deadline:
                raise
            yield Progress(STEP_SERVICE, follower.done, count, f"the site did not answer ({error.title}); retrying",
                           ProgressState.RUNNING, {"service_id": service_id}, DeployStep(service_id))
            await _pause(poll_interval, cancel)
            continue
        for role in service.roles:
            key = role_step(role.name)
            message = _role_message(role)
            if seen.get(key) != message:
                seen[key] = message
                since[key] = monotonic()
                state = _step_state(role.state_name)
                at = follower.finish(key) if state is ProgressState.DONE else follower.done
                yield Progress(key, at, count, message, state,
                               {"service_id": service_id, "role": role.name, "state": role.state_name,
                                "vm_ids": list(role.vm_ids)}, DeployStep(service_id, role.name))
        if seen.get(STEP_SERVICE) != service.state_name:
            seen[STEP_SERVICE] = service.state_name
            state = _step_state(service.state_name)
            at = follower.finish(STEP_SERVICE) if state is ProgressState.DONE else follower.done
            note = service_state_note(service.state)
            yield Progress(STEP_SERVICE, at, count,
                           f"service {service_id} {service.state_name}" + (f": {note}" if note else ""), state,
                           {"service_id": service_id, "state": service.state_name}, DeployStep(service_id))
        event = await _key_event(follower, service)
        if event is not None:
            yield event
        if service.state_name == "RUNNING":
            break
        if service.failed or any(word in service.state_name for word in _FAILED_WORDS):
            await follower.update_roles(service)
            log = format_log(service)
            roles = "; ".join(f"{r.name} {r.state_name}" for r in service.roles)
            yield Progress(STEP_SERVICE, follower.done, count, f"service {service_id} {service.state_name}", ProgressState.FAILED,
                           {"service_id": service_id, "state": service.state_name, "log": list(log)},
                           DeployStep(service_id, log=log))
            raise DeploymentFailed(
                f"Service {service_id} is {service.state_name}",
                f"Roles: {roles}.\nService log:\n" + ("\n".join(log) or "(empty)")
                + f"\nThe service was left as it is: inspect it (`oneflow show {service_id}`), then retry with "
                  f"`oneflow recover {service_id}` or remove it with `{delete_command(service_id, service.state)}`.",
                service_id, service.state_name, log)
        now = monotonic()
        if now >= next_beat and now <= deadline:
            next_beat = now + heartbeat
            for beat in _waiting_events(await explain_roles(site, service), service, since, started, now,
                                        follower.done, count):
                yield beat
        if monotonic() > deadline:
            await follower.update_roles(service)
            stuck = await _diagnose(site, service)
            raise SiteError(f"Service {service_id} not RUNNING after {timeout:g} s",
                            f"It is {service.state_name}.\n" + "\n".join(stuck)
                            + f"\nThe service was left as it is and may still finish: follow it again with "
                              f"`sitetk toolkit vms --service {service_id}`.")
        await _pause(poll_interval, cancel)

    record = await follower.update_roles(service)
    summary = "; ".join(f"{r.name}: " + ", ".join(f"VM {vm.vm_id} {'/'.join(vm.ips) or '-'}" for vm in r.vms)
                        for r in record.roles)
    yield Progress(STEP_RECORD, follower.finish(STEP_RECORD), count, summary, ProgressState.DONE,
                   {"service_id": service_id, "roles": {r.name: list(r.vm_ids) for r in record.roles}})
    async for event in _wait_for_key(follower, key_timeout, poll_interval, cancel, heartbeat):
        yield event


async def _wait_for_key(follower: _Follower, key_timeout: float, poll_interval: float,
                        cancel: asyncio.Event | None,
                        heartbeat: float = DEFAULT_HEARTBEAT) -> AsyncIterator[Progress]:
    record = follower.record
    attribute = follower.site.naming.automation_key_attribute
    if follower.key is None or follower.key.key is None:
        vm = record.automation_vm
        yield Progress(STEP_KEY, follower.done, follower.total,
                       f"waiting for VM {vm.vm_id if vm else '?'} to publish {attribute}", ProgressState.RUNNING,
                       {"service_id": record.service_id}, DeployStep(record.service_id))
        started = monotonic()
        deadline = started + key_timeout
        next_beat = started + heartbeat
        while True:
            service = None
            if follower.record.automation_vm is None:  # the role has no VM yet: ask the service
                service = await follower.site.flow.get_service(record.service_id)
            event = await _key_event(follower, service)
            if event is not None:
                yield event
                break
            if cancel is not None and cancel.is_set():
                yield Progress(STEP_KEY, follower.done, follower.total,
                               "stopped waiting for the key; capture it later from the key view or `sitetk toolkit key`",
                               ProgressState.SKIPPED, {"service_id": record.service_id, "cancelled": True},
                               DeployStep(record.service_id, cancelled=True))
                return
            now = monotonic()
            if next_beat <= now <= deadline:
                next_beat = now + heartbeat
                vm = follower.record.automation_vm
                who = f"VM {vm.vm_id}" if vm is not None else f"role {follower.record.automation_role}'s VM"
                yield Progress(STEP_KEY, follower.done, follower.total,
                               f"waiting {format_elapsed(now - started)} (at most {format_elapsed(key_timeout)}) for "
                               f"{who} to publish {attribute}: its appliance does once its automation server runs",
                               ProgressState.RUNNING, {"service_id": record.service_id, "elapsed_s": round(now - started, 1)},
                               DeployStep(record.service_id))
            if monotonic() > deadline:
                vm = follower.record.automation_vm
                if vm is None:
                    message = (f"role {follower.record.automation_role} of service {record.service_id} has no VM yet, "
                               f"so no {attribute} was published within {key_timeout:g} s")
                    check = f"`oneflow show {record.service_id}`"
                else:
                    message = (f"VM {vm.vm_id} has not published {attribute} in its USER_TEMPLATE within "
                               f"{key_timeout:g} s")
                    check = f"`onevm show {vm.vm_id}`"
                yield Progress(STEP_KEY, follower.done, follower.total, message, ProgressState.FAILED,
                               {"service_id": record.service_id}, DeployStep(record.service_id))
                raise KeyNotPublished(
                    "The automation VM's public key did not appear",
                    f"{message}. The appliance publishes the key once its automation server has started: check "
                    f"{check}, then capture the key with `sitetk toolkit key` (or the key view).")
            await _pause(poll_interval, cancel)
    final = follower.record
    yield Progress(STEP_DONE, follower.total, follower.total,
                   f"service {final.service_id} {final.state}; VMs and the automation key recorded", ProgressState.DONE,
                   {"service_id": final.service_id, "record": record_to_json(final)},
                   DeployStep(final.service_id, record=final))


async def capture_automation_key(
    site: "SiteConnection",
    record: SiteRecord,
    *,
    timeout: float = DEFAULT_KEY_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cancel: asyncio.Event | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT,
) -> AsyncIterator[Progress]:
    """Capture the key of a recorded deployment (the key view's and `sitetk toolkit key`'s step).

    Refreshes the role VMs from the service first when the record has no automation VM yet.
    """
    if record.automation_vm is None:
        record = await refresh_site_record(site, record)
        save_site_record(site.settings, record)
    follower = _Follower(site, record, 0, 2)  # steps: the key, then the summary
    async for event in _wait_for_key(follower, timeout, poll_interval, cancel, heartbeat):
        yield event
