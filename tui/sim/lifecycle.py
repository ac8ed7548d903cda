"""The VM life cycle of the simulated cloud: allocation, scheduling and every timed state transition.

Transitions are events on the site's heap (`site.after`), so a VM moves PENDING -> PROLOG -> BOOT
-> RUNNING as simulated time passes. Every change of state bumps `SimVm.epoch`; an event carries
the epoch it was scheduled under and does nothing once the VM has moved on (an action taken
mid-transition wins). Wrong-state actions raise the platform's ACTION errors with its messages.
Callers hold `site.lock`.

Public API (used by the XML-RPC methods, OneFlow and the scenarios):
`instantiate_vm_template`, `allocate_vm`, `terminate_vm`, `vm_action`, `deploy_vm`, `recover_vm`,
`vm_is_ready`, `state_str`.
"""

from __future__ import annotations

import itertools
import time
from typing import Callable

from tui.domain.error_codes import ACTION, INTERNAL
from tui.domain.one_states import (
    FAILURE_LCM_STATES,
    LCM_STATES,
    VM_STATES,
    DatastoreType,
    HostState,
    ImageState,
    LcmState,
    VmState,
)
from tui.domain.template_text import Template, merge_template, scalar
from tui.sim import appliances
from tui.sim.appliances import vm_is_ready
from tui.sim.leases import release
from tui.sim.rpc_errors import OneError, action_error, no_exists
from tui.sim.scheduler import RequirementError, candidates
from tui.sim.state import SimHistory, SimHost, SimSite, SimVm
from tui.sim.vm_build import build_vm_templates

__all__ = [
    "allocate_vm", "deploy_vm", "instantiate_vm_template", "recover_vm", "state_str", "terminate_vm",
    "vm_action", "vm_is_ready",
]

# states (the platform's codes: tui.domain.one_states) ------------------------------------------
INIT, PENDING, HOLD, ACTIVE = VmState.INIT, VmState.PENDING, VmState.HOLD, VmState.ACTIVE
STOPPED, SUSPENDED, DONE = VmState.STOPPED, VmState.SUSPENDED, VmState.DONE
POWEROFF, UNDEPLOYED = VmState.POWEROFF, VmState.UNDEPLOYED
LCM_INIT, PROLOG, BOOT, RUNNING = LcmState.LCM_INIT, LcmState.PROLOG, LcmState.BOOT, LcmState.RUNNING
SAVE_STOP, SAVE_SUSPEND, PROLOG_RESUME = LcmState.SAVE_STOP, LcmState.SAVE_SUSPEND, LcmState.PROLOG_RESUME
EPILOG_STOP, EPILOG, SHUTDOWN = LcmState.EPILOG_STOP, LcmState.EPILOG, LcmState.SHUTDOWN
UNKNOWN, SHUTDOWN_POWEROFF = LcmState.UNKNOWN, LcmState.SHUTDOWN_POWEROFF
BOOT_POWEROFF, BOOT_SUSPENDED, BOOT_STOPPED = LcmState.BOOT_POWEROFF, LcmState.BOOT_SUSPENDED, LcmState.BOOT_STOPPED
SHUTDOWN_UNDEPLOY, EPILOG_UNDEPLOY = LcmState.SHUTDOWN_UNDEPLOY, LcmState.EPILOG_UNDEPLOY
PROLOG_UNDEPLOY, BOOT_UNDEPLOY, BOOT_FAILURE = LcmState.PROLOG_UNDEPLOY, LcmState.BOOT_UNDEPLOY, LcmState.BOOT_FAILURE

#: HISTORY ACTION codes written when a host record closes
_HISTORY_ACTION = {"terminate": 27, "terminate-hard": 28, "undeploy": 5, "undeploy-hard": 6, "stop": 9,
                   "poweroff": 19, "poweroff-hard": 20, "suspend": 10}

#: the request IDs an action leaves in the VM's history record (REQUEST_ID; oned numbers its calls)
_REQUEST_IDS = itertools.count(1000)
#: who asks an action nobody named (OneFlow, the embedded site itself): oneadmin
SYSTEM_CALLER = (0, 0)

#: simulated seconds each phase lasts
SCHED_DELAY, SCHED_RETRY = 3.0, 30.0
PROLOG_TIME, BOOT_TIME = 10.0, 6.0
SHUTDOWN_TIME, HARD_SHUTDOWN_TIME, EPILOG_TIME, SAVE_TIME = 6.0, 1.0, 5.0, 5.0

