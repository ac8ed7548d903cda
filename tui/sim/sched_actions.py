"""Scheduled VM actions as OneFlow role actions leave them: one SCHED_ACTION per VM, staggered.

A role action (`oneflow action <service> <role> <action> --period P --number N`) and a service
action do not act on the VMs at once: `Role#batch_action` (OpenNebula/one release-7.4.0
src/flow/lib/models/vmrole.rb lines 128-183; release-7.0.2 the same lines; release-6.10.5
src/flow/lib/models/role.rb lines 646-701) adds to the VM at index i of the role's nodes a
`SCHED_ACTION = [ ACTION, ARGS, TIME = now + (i / number) * period ]` with `one.vm.schedadd`,
offsets only when both period and number are positive. The server fills a missing period or
number from oneflow-server.conf (`:action_period: 60`, `:action_number: 1`; oneflow-server.rb
release-7.4.0 lines 117-118 and 512-514, 6.10.5 lines 99-100 and 447-449). A role in DONE refuses
("Role <name> is in DONE state"). The platform's scheduler then runs each action when its TIME
comes, writing DONE (the time it ran) or MESSAGE (the error) into the action.

The VM shows its actions as the platform renders them (src/sam/ScheduledAction.cc `to_xml`, lines
75-93: ID, PARENT_ID, TYPE, ACTION, ARGS, TIME, REPEAT, DAYS, END_TYPE, END_VALUE, DONE, MESSAGE,
WARNING inside VM/TEMPLATE, and their IDs in VM/SCHED_ACTIONS; src/vm/VirtualMachine.cc lines
2580-2607). Here an action runs `sim_seconds(offset)` after it was added, on the site's event clock.
"""

from __future__ import annotations

import time
from typing import Any

from tui.domain.template_text import Vector
from tui.sim import lifecycle
from tui.sim.rpc_errors import OneError
from tui.sim.state import SimSite, SimVm

#: oneflow-server.conf defaults (`:action_period:`, `:action_number:`)
DEFAULT_PERIOD = 60
DEFAULT_NUMBER = 1
#: role STATE DONE (src/flow/lib/models/role.rb STATE)
ROLE_DONE = 5


class RoleActionRefused(ValueError):
    """batch_action's own refusal (a role in DONE)."""


def _to_i(value: Any) -> int:
    """Ruby's `to_i` on what a JSON body gives: leading digits, else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value or "").strip()
    digits = ""
    for index, char in enumerate(text):
        if char.isdigit() or (index == 0 and char in "+-"):
            digits += char
        else:
            break
    try:
        return int(digits)
    except ValueError:
        return 0


def period_and_number(params: dict[str, Any]) -> tuple[Any, Any]:
    """`opts['period'] ||= conf[:action_period]` and the same for number (nil and false replaced)."""
    period = params.get("period")
    number = params.get("number")
    return (DEFAULT_PERIOD if period is None or period is False else period,
            DEFAULT_NUMBER if number is None or number is False else number)


def batch_action(site: SimSite, role: dict[str, Any], vms: list[SimVm], action: str, period: Any, number: Any,
                 args: Any = None) -> list[int]:
    """Schedule `action` on the role's VMs, `number` per `period` seconds; the IDs scheduled."""
    if _to_i(role.get("state")) == ROLE_DONE:
        raise RoleActionRefused(f"Role {role.get('name')} is in DONE state")
    staggered = _to_i(period) > 0 and _to_i(number) > 0
    now = int(time.time())
    scheduled = []
    for index, vm in enumerate(vms):
        offset = (index // _to_i(number)) * _to_i(period) if staggered else 0
        add_sched_action(site, vm, action, now + offset, offset, None if args is None else str(args))
        scheduled.append(vm.id)
    return scheduled


def add_sched_action(site: SimSite, vm: SimVm, action: str, at: int, offset: int, args: str | None) -> int:
    """`one.vm.schedadd` of a one-time action at `at` (epoch seconds); it runs `offset` simulated
    seconds from now. Returns the action's ID."""
    sched_id = site.next_id("sched_action")
    vector: Vector = [("ID", str(sched_id)), ("PARENT_ID", str(vm.id)), ("TYPE", "VM"), ("ACTION", action),
                      ("ARGS", args or ""), ("TIME", str(at)), ("REPEAT", "-1"), ("DAYS", ""), ("END_TYPE", "-1"),
                      ("END_VALUE", "-1"), ("DONE", "-1"), ("MESSAGE", ""), ("WARNING", "0")]
    vm.template.append(("SCHED_ACTION", vector))
    vm.touch()
    site.after(offset, lambda: _run(site, vm.id, sched_id))
    return sched_id


def _run(site: SimSite, vm_id: int, sched_id: int) -> None:
    """The scheduler's turn: do the action, then write DONE or MESSAGE into it."""
    vm = site.vms.get(vm_id)
    if vm is None:
        return
    entry = next((v for k, v in vm.template if k == "SCHED_ACTION" and isinstance(v, list)
                  and dict(v).get("ID") == str(sched_id)), None)
    if entry is None:  # deleted meanwhile
        return
    action = dict(entry).get("ACTION", "")
    message = ""
    try:
        if action.startswith("terminate"):
            lifecycle.terminate_vm(site, vm.id, hard=action.endswith("-hard"))
        else:
            lifecycle.vm_action(site, action, vm.id)
    except OneError as error:
        message = str(error.message)
    done = "-1" if message else str(int(time.time()))
    entry[:] = [(k, done if k == "DONE" else (message if k == "MESSAGE" else v)) for k, v in entry]
    vm.touch()


def sched_action_ids(vm: SimVm) -> list[str]:
    """The IDs VM/SCHED_ACTIONS lists."""
    return [dict(v).get("ID", "") for k, v in vm.template if k == "SCHED_ACTION" and isinstance(v, list)]
