"""Operation 7, planning: where a document-database VM goes, with which CPU model, and the preview.

`plan_move()` chooses the target: the best-ranked compatible host above the free CPU and memory
thresholds of the settings (a VM already running on a compatible host with that host's model stays
where it is), or the host asked for, checked. host-passthrough is offered only when no compatible
host exists, with the spec's warning, and never onto a host where the database cannot start
whatever the model. `plan_redeploy()` plans the way back (the previous host and CPU model, which
the move journal keeps from the start of an unfinished move, `tui.procedures.hosts.move_journal`). `plan_flagged()` plans every flagged
VM. `preview_move()` states every step with the equivalent platform CLI command, marking the steps
the VM has already done (`step_skips()`, which the run uses as well). Running: `tui.procedures.hosts.move_vm`.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Sequence

from tui import timing
from tui.domain.cpu import HOST_PASSTHROUGH, HostCpu, HostVerdictKind, cpu_model_update_text, host_verdict
from tui.domain.guest_ready import cannot_report_ready, ready_fix
from tui.domain.hosts import Host
from tui.domain.one_states import VmState
from tui.domain.vm_detail import VmDetail
from tui.domain.vms import ACTIVE, RUNNING, VmSummary
from tui.errors import AuthenticationFailed, SiteError
from tui.procedures.hosts.cpu_inventory import DbVmRow, load_inventory, rank_targets
from tui.procedures.hosts.move_journal import MoveJournal
from tui.procedures.hosts.move_lock import busy_moving
from tui.procedures.preview import Change, Preview

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

STEP_UNDEPLOY = "undeploy"
STEP_WAIT_UNDEPLOYED = "wait undeployed"
STEP_SET_MODEL = "set CPU model"
STEP_DEPLOY = "deploy"
STEP_WAIT_RUNNING = "wait running"
STEP_WAIT_READY = "wait ready"
STEPS: tuple[str, ...] = (STEP_UNDEPLOY, STEP_WAIT_UNDEPLOYED, STEP_SET_MODEL, STEP_DEPLOY, STEP_WAIT_RUNNING,
                          STEP_WAIT_READY)

#: the spec's warning, shown wherever host-passthrough is offered
PASSTHROUGH_WARNING = ("host-passthrough is discouraged: use it only because no compatible host exists. The VM "
                       "sees the host's exact CPU, so it can only run on (and migrate to) identical hosts.")

AUDIT_MOVE = "hosts.move"
AUDIT_REDEPLOY = "hosts.redeploy"

# VM STATE codes the steps look at
VM_PENDING, VM_HOLD, VM_STOPPED, VM_SUSPENDED = VmState.PENDING, VmState.HOLD, VmState.STOPPED, VmState.SUSPENDED
VM_DONE, VM_POWEROFF, VM_UNDEPLOYED = VmState.DONE, VmState.POWEROFF, VmState.UNDEPLOYED
#: VM states `one.vm.deploy` accepts
DEPLOYABLE = frozenset({VM_PENDING, VM_HOLD, VM_STOPPED, VM_UNDEPLOYED})
#: LCM states (while ACTIVE) of an undeploy under way
UNDEPLOYING = frozenset({29, 30})  # SHUTDOWN_UNDEPLOY, EPILOG_UNDEPLOY
#: LCM states (while ACTIVE) in which a guest runs and may be undeployed
UNDEPLOYABLE_LCM = frozenset({RUNNING, 16})  # RUNNING, UNKNOWN
#: LCM states (while ACTIVE) of a deployment under way: prolog and boot of every kind
DEPLOYING = frozenset({0, 1, 2, 9, 19, 20, 21, 22, 31, 32, 35})


@dataclass(frozen=True)
class MoveTimeouts:
    """Seconds each waiting step may take, and how often the VM is polled."""

    undeploy: float = timing.PROFILE.move_undeploy_timeout
    running: float = timing.PROFILE.move_running_timeout
    ready: float = timing.PROFILE.move_ready_timeout
    #: the longest pause between two reads; polling starts faster and backs off to this after each change
    poll_interval: float = timing.PROFILE.poll_interval


DEFAULT_TIMEOUTS = MoveTimeouts()


def ready_flag(vm: VmDetail) -> bool:
    return vm.user_template.get("READY").strip().upper() == "YES"


@dataclass(frozen=True)
class VmFacts:
    """What the steps look at: the VM's state, host, CPU model and readiness at one moment."""

    state: int
    lcm_state: int
    #: long state name (RUNNING, UNDEPLOYED, SHUTDOWN_UNDEPLOY, ...)
    status: str
    host_id: int | None
    cpu_model: str
    ready: bool
    #: READY=YES is in the user template (it stays there after the guest stops, until reset)
    ready_flag: bool = False

    @classmethod
    def of(cls, vm: VmDetail) -> "VmFacts":
        summary = vm.summary
        return cls(summary.state, summary.lcm_state, summary.status, summary.host_id, vm.cpu_model, vm.ready,
                   ready_flag(vm))

    @property
    def active(self) -> bool:
        return self.state == ACTIVE