#: the boot a failed boot retries (`onevm recover --retry`)
_BOOT_AGAIN: dict[int, int] = {LcmState.BOOT_UNDEPLOY_FAILURE: BOOT_UNDEPLOY, LcmState.BOOT_STOPPED_FAILURE: BOOT_STOPPED}


def state_str(vm: SimVm) -> str:
    """The state word the platform puts in its messages: the LCM state name while ACTIVE."""
    if vm.state == ACTIVE:
        return LCM_STATES[vm.lcm_state][0] if vm.lcm_state in LCM_STATES else str(vm.lcm_state)
    return VM_STATES[vm.state][0] if vm.state in VM_STATES else str(vm.state)


def _now() -> int:
    return int(time.time())


def _set_state(vm: SimVm, state: int, lcm: int) -> None:
    if (vm.state, vm.lcm_state) != (state, lcm):
        vm.prev_state, vm.prev_lcm_state = vm.state, vm.lcm_state
    vm.state, vm.lcm_state = state, lcm
    vm.epoch += 1
    vm.last_poll = _now()
    vm.touch()


def _later(site: SimSite, vm: SimVm, seconds: float, step: Callable[[], None]) -> None:
    """Run `step` after `seconds` unless the VM changed state (or vanished) meanwhile."""
    epoch = vm.epoch

    def guarded() -> None:
        if site.vms.get(vm.id) is vm and vm.epoch == epoch:
            step()

    site.after(seconds, guarded)


def _get_vm(site: SimSite, vm_id: int) -> SimVm:
    vm = site.vms.get(vm_id)
    if vm is None:
        raise no_exists("VM", vm_id)
    return vm


# allocation -----------------------------------------------------------------------------------


def allocate_vm(site: SimSite, attrs: Template, name: str, uid: int, gid: int, hold: bool = False,
                template_id: int | None = None) -> SimVm:
    """Create a VM from a full template (disks and NICs resolved) and start scheduling it."""
    vm_id = site.next_id("vm")
    system, user_attrs, images = build_vm_templates(site, vm_id, attrs, uid, gid, template_id)
    if hold:
        # on hold: SUBMIT_ON_HOLD moves to the VM's template (VirtualMachinePool::allocate,
        # src/vm/VirtualMachinePool.cc 100-104; VirtualMachine::insert, src/vm/VirtualMachine.cc 1135-1140)
        system = [*system, ("SUBMIT_ON_HOLD", "YES")]
    vm = SimVm(id=vm_id, name=name or f"vm-{vm_id}", uid=uid, gid=gid, state=HOLD if hold else PENDING,
               lcm_state=LCM_INIT, template=system, user_template=user_attrs)
    vm.last_poll = vm.stime
    for image in images:
        image.vm_ids.append(vm_id)
        image.running_vms += 1
        if image.state == ImageState.READY:
            image.prev_state, image.state = image.state, (ImageState.USED_PERS if image.persistent else ImageState.USED)
    site.vms[vm_id] = vm
    if not hold:
        _later(site, vm, SCHED_DELAY, lambda: _schedule(site, vm))
    return vm


def instantiate_vm_template(site: SimSite, template_id: int, name: str, extra: Template, uid: int, gid: int,
                            hold: bool = False) -> SimVm:
    """one.template.instantiate: copy the VM template, merge `extra` (same names replaced), boot it."""
    tpl = site.templates.get(template_id)
    if tpl is None:
        raise no_exists("TEMPLATE", template_id)
    attrs = merge_template(list(tpl.template), list(extra))
    vm = allocate_vm(site, attrs, name, uid, gid, hold, template_id)
    if not name:
        vm.name = f"{tpl.name}-{vm.id}"
        vm.touch()
    return vm


# scheduling and deployment --------------------------------------------------------------------


def _schedule(site: SimSite, vm: SimVm) -> None:
    if vm.state != PENDING:
        return
    try:
        hosts = candidates(site, vm)
        message = "" if hosts else "Cannot dispatch VM: No host meets the VM requirements"
    except RequirementError as exc:
        hosts, message = [], f"Cannot dispatch VM: {exc}"
    if not hosts:
        vm.user_template = [a for a in vm.user_template if a[0] != "SCHED_MESSAGE"]
        vm.user_template.append(("SCHED_MESSAGE", f"{time.strftime('%c')} : {message}"))
        vm.touch()
        _later(site, vm, SCHED_RETRY, lambda: _schedule(site, vm))
        return
    system_ds = min((ds.id for ds in site.datastores.values() if ds.type == DatastoreType.SYSTEM_DS), default=0)
    _place(site, vm, hosts[0], system_ds)


