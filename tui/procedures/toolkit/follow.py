"""Operation 4: follow a toolkit service to RUNNING, record its VMs, capture the automation key.

`follow_deployment(site, record, context)` follows the service and each role live, reporting
`Progress` to `context` and returning `Deployed`:

- while waiting, every `heartbeat` seconds each waiting role and the service say how long they
  have waited, for what and why (`deploy_waits`: a VM's state, READY=YES missing, a database
  VM whose host cannot run its database, with `sitetk hosts move <id>`);
- FAILED_DEPLOYING, WARNING or any failed state raises `DeploymentFailed` carrying the
  service's log; a timeout raises `SiteError` saying which roles and VMs are stuck and why;
  `context.cancel` stops waiting and leaves the service as it is (the last event says so, and the
  result is `cancelled`);
- at RUNNING the VM IDs and addresses of each role are recorded from the service's role nodes
  (never by VM name, so deployments side by side do not mix), in the site record;
- the automation VM's public key is captured from its USER_TEMPLATE as soon as it is published
  (often before RUNNING), checked as an SSH public key, and recorded; `KeyNotPublished` when it
  does not appear within the key timeout (`capture_automation_key` is that step alone).

The service is never changed: no recover, no delete. The instantiation is
`tui.procedures.toolkit.instantiate`'s `DeployToolkit`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from tui import timing
from tui.domain.services import Service, ServiceRole, delete_command, service_state_note
from tui.domain.site_record import SiteRecord, record_to_json
from tui.errors import SiteError
from tui.procedures.operation import RunContext
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site_record import save_site_record
from tui.procedures.toolkit.deploy_waits import RoleWait, explain_roles
from tui.procedures.toolkit.service import (
    AutomationKey,
    read_automation_key,
    recorded_roles,
    refresh_site_record,
    utc_now,
)
from tui.timing import monotonic

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

DEFAULT_TIMEOUT = timing.PROFILE.deploy_timeout
DEFAULT_KEY_TIMEOUT = timing.PROFILE.key_timeout
DEFAULT_POLL_INTERVAL = timing.PROFILE.poll_interval
#: seconds between two reports of what a waiting deployment waits for
DEFAULT_HEARTBEAT = timing.PROFILE.heartbeat
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
    """The typed detail of every event of a deployment (`Progress.outcome`): the service it is
    about and, where the event says so, the role, what the role waits for and the service's log
    (the deployment view shows them). The run's result is `Deployed`, returned."""

    service_id: int
    role: str | None = None
    #: the role is waiting (a heartbeat): what for and which VMs hold it back
    waiting: RoleWait | None = None
    #: the service failed: its log
    log: tuple[str, ...] = ()


@dataclass(frozen=True)
class Deployed:
    """A deployment's (or a follow's) result: the service and its record as saved."""

    service_id: int | None
    record: SiteRecord | None
    #: the wait was cancelled: the service was left as it is
    cancelled: bool = False
    #: no service was made: one an earlier run made from the same inputs was followed
    reused: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"service_id": self.service_id, "record": record_to_json(self.record) if self.record else None,
                "cancelled": self.cancelled, "reused": self.reused}



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


class _Follower:
    """State shared by the steps of one follow: the record, counters, the key."""

    def __init__(self, site: "SiteConnection", record: SiteRecord, context: RunContext, done: int, total: int) -> None:
        self.site = site
        self.context = context
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


async def _look_for_key(follower: _Follower, service: Service | None) -> bool:
    """Look for the published key once (when an automation VM exists); True (and an event) when found."""
    record = follower.record
    if follower.key is not None and follower.key.key is not None:
        return False
    if service is not None:
        role = service.role(record.automation_role)
        if role is None or not role.nodes:
            return False
        if record.automation_vm is None or record.automation_vm.vm_id != role.nodes[0].vm_id:
            record = await follower.update_roles(service)
    if record.automation_vm is None:
        return False
    found = await read_automation_key(follower.site, record)
    if found.problem:
        raise SiteError("The automation VM published an invalid public key",
                        f"{found.problem}. The VM's appliance generates the key; check the VM (`onevm show "
                        f"{found.vm_id}`), then capture it again with `sitetk toolkit key`.")
    if found.key is None:
        return False
    follower.key = found
    follower.save(automation_public_key=found.key.line)
    done = follower.finish(STEP_KEY)
    follower.context.report(Progress(STEP_KEY, done, follower.total, f"VM {found.vm_id} published {found.key.short()}",
                                     ProgressState.DONE, {"vm_id": found.vm_id, "public_key": found.key.line,
                                                          "fingerprint": found.key.fingerprint},
                                     DeployStep(record.service_id)))
    return True


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
        message = f"{wait.state} for {timing.format_elapsed(now - since.get(key, started))}: waits for {wait.waits_for}"
        events.append(Progress(key, done, total, message + (f". {why}" if why else ""), ProgressState.RUNNING,
                               {"service_id": service.id, "role": wait.role, "state": wait.state,
                                "elapsed_s": round(now - since.get(key, started), 1), "waiting": wait.as_json(),
                                "moves": [vm.as_json() for vm in wait.moves]},
                               DeployStep(service.id, wait.role, wait)))
    names = ", ".join(f"{w.role} ({w.state})" for w in waits) or "the service's state to change"
    events.append(Progress(STEP_SERVICE, done, total,
                           f"service {service.id} {service.state_name} for {timing.format_elapsed(now - started)}: waits for "
                           f"roles {names}", ProgressState.RUNNING,
                           {"service_id": service.id, "state": service.state_name,
                            "elapsed_s": round(now - started, 1)}, DeployStep(service.id)))
    return events


