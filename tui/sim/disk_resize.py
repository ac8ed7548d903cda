"""`one.vm.diskresize` (`onevm disk-resize <vm> <disk> <size>`): a VM disk grown, as the platform does it.

The request (`VirtualMachineDiskResize::request_execute`, src/rm/RequestManagerVirtualMachine.cc
3522-3711 at release-7.0.2, 3589 on at release-6.10.0; `VirtualMachineAPI::disk_resize`,
src/rm/api/VirtualMachineAPI.cc 2125-2305 at release-7.4.0), in its order:

1. the size (a string of MB) must read whole as an integer, else ACTION `Disk SIZE is not a valid
   integer` (checked before the VM is even looked up);
2. the VM must exist (NO_EXISTS) and the caller MANAGE it;
3. the disk must exist, else ACTION `VM disk does not exist`;
4. the new size must be greater than the disk's SIZE, else ACTION `New disk size has to be
   greater than current one`;
5. `DispatchManager::disk_resize` (src/dm/DispatchManagerActions.cc 2202-2275 at release-7.0.2,
   2339 at release-6.10.0, 2198 at release-7.4.0: the same states and message): only POWEROFF, UNDEPLOYED or ACTIVE/RUNNING, else ACTION `Could not
   resize disk for VM <id>, wrong state <state>.` (the LCM state's name while ACTIVE,
   `VirtualMachine::state_str`, src/vm/VirtualMachine.cc 614-624);
6. the disk gets SIZE_PREV (its old size), SIZE (the new one) and RESIZE=YES
   (`VirtualMachineDisks::set_up_resize`, src/vm/VirtualMachineDisk.cc 1368-1395), and the VM
   goes to ACTIVE/DISK_RESIZE (62), or DISK_RESIZE_POWEROFF (63) / DISK_RESIZE_UNDEPLOYED (64)
   from those states (include/VirtualMachine.h 137-139 at release-7.0.2, 136-138 at 6.10.0,
   138-140 at 7.4.0); the answer is the disk id (the request answers the VM's from 7.4 on:
   `platform.disk_resize_answers_vm_id`).

The driver's answer (the dummy drivers answer success after their action: src/vmm_mad/dummy/
one_vmm_dummy.rb 194-198 `resize_disk`) completes it (`LifeCycleManager::trigger_disk_resize_success`,
src/lcm/LifeCycleStates.cc 2386-2463 at release-7.0.2): back to RUNNING, POWEROFF or UNDEPLOYED, SIZE_PREV and
RESIZE removed. A failure (`trigger_disk_resize_failure`, 2469-2577, SIZE restored by
`VirtualMachineDisk::clear_resize(true)`, src/vm/VirtualMachineDisk.cc 617-628) goes back the same way with
SIZE restored from SIZE_PREV. The fault `Faults.fail_disk_resizes` makes the next resizes fail so;
`Faults.disk_resize_seconds` makes them last longer (a slow driver).

From POWEROFF and RUNNING (not UNDEPLOYED: no host) the platform closes the VM's history record
and opens a copy (`DispatchManager::close_cp_history`, DispatchManagerActions.cc 2266-2269 and
its definition, release-7.4.0; `VirtualMachine::cp_history`, src/vm/VirtualMachine.cc): the
closed one ends now with the DISK_RESIZE action (29, include/VMActions.h 61 at 6.10.0, 7.0.2 and
7.4.0) and who asked it; the new one (SEQ + 1, the same host, datastore, PLAN_ID and ACTION_ID)
starts now and keeps the closed one's earlier action; a VM that was not running (its running
phase already ended) stays so in the copy. A real 7.4.0 frontend showed the extra record
(tests/recordings/7.4.0.json, "vm: info (disk resized)").

Not modelled: quotas (the embedded site keeps none), and the datastore's free space (the
platform's monitoring, not the request, updates it).
"""

from __future__ import annotations

from tui.domain.error_codes import ACTION
from tui.domain.one_states import LcmState
from tui.sim import lifecycle
from tui.sim.rpc_errors import OneError
from tui.sim.state import SimHistory, SimSite, SimVm