def _place(site: SimSite, vm: SimVm, host: SimHost, ds_id: int, by_request: bool = False) -> None:
    """Open a HISTORY record on `host` and run the prolog/boot phases that fit the VM's state.
    A record opened by one.vm.deploy carries PLAN_ID -2 and ACTION_ID -1, one of the scheduler's
    plan PLAN_ID -1 and ACTION_ID 0 (release-7.0.2, a deployed and a scheduled VM read back;
    src/vm/History.cc 311-312 writes them from 7.0)."""
    # a VM resumed from UNDEPLOYED or STOPPED waits in PENDING; its last host record says why
    left_by = vm.history[-1].action if vm.history else 0
    from_state = {5: UNDEPLOYED, 6: UNDEPLOYED, 9: STOPPED}.get(left_by, vm.state) if vm.state == PENDING else vm.state
    vm.user_template = [a for a in vm.user_template if a[0] != "SCHED_MESSAGE"]
    vm.history.append(SimHistory(seq=len(vm.history), host_id=host.id, hostname=host.name, stime=_now(), ds_id=ds_id,
                                 plan_id=-2 if by_request else -1, action_id=-1 if by_request else 0))
    # the system datastore's TM_MAD, set by the first deploy (VirtualMachine::check_tm_mad_disks,
    # src/vm/VirtualMachine.cc 4086-4102 at release-7.0.0)
    system_ds = site.datastores.get(ds_id)
    if system_ds is not None and not any(name == "TM_MAD_SYSTEM" for name, _ in vm.template):
        vm.template.append(("TM_MAD_SYSTEM", system_ds.tm_mad))
    _set_vnc_port(vm)
    vm.deploy_id = f"one-{vm.id}"
    if from_state == UNDEPLOYED:
        prolog, boot = PROLOG_UNDEPLOY, BOOT_UNDEPLOY
    elif from_state == STOPPED:
        prolog, boot = PROLOG_RESUME, BOOT_STOPPED
    else:
        prolog, boot = PROLOG, BOOT
    _set_state(vm, ACTIVE, prolog)
    _later(site, vm, PROLOG_TIME, lambda: _boot(site, vm, boot))


def _set_vnc_port(vm: SimVm) -> None:
    """A deploy gives the VM's GRAPHICS a PORT: VNC_PORTS' START (5900) plus the VM's id when free
    (set_vnc_port, src/rm/RequestManagerVirtualMachine.cc 635-670; Cluster::get_vnc_port,
    include/Cluster.h 149-155, release-7.0.0); undeploy and done release it (release_vnc_port)."""
    vm.template = [(name, [*[kv for kv in value if kv[0] != "PORT"], ("PORT", str(5900 + vm.id))])
                   if name == "GRAPHICS" and isinstance(value, list) else (name, value) for name, value in vm.template]


def _release_vnc_port(vm: SimVm) -> None:
    vm.template = [(name, [kv for kv in value if kv[0] != "PORT"]) if name == "GRAPHICS" and isinstance(value, list)
                   else (name, value) for name, value in vm.template]


def _boot(site: SimSite, vm: SimVm, boot_lcm: int) -> None:
    """Enter a BOOT_* state; a redefinition of the domain picks up the current CPU model."""
    if boot_lcm != BOOT_SUSPENDED:
        cpu_model = next((v for k, v in vm.template if k == "CPU_MODEL" and isinstance(v, list)), [])
        vm.deployed_cpu_model = next((v for k, v in cpu_model if k == "MODEL"), "")
    _set_state(vm, ACTIVE, boot_lcm)
    _later(site, vm, BOOT_TIME, lambda: _booted(site, vm, boot_lcm))


