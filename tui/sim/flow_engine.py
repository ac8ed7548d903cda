"""OneFlow's service orchestration on the embedded site: instantiate, deploy, watch, undeploy, recover.

A service is a DOCUMENT of type 100 whose body is its service template's body merged with the
instantiate request, plus runtime fields (`state`, `start_time`, `log`, per role `state`, `nodes`,
`last_vmname`). Role VMs are created through the cloud side (`tui.sim.lifecycle`), so they boot,
fail and report READY like any other VM; the service and role states follow from those VMs.

There is no background thread: `evaluate_services(site)` moves every service one step forward
from its VMs' states. The OneFlow server calls it on every request, and each service in a
transient state also re-schedules its own evaluation with `site.after`, so time passing
(`site.advance()`, run on every request of any protocol) is enough to move it.

Rules (reference/oneflow.md): `deployment: straight` deploys a role only once all its parents are
RUNNING; with `ready_status_gate` a VM counts as running only when ACTIVE/RUNNING and its
USER_TEMPLATE has READY=YES; a role VM in a failure state makes its role and the service
FAILED_DEPLOYING (with a log entry naming the role); `recover` retries; undeploying terminates
children before parents and removes the document once every VM is gone.
"""

from __future__ import annotations

import copy
import json
import re
import time
from typing import Any

from tui.domain.documents import SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT
from tui.domain.one_states import (
    FAILURE_LCM_STATES,
    SERVICE_STATES,
    LcmState,
    ServiceState,
    VmState,
    service_can_undeploy,
)
from tui.domain.template_text import Template, Vector, first
from tui.domain.vms import state_names
from tui.sim import flow_templates
from tui.sim.lifecycle import instantiate_vm_template, recover_vm, terminate_vm, vm_is_ready
from tui.sim.platform import version_key
from tui.sim.rpc_context import parse_text
from tui.sim.rpc_errors import OneError
from tui.sim.state import OWNER_ONLY, SimDocument, SimSite, SimUser, SimVm
from tui.sim.xml_render import owner_names

SERVICE_TYPE = SERVICE_DOCUMENT
TEMPLATE_TYPE = SERVICE_TEMPLATE_DOCUMENT

#: the service states the engine sets, its roles' too (tui.domain.one_states: a role's codes are the
#: service's up to COOLDOWN)
PENDING, DEPLOYING, RUNNING, UNDEPLOYING, WARNING, DONE, FAILED_UNDEPLOYING, FAILED_DEPLOYING = list(ServiceState)[:8]
SCALING, FAILED_SCALING, COOLDOWN, DEPLOYING_NETS, UNDEPLOYING_NETS = list(ServiceState)[8:13]

#: LCM states the platform's OneFlow treats as a failed VM (Role::VM_FAILURE_STATES)
_OFF_STATES = frozenset({VmState.STOPPED, VmState.SUSPENDED, VmState.POWEROFF, VmState.UNDEPLOYED})
#: what a VM's NAME looks like: <role>_<n>_(service_<id>)
VM_NAME_TEMPLATE = "{role}_{n}_(service_{service})"
#: one.vm.recover operation that retries the failed step (OneFlow's recover uses it)
RECOVER_RETRY = 2
#: simulated seconds between two evaluations of a service in a transient state
TICK_SECONDS = 2.0

MSG_INPUTS_7 = "Verify that every User Input have its corresponding value defined"
#: release-6.10.x oneflow-server.rb `check_custom_attrs`
MSG_INPUTS_6 = "Verify that every custom attribute have its corresponding value defined"
MSG_NETWORKS = "Every network key must have its value defined at networks_value"


class FlowError(Exception):
    """A request OneFlow refuses: the HTTP status and the plain-text body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# versions and input keys ----------------------------------------------------------------------
def is_7x(site: SimSite) -> bool:
    """Whether the site runs a 7.x (or newer) OneFlow."""
    return flow_templates.is_7x(site.config.one_version)


def input_keys(site: SimSite) -> tuple[str, str]:
    """(inputs key, values key) of this server's version: user_inputs in 7.x, custom_attrs in 6.x."""
    return ("user_inputs", "user_inputs_values") if is_7x(site) else ("custom_attrs", "custom_attrs_values")