@dataclass(frozen=True)
class MovePlan:
    """One VM, where it is, where it goes and the CPU model it gets there."""

    vm_id: int
    vm_name: str
    #: the VM when planned (the preview marks the steps it has already done)
    facts: VmFacts
    #: where the VM was before the move (its previous host and CPU model, to put it back)
    origin_host_id: int | None
    origin_host_name: str
    origin_cpu_model: str
    target_host_id: int
    target_host_name: str
    #: the model to set; "" removes CPU_MODEL (only when putting a VM back where it had none)
    cpu_model: str
    hard: bool = False
    passthrough: bool = False
    #: putting the VM back where it was: no compatibility check on the target
    redeploy: bool = False
    #: wait for READY=YES at the end (not when redeploying onto a host the database cannot use, nor
    #: when nothing in the VM can report it)
    wait_ready: bool = True
    warnings: tuple[str, ...] = ()
    #: why the move does not wait for READY=YES: nothing in the VM can report it
    #: (`tui.domain.guest_ready`); "" when it can
    ready_unreported: str = ""

    @property
    def label(self) -> str:
        return f"VM {self.vm_id} {self.vm_name}"

    @property
    def target_label(self) -> str:
        return f"host {self.target_host_id} {self.target_host_name}"

    @property
    def origin_label(self) -> str:
        if self.origin_host_id is None:
            return "no host"
        return f"host {self.origin_host_id} {self.origin_host_name}"

    @property
    def steps(self) -> tuple[str, ...]:
        return STEPS if self.wait_ready else STEPS[:-1]

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["warnings"] = list(self.warnings)
        return data


def move_command(plan: MovePlan) -> str:
    """The headless command that runs (or resumes) this plan."""
    if plan.redeploy:
        return redeploy_command(plan, back=False)
    parts = ["sitetk", "hosts", "move", str(plan.vm_id), "--host", str(plan.target_host_id)]
    if plan.passthrough:
        parts.append("--passthrough")
    if plan.hard:
        parts.append("--hard")
    return " ".join(parts)


def redeploy_command(plan: MovePlan, back: bool = True) -> str:
    """The headless command that puts the VM back where it was (or, `back=False`, runs a redeploy plan)."""
    host = plan.origin_host_id if back else plan.target_host_id
    model = plan.origin_cpu_model if back else plan.cpu_model
    if host is None:
        return ""
    return f"sitetk hosts redeploy {plan.vm_id} --host {host} --cpu-model {shlex.quote(model)}"


def resume_hint(plan: MovePlan) -> str:
    hint = f"Run it again to resume from this step ({move_command(plan)})"
    back = redeploy_command(plan)
    if back and not plan.redeploy and plan.origin_host_id != plan.target_host_id:
        hint += f", or put the VM back on {plan.origin_label} ({back})"
    return hint + "."


# planning ---------------------------------------------------------------------------------------


