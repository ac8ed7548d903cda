"""The XML-RPC methods that create and drive VMs: instantiate, action, deploy, updateconf, update, recover.

`one.vm.updateconf` only touches the sections the platform lets it change (OS, FEATURES, INPUT,
GRAPHICS, VIDEO, RAW, CPU_MODEL, BACKUP_CONFIG, CONTEXT): with append=0 every one of those
sections missing from the new text is ERASED; with append=1 the new sections are merged into the
existing ones (a vector keeps the members the new text does not name).
"""

from __future__ import annotations

from typing import Any

from tui.domain.error_codes import ACTION
from tui.domain.template_text import Template
from tui.sim import lifecycle
from tui.sim.rpc_context import Call, apply_update, method, parse_text
from tui.sim.rpc_errors import OneError, no_exists
from tui.sim.state import SimVm

UPDATECONF_SECTIONS = ("OS", "FEATURES", "INPUT", "GRAPHICS", "VIDEO", "RAW", "CPU_MODEL", "BACKUP_CONFIG", "CONTEXT")
#: states in which the configuration may change (ACTIVE only while RUNNING)
_UPDATECONF_STATES = frozenset({0, 1, 2, 8, 9, 10, 11})
#: actions that need ADMIN rights on the VM rather than MANAGE
_ADMIN_ACTIONS = frozenset({"resched", "unresched"})


def _vm(call: Call, vm_id: int, op: str = "MANAGE") -> SimVm:
    vm = call.site.vms.get(vm_id)
    if vm is None:
        raise no_exists("VM", vm_id)
    call.require("VM", op, vm)
    return vm


@method("one.template.instantiate", "is", "bsb")
def template_instantiate(call: Call, template_id: int, name: str, hold: bool = False, extra: str = "",
                         persistent: bool = False) -> int:
    tpl = call.site.templates.get(template_id)
    if tpl is None:
        raise no_exists("TEMPLATE", template_id)
    call.require("TEMPLATE", "USE", tpl)
    call.require("VM", "CREATE")
    extra_attrs = parse_text(extra) if extra.strip() else []
    vm = lifecycle.instantiate_vm_template(call.site, template_id, name, extra_attrs, call.user.id, call.user.gid,
                                           hold=hold)
    return vm.id


@method("one.vm.action", "si")
def vm_action(call: Call, action: str, vm_id: int) -> int:
    _vm(call, vm_id, "ADMIN" if action in _ADMIN_ACTIONS else "MANAGE")
    lifecycle.vm_action(call.site, action, vm_id)
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
        template = [a for a in vm.template if a[0] not in UPDATECONF_SECTIONS] + sections
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
    vm = _vm(call, vm_id)
    if append not in (0, 1):
        raise OneError(ACTION, f"Wrong update type {append}: use 0 (replace) or 1 (merge).", vm_id)
    if not (vm.state in _UPDATECONF_STATES or (vm.state == 3 and vm.lcm_state == 3)):
        raise OneError(ACTION, f"configuration cannot be updated in state {lifecycle.state_str(vm)}", vm_id)
    vm.template, vm.backup_config = updated_configuration(vm, parse_text(text), append)
    vm.touch()
    return vm_id


@method("one.vm.update", "isi")
def vm_update(call: Call, vm_id: int, text: str, append: int) -> int:
    vm = _vm(call, vm_id)
    if append not in (0, 1):
        raise OneError(ACTION, f"Wrong update type {append}: use 0 (replace) or 1 (merge).", vm_id)
    vm.user_template = apply_update(vm.user_template, text, append)
    vm.touch()
    return vm_id


@method("one.vm.recover", "ii")
def vm_recover(call: Call, vm_id: int, operation: int) -> int:
    _vm(call, vm_id, "ADMIN")
    lifecycle.recover_vm(call.site, vm_id, operation)
    return vm_id