async def follow_deployment(
    site: "SiteConnection",
    record: SiteRecord,
    context: RunContext,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    key_timeout: float = DEFAULT_KEY_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    done: int = 0,
    total: int | None = None,
    heartbeat: float = DEFAULT_HEARTBEAT,
) -> Deployed:
    """Follow a recorded service to RUNNING, record its VMs, capture the key (module docstring).

    Never changes the service. `done`/`total` place the events in a longer run. Every `heartbeat`
    seconds while the service is not RUNNING, each waiting role and the service report how long
    they have waited, for what, and why (`deploy_waits.explain_roles`: a VM's state, READY=YES
    missing, a database VM on a host whose CPU cannot run it, with the move).
    """
    role_names = [r.name for r in record.roles]
    count = total if total is not None else done + len(follow_steps(role_names))
    follower = _Follower(site, record, context, done, count)
    service_id = record.service_id
    started = monotonic()
    deadline = started + timeout
    next_beat = started + heartbeat
    since: dict[str, float] = {}
    seen: dict[str, str] = {}
    service: Service | None = None
    while True:
        if context.cancel.is_set():
            if service is not None:
                await follower.update_roles(service)
            context.report(Progress(STEP_SERVICE, follower.done, count,
                                    f"stopped following; service {service_id} is left as it is and keeps deploying",
                                    ProgressState.SKIPPED, {"service_id": service_id, "cancelled": True},
                                    DeployStep(service_id)))
            return Deployed(service_id, follower.record, cancelled=True)
        try:
            service = await site.flow.get_service(service_id)
        except SiteError as error:
            if error.code == 404:
                raise SiteError(f"Service {service_id} disappeared",
                                "It was deleted while being followed (by another operator or an automatic "
                                "deletion). Nothing was recorded beyond what the site record holds.") from None
            if not error.retryable or monotonic() > deadline:
                raise
            context.report(Progress(STEP_SERVICE, follower.done, count, f"the site did not answer ({error.title}); retrying",
                           ProgressState.RUNNING, {"service_id": service_id}, DeployStep(service_id)))
            await context.pause(poll_interval)
            continue
        _report_changes(follower, service, seen, since)
        await _look_for_key(follower, service)
        if service.state_name == "RUNNING":
            break
        if service.failed or any(word in service.state_name for word in _FAILED_WORDS):
            raise await _failed(follower, service)
        now = monotonic()
        if now >= next_beat and now <= deadline:
            next_beat = now + heartbeat
            for beat in _waiting_events(await explain_roles(site, service), service, since, started, now,
                                        follower.done, count):
                context.report(beat)
        if monotonic() > deadline:
            await follower.update_roles(service)
            stuck = await _diagnose(site, service)
            raise SiteError(f"Service {service_id} not RUNNING after {timeout:g} s",
                            f"It is {service.state_name}.\n" + "\n".join(stuck)
                            + f"\nThe service was left as it is and may still finish: follow it again with "
                              f"`sitetk toolkit vms --service {service_id}`.")
        await context.pause(poll_interval)

    record = await follower.update_roles(service)
    summary = "; ".join(f"{r.name}: " + ", ".join(f"VM {vm.vm_id} {'/'.join(vm.ips) or '-'}" for vm in r.vms)
                        for r in record.roles)
    context.report(Progress(STEP_RECORD, follower.finish(STEP_RECORD), count, summary, ProgressState.DONE,
                   {"service_id": service_id, "roles": {r.name: list(r.vm_ids) for r in record.roles}}))
    cancelled = await _wait_for_key(follower, key_timeout, poll_interval, heartbeat)
    return Deployed(service_id, follower.record, cancelled=cancelled)


def _report_changes(follower: _Follower, service: Service, seen: dict[str, str], since: dict[str, float]) -> None:
    """An event for each role, and for the service, whose state changed since the last look."""
    context, count = follower.context, follower.total
    for role in service.roles:
        key = role_step(role.name)
        message = _role_message(role)
        if seen.get(key) != message:
            seen[key] = message
            since[key] = monotonic()
            state = _step_state(role.state_name)
            at = follower.finish(key) if state is ProgressState.DONE else follower.done
            context.report(Progress(key, at, count, message, state,
                                    {"service_id": service.id, "role": role.name, "state": role.state_name,
                                     "vm_ids": list(role.vm_ids)}, DeployStep(service.id, role.name)))
    if seen.get(STEP_SERVICE) != service.state_name:
        seen[STEP_SERVICE] = service.state_name
        state = _step_state(service.state_name)
        at = follower.finish(STEP_SERVICE) if state is ProgressState.DONE else follower.done
        note = service_state_note(service.state)
        context.report(Progress(STEP_SERVICE, at, count,
                                f"service {service.id} {service.state_name}" + (f": {note}" if note else ""), state,
                                {"service_id": service.id, "state": service.state_name}, DeployStep(service.id)))