def _host_by_id(hosts: Sequence[Host], host_id: int) -> Host:
    host = next((h for h in hosts if h.id == host_id), None)
    if host is None:
        known = ", ".join(f"{h.id} {h.name}" for h in hosts) or "none"
        raise SiteError(f"No host {host_id}", f"The site has no host with ID {host_id}. Hosts: {known}.")
    return host


def _check_vm(vm: VmDetail) -> None:
    if vm.summary.state == VM_DONE:
        raise SiteError(f"VM {vm.id} is gone", f"VM {vm.id} {vm.name} is DONE (terminated); there is nothing to move.")


def last_move_origin(journal: MoveJournal, vm_id: int) -> tuple[int | None, str, str] | None:
    """(host id, host name, CPU model) the VM had before a move that has not finished, from the
    move journal; None when its last move (or redeploy) finished or there was none."""
    found = journal.origin(vm_id)
    return found.as_tuple() if found is not None else None


def _origin(vm: VmDetail, journal: MoveJournal) -> tuple[int | None, str, str]:
    found = last_move_origin(journal, vm.id)
    if found is not None:
        return found
    return vm.summary.host_id, vm.summary.host, vm.cpu_model


def passthrough_problem(host: Host, known_good: Sequence[str]) -> str:
    """Why host-passthrough cannot go to this host ("" when it can): the host must be usable, and
    not one where the database cannot start whatever the model (wrong architecture, no AVX)."""
    unavailable = host.unavailable
    if unavailable is not None:
        return f"{unavailable.reason} ({unavailable.fix})"
    verdict = host_verdict(HostCpu.from_host(host), known_good)
    if verdict.kind is HostVerdictKind.INCOMPATIBLE:
        return f"{verdict.text}: the database cannot start there with any CPU model"
    return ""


def passthrough_candidates(hosts: Sequence[Host], known_good: Sequence[str]) -> tuple[Host, ...]:
    """Hosts host-passthrough may go to, most free capacity first."""
    return tuple(sorted((h for h in hosts if not passthrough_problem(h, known_good)),
                        key=lambda h: (-h.free_cpu, -h.free_mem_mib, h.id)))


