"""The XML-RPC methods that create and drive VMs: instantiate, action, deploy, updateconf, update,
diskresize (tui.sim.disk_resize), recover.

`one.vm.updateconf` only touches the sections the platform lets it change (OS, FEATURES, INPUT,
GRAPHICS, VIDEO, RAW, CPU_MODEL, BACKUP_CONFIG, CONTEXT): with append=0 every one of those
sections missing from the new text is ERASED; with append=1 the new sections are merged into the
existing ones (a vector keeps the members the new text does not name). Before 6.2 there is no
append flag: a fourth argument is ignored and every call replaces (6.0
src/rm/RequestManagerVirtualMachine.cc, signature `A:sis`). Its errors follow
`VirtualMachineAPI::update_conf` (src/rm/api/VirtualMachineAPI.cc; 6.10
RequestManagerVirtualMachine.cc): `Wrong update type` (RPC_API) first, a parse error INTERNAL, the
VM's state refusing it INTERNAL `configuration cannot be updated in state X` (the states are
`VirtualMachine::updateconf`'s, src/vm/VirtualMachine.cc).

`one.vm.update` (`VirtualMachineAPI::update`): a parse error answers ACTION (the text is parsed
for the quota check before the update), `Wrong update type` RPC_API, append=1 `Template::merge`.
"""

from __future__ import annotations

from typing import Any

from tui.domain.error_codes import ACTION, ALLOCATE, INTERNAL, XML_RPC_API
from tui.domain.one_states import LcmState, VmState
from tui.domain.template_text import Template
from tui.sim import lifecycle
from tui.sim.disk_resize import disk_resize, parse_size
from tui.sim.platform import disk_resize_answers_vm_id, updateconf_has_append
from tui.sim.rpc_context import Call, merge_template, method, parse_text, refuse_name
from tui.sim.rpc_errors import OneError, no_exists
from tui.sim.state import SimVm

UPDATECONF_SECTIONS = ("OS", "FEATURES", "INPUT", "GRAPHICS", "VIDEO", "RAW", "CPU_MODEL", "BACKUP_CONFIG", "CONTEXT")
#: states in which the configuration may change: PENDING, HOLD, POWEROFF, UNDEPLOYED, CLONING,
#: CLONING_FAILURE, and ACTIVE in these LCM states (`VirtualMachine::updateconf`, the same list in
#: release-6.10.0, release-7.0.0 and release-7.4.0 src/vm/VirtualMachine.cc)
_UPDATECONF_STATES = frozenset({VmState.PENDING, VmState.HOLD, VmState.POWEROFF, VmState.UNDEPLOYED, VmState.CLONING,
                                VmState.CLONING_FAILURE})
_UPDATECONF_LCM_STATES = frozenset({
    LcmState.LCM_INIT,
    LcmState.PROLOG,
    LcmState.RUNNING,
    LcmState.EPILOG,
    LcmState.SHUTDOWN,
    LcmState.CLEANUP_RESUBMIT,
    LcmState.SHUTDOWN_POWEROFF,
    LcmState.CLEANUP_DELETE,
    LcmState.HOTPLUG_SAVEAS_POWEROFF,
    LcmState.SHUTDOWN_UNDEPLOY,
    LcmState.EPILOG_UNDEPLOY,
    LcmState.PROLOG_UNDEPLOY,
    LcmState.HOTPLUG_PROLOG_POWEROFF,
    LcmState.HOTPLUG_EPILOG_POWEROFF,
    LcmState.BOOT_FAILURE,
    LcmState.PROLOG_FAILURE,
    LcmState.EPILOG_FAILURE,
    LcmState.EPILOG_UNDEPLOY_FAILURE,
    LcmState.PROLOG_MIGRATE_POWEROFF,
    LcmState.PROLOG_MIGRATE_POWEROFF_FAILURE,
    LcmState.BOOT_UNDEPLOY_FAILURE,
    LcmState.PROLOG_UNDEPLOY_FAILURE,
    LcmState.DISK_SNAPSHOT_POWEROFF,
    LcmState.DISK_SNAPSHOT_REVERT_POWEROFF,
    LcmState.DISK_SNAPSHOT_DELETE_POWEROFF,
})


def updateconf_allowed(vm: SimVm) -> bool:
    return vm.state in _UPDATECONF_STATES or (vm.state == VmState.ACTIVE and vm.lcm_state in _UPDATECONF_LCM_STATES)
#: actions that need ADMIN rights on the VM rather than MANAGE
_ADMIN_ACTIONS = frozenset({"resched", "unresched"})


def _vm(call: Call, vm_id: int, op: str = "MANAGE") -> SimVm:
    vm: SimVm = call.get(call.site.vms, "VM", vm_id, op)
    return vm