DISK_RESIZE, DISK_RESIZE_POWEROFF = LcmState.DISK_RESIZE, LcmState.DISK_RESIZE_POWEROFF
DISK_RESIZE_UNDEPLOYED = LcmState.DISK_RESIZE_UNDEPLOYED
#: VMActions::DISK_RESIZE_ACTION, the action a resize closes the history record with
DISK_RESIZE_ACTION = 29
#: simulated seconds the driver takes to grow a disk
RESIZE_TIME = 4.0
#: where each resize state returns to (state, lcm state), success or failure alike
_BACK: dict[int, tuple[int, int]] = {DISK_RESIZE: (lifecycle.ACTIVE, lifecycle.RUNNING), DISK_RESIZE_POWEROFF: (lifecycle.POWEROFF, lifecycle.LCM_INIT),
         DISK_RESIZE_UNDEPLOYED: (lifecycle.UNDEPLOYED, lifecycle.LCM_INIT)}


def parse_size(size: str) -> int:
    """The size as `istringstream >> long long` with the eof check reads it (7.4.0's
    `one_util::str_cast` the same): optional spaces and sign first, digits to the very end."""
    text = size.lstrip(" \t\n\r\v\f")
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise OneError(ACTION, "Disk SIZE is not a valid integer")
    return int(text)


def _disk(vm: SimVm, disk_id: int) -> list[tuple[str, str]] | None:
    for name, value in vm.template:
        if name == "DISK" and isinstance(value, list) and any(k == "DISK_ID" and v == str(disk_id) for k, v in value):
            return value
    return None


def _set(disk: list[tuple[str, str]], key: str, value: str | None) -> None:
    disk[:] = [kv for kv in disk if kv[0] != key] + ([(key, value)] if value is not None else [])
    disk.sort()


def _close_cp_history(vm: SimVm, by: tuple[int, int]) -> None:
    """`DispatchManager::close_cp_history` for the DISK_RESIZE action (module docstring)."""
    if not vm.history:
        return
    closed = vm.history[-1]
    now = lifecycle._now()
    not_running = bool(closed.running_end)
    if not not_running:
        closed.running_end = now
    closed.etime = now
    earlier = closed.action
    closed.action = DISK_RESIZE_ACTION
    closed.uid, closed.gid = by
    closed.request_id = next(lifecycle._REQUEST_IDS)
    vm.history.append(SimHistory(seq=closed.seq + 1, host_id=closed.host_id, hostname=closed.hostname, stime=now,
                                 action=earlier, ds_id=closed.ds_id, plan_id=closed.plan_id,
                                 action_id=closed.action_id, running_end=now if not_running else 0, prolog=False))


def disk_resize(site: SimSite, vm: SimVm, disk_id: int, size: int, by: tuple[int, int] = lifecycle.SYSTEM_CALLER) -> int:
    """Steps 3 to 6 of the module docstring; the caller checked the size text and the rights."""
    disk = _disk(vm, disk_id)
    if disk is None:
        raise OneError(ACTION, "VM disk does not exist", vm.id)
    current = next((v for k, v in disk if k == "SIZE"), "0")
    if size <= int(current or 0):
        raise OneError(ACTION, "New disk size has to be greater than current one", vm.id)
    if vm.state == lifecycle.POWEROFF:
        lcm = DISK_RESIZE_POWEROFF
    elif vm.state == lifecycle.UNDEPLOYED:
        lcm = DISK_RESIZE_UNDEPLOYED
    elif vm.state == lifecycle.ACTIVE and vm.lcm_state == lifecycle.RUNNING:
        lcm = DISK_RESIZE
    else:
        raise OneError(ACTION, f"Could not resize disk for VM {vm.id}, wrong state {lifecycle.state_str(vm)}.", vm.id)
    _set(disk, "SIZE_PREV", current)
    _set(disk, "SIZE", str(size))
    _set(disk, "RESIZE", "YES")
    lifecycle._set_state(vm, lifecycle.ACTIVE, lcm)
    if lcm != DISK_RESIZE_UNDEPLOYED:
        _close_cp_history(vm, by)
    failing = site.faults.fail_disk_resizes > 0
    if failing:
        site.faults.fail_disk_resizes -= 1
    seconds = site.faults.disk_resize_seconds or RESIZE_TIME
    lifecycle._later(site, vm, seconds, lambda: _finished(vm, disk, lcm, failed=failing))
    return disk_id


def _finished(vm: SimVm, disk: list[tuple[str, str]], lcm: int, *, failed: bool) -> None:
    """The driver answered: `trigger_disk_resize_success` / `_failure` (module docstring)."""
    if failed:
        previous = next((v for k, v in disk if k == "SIZE_PREV"), None)
        if previous is not None:
            _set(disk, "SIZE", previous)
    _set(disk, "SIZE_PREV", None)
    _set(disk, "RESIZE", None)
    lifecycle._set_state(vm, *_BACK[lcm])