def cpu_model_refusal(site: SimSite, vm: SimVm) -> str:
    """Why the VM's host cannot boot its CPU model, or "". The KVM driver asks libvirt for a custom
    CPU with `<model fallback='forbid'>` (src/vmm/LibVirtDriverKVM.cc; host-passthrough excepted),
    so a model missing from the host's KVM_CPU_MODELS fails the boot; a host that does not publish
    the list is given the benefit of the doubt."""
    model = vm.deployed_cpu_model
    if not model or not vm.history:
        return ""
    host = site.hosts.get(vm.history[-1].host_id)
    offered = scalar(host.template, "KVM_CPU_MODELS", "").split() if host is not None else []
    if model != "host-passthrough" and offered and model not in offered:
        return (f"Error deploying virtual machine: unsupported configuration: guest CPU model {model} is not "
                f"supported by the host {host.name if host else ''} (fallback='forbid')")
    # each CPU_MODEL/FEATURES entry is written `<feature policy='require' name=.../>` whenever a model
    # is (host-passthrough too; src/vmm/LibVirtDriverKVM.cc, release-7.0.2 lines 1007-1018): a host
    # without it fails the boot
    cpu_model = next((v for k, v in vm.template if k == "CPU_MODEL" and isinstance(v, list)), [])
    wanted = [f.strip() for f in next((v for k, v in cpu_model if k == "FEATURES"), "").split(",") if f.strip()]
    has = scalar(host.template, "KVM_CPU_FEATURES", "") if host is not None else ""
    flags = set(has.replace(",", " ").split())
    lacking = [f for f in wanted if flags and f not in flags]
    if lacking:
        return (f"Error deploying virtual machine: the CPU is incompatible with host CPU: Host CPU does not provide "
                f"required features: {', '.join(lacking)}")
    return ""


#: where a failed boot leaves the VM (`LifeCycleManager::trigger_deploy_failure`, src/lcm/LifeCycleStates.cc)
_BOOT_FAILED: dict[int, tuple[int, int]] = {
    BOOT: (ACTIVE, BOOT_FAILURE), BOOT_UNDEPLOY: (ACTIVE, LcmState.BOOT_UNDEPLOY_FAILURE),
    BOOT_STOPPED: (ACTIVE, LcmState.BOOT_STOPPED_FAILURE), BOOT_POWEROFF: (POWEROFF, LCM_INIT),
    BOOT_SUSPENDED: (SUSPENDED, LCM_INIT)}


def _booted(site: SimSite, vm: SimVm, boot_lcm: int = BOOT) -> None:
    if (site.faults.fail_role and appliances.role_of(vm) == site.faults.fail_role) or (
            site.faults.fail_appliance and site.faults.fail_appliance in appliances.appliance_names(site, vm)):
        _set_state(vm, ACTIVE, BOOT_FAILURE)
        return
    refusal = cpu_model_refusal(site, vm) if boot_lcm != BOOT_SUSPENDED else ""
    if refusal:
        vm.user_template = [a for a in vm.user_template if a[0] != "ERROR"]
        vm.user_template.append(("ERROR", f"{time.strftime('%a %b %d %H:%M:%S %Y')} : {refusal}"))
        _set_state(vm, *_BOOT_FAILED.get(boot_lcm, (ACTIVE, BOOT_FAILURE)))
        return
    _set_state(vm, ACTIVE, RUNNING)
    appliances.on_boot(site, vm)


def _mark_action(vm: SimVm, action: str, by: tuple[int, int]) -> None:
    """`VirtualMachine::set_action` on the open record: the action and who asked it (UID, GID,
    REQUEST_ID), when the action starts (src/lcm/LifeCycleActions.cc, e.g. 620-627 undeploy, 743-750
    poweroff, 531 terminate of a VM that is not running, release-7.0.0)."""
    if vm.history and not vm.history[-1].etime:
        record = vm.history[-1]
        record.action = _HISTORY_ACTION.get(action, 0)
        record.uid, record.gid = by
        record.request_id = next(_REQUEST_IDS)


def _close_history(vm: SimVm, action: str) -> None:
    if vm.history and not vm.history[-1].etime:
        vm.history[-1].etime = _now()
        if not vm.history[-1].action:
            vm.history[-1].action = _HISTORY_ACTION.get(action, 0)


