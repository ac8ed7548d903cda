"""The site record: what a toolkit deployment left in the cloud (spec operation 4), for later steps.

One `SiteRecord` per toolkit service: its IDs and name, the platform version it was deployed on,
each role's VMs (ID, name, addresses) as the service's own role nodes list them, when it was
created, the last service state seen, the cloud user named in the automation's cloud-username
input (needed by operation 5) and, once captured, the automation VM's public SSH key.

It holds no secret: input values are not kept, except that user name. `records_to_json` /
`records_from_json` give the file's shape (a versioned object holding every deployment recorded
for one cloud endpoint); reading is lenient about unknown keys and strict about types.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

FORMAT_VERSION = 1


class SiteRecordError(ValueError):
    """A site record file whose content is not the expected shape."""


@dataclass(frozen=True)
class RecordedVm:
    vm_id: int
    name: str
    ips: tuple[str, ...] = ()


@dataclass(frozen=True)
class RecordedRole:
    name: str
    vms: tuple[RecordedVm, ...] = ()
    #: the role's state name at the last update (RUNNING, DEPLOYING, ...)
    state: str = ""

    @property
    def vm_ids(self) -> tuple[int, ...]:
        return tuple(vm.vm_id for vm in self.vms)


@dataclass(frozen=True)
class SiteRecord:
    endpoint: str
    service_id: int
    service_name: str
    template_id: int
    template_name: str
    platform_version: str
    #: ISO 8601 UTC times
    created: str
    updated: str = ""
    #: the service's state name at the last update
    state: str = ""
    roles: tuple[RecordedRole, ...] = ()
    #: network name -> network id, as instantiated
    networks: tuple[tuple[str, str], ...] = ()
    #: the cloud user the automation server uses (operation 5 gives it the key)
    cloud_username: str = ""
    automation_role: str = ""
    #: the automation VM's public key line, "" until captured
    automation_public_key: str = ""
    #: users the key was granted to (read back after the update)
    key_granted_to: tuple[str, ...] = ()

    def role(self, name: str) -> RecordedRole | None:
        return next((role for role in self.roles if role.name == name), None)

    @property
    def vm_ids(self) -> tuple[int, ...]:
        return tuple(vm_id for role in self.roles for vm_id in role.vm_ids)

    @property
    def automation_vm(self) -> RecordedVm | None:
        role = self.role(self.automation_role)
        return role.vms[0] if role and role.vms else None

    def with_roles(self, roles: Sequence[RecordedRole], state: str, updated: str) -> "SiteRecord":
        return replace(self, roles=tuple(roles), state=state, updated=updated)


def _vm_json(vm: RecordedVm) -> dict[str, Any]:
    return {"vm_id": vm.vm_id, "name": vm.name, "ips": list(vm.ips)}


def record_to_json(record: SiteRecord) -> dict[str, Any]:
    return {
        "endpoint": record.endpoint,
        "service_id": record.service_id,
        "service_name": record.service_name,
        "template_id": record.template_id,
        "template_name": record.template_name,
        "platform_version": record.platform_version,
        "created": record.created,
        "updated": record.updated,
        "state": record.state,
        "roles": [{"name": r.name, "state": r.state, "vms": [_vm_json(vm) for vm in r.vms]} for r in record.roles],
        "networks": [{name: {"id": ident}} for name, ident in record.networks],
        "cloud_username": record.cloud_username,
        "automation_role": record.automation_role,
        "automation_public_key": record.automation_public_key,
        "key_granted_to": list(record.key_granted_to),
    }


def _get(data: Mapping[str, Any], key: str, kind: type, where: str, default: Any = None) -> Any:
    value = data.get(key, default)
    if value is None and default is None:
        raise SiteRecordError(f"{where}: {key!r} is missing")
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise SiteRecordError(f"{where}: {key!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SiteRecordError(f"{where} must be a list of strings")
    return tuple(value)


def record_from_json(data: Any) -> SiteRecord:
    """One deployment's record; raises SiteRecordError naming what is wrong."""
    if not isinstance(data, Mapping):
        raise SiteRecordError("a deployment record must be an object")
    where = f"service {data.get('service_id', '?')}"
    roles: list[RecordedRole] = []
    for index, role in enumerate(_get(data, "roles", list, where, [])):
        if not isinstance(role, Mapping):
            raise SiteRecordError(f"{where}: roles[{index}] must be an object")
        vms: list[RecordedVm] = []
        for vm in _get(role, "vms", list, f"{where} role {index}", []):
            if not isinstance(vm, Mapping):
                raise SiteRecordError(f"{where}: a VM of roles[{index}] must be an object")
            vms.append(RecordedVm(_get(vm, "vm_id", int, where), _get(vm, "name", str, where, ""),
                                  _strings(vm.get("ips", []), f"{where}: ips")))
        roles.append(RecordedRole(_get(role, "name", str, where), tuple(vms), _get(role, "state", str, where, "")))
    networks: list[tuple[str, str]] = []
    for item in _get(data, "networks", list, where, []):
        if isinstance(item, Mapping):
            for name, target in item.items():
                if isinstance(target, Mapping) and isinstance(target.get("id"), str):
                    networks.append((str(name), target["id"]))
    return SiteRecord(
        endpoint=_get(data, "endpoint", str, where, ""),
        service_id=_get(data, "service_id", int, where),
        service_name=_get(data, "service_name", str, where, ""),
        template_id=_get(data, "template_id", int, where),
        template_name=_get(data, "template_name", str, where, ""),
        platform_version=_get(data, "platform_version", str, where, ""),
        created=_get(data, "created", str, where, ""),
        updated=_get(data, "updated", str, where, ""),
        state=_get(data, "state", str, where, ""),
        roles=tuple(roles),
        networks=tuple(networks),
        cloud_username=_get(data, "cloud_username", str, where, ""),
        automation_role=_get(data, "automation_role", str, where, ""),
        automation_public_key=_get(data, "automation_public_key", str, where, ""),
        key_granted_to=_strings(data.get("key_granted_to", []), f"{where}: key_granted_to"),
    )


def records_to_json(endpoint: str, records: Sequence[SiteRecord]) -> dict[str, Any]:
    """The file's content: every deployment recorded for one endpoint, oldest first."""
    ordered = sorted(records, key=lambda r: (r.created, r.service_id))
    return {"format": FORMAT_VERSION, "endpoint": endpoint, "deployments": [record_to_json(r) for r in ordered]}


def records_from_json(data: Any) -> tuple[str, tuple[SiteRecord, ...]]:
    """`(endpoint, records)` from the file's content; raises SiteRecordError."""
    if not isinstance(data, Mapping):
        raise SiteRecordError("the site record must be a JSON object")
    version = data.get("format")
    if version != FORMAT_VERSION:
        raise SiteRecordError(f"unknown site record format {version!r} (this console reads {FORMAT_VERSION})")
    endpoint = data.get("endpoint", "")
    deployments = data.get("deployments", [])
    if not isinstance(endpoint, str) or not isinstance(deployments, list):
        raise SiteRecordError("the site record needs 'endpoint' (string) and 'deployments' (list)")
    return endpoint, tuple(record_from_json(item) for item in deployments)


def latest(records: Sequence[SiteRecord]) -> SiteRecord | None:
    """The most recent deployment (by creation time, then service ID)."""
    return max(records, key=lambda r: (r.created, r.service_id), default=None)


def upsert(records: Sequence[SiteRecord], record: SiteRecord) -> tuple[SiteRecord, ...]:
    """`records` with `record` replacing the one of the same service (or added)."""
    return tuple(r for r in records if r.service_id != record.service_id) + (record,)