@method("one.template.instantiate", "is", "bsb")
def template_instantiate(call: Call, template_id: int, name: str, hold: bool = False, extra: str = "",
                         persistent: bool = False) -> int:
    tpl = call.site.templates.get(template_id)
    if tpl is None:
        raise no_exists("TEMPLATE", template_id)
    call.require("TEMPLATE", "USE", tpl)
    call.require("VM", "CREATE")
    if name:  # an empty name is the platform's to make (`<template>-<id>`)
        refuse_name(call, name, ALLOCATE, "Error allocating a new virtual machine template. ")
    extra_attrs = parse_text(extra) if extra.strip() else []
    vm = lifecycle.instantiate_vm_template(call.site, template_id, name, extra_attrs, call.user.id, call.user.gid,
                                           hold=hold)
    return vm.id


@method("one.vm.action", "si")
def vm_action(call: Call, action: str, vm_id: int) -> int:
    _vm(call, vm_id, "ADMIN" if action in _ADMIN_ACTIONS else "MANAGE")
    lifecycle.vm_action(call.site, action, vm_id, by=(call.user.id, call.user.gid))
    return vm_id


@method("one.vm.deploy", "ii", "bis")
def vm_deploy(call: Call, vm_id: int, host_id: int, enforce: bool = False, ds_id: int = -1, extra: str = "") -> int:
    _vm(call, vm_id, "ADMIN")
    if extra.strip():
        # the extra template picks NICs in multi-cluster sites; it is checked, not applied here
        parse_text(extra)
    lifecycle.deploy_vm(call.site, vm_id, host_id, enforce, ds_id)
    return vm_id


def _merge_vector(old: list[tuple[str, Any]], new: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    named = {k for k, _ in new}
    return [kv for kv in old if kv[0] not in named] + new


def updated_configuration(vm: SimVm, new: Template, append: int) -> tuple[Template, Template]:
    """(VM/TEMPLATE, BACKUP_CONFIG) after updateconf; attributes outside the sections are ignored."""
    sections = [a for a in new if a[0] in UPDATECONF_SECTIONS]
    backup_new = next((v for k, v in sections if k == "BACKUP_CONFIG" and isinstance(v, list)), None)
    sections = [a for a in sections if a[0] != "BACKUP_CONFIG"]
    if append == 0:
        # replace mode erases every section the text leaves out, except CONTEXT: without a CONTEXT in
        # the text the VM's stays as it is (VirtualMachine::updateconf, src/vm/VirtualMachine.cc
        # 3126-3140 at release-7.0.0: only a new CONTEXT is compared with the old one)
        kept = {"CONTEXT"} - {name for name, _ in sections}
        template = [a for a in vm.template if a[0] not in UPDATECONF_SECTIONS or a[0] in kept] + sections
        backup: Template = list(backup_new) if backup_new is not None else []
        return template, backup
    template = list(vm.template)
    for name, value in sections:
        index = next((i for i, (k, _) in enumerate(template) if k == name), None)
        if index is None:
            template.append((name, value))
            continue
        old = template[index][1]
        template[index] = (name, _merge_vector(old, value) if isinstance(old, list) and isinstance(value, list) else value)
    backup = _merge_vector(list(vm.backup_config), list(backup_new)) if backup_new is not None else list(vm.backup_config)
    return template, backup


@method("one.vm.updateconf", "is", "i")
def vm_updateconf(call: Call, vm_id: int, text: str, append: int = 0) -> int:
    if not updateconf_has_append(call.site.config.one_version):
        append = 0  # 6.0 reads no fourth argument: every call replaces
    if append not in (0, 1):
        raise OneError(XML_RPC_API, "Wrong update type")
    try:
        new = parse_text(text)
    except OneError as exc:
        raise OneError(INTERNAL, exc.message) from exc
    vm = _vm(call, vm_id)
    if not updateconf_allowed(vm):
        raise OneError(INTERNAL, f"configuration cannot be updated in state {lifecycle.state_str(vm)}")
    vm.template, vm.backup_config = updated_configuration(vm, new, append)
    vm.touch()
    return vm_id


@method("one.vm.update", "is", "i")
def vm_update(call: Call, vm_id: int, text: str, append: int = 0) -> int:
    vm = _vm(call, vm_id)
    if append not in (0, 1):
        raise OneError(XML_RPC_API, "Wrong update type")
    try:
        new = parse_text(text)
    except OneError as exc:
        raise OneError(ACTION, exc.message) from exc
    vm.user_template = new if append == 0 else merge_template(vm.user_template, new)
    vm.touch()
    return vm_id


@method("one.vm.diskresize", "iis")
def vm_diskresize(call: Call, vm_id: int, disk_id: int, size: str) -> int:
    """`onevm disk-resize`: the size text is checked before the VM is looked up (tui.sim.disk_resize);
    a MANAGE operation (`disk-resize` in VM_MANAGE_OPERATIONS, share/etc/oned.conf 770-772 at release-7.0.2)."""
    new_size = parse_size(size)
    answer = disk_resize(call.site, _vm(call, vm_id), disk_id, new_size, by=(call.user.id, call.user.gid))
    return vm_id if disk_resize_answers_vm_id(call.site.config.one_version) else answer


@method("one.vm.recover", "ii")
def vm_recover(call: Call, vm_id: int, operation: int) -> int:
    _vm(call, vm_id, "ADMIN")
    lifecycle.recover_vm(call.site, vm_id, operation)
    return vm_id