def input_values(body: dict[str, Any]) -> dict[str, str]:
    """The input values a service holds (7.x `user_inputs_values`, 6.x `custom_attrs_values`)."""
    values = body.get("user_inputs_values")
    if not isinstance(values, dict):
        values = body.get("custom_attrs_values")
    return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}


# logging and states ---------------------------------------------------------------------------
def _log(body: dict[str, Any], severity: str, message: str) -> None:
    log = body.setdefault("log", [])
    if isinstance(log, list):
        log.append({"timestamp": int(time.time()), "severity": severity, "message": message})


def _set_state(body: dict[str, Any], state: int) -> None:
    if body.get("state") != state:
        body["state"] = state
        _log(body, "I", f"New state: {SERVICE_STATES[state]}")


def _roles(body: dict[str, Any]) -> list[dict[str, Any]]:
    roles = body.get("roles")
    return [r for r in roles if isinstance(r, dict)] if isinstance(roles, list) else []


def _children(body: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [r for r in _roles(body) if name in (r.get("parents") or [])]


def _straight(body: dict[str, Any]) -> bool:
    return body.get("deployment") == "straight"


# instantiate ----------------------------------------------------------------------------------
def instantiate(site: SimSite, template: SimDocument, merge: Any, user: SimUser) -> SimDocument:
    """`POST /service_template/<id>/action` instantiate: the server's checks, then
    `ServiceTemplate#instantiate` and `Service#allocate`; the service is left PENDING (the caller
    answers with it, then calls `deploy_nets`, as oneflow-server.rb does).

    oneflow-server.rb (release-7.4.0 lines 725-876; 6.10 the same with custom_attrs): input and
    network checks answer 400; the template's own validation (with the pre-7.0 conversion,
    `tui.sim.flow_templates`) failing answers 500 (`service.is_a? StandardError` -> GENERAL_EC).
    """
    if merge is None:
        merge = {}
    if not isinstance(merge, dict):
        raise FlowError(500, internal_error_body(f"undefined method `key?' for {type(merge).__name__}"))
    merge = copy.deepcopy(merge)
    stored = copy.deepcopy(template.body) if isinstance(template.body, dict) else {}
    _check_inputs(site, stored, merge)
    _check_networks(stored, merge)
    body = _merged(site, stored, merge)
    try:
        body = flow_templates.validate(site.config.one_version, body)
    except flow_templates.TemplateInvalid as exc:
        raise FlowError(500, exc.message) from None

    # Service#allocate (src/flow/lib/models/service.rb 319-332 at release-7.0.2, 314-330 at 6.10.0): PENDING,
    # every role PENDING, start_time, nothing else (a 7.0.2 server answers the instantiate with just these)
    now = int(time.time())
    body["state"] = PENDING
    body["start_time"] = now
    for role in _roles(body):
        role["state"] = PENDING
    doc = SimDocument(
        id=site.next_id("document"),
        name=str(body["name"]),
        uid=user.id,
        gid=user.gid,
        type=SERVICE_TYPE,
        body=body,
        regtime=now,
        perms=OWNER_ONLY,
    )
    site.documents[doc.id] = doc
    return doc


def deploy_nets(site: SimSite, doc: SimDocument) -> None:
    """`ServiceLCM#deploy_nets_action` (LifeCycleManager.rb release-7.4.0 342-372, 6.10 the same):
    the service goes DEPLOYING_NETS while its networks are made ready, then `deploy_action` starts
    the roles (DEPLOYING). Networks given by id need nothing: they are ready on the next step.

    The first time the server loads the service, each role gets its defaults: `nodes` and `on_hold`
    (Role#initialize, src/flow/lib/models/role.rb 205-209), `cooldown` (VMRole#initialize, vmrole.rb 27),
    `last_vmname` (role.rb 638) and from 7.0 `template_contents` (Service, service.rb 836-864, release-7.0.2)."""
    for role in _roles(doc.body):
        role.setdefault("nodes", [])
        role.setdefault("on_hold", False)
        role.setdefault("cooldown", 300)
        role.setdefault("last_vmname", 0)
        if version_key(site.config.one_version) >= (7, 0):
            role.setdefault("template_contents", {})
    _set_state(doc.body, DEPLOYING_NETS)

    def nets_ready() -> None:
        current = site.documents.get(doc.id)
        if current is None or current.body.get("state") != DEPLOYING_NETS:
            return
        _evaluate_deploy(site, current)
        if current.id in site.documents and current.body.get("state") in (PENDING, DEPLOYING):
            schedule(site, current.id)

    site.after(TICK_SECONDS, nets_ready)


def internal_error_body(reason: str) -> str:
    """What Sinatra's 500 handler of oneflow-server.rb (lines 189-196) answers for an exception."""
    return json.dumps({"message": "Internal server error", "reason": reason})


def _check_user_inputs(seven: bool, inputs: Any, values: Any) -> None:
    """`check_user_inptus` (7.x) / `check_custom_attrs` (6.10) of oneflow-server.rb."""
    if not inputs:
        return
    if values is None:
        raise FlowError(400, "The Service template specifies User Inputs but no values have been found" if seven
                        else "The Service template specifies custom attributes but no values have been found")
    if not isinstance(inputs, dict) or not isinstance(values, dict):
        raise FlowError(400, "Wrong User Inputs or User Inputs Values format" if seven
                        else "Wrong custom_attrs or custom_attrs_values format")
    if set(inputs) - set(values):
        raise FlowError(400, MSG_INPUTS_7 if seven else MSG_INPUTS_6)


def _check_inputs(site: SimSite, stored: dict[str, Any], merge: dict[str, Any]) -> None:
    """The input checks on the stored body (oneflow-server.rb release-7.4.0 lines 738-792)."""
    seven = is_7x(site)
    inputs_key, values_key = input_keys(site)
    if seven and "custom_attrs_values" in merge:  # "Compability mode v<7.0"
        merge["user_inputs_values"] = merge.pop("custom_attrs_values")
    _check_user_inputs(seven, stored.get(inputs_key), merge.get(values_key))
    roles_merge = merge.get("roles")
    for role in _roles(stored):
        if seven and not isinstance(role.get("template_contents", {}), dict):
            raise FlowError(400, "Error validating template_contents object for the"
                                 f"role {role.get('name')}. The object must be a valid hash.")
        if role.get(inputs_key) is None:
            continue
        if roles_merge is None:
            raise FlowError(400, f"The Service template specifies user inputs for the role {role.get('name')} "
                                 "but no values have been found" if seven else
                            f"The Service template specifies custom attributes for the role {role.get('name')} "
                            "but no values have been found")
        if not isinstance(roles_merge, list) or not roles_merge:
            raise FlowError(400, "The role user inputs are empty or do not have a valid format" if seven
                            else "The role custom attributes are empty or do not have a valid format")
        merge_role = next((r for r in roles_merge if isinstance(r, dict) and r.get("name") == role.get("name")), None)
        if merge_role is None:
            continue
        if seven and "custom_attrs_values" in merge_role:
            merge_role["user_inputs_values"] = merge_role.pop("custom_attrs_values")
        _check_user_inputs(seven, role.get(inputs_key), merge_role.get(values_key))


def _check_networks(stored: dict[str, Any], merge: dict[str, Any]) -> None:
    """The network checks (oneflow-server.rb release-7.4.0 lines 794-842); Ruby's truthiness
    (an empty object or list is true) kept."""
    networks = stored.get("networks")
    values = merge.get("networks_values")
    if networks is not None and values is None:
        values = []
        try:
            for key, value in networks.items():
                kind, _, ident = str(value).split("|")[4].strip().partition(":")
                values.append({key: {kind: ident or None}})
        except (AttributeError, IndexError):
            raise FlowError(400, "Wrong networks format") from None
        merge["networks_values"] = values
    if networks is not None and not isinstance(networks, dict):
        raise FlowError(400, "Wrong networks format")
    if values is not None and (not isinstance(values, list) or any(not isinstance(v, dict) for v in values)):
        raise FlowError(400, "Wrong networks_values format")
    if networks and values is not None and set(networks) - {k for item in values for k in item}:
        raise FlowError(400, MSG_NETWORKS)


def _merged(site: SimSite, stored: dict[str, Any], merge: dict[str, Any]) -> dict[str, Any]:
    """The body `ServiceTemplate#instantiate` validates: 7.x `handle_nested_values` (roles and
    networks_values merged by name, unknown roles ignored) then a deep merge; 6.10 a deep merge."""
    body = copy.deepcopy(stored)
    merge = copy.deepcopy(merge)
    role_changes = merge.pop("roles", None)
    if isinstance(role_changes, list):
        by_name = {r.get("name"): r for r in _roles(body)}
        for change in role_changes:
            if isinstance(change, dict) and change.get("name") in by_name:
                _deep_merge(by_name[change["name"]], change)
    elif role_changes is not None:
        merge["roles"] = role_changes
    _deep_merge(body, merge)
    return body


def _deep_merge(target: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


def network_ids(body: dict[str, Any]) -> dict[str, str]:
    """Network name -> vnet id from a service's networks_values."""
    out: dict[str, str] = {}
    for item in body.get("networks_values") or []:
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, dict) and "id" in value:
                    out[str(key)] = str(value["id"])
    return out


# evaluation -----------------------------------------------------------------------------------
def schedule(site: SimSite, doc_id: int, delay: float = TICK_SECONDS) -> None:
    """Evaluate the service after `delay` simulated seconds, and again while it is in transit."""

    def tick() -> None:
        doc = site.documents.get(doc_id)
        if doc is None or doc.type != SERVICE_TYPE:
            return
        evaluate(site, doc)
        if doc.id in site.documents and doc.body.get("state") in (PENDING, DEPLOYING, UNDEPLOYING):
            schedule(site, doc_id)

    site.after(delay, tick)


def evaluate_services(site: SimSite) -> None:
    """Move every service forward from its VMs' states (called at the start of each request)."""
    with site.lock:
        for doc in list(site.documents.values()):
            if doc.type == SERVICE_TYPE and isinstance(doc.body, dict):
                evaluate(site, doc)


def evaluate(site: SimSite, doc: SimDocument) -> None:
    """One evaluation step of one service."""
    body = doc.body
    state = body.get("state")
    if state in (PENDING, DEPLOYING):
        _evaluate_deploy(site, doc)
    elif state in (RUNNING, WARNING):
        _evaluate_running(site, doc)
    elif state == UNDEPLOYING:
        _evaluate_undeploy(site, doc)
    _refresh_nodes(site, doc)


def _vm_status(vm: SimVm | None, gate: bool) -> str:
    """running, pending, failed, unknown, off or done, as OneFlow sees a role VM."""
    if vm is None or vm.state == VmState.DONE:
        return "done"
    if vm.state == VmState.CLONING_FAILURE or (vm.state == VmState.ACTIVE and vm.lcm_state in FAILURE_LCM_STATES):
        return "failed"
    if vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.UNKNOWN:
        return "unknown"
    if vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.RUNNING:
        if not gate or vm_is_ready(vm):
            return "running"
        return "pending"
    if vm.state in _OFF_STATES:
        return "off"
    return "pending"


def _evaluate_deploy(site: SimSite, doc: SimDocument) -> None:
    body = doc.body
    gate = bool(body.get("ready_status_gate"))
    _set_state(body, DEPLOYING)
    changed = True
    while changed:  # a role turning RUNNING may let its children start in the same step
        changed = False
        for role in _roles(body):
            rstate = role.get("state", PENDING)
            if rstate == PENDING and _may_deploy(body, role):
                error = _deploy_role(site, doc, role)
                if error:
                    _fail_deploy(body, role, error)
                    return
                role["state"] = DEPLOYING
                changed = True
            elif rstate == DEPLOYING:
                statuses = [(node, _vm_status(site.vms.get(_node_id(node)), gate)) for node in role.get("nodes", [])]
                failed = next(((n, s) for n, s in statuses if s in ("failed", "done")), None)
                if failed is not None:
                    vm = site.vms.get(_node_id(failed[0]))
                    what = state_names(vm.state, vm.lcm_state)[0] if vm is not None else "DONE"
                    _fail_deploy(body, role, f"Role {role.get('name')} : VM {_node_id(failed[0])} is in state {what}")
                    return
                if all(s == "running" for _, s in statuses) and len(statuses) >= int(role.get("cardinality", 1)):
                    role["state"] = RUNNING
                    changed = True
    if _roles(body) and all(r.get("state") == RUNNING for r in _roles(body)):
        _set_state(body, RUNNING)


def _may_deploy(body: dict[str, Any], role: dict[str, Any]) -> bool:
    if not _straight(body):
        return True
    by_name = {r.get("name"): r for r in _roles(body)}
    return all(by_name.get(p, {}).get("state") == RUNNING for p in role.get("parents") or [])


def _fail_deploy(body: dict[str, Any], role: dict[str, Any], message: str) -> None:
    role["state"] = FAILED_DEPLOYING
    _log(body, "E", message)
    _set_state(body, FAILED_DEPLOYING)


def _evaluate_running(site: SimSite, doc: SimDocument) -> None:
    body = doc.body
    warning = False
    for role in _roles(body):
        if role.get("state") not in (RUNNING, WARNING):
            continue
        statuses = [(_node_id(n), _vm_status(site.vms.get(_node_id(n)), gate=False)) for n in role.get("nodes", [])]
        troubled = [(vm_id, s) for vm_id, s in statuses if s in ("failed", "unknown", "done", "off")]
        if troubled:
            if role.get("state") != WARNING:
                role["state"] = WARNING
                vm_id = troubled[0][0]
                vm = site.vms.get(vm_id)
                what = state_names(vm.state, vm.lcm_state)[0] if vm is not None else "DONE"
                _log(body, "W", f"Role {role.get('name')} : VM {vm_id} is in state {what}")
            warning = True
        elif all(s == "running" for _, s in statuses):
            role["state"] = RUNNING
        else:
            warning = warning or role.get("state") == WARNING
    _set_state(body, WARNING if warning else RUNNING)


def _evaluate_undeploy(site: SimSite, doc: SimDocument) -> None:
    body = doc.body
    for role in _roles(body):
        rstate = role.get("state", PENDING)
        if rstate in (DONE, FAILED_UNDEPLOYING):
            continue
        if _straight(body) and any(c.get("state") != DONE for c in _children(body, str(role.get("name")))):
            continue
        if rstate != UNDEPLOYING:
            role["state"] = UNDEPLOYING
            error = _terminate_role(site, role)
            if error:
                role["state"] = FAILED_UNDEPLOYING
                _log(body, "E", error)
                _set_state(body, FAILED_UNDEPLOYING)
                return
        if all(_vm_status(site.vms.get(_node_id(n)), False) == "done" for n in role.get("nodes", [])):
            role["state"] = DONE
    if all(r.get("state") == DONE for r in _roles(body)):
        _set_state(body, DONE)
        site.documents.pop(doc.id, None)


def _terminate_role(site: SimSite, role: dict[str, Any]) -> str:
    """Terminate the role's VMs; an error message when one cannot be terminated."""
    for node in role.get("nodes", []):
        vm = site.vms.get(_node_id(node))
        if vm is None or vm.state == VmState.DONE:
            continue
        try:
            terminate_vm(site, vm.id, hard=False)
        except OneError:
            try:
                terminate_vm(site, vm.id, hard=True)
            except OneError as exc:
                return f"Role {role.get('name')} : Delete failed for VM {vm.id}; {exc.message}"
    return ""


def _node_id(node: Any) -> int:
    try:
        return int(node.get("deploy_id", -1)) if isinstance(node, dict) else -1
    except (TypeError, ValueError):
        return -1


def identity(site: SimSite, oid: int, uid: int, gid: int, name: str) -> dict[str, str]:
    """ID, UID, GID, UNAME, GNAME, NAME of an object, as strings (OneFlow's envelope values)."""
    uname, gname = owner_names(site, uid, gid)
    return {"ID": str(oid), "UID": str(uid), "GID": str(gid), "UNAME": uname, "GNAME": gname, "NAME": name}


def vm_info(site: SimSite, vm: SimVm) -> dict[str, str]:
    """The VM fields a service document keeps for each node (Role::VM_INFO)."""
    return identity(site, vm.id, vm.uid, vm.gid, vm.name)


def _refresh_nodes(site: SimSite, doc: SimDocument) -> None:
    for role in _roles(doc.body):
        for node in role.get("nodes", []):
            vm = site.vms.get(_node_id(node))
            if vm is not None and isinstance(node, dict):
                node["vm_info"] = {"VM": vm_info(site, vm)}


# deploying a role -----------------------------------------------------------------------------
def _deploy_role(site: SimSite, doc: SimDocument, role: dict[str, Any]) -> str:
    """Create the role's missing VMs; an error message when the cloud refuses one."""
    # the VM template: 7.x `template_id` (role.rb release-7.0.0 640), 6.x `vm_template` (release-6.10.0 414)
    template_id: Any = role.get("template_id" if is_7x(site) else "vm_template")
    try:
        template_id = int(template_id)
    except (TypeError, ValueError):
        return f"Role {role.get('name')} : no VM template id"
    missing = int(role.get("cardinality", 1)) - len(role.get("nodes", []))
    role.setdefault("nodes", [])
    for _ in range(max(0, missing)):
        number = int(role.get("last_vmname", 0))
        role["last_vmname"] = number + 1
        name = VM_NAME_TEMPLATE.format(role=role.get("name"), n=number, service=doc.id)
        try:
            extra = role_extra_template(site, doc, role, template_id)
            vm = instantiate_vm_template(
                site, template_id, name, extra, doc.uid, doc.gid, hold=bool(role.get("on_hold"))
            )
        except OneError as exc:
            return (
                f"Role {role.get('name')} : Instantiate failed for template {template_id}; "
                f"[one.template.instantiate] {exc.message}"
            )
        role["nodes"].append({"deploy_id": vm.id, "vm_info": {"VM": vm_info(site, vm)}})
    return ""


_VAR = re.compile(r"\$([A-Za-z0-9_]+)")


def _substitute(text: str, values: dict[str, str]) -> str:
    return _VAR.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def _json_template(contents: dict[str, Any], values: dict[str, str]) -> Template:
    """7.x `template_contents` (JSON) as template attributes, `$name` references substituted."""
    attrs: Template = []
    for key, value in contents.items():
        name = str(key).upper()
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                attrs.append((name, [(str(k).upper(), _substitute(str(v), values)) for k, v in item.items()]))
            elif item is not None:
                attrs.append((name, _substitute(str(item), values)))
    return attrs


def role_extra_template(site: SimSite, doc: SimDocument, role: dict[str, Any], template_id: int) -> Template:
    """What a role VM is instantiated with on top of its VM template.

    The role's contents (7.x `template_contents` or 6.x `vm_template_contents`, with `$network`
    and `$input` references replaced), every input value as an attribute and a CONTEXT entry
    (CONTEXT merged over the template's own, since the platform would replace it whole),
    SERVICE_ID and ROLE_NAME.
    """
    body = doc.body
    inputs = input_values(body)
    values = {**inputs, **network_ids(body)}
    contents = role.get("template_contents")
    if isinstance(contents, dict):
        extra = _json_template(contents, values)
    elif isinstance(role.get("vm_template_contents"), str):
        # text oned parses at instantiate: a syntax error fails it (RequestManagerVMTemplate.cc)
        extra = parse_text(_substitute(role["vm_template_contents"], values))
    else:
        extra = []
    base = site.templates.get(template_id)
    context: dict[str, str] = {}
    base_context = first(base.template, "CONTEXT") if base is not None else None
    if isinstance(base_context, list):
        context.update(dict(base_context))
    for name, value in extra:
        if name == "CONTEXT" and isinstance(value, list):
            context.update(dict(value))
    context.update({k.upper(): v for k, v in inputs.items()})
    out: Template = [(n, v) for n, v in extra if n not in ("CONTEXT", "SERVICE_ID", "ROLE_NAME")]
    names = {n for n, _ in out}
    out += [(k.upper(), v) for k, v in inputs.items() if k.upper() not in names]
    context_vector: Vector = list(context.items())
    out.append(("CONTEXT", context_vector))
    out.append(("SERVICE_ID", str(doc.id)))
    out.append(("ROLE_NAME", str(role.get("name"))))
    return out


# operator actions -----------------------------------------------------------------------------
def state_name(state: Any) -> str:
    return SERVICE_STATES[state] if isinstance(state, int) and state in SERVICE_STATES else str(state)


def undeploy(site: SimSite, doc: SimDocument, *, force: bool = False) -> None:
    """DELETE /service/:id (`ServiceLCM#undeploy_action`, LifeCycleManager.rb release-7.4.0
    467-509): refused with "Service cannot be undeployed in state: X" (500) unless the state allows
    it or `force` (`recover --delete`); then the roles not UNDEPLOYING, DONE or FAILED_UNDEPLOYING
    are shut down, children first, and the document goes once every VM is gone."""
    body = doc.body
    state = body.get("state")
    if not force and not service_can_undeploy(state):
        raise FlowError(500, f"Service cannot be undeployed in state: {state_name(state)}")
    shutdown = [r for r in _roles(body) if r.get("state") not in (UNDEPLOYING, DONE, FAILED_UNDEPLOYING)]
    if not shutdown:  # "If shutdown roles is empty, asume the service is in DONE and exit"
        site.documents.pop(doc.id, None)
        return
    for role in shutdown:
        if not role.get("nodes"):
            role["state"] = DONE
    _set_state(body, UNDEPLOYING)
    evaluate(site, doc)
    if doc.id in site.documents and body.get("state") == UNDEPLOYING:
        schedule(site, doc.id)


def recover(site: SimSite, doc: SimDocument, delete: bool = False) -> None:
    """`recover` (`ServiceLCM#recover_action`, LifeCycleManager.rb release-7.4.0 599-648): with
    `delete` it is `undeploy_action(..., delete = true)` whatever the state; else it retries a
    failed or stuck deployment (failed VMs retried in place, missing ones created), network step
    or undeployment, and refuses any other state ("Service cannot be recovered in state: X")."""
    body = doc.body
    state = body.get("state")
    if delete:
        undeploy(site, doc, force=True)
        return
    if state in (FAILED_DEPLOYING, DEPLOYING, PENDING):
        _recover_deployment(site, doc)
    elif state in (DEPLOYING_NETS, ServiceState.FAILED_DEPLOYING_NETS):  # RECOVER_DEPLOY_NETS_STATES
        deploy_nets(site, doc)
    elif state in (FAILED_UNDEPLOYING, UNDEPLOYING, ServiceState.FAILED_UNDEPLOYING_NETS):
        for role in _roles(body):
            if role.get("state") == FAILED_UNDEPLOYING:
                role["state"] = RUNNING
        body["state"] = UNDEPLOYING
        _log(body, "I", "New state: UNDEPLOYING")
        evaluate(site, doc)
        if doc.id in site.documents:
            schedule(site, doc.id)
    elif state == COOLDOWN:
        for role in _roles(body):
            role["state"] = RUNNING
        _set_state(body, RUNNING)
    else:
        raise FlowError(500, f"Service cannot be recovered in state: {state_name(state)}")


def _recover_deployment(site: SimSite, doc: SimDocument) -> None:
    """`recover` of a failed or stuck deployment: each deploying role's failed VMs retried in place,
    its DONE ones dropped (deployed again), the role PENDING, the service DEPLOYING."""
    body = doc.body
    for role in _roles(body):
        if role.get("state") not in (FAILED_DEPLOYING, DEPLOYING):
            continue
        kept = []
        for node in role.get("nodes", []):
            vm = site.vms.get(_node_id(node))
            status = _vm_status(vm, gate=False)
            if status == "failed" and vm is not None:
                try:
                    recover_vm(site, vm.id, RECOVER_RETRY)
                except OneError as exc:
                    _log(body, "E", f"Role {role.get('name')} : Retry failed for VM {vm.id}; {exc.message}")
            if status != "done":  # DONE nodes are dropped and deployed again
                kept.append(node)
        role["nodes"] = kept
        role["state"] = PENDING
    _set_state(body, DEPLOYING)
    evaluate(site, doc)
    schedule(site, doc.id)


def role_nodes(site: SimSite, doc: SimDocument, role_name: str | None = None) -> list[SimVm]:
    """The live VMs of a service (of one role when `role_name` is given)."""
    vms = []
    for role in _roles(doc.body):
        if role_name is not None and role.get("name") != role_name:
            continue
        for node in role.get("nodes", []):
            vm = site.vms.get(_node_id(node))
            if vm is not None:
                vms.append(vm)
    return vms
