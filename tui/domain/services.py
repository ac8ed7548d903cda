"""Multi-VM services: service templates (with their inputs, networks and roles) and services
(with state names, roles, nodes and log), read from a document body of either platform version.

7.x bodies: `user_inputs`, roles with `template_id` and `template_contents` (a JSON object),
services storing `user_inputs_values`. 6.x bodies: `custom_attrs`, roles with `vm_template` and
`vm_template_contents` (template text), services storing `custom_attrs_values`. Both are read.
Input and network descriptions are read by `input_specs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from tui.domain.documents import Document
from tui.domain.input_specs import InputSpec, NetworkSpec, template_inputs, template_networks
from tui.domain.object_header import Owned
from tui.domain.one_states import (
    ROLE_STATES,
    SERVICE_FAILED_STATES,
    SERVICE_STATES,
    ServiceState,
    service_can_undeploy,
)

SERVICE_RUNNING = ServiceState.RUNNING
SERVICE_DONE = ServiceState.DONE
#: what a state means for someone following a deployment (LifeCycleManager.rb release-7.4.0 342-458:
#: after instantiate a service is PENDING, then DEPLOYING_NETS while its networks are made ready,
#: then DEPLOYING while its roles' VMs are created)
_STATE_NOTES: dict[int, str] = {
    ServiceState.PENDING: "accepted, not started yet",
    ServiceState.DEPLOYING: "creating the roles' VMs",
    ServiceState.DEPLOYING_NETS: "making its networks ready before any VM is created",
    ServiceState.UNDEPLOYING_NETS: "releasing the networks it created",
}


def service_state_note(state: int) -> str:
    """A short explanation of a service state ("" when the name says it all)."""
    return _STATE_NOTES.get(state, "")


def can_delete(state: int) -> bool:
    """Whether `DELETE /service/<id>` (`oneflow delete`) is accepted: not in a failed state, not
    DONE, not transient except UNDEPLOYING (`Service#can_undeploy?`, service.rb release-7.4.0
    170-179). Otherwise only `oneflow recover --delete` removes the service."""
    return service_can_undeploy(state)


def delete_command(service_id: int, state: int) -> str:
    """The platform command that removes a service in `state`."""
    return f"oneflow delete {service_id}" if can_delete(state) else f"oneflow recover --delete {service_id}"


def service_state_name(state: int) -> str:
    return SERVICE_STATES.get(state, f"STATE_{state}")


def role_state_name(state: int) -> str:
    return ROLE_STATES.get(state, f"STATE_{state}")


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _opt_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class RoleSpec:
    """A role of a service template, either version's shape."""

    name: str
    type: str
    #: `template_id` (7.x) or `vm_template` (6.x)
    template_id: int | None
    cardinality: int
    parents: tuple[str, ...]
    min_vms: int | None
    max_vms: int | None
    #: 7.x `template_contents` (a JSON object), {} in 6.x
    template_contents: Mapping[str, Any]
    #: 6.x `vm_template_contents` (template text), "" in 7.x
    template_contents_text: str


def _role_spec(role: Mapping[str, Any]) -> RoleSpec:
    template_id = role.get("template_id", role.get("vm_template"))
    contents = role.get("template_contents")
    return RoleSpec(
        name=str(role.get("name", "")),
        type=str(role.get("type", "vm")),
        template_id=_opt_int(template_id),
        cardinality=_int(role.get("cardinality"), 1),
        parents=tuple(str(p) for p in role.get("parents", []) or []),
        min_vms=_opt_int(role.get("min_vms")),
        max_vms=_opt_int(role.get("max_vms")),
        template_contents=dict(contents) if isinstance(contents, Mapping) else {},
        template_contents_text=str(role.get("vm_template_contents", "") or ""),
    )


@dataclass(frozen=True)
class ServiceTemplate(Owned):
    description: str
    deployment: str
    ready_status_gate: bool
    inputs: tuple[InputSpec, ...]
    networks: tuple[NetworkSpec, ...]
    roles: tuple[RoleSpec, ...]
    #: True for a 6.x-shaped body (`custom_attrs`, `vm_template`)
    legacy_inputs: bool
    body: Mapping[str, Any]

    def input(self, name: str) -> InputSpec | None:
        return next((spec for spec in self.inputs if spec.name == name), None)

    def role(self, name: str) -> RoleSpec | None:
        return next((role for role in self.roles if role.name == name), None)