def _finish(site: SimSite, vm: SimVm, action: str) -> None:
    """The VM is DONE: close its host record, give back leases and images."""
    _close_history(vm, action)
    for name, nic in vm.template:
        if name == "NIC" and isinstance(nic, list):
            net_id = next((v for k, v in nic if k == "NETWORK_ID"), "")
            vnet = site.vnets.get(int(net_id)) if net_id.isdigit() else None
            if vnet is not None:
                release(vnet, vm.id)
    for image in site.images.values():
        if vm.id in image.vm_ids:
            image.vm_ids.remove(vm.id)
            image.running_vms = max(image.running_vms - 1, 0)
            if image.running_vms == 0 and image.state in (ImageState.USED, ImageState.USED_PERS):
                image.prev_state, image.state = image.state, ImageState.READY
    vm.etime = _now()
    _release_vnc_port(vm)
    _set_state(vm, DONE, LCM_INIT)


def deploy_vm(site: SimSite, vm_id: int, host_id: int, enforce: bool = False, ds_id: int = -1) -> None:
    """one.vm.deploy: place a PENDING, HOLD, STOPPED or UNDEPLOYED VM on the chosen host."""
    vm = _get_vm(site, vm_id)
    host = site.hosts.get(host_id)
    if host is None:
        raise no_exists("HOST", host_id)
    if ds_id >= 0:
        ds = site.datastores.get(ds_id)
        if ds is None:
            raise no_exists("DATASTORE", ds_id)
        if ds.type != DatastoreType.SYSTEM_DS:
            raise OneError(ACTION, "Can only deploy VMs in system datastores", ds_id)
    else:
        ds_id = min((ds.id for ds in site.datastores.values() if ds.type == DatastoreType.SYSTEM_DS), default=0)
    if vm.state not in (PENDING, HOLD, STOPPED, UNDEPLOYED):
        raise OneError(ACTION, f"Deploy action is not available for state {state_str(vm)}", vm_id)
    if host.state == HostState.OFFLINE:
        raise OneError(ACTION, "Host is offline, cannot use it to deploy VM", vm_id)
    if enforce:
        from tui.sim.xml_objects import host_usage
        from tui.sim.xml_render import vm_capacity

        _, cpu_used, mem_used = host_usage(site).get(host.id, ([], 0, 0))
        cpu, mem = vm_capacity(vm)
        if cpu_used + cpu > host.total_cpu or mem_used + mem > host.total_mem:
            raise OneError(ACTION, f"Host {host.id} does not have enough capacity to run VM {vm_id}", vm_id)
    if site.faults.fail_next_deploys > 0:
        site.faults.fail_next_deploys -= 1
        raise OneError(INTERNAL, f"Error deploying VM {vm_id} on host {host_id}: the virtualization driver did not answer", vm_id)
    _place(site, vm, host, ds_id, by_request=True)


# actions --------------------------------------------------------------------------------------

def _wrong_state(action: str, vm: SimVm) -> OneError:
    """`Error performing action "undeploy": This action is not available for state RUNNING`:
    the DispatchManager answers every action so (src/dm/DispatchManagerActions.cc, undeploy at
    about 431-440; the "Could not <verb> VM <id>, wrong state X." text only goes to its log),
    except terminate, which answers that text (`DispatchManager::terminate`, about 368-375)."""
    base = action.removesuffix("-hard")
    if base == "terminate":
        return action_error(action, f"Could not terminate VM {vm.id}, wrong state {state_str(vm)}.", vm.id)
    return action_error(action, f"This action is not available for state {state_str(vm)}", vm.id)


def _shutdown_then(site: SimSite, vm: SimVm, lcm: int, hard: bool, then: Callable[[], None]) -> None:
    _set_state(vm, ACTIVE, lcm)

    def done() -> None:
        if vm.history:
            vm.history[-1].running_end = _now()  # RETIME: the guest stopped running
        then()

    _later(site, vm, HARD_SHUTDOWN_TIME if hard else SHUTDOWN_TIME, done)


def _epilog_then(site: SimSite, vm: SimVm, lcm: int, then: Callable[[], None]) -> None:
    _set_state(vm, ACTIVE, lcm)
    if vm.history:
        vm.history[-1].epilog_start = _now()  # ESTIME

    def done() -> None:
        if vm.history:
            vm.history[-1].epilog_end = _now()  # EETIME
        then()

    _later(site, vm, EPILOG_TIME, done)


def terminate_vm(site: SimSite, vm_id: int, hard: bool = False) -> None:
    """terminate / terminate-hard; raises OneError for a wrong state."""
    vm_action(site, "terminate-hard" if hard else "terminate", vm_id)


def _to_stopped(vm: SimVm) -> None:
    _close_history(vm, "stop")
    _set_state(vm, STOPPED, LCM_INIT)