async def _failed(follower: _Follower, service: Service) -> DeploymentFailed:
    """The service ended failed: its roles recorded, an event with its log, the error to raise."""
    service_id = service.id
    await follower.update_roles(service)
    log = format_log(service)
    roles = "; ".join(f"{r.name} {r.state_name}" for r in service.roles)
    follower.context.report(Progress(STEP_SERVICE, follower.done, follower.total,
                                     f"service {service_id} {service.state_name}", ProgressState.FAILED,
                                     {"service_id": service_id, "state": service.state_name, "log": list(log)},
                                     DeployStep(service_id, log=log)))
    return DeploymentFailed(
        f"Service {service_id} is {service.state_name}",
        f"Roles: {roles}.\nService log:\n" + ("\n".join(log) or "(empty)")
        + f"\nThe service was left as it is: inspect it (`oneflow show {service_id}`), then retry with "
          f"`oneflow recover {service_id}` or remove it with `{delete_command(service_id, service.state)}`.",
        service_id, service.state_name, log)


async def _wait_for_key(follower: _Follower, key_timeout: float, poll_interval: float,
                        heartbeat: float = DEFAULT_HEARTBEAT) -> bool:
    """Wait for the key (unless found already), then the summary event; True: cancelled."""
    context = follower.context
    record = follower.record
    attribute = follower.site.naming.automation_key_attribute
    if follower.key is None or follower.key.key is None:
        vm = record.automation_vm
        context.report(Progress(STEP_KEY, follower.done, follower.total,
                       f"waiting for VM {vm.vm_id if vm else '?'} to publish {attribute}", ProgressState.RUNNING,
                       {"service_id": record.service_id}, DeployStep(record.service_id)))
        started = monotonic()
        deadline = started + key_timeout
        next_beat = started + heartbeat
        while True:
            service = None
            if follower.record.automation_vm is None:  # the role has no VM yet: ask the service
                service = await follower.site.flow.get_service(record.service_id)
            if await _look_for_key(follower, service):
                break
            if context.cancel.is_set():
                context.report(Progress(STEP_KEY, follower.done, follower.total,
                               "stopped waiting for the key; capture it later from the key view or `sitetk toolkit key`",
                               ProgressState.SKIPPED, {"service_id": record.service_id, "cancelled": True},
                               DeployStep(record.service_id)))
                return True
            now = monotonic()
            if next_beat <= now <= deadline:
                next_beat = now + heartbeat
                vm = follower.record.automation_vm
                who = f"VM {vm.vm_id}" if vm is not None else f"role {follower.record.automation_role}'s VM"
                context.report(Progress(STEP_KEY, follower.done, follower.total,
                               f"waiting {timing.format_elapsed(now - started)} (at most {timing.format_elapsed(key_timeout)}) for "
                               f"{who} to publish {attribute}: its appliance does once its automation server runs",
                               ProgressState.RUNNING, {"service_id": record.service_id, "elapsed_s": round(now - started, 1)},
                               DeployStep(record.service_id)))
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
                context.report(Progress(STEP_KEY, follower.done, follower.total, message, ProgressState.FAILED,
                               {"service_id": record.service_id}, DeployStep(record.service_id)))
                raise KeyNotPublished(
                    "The automation VM's public key did not appear",
                    f"{message}. The appliance publishes the key once its automation server has started: check "
                    f"{check}, then capture the key with `sitetk toolkit key` (or the key view).")
            await context.pause(poll_interval)
    final = follower.record
    context.report(Progress(STEP_DONE, follower.total, follower.total,
                   f"service {final.service_id} {final.state}; VMs and the automation key recorded", ProgressState.DONE,
                   {"service_id": final.service_id, "record": record_to_json(final)},
                   DeployStep(final.service_id)))
    return False


async def capture_automation_key(
    site: "SiteConnection",
    record: SiteRecord,
    context: RunContext,
    *,
    timeout: float = DEFAULT_KEY_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    heartbeat: float = DEFAULT_HEARTBEAT,
) -> Deployed:
    """Capture the key of a recorded deployment (the key view's and `sitetk toolkit key`'s step);
    the record as saved, `cancelled` when `context.cancel` stopped the wait.

    Refreshes the role VMs from the service first when the record has no automation VM yet.
    """
    if record.automation_vm is None:
        record = await refresh_site_record(site, record)
        save_site_record(site.settings, record)
    follower = _Follower(site, record, context, 0, 2)  # steps: the key, then the summary
    cancelled = await _wait_for_key(follower, timeout, poll_interval, heartbeat)
    return Deployed(record.service_id, follower.record, cancelled=cancelled)