async def plan_move(site: "SiteConnection", vm_id: int, host_id: int | None = None, *, passthrough: bool = False,
                    hard: bool = False, journal: MoveJournal | None = None,
                    hosts: Sequence[Host] | None = None) -> MovePlan:
    """Choose (or check) the target host of a VM and the CPU model it gets there.

    Without `host_id` the best-ranked compatible host is chosen (a VM already running on a
    compatible host with that host's model stays where it is: nothing to change). With
    `passthrough` the model is host-passthrough, allowed only when no compatible host exists.
    Raises `SiteError` saying why when no target fits. `hosts` replaces the cloud's host list (with
    the capacity earlier plans of the same batch take, see `plan_flagged`).
    """
    settings = site.settings
    vm = await site.cloud.vm_info(vm_id)
    _check_vm(vm)
    busy_moving(site, vm.id, f"VM {vm.id} {vm.name}")
    if hosts is None:
        hosts = await site.cloud.list_hosts()
    origin_id, origin_name, origin_model = _origin(vm, journal or MoveJournal.of(settings))
    ranking = rank_targets(hosts, settings)
    eligible = [ranked.host for ranked in ranking.eligible]
    current = vm.summary.host_id
    warnings: list[str] = []

    def excluded_reason(host: Host) -> str:
        return next((ex.reason for ex in ranking.excluded if ex.host.id == host.id), "not eligible")

    if passthrough:
        if eligible:
            names = ", ".join(f"{h.id} {h.name}" for h in eligible)
            raise SiteError("host-passthrough is not offered",
                            f"Compatible hosts exist ({names}): move the VM there with the host's own model instead.")
        if host_id is not None:
            target = _host_by_id(hosts, host_id)
            problem = passthrough_problem(target, settings.known_good_cpu_models)
            if problem:
                raise SiteError(f"Host {target.id} {target.name} cannot take the VM", problem + ".")
        else:
            usable = passthrough_candidates(hosts, settings.known_good_cpu_models)
            if not usable:
                raise SiteError("No host can take the VM", "Every usable host lacks AVX or SSE4.2 or is not x86_64: "
                                "the document database cannot run on this site.")
            target = usable[0]
        _check_features(target, hosts, vm, warnings)
        model = HOST_PASSTHROUGH
        warnings.append(PASSTHROUGH_WARNING)
    else:
        if host_id is not None:
            target = _host_by_id(hosts, host_id)
            verdict = host_verdict(HostCpu.from_host(target), settings.known_good_cpu_models)
            # the VM's own host already counts the VM in its usage: only compatibility matters there
            staying = target.id == current and target.usable and verdict.kind is HostVerdictKind.COMPATIBLE
            if target.id not in {h.id for h in eligible} and not staying:
                raise _no_target(f"Host {target.id} {target.name} is not a suitable target",
                                 excluded_reason(target), eligible)
        else:
            here = next((h for h in hosts if h.id == current), None)
            if (here is not None and vm.cpu_model and vm.cpu_model == here.kvm_cpu_model and here.usable
                    and host_verdict(HostCpu.from_host(here), settings.known_good_cpu_models).kind
                    is HostVerdictKind.COMPATIBLE):
                target = here
            elif eligible:
                target = eligible[0]
            else:
                reasons = "; ".join(f"{ex.host.id} {ex.host.name}: {ex.reason}" for ex in ranking.excluded)
                raise _no_target("No compatible host with enough free capacity", reasons or "the site has no host",
                                 eligible)
        if host_id is None and missing_features(vm, target):  # the best host lacks a feature the VM requires
            target = next((h for h in eligible if missing_features(vm, h) == ()), target)
        _check_features(target, hosts, vm, warnings)
        model = target.kvm_cpu_model.strip()
        if not model:
            raise SiteError(f"Host {target.id} {target.name} reports no KVM_CPU_MODEL",
                            "Its model cannot be set on the VM. Check the host's monitoring (onehost show "
                            f"{target.id}, Attributes) or choose another host.")
    if hard:
        warnings.append("A hard undeploy cuts the VM off like a power cord: its database may need recovery.")
    warnings += await _version_warnings(site, vm, model)
    unreported = cannot_report_ready(vm.id, vm.template)
    if unreported:
        warnings.append(not_waiting_text(vm, unreported))
    return MovePlan(
        vm_id=vm.id, vm_name=vm.name, facts=VmFacts.of(vm),
        origin_host_id=origin_id, origin_host_name=origin_name, origin_cpu_model=origin_model,
        target_host_id=target.id, target_host_name=target.name, cpu_model=model,
        hard=hard, passthrough=passthrough, warnings=tuple(warnings), wait_ready=not unreported,
        ready_unreported=unreported,
    )


def not_waiting_text(vm: VmDetail, why: str) -> str:
    """The plan's word on a VM that cannot report READY=YES: the move does not wait for it."""
    return f"Not waiting for READY=YES: {why}. The move ends once the VM is RUNNING on its target. {ready_fix(vm.id)}"


async def platform_version(site: "SiteConnection") -> str:
    """The platform's version: the one read at connect, else asked now."""
    info = getattr(site, "info", None)
    return info.version if info is not None and info.version else await site.cloud.version()


def updateconf_merges(version: str) -> bool:
    """Whether `one.vm.updateconf` takes the append flag: from 6.2 on. 6.0 registers it as
    `A:sis` and replaces every section the text leaves out (6.0/6.2 src/rm/RequestManagerVirtualMachine.cc)."""
    parts = [int(p) if p.isdigit() else 0 for p in version.split(".")[:2]]
    return tuple(parts + [0] * (2 - len(parts))) >= (6, 2)


def no_append_text(version: str) -> str:
    return (f"The platform is {version}: its onevm updateconf has no append flag (it came in 6.2), so setting the "
            "CPU model would erase the VM's OS, CONTEXT and other configuration sections.")