def _to_undeployed(site: SimSite, vm: SimVm, action: str) -> None:
    _close_history(vm, action)
    _release_vnc_port(vm)
    _set_state(vm, UNDEPLOYED, LCM_INIT)


def vm_action(site: SimSite, action: str, vm_id: int, by: tuple[int, int] = SYSTEM_CALLER) -> None:
    """one.vm.action for every action the console uses; raises OneError like the platform. `by`
    (UID, GID) asked it: the VM's history record says so."""
    vm = _get_vm(site, vm_id)
    run = _ACTIONS.get(action.removesuffix("-hard"))
    if run is None:
        # VirtualMachineAPI::action, rc -3 (src/rm/api/VirtualMachineAPI.cc)
        raise OneError(ACTION, f'Action "{action}" is not supported', vm_id)
    run(site, vm, action, by)


def _running(vm: SimVm) -> bool:
    return vm.state == ACTIVE and vm.lcm_state in (RUNNING, UNKNOWN)


def _terminate(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    # DispatchManager::terminate (src/dm/DispatchManagerActions.cc): a DONE VM is left alone,
    # a failed one deleted, a SHUTDOWN one only overridden by --hard
    hard = action.endswith("-hard")
    if vm.state == DONE:
        return
    if vm.state in (INIT, PENDING, HOLD, STOPPED, UNDEPLOYED, 10, 11):
        _finish(site, vm, action)
    elif vm.state in (POWEROFF, SUSPENDED):
        # a VM that is not running is shut down softly whatever was asked: TERMINATE_ACTION
        # (DispatchManager::terminate, src/dm/DispatchManagerActions.cc 314-318;
        # LifeCycleActions.cc 531, release-7.0.0)
        _mark_action(vm, "terminate", by)
        _epilog_then(site, vm, EPILOG, lambda: _finish(site, vm, "terminate"))
    elif vm.state == ACTIVE and vm.lcm_state in FAILURE_LCM_STATES:
        _finish(site, vm, action)
    elif _running(vm) or (vm.state == ACTIVE and vm.lcm_state == SHUTDOWN and hard):
        _mark_action(vm, action, by)
        _shutdown_then(site, vm, SHUTDOWN, hard,
                       lambda: _epilog_then(site, vm, EPILOG, lambda: _finish(site, vm, action)))
    else:
        raise _wrong_state(action, vm)


def _undeploy(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    hard = action.endswith("-hard")
    if _running(vm) or (hard and vm.state == ACTIVE and vm.lcm_state == SHUTDOWN_UNDEPLOY):
        _mark_action(vm, action, by)
        _shutdown_then(site, vm, SHUTDOWN_UNDEPLOY, hard,
                       lambda: _epilog_then(site, vm, EPILOG_UNDEPLOY, lambda: _to_undeployed(site, vm, action)))
    elif vm.state == POWEROFF:
        _mark_action(vm, action, by)
        _epilog_then(site, vm, EPILOG_UNDEPLOY, lambda: _to_undeployed(site, vm, action))
    else:
        raise _wrong_state(action, vm)


def _poweroff(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    if not _running(vm):
        raise _wrong_state(action, vm)
    _mark_action(vm, action, by)
    _shutdown_then(site, vm, SHUTDOWN_POWEROFF, action.endswith("-hard"), lambda: _set_state(vm, POWEROFF, LCM_INIT))


def _stop(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    if not _running(vm):
        raise _wrong_state(action, vm)
    _mark_action(vm, action, by)
    _set_state(vm, ACTIVE, SAVE_STOP)
    _later(site, vm, SAVE_TIME, lambda: _epilog_then(site, vm, EPILOG_STOP, lambda: _to_stopped(vm)))


def _suspend(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    if not _running(vm):
        raise _wrong_state(action, vm)
    _mark_action(vm, action, by)
    _set_state(vm, ACTIVE, SAVE_SUSPEND)
    _later(site, vm, SAVE_TIME, lambda: _set_state(vm, SUSPENDED, LCM_INIT))


def _hold(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    if vm.state != PENDING:
        raise _wrong_state(action, vm)
    _set_state(vm, HOLD, LCM_INIT)


def _release(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    if vm.state != HOLD:
        raise _wrong_state(action, vm)
    _set_state(vm, PENDING, LCM_INIT)
    _later(site, vm, SCHED_DELAY, lambda: _schedule(site, vm))


def _reboot(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    if not _running(vm):
        raise _wrong_state(action, vm)
    vm.epoch += 1  # pending appliance reports belong to the previous boot
    vm.touch()
    appliances.on_boot(site, vm)


def _resched(site: SimSite, vm: SimVm, action: str, by: tuple[int, int]) -> None:
    if not (_running(vm) or vm.state == POWEROFF):
        raise _wrong_state(action, vm)
    vm.resched = 1 if action.removesuffix("-hard") == "resched" else 0
    vm.touch()


#: one.vm.action's actions (without "-hard") -> what each does to the VM; `by` asked it
_ACTIONS: dict[str, Callable[[SimSite, SimVm, str, tuple[int, int]], None]] = {
    "terminate": _terminate,
    "undeploy": _undeploy,
    "poweroff": _poweroff,
    "stop": _stop,
    "suspend": _suspend,
    "resume": lambda site, vm, action, by: _resume(site, vm, action),
    "hold": _hold,
    "release": _release,
    "reboot": _reboot,
    "resched": _resched,
    "unresched": _resched,
}


def _resume(site: SimSite, vm: SimVm, action: str) -> None:
    if vm.state == POWEROFF:
        _boot(site, vm, BOOT_POWEROFF)
    elif vm.state == SUSPENDED:
        _boot(site, vm, BOOT_SUSPENDED)
    elif vm.state in (UNDEPLOYED, STOPPED):
        # back to the scheduler; _place picks the prolog that fits the state it left
        _set_state(vm, PENDING, LCM_INIT)
        _later(site, vm, SCHED_DELAY, lambda: _schedule(site, vm))
    else:
        raise _wrong_state(action, vm)


def recover_vm(site: SimSite, vm_id: int, operation: int) -> None:
    """one.vm.recover: 0 failure, 1 success, 2 retry, 3 delete, 4 delete-recreate, 5 delete-db.

    Failure and success: a VM that is not ACTIVE answers `Could not perform a recover operation
    on VM n, wrong state X.` (DispatchManager::recover, src/dm/DispatchManagerActions.cc 935 at
    release-7.0.0, 1033 at 6.10.0, 937 at 7.4.0); an ACTIVE one in LCM_INIT or RUNNING is left as
    it is and the call succeeds (LifeCycleManager::recover, src/lcm/LifeCycleActions.cc 1334-1336)."""
    vm = _get_vm(site, vm_id)
    if operation in (3, 5):
        if vm.state == DONE:
            raise OneError(ACTION, f"Could not recover VM {vm_id}, wrong state {state_str(vm)}.", vm_id)
        _finish(site, vm, "terminate-hard")
        return
    if operation in (0, 1) and vm.state != ACTIVE:
        raise OneError(ACTION, f"Could not perform a recover operation on VM {vm_id}, wrong state {state_str(vm)}.",
                       vm_id)
    if operation in (0, 1) and vm.lcm_state in (LCM_INIT, RUNNING):
        return
    if vm.state != ACTIVE or (vm.lcm_state not in FAILURE_LCM_STATES and vm.lcm_state not in (PROLOG, BOOT)):
        raise OneError(ACTION, f"Could not recover VM {vm_id}, wrong state {state_str(vm)}.", vm_id)
    if operation == 0:
        _set_state(vm, ACTIVE, BOOT_FAILURE)
    elif operation == 1:
        _set_state(vm, ACTIVE, RUNNING)
        appliances.on_boot(site, vm)
    elif operation == 2:
        # retry the phase that failed: a boot after an undeploy boots as BOOT_UNDEPLOY again
        _boot(site, vm, _BOOT_AGAIN.get(vm.lcm_state, BOOT))
    elif operation == 4:
        _close_history(vm, "terminate-hard")
        _set_state(vm, PENDING, LCM_INIT)
        _later(site, vm, SCHED_DELAY, lambda: _schedule(site, vm))
    else:
        raise OneError(ACTION, f"Invalid recover operation {operation}.", vm_id)


def role_vms(site: SimSite, service_id: int) -> list[SimVm]:
    """The VMs carrying SERVICE_ID == service_id (any state)."""
    wanted = str(service_id)
    return [vm for vm in site.vms.values() if scalar(vm.user_template, "SERVICE_ID", "") == wanted]