def service_template_from_document(doc: Document) -> ServiceTemplate:
    """Read a service template document; raises ValueError if its body is not a JSON object."""
    body = doc.body
    if body is None:
        raise ValueError(f"service template {doc.id} has a body that is not a JSON object")
    legacy = "custom_attrs" in body and "user_inputs" not in body
    roles = body.get("roles") or []
    return ServiceTemplate(
        id=doc.id,
        name=doc.name,
        uid=doc.uid,
        gid=doc.gid,
        uname=doc.uname,
        gname=doc.gname,
        description=str(body.get("description", "") or ""),
        deployment=str(body.get("deployment", "none") or "none"),
        ready_status_gate=bool(body.get("ready_status_gate", False)),
        inputs=template_inputs(body),
        networks=template_networks(body),
        roles=tuple(_role_spec(r) for r in roles if isinstance(r, Mapping)),
        legacy_inputs=legacy or any(isinstance(r, Mapping) and "vm_template" in r for r in roles),
        body=body,
    )


@dataclass(frozen=True)
class ServiceNode:
    """One VM of a role."""

    vm_id: int
    vm_name: str
    #: the VM's STATE / LCM_STATE when the node carries vm_info, else None
    vm_state: int | None
    vm_lcm_state: int | None


@dataclass(frozen=True)
class ServiceRole:
    name: str
    state: int
    state_name: str
    cardinality: int
    parents: tuple[str, ...]
    nodes: tuple[ServiceNode, ...]

    @property
    def vm_ids(self) -> tuple[int, ...]:
        return tuple(node.vm_id for node in self.nodes)


@dataclass(frozen=True)
class LogEntry:
    timestamp: int
    severity: str
    message: str


@dataclass(frozen=True)
class Service(Owned):
    state: int
    state_name: str
    start_time: int
    roles: tuple[ServiceRole, ...]
    log: tuple[LogEntry, ...]
    #: `user_inputs_values` (7.x) or `custom_attrs_values` (6.x)
    input_values: Mapping[str, str]
    networks_values: tuple[Mapping[str, Any], ...]
    body: Mapping[str, Any]

    def role(self, name: str) -> ServiceRole | None:
        return next((role for role in self.roles if role.name == name), None)

    @property
    def vm_ids(self) -> tuple[int, ...]:
        return tuple(vm_id for role in self.roles for vm_id in role.vm_ids)

    @property
    def failed(self) -> bool:
        return self.state in SERVICE_FAILED_STATES


def _node(node: Mapping[str, Any]) -> ServiceNode | None:
    vm = node.get("vm_info", {})
    vm = vm.get("VM", vm) if isinstance(vm, Mapping) else {}
    vm_id = _opt_int(node.get("deploy_id", vm.get("ID")))
    if vm_id is None:
        return None
    return ServiceNode(vm_id, str(vm.get("NAME", "")), _opt_int(vm.get("STATE")), _opt_int(vm.get("LCM_STATE")))


def _role(role: Mapping[str, Any]) -> ServiceRole:
    state = _int(role.get("state"))
    nodes = tuple(n for n in (_node(x) for x in role.get("nodes", []) or [] if isinstance(x, Mapping)) if n)
    return ServiceRole(
        name=str(role.get("name", "")),
        state=state,
        state_name=role_state_name(state),
        cardinality=_int(role.get("cardinality"), len(nodes)),
        parents=tuple(str(p) for p in role.get("parents", []) or []),
        nodes=nodes,
    )


def service_from_document(doc: Document) -> Service:
    """Read a service document; raises ValueError if its body is not a JSON object."""
    body = doc.body
    if body is None:
        raise ValueError(f"service {doc.id} has a body that is not a JSON object")
    state = _int(body.get("state"))
    values = body.get("user_inputs_values", body.get("custom_attrs_values")) or {}
    networks_values = body.get("networks_values") or []
    return Service(
        id=doc.id,
        name=doc.name,
        uid=doc.uid,
        gid=doc.gid,
        uname=doc.uname,
        gname=doc.gname,
        state=state,
        state_name=service_state_name(state),
        start_time=_int(body.get("start_time")),
        roles=tuple(_role(r) for r in body.get("roles", []) or [] if isinstance(r, Mapping)),
        log=tuple(
            LogEntry(_int(e.get("timestamp")), str(e.get("severity", "")), str(e.get("message", "")))
            for e in body.get("log", []) or [] if isinstance(e, Mapping)
        ),
        input_values={str(k): str(v) for k, v in values.items()} if isinstance(values, Mapping) else {},
        networks_values=tuple(v for v in networks_values if isinstance(v, Mapping)),
        body=body,
    )