async def _version_warnings(site: "SiteConnection", vm: VmDetail, cpu_model: str) -> list[str]:
    """The preview's warning when the run will refuse to set the CPU model (a platform before 6.2)."""
    if not cpu_model or vm.cpu_model == cpu_model:
        return []
    version = await platform_version(site)
    if updateconf_merges(version):
        return []
    return [no_append_text(version) + " The move will stop before changing anything: set CPU_MODEL by hand "
            "(onevm updateconf with the whole configuration) or upgrade the platform."]


def _no_target(title: str, reason: str, eligible: Sequence[Host]) -> SiteError:
    if eligible:
        hint = "Suitable hosts: " + ", ".join(f"{h.id} {h.name}" for h in eligible) + "."
    else:
        hint = ("No compatible host exists: host-passthrough can be used instead (--passthrough), "
                "although it is discouraged.")
    return SiteError(title, f"{reason}. {hint}")


async def plan_redeploy(site: "SiteConnection", vm_id: int, host_id: int, cpu_model: str | None = None, *,
                        journal: MoveJournal | None = None) -> MovePlan:
    """Put a VM back where it was: deploy it on `host_id` with `cpu_model` (its previous model;
    "" removes CPU_MODEL; None: the one recorded when its unfinished move started, else unchanged).

    No compatibility check: this undoes a move. The database is expected to be ready only when
    that host and model suit it.
    """
    vm = await site.cloud.vm_info(vm_id)
    _check_vm(vm)
    busy_moving(site, vm.id, f"VM {vm.id} {vm.name}")
    hosts = await site.cloud.list_hosts()
    target = _host_by_id(hosts, host_id)
    unavailable = target.unavailable
    if unavailable is not None:
        raise SiteError(f"Host {target.id} {target.name} cannot take the VM",
                        f"{unavailable.reason}; {unavailable.fix}.")
    if cpu_model is None:
        origin = last_move_origin(journal or MoveJournal.of(site.settings), vm_id)
        cpu_model = origin[2] if origin is not None else vm.cpu_model
    _check_model_offered(target, cpu_model.strip(), hosts, vm)
    verdict = host_verdict(HostCpu.from_host(target), site.settings.known_good_cpu_models)
    warnings: list[str] = []
    if cpu_model.strip():  # the driver writes the features only beside a model (host-passthrough too)
        _check_features(target, hosts, vm, warnings)
    suits = verdict.kind is HostVerdictKind.COMPATIBLE
    if not suits:
        warnings.append(f"Host {target.id} {target.name} is {verdict.text}: the document database is not expected to "
                        "start there, so the procedure stops once the VM runs.")
    model = cpu_model.strip()
    if model and model != HOST_PASSTHROUGH and not target.kvm_cpu_models:
        warnings.append(f"Host {target.id} {target.name} reports no KVM_CPU_MODELS: whether it offers CPU model {model} "
                        "is not known (a host that does not fails the boot, fallback='forbid').")
    warnings += await _version_warnings(site, vm, cpu_model.strip())
    unreported = cannot_report_ready(vm.id, vm.template)
    if suits and unreported:
        warnings.append(not_waiting_text(vm, unreported))
    return MovePlan(
        vm_id=vm.id, vm_name=vm.name, facts=VmFacts.of(vm),
        origin_host_id=vm.summary.host_id, origin_host_name=vm.summary.host, origin_cpu_model=vm.cpu_model,
        target_host_id=target.id, target_host_name=target.name, cpu_model=cpu_model.strip(),
        redeploy=True, passthrough=cpu_model.strip() == HOST_PASSTHROUGH, wait_ready=suits and not unreported,
        warnings=tuple(warnings), ready_unreported=unreported if suits else "",
    )


def missing_features(vm: VmDetail, host: Host) -> tuple[str, ...] | None:
    """The VM's CPU_MODEL/FEATURES its target does not list in KVM_CPU_FEATURES (None: the host
    reports no features, so it is not known). The KVM driver requires each of them of libvirt
    (`<feature policy='require'>`, src/vmm/LibVirtDriverKVM.cc release-7.0.2 lines 1007-1018), so
    a host without one fails the boot; the scheduler's automatic requirements ask the same
    (`KVM_CPU_FEATURES = "*f*"`, src/vm/VirtualMachine.cc lines 1753-1766), but a deploy to a
    named host does not go through the scheduler."""
    if not vm.cpu_features:
        return ()
    if host.kvm_cpu_features is None:
        return None
    offered = set(host.kvm_cpu_features)
    return tuple(f for f in vm.cpu_features if f not in offered)


def _check_features(target: Host, hosts: Sequence[Host], vm: VmDetail, warnings: list[str]) -> None:
    """Refuse a target without a CPU feature the VM's CPU_MODEL requires (naming the hosts that
    have them all); a host that reports no features is a warning, not a pass."""
    missing = missing_features(vm, target)
    if missing is None:
        warnings.append(f"Host {target.id} {target.name} reports no KVM_CPU_FEATURES: whether it has the CPU features "
                        f"VM {vm.id} requires ({','.join(vm.cpu_features)}) is not known (one missing fails the boot).")
        return
    if not missing:
        return
    having = [h for h in hosts if missing_features(vm, h) == () and h.unavailable is None and h.id != target.id]
    elsewhere = (", ".join(f"{h.id} {h.name}" for h in having) if having else "none")
    raise SiteError(
        f"Host {target.id} {target.name} lacks CPU feature(s) {','.join(missing)} that VM {vm.id} requires",
        f"VM {vm.id}'s CPU_MODEL requires FEATURES={','.join(vm.cpu_features)}: the platform asks libvirt for each "
        f"(policy='require'), so the boot would fail there and the VM stay down. Hosts that have them: {elsewhere}. "
        "Nothing was changed.")


def _check_model_offered(target: Host, model: str, hosts: Sequence[Host], vm: VmDetail) -> None:
    """Refuse a host that does not offer `model`: the KVM driver asks libvirt for exactly that model
    (fallback='forbid', src/vmm/LibVirtDriverKVM.cc), so the boot fails and the VM is left down.
    What a host offers is its KVM_CPU_MODELS, the custom models libvirt calls usable there
    (src/im_mad/remotes/kvm-probes.d/host/system/machines_models.rb lines 114-124, release-7.0.2).
    No model, host-passthrough, or a host that lists no models (not checked: it says so) pass."""
    if not model or model == HOST_PASSTHROUGH or not target.kvm_cpu_models or model in target.kvm_cpu_models:
        return
    offering = [h for h in hosts if model in h.kvm_cpu_models and h.unavailable is None and h.id != target.id]
    elsewhere = (f"Hosts that offer {model}: " + ", ".join(f"{h.id} {h.name}" for h in offering) + "."
                 if offering else f"No usable host offers {model}.")
    own = target.kvm_cpu_model.strip()
    choices = f" Or choose a model host {target.id} offers, e.g. its own: `--cpu-model {own}`." if own else ""
    raise SiteError(
        f"Host {target.id} {target.name} does not offer CPU model {model}",
        f"VM {vm.id} would fail to boot there (the platform asks libvirt for exactly that model) and stay down. "
        f"Host {target.id} offers: {' '.join(target.kvm_cpu_models)}. {elsewhere}{choices} Nothing was changed.")


async def plan_flagged(site: "SiteConnection", *, hard: bool = False, journal: MoveJournal | None = None,
                       record_vm_ids: Sequence[int] | None = None
                       ) -> tuple[tuple[MovePlan, ...], tuple[tuple[DbVmRow, SiteError], ...]]:
    """A plan for every flagged document-database VM, and the ones that cannot be planned (why).

    The VMs are planned one after the other against one host list in which each planned move
    already takes its VM's CPU and memory on the target: two VMs are not both sent to the only host
    that had room for one."""
    inventory = await load_inventory(site, record_vm_ids=record_vm_ids)
    hosts = list(await site.cloud.list_hosts())
    plans: list[MovePlan] = []
    problems: list[tuple[DbVmRow, SiteError]] = []
    for row in inventory.flagged:
        try:
            plan = await plan_move(site, row.id, hard=hard, journal=journal, hosts=hosts)
        except AuthenticationFailed:
            raise
        except SiteError as error:
            problems.append((row, error))
            continue
        plans.append(plan)
        if plan.target_host_id != row.vm.summary.host_id:
            hosts = [reserve(host, row.vm.summary) if host.id == plan.target_host_id else host for host in hosts]
    return tuple(plans), tuple(problems)


def reserve(host: Host, vm: VmSummary) -> Host:
    """The host as it will be once `vm` runs on it: its CPU (percent) and memory counted as used."""
    return replace(host, used_cpu=host.used_cpu + round(vm.cpu * 100), used_mem_kb=host.used_mem_kb + vm.memory_mb * 1024)


# which steps are done ---------------------------------------------------------------------------


def arrived(facts: VmFacts, plan: MovePlan) -> bool:
    """A deployment on the target with the plan's model is under way or finished."""
    return (facts.active and facts.host_id == plan.target_host_id and facts.cpu_model == plan.cpu_model
            and (facts.lcm_state in DEPLOYING or facts.lcm_state == RUNNING))


def step_skips(facts: VmFacts, plan: MovePlan) -> dict[str, str]:
    """Steps the VM, as `facts` describe it, has already done: step -> why it is skipped."""
    skips: dict[str, str] = {}
    there = arrived(facts, plan)
    if there:
        skips[STEP_UNDEPLOY] = skips[STEP_WAIT_UNDEPLOYED] = skips[STEP_DEPLOY] = \
            f"already deployed on {plan.target_label}"
    elif facts.state in DEPLOYABLE:
        skips[STEP_UNDEPLOY] = f"VM is {facts.status}: nothing to undeploy"
        skips[STEP_WAIT_UNDEPLOYED] = f"VM is {facts.status}"
    elif facts.active and facts.lcm_state in UNDEPLOYING:
        skips[STEP_UNDEPLOY] = f"an undeploy is already under way ({facts.status})"
    if facts.cpu_model == plan.cpu_model:
        skips[STEP_SET_MODEL] = f"CPU model already {plan.cpu_model or '(none)'}"
    if there and facts.lcm_state == RUNNING:
        skips[STEP_WAIT_RUNNING] = f"VM is RUNNING on {plan.target_label}"
        if facts.ready:
            skips[STEP_WAIT_READY] = "the application reports READY=YES"
    return skips


# preview ----------------------------------------------------------------------------------------


def _wait_cli(vm_id: int, what: str) -> str:
    return f"onevm show {vm_id}    # until {what}"


def updateconf_cli(plan: MovePlan) -> str:
    """The platform CLI that sets the plan's CPU model in merge mode."""
    file = f"vm-{plan.vm_id}-cpu.tmpl"
    if not plan.cpu_model:
        return (f"onevm show {plan.vm_id}    # copy OS, FEATURES, INPUT, GRAPHICS, VIDEO, RAW, BACKUP_CONFIG and "
                f"CONTEXT into {file}, without CPU_MODEL; then: onevm updateconf {plan.vm_id} {file}")
    text = " ".join(cpu_model_update_text(plan.cpu_model).split())
    return f"echo {shlex.quote(text)} > {file} && onevm updateconf {plan.vm_id} {file} --append"


def preview_move(plan: MovePlan, timeouts: MoveTimeouts = DEFAULT_TIMEOUTS) -> Preview:
    """Every step of the plan with the equivalent platform CLI command; steps the VM has already
    done (as it was when planned) are marked `none` with the reason."""
    vm = plan.vm_id
    skips = step_skips(plan.facts, plan)
    model_text = f"CPU_MODEL = [ MODEL = \"{plan.cpu_model}\" ]" if plan.cpu_model else "no CPU_MODEL"
    steps: list[tuple[str, str, str, str]] = [
        (STEP_UNDEPLOY,
         f"Undeploy {plan.label} from {plan.origin_label} ({'hard' if plan.hard else 'graceful'} shutdown; its disks "
         "go back to the system datastore)", f"onevm undeploy{' --hard' if plan.hard else ''} {vm}", "action"),
        (STEP_WAIT_UNDEPLOYED, f"Wait until the VM is UNDEPLOYED (at most {timeouts.undeploy:g} s)",
         _wait_cli(vm, "STATE is UNDEPLOYED"), "none"),
        (STEP_SET_MODEL,
         f"Set {model_text} in merge mode (updateconf append=1): the VM's OS, CONTEXT and other sections are kept"
         if plan.cpu_model else
         "Remove CPU_MODEL (updateconf append=0 with every other section of the VM, unchanged)",
         updateconf_cli(plan), "update"),
        (STEP_DEPLOY, f"Deploy the VM on {plan.target_label}" + (
            " (READY=YES, left from its last boot, is reset first so that the wait sees the appliance report "
            "again)" if plan.facts.ready_flag and plan.wait_ready else ""),
         (f"echo 'READY = \"NO\"' > vm-{vm}-ready.tmpl && onevm update {vm} vm-{vm}-ready.tmpl --append && "
          if plan.facts.ready_flag and plan.wait_ready else "") + f"onevm deploy {vm} {plan.target_host_id}", "action"),
        (STEP_WAIT_RUNNING, f"Wait until the VM is RUNNING on {plan.target_label} (at most {timeouts.running:g} s)",
         _wait_cli(vm, f"LCM_STATE is RUNNING on host {plan.target_host_id}"), "none"),
        (STEP_WAIT_READY, f"Wait until the application reports READY=YES (at most {timeouts.ready:g} s)",
         _wait_cli(vm, "USER TEMPLATE shows READY=\"YES\""), "none"),
    ]
    if plan.ready_unreported:
        steps.append(("", f"No wait for READY=YES: {plan.ready_unreported}", "", "none"))
    changes = []
    for step, description, cli, kind in steps:
        if step and step not in plan.steps:
            continue
        if step in skips:
            changes.append(Change(f"{description}: already done ({skips[step]})", cli, "none"))
        else:
            changes.append(Change(description, cli, kind))
    warnings = list(plan.warnings)
    if STEP_UNDEPLOY not in skips and plan.facts.active:
        warnings.append(f"{plan.vm_name} is unavailable from the undeploy until it runs again on the new host.")
    verb = "Redeploy" if plan.redeploy else "Move"
    if all(step in skips for step in plan.steps):
        title = (f"{plan.label} already runs on {plan.target_label} with CPU model {plan.cpu_model or '(none)'}: "
                 "nothing to change")
    else:
        title = (f"{verb} {plan.label} from {plan.origin_label} to {plan.target_label} with CPU model "
                 f"{plan.cpu_model or '(none)'}")
    return Preview(title=title, changes=tuple(changes), destructive=STEP_UNDEPLOY not in skips and plan.facts.active,
                   target=plan.label, warnings=tuple(warnings))


def preview_many(plans: Sequence[MovePlan], timeouts: MoveTimeouts = DEFAULT_TIMEOUTS) -> Preview:
    """One preview for several moves, run one after the other."""
    if len(plans) == 1:
        return preview_move(plans[0], timeouts)
    changes: list[Change] = []
    warnings: list[str] = []
    for plan in plans:
        single = preview_move(plan, timeouts)
        changes += [replace(c, description=f"VM {plan.vm_id}: {c.description}") for c in single.changes]
        warnings += [w for w in single.warnings if w not in warnings]
    return Preview(title=f"Move {len(plans)} document-database VMs to compatible hosts", changes=tuple(changes),
                   destructive=True, target=", ".join(p.label for p in plans), warnings=tuple(warnings))

