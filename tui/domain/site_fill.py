"""What core.yaml can learn from the cloud, as a list of proposed changes (pure; no I/O).

`CloudFacts` holds what procedures read from the cloud: the object store VM's address (from the
toolkit deployment), the platform's gate endpoint, the default network's ID and MTU, and the IDs
of the appliances that are downloaded (from the images' marketplace attributes).
`fill_changes(config, facts, definitions)` turns them into `FillChange`s, each naming where its
value came from; only values that differ from the file are proposed.

Appliance IDs go to a component's site variables by these rules (no guessing beyond them):
- a leaf named `template_id` / `image_id` / `service_template_id` (at the top of the
  component) takes the ID of the component's only appliance;
- a leaf `<prefix>_template_id` (`collector_template_id`) takes the ID of the one appliance whose
  record id or name contains `<prefix>`;
- a leaf of a version-keyed group (`131.template_id`) takes the ID of the appliance build whose
  software version is that version (`1.31.3-...` is `131`); a version no build matches is left
  out (not asked for blind);
- anything else (two appliances matching one prefix, deeper groups) is left to the operator,
  with a note saying so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from tui.domain.appliance_identity import ApplianceFacts
from tui.domain.components import ComponentDefinition
from tui.domain.site_checks import CloudIds
from tui.domain.site_config import MISSING, SiteConfig, cloud_fill, lookup
from tui.domain.versions import parse_version

_ENDPOINT = re.compile(r"^(?P<scheme>https?)://[^/]*?(?::(?P<port>\d{1,5}))?/?$")
_ID_KINDS = ("service_template_id", "template_id", "image_id")


@dataclass(frozen=True)
class InstalledAppliance:
    """A downloaded appliance as the cloud holds it (the newest build when several are)."""

    record_id: str
    name: str
    version: str
    image_id: int | None = None
    template_id: int | None = None
    service_template_id: int | None = None

    def id_of(self, kind: str) -> int | None:
        return {"image_id": self.image_id, "template_id": self.template_id,
                "service_template_id": self.service_template_id}[kind]


@dataclass(frozen=True)
class CloudFacts:
    """What the cloud says about the site; None where it could not be learned (see `notes`)."""

    objectstore_address: str | None = None
    #: where the address came from ("site record: service 3, VM 12")
    objectstore_source: str = ""
    gate_endpoint: str | None = None
    default_network_id: int | None = None
    default_network_source: str = ""
    nic_mtu: int | None = None
    #: IDs that exist in the cloud, for the checks
    ids: CloudIds | None = None
    #: the cloud user named in the automation's cloud-username input ("" when unknown)
    automation_user: str = ""
    #: record id -> what is downloaded
    appliances: Mapping[str, InstalledAppliance] = field(default_factory=dict)
    #: what images and templates are (for the appliance-identity check); None when unknown
    identity: ApplianceFacts | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FillChange:
    path: str
    old: Any
    new: Any
    source: str

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new, "source": self.source}


def _s3_parts(current: Any) -> tuple[str, int]:
    """Scheme and port of the current endpoint (the template's placeholder keeps https and 9000)."""
    if isinstance(current, str):
        match = _ENDPOINT.match(re.sub(r"<[^>]*>", "host", current.strip()))
        if match:
            return match.group("scheme"), int(match.group("port") or 9000)
    return "https", 9000


def version_group_key(version: str) -> str:
    """The version-group name of an appliance build: `1.31.3-6.10.0-3-...` and `v1.31` -> `131`."""
    numbers = parse_version(version).numbers
    return f"{numbers[0]}{numbers[1]}" if len(numbers) >= 2 else ""


def appliance_values(definition: ComponentDefinition, installed: Mapping[str, InstalledAppliance]) -> tuple[dict[str, int], tuple[str, ...]]:
    """Site-variable values of one component from its downloaded appliances, and notes."""
    records = definition.appliance_record_ids()
    present = [installed[r] for r in records if r in installed]
    values: dict[str, int] = {}
    notes: list[str] = []
    if not records:
        return values, ()
    missing = [r for r in records if r not in installed]
    if missing:
        notes.append(f"{definition.name}: appliance(s) {', '.join(missing)} not downloaded")
    skipped: list[str] = []
    versions = set(definition.version_groups())
    for leaf, _description in definition.variable_paths():
        group, _dot, last = leaf.rpartition(".")
        kind = next((k for k in _ID_KINDS if last == k or last.endswith(f"_{k}")), None)
        if kind is None:
            continue
        pool = present
        if group:
            if group not in versions:
                if present:
                    skipped.append(leaf)
                continue
            pool = [a for a in present if version_group_key(a.version) == group]
            if not pool:
                continue  # no build of this version: the version is left out
        prefix = last[: -len(kind)].rstrip("_")
        if not prefix:
            candidates = pool if len(records) == 1 else []
        else:
            wanted = prefix.lower()
            candidates = [a for a in pool if wanted in a.record_id.lower() or wanted in a.name.lower().replace(" ", "_")]
        if len(candidates) != 1:
            if present and (prefix or len(records) > 1):
                skipped.append(leaf)
            continue
        found = candidates[0].id_of(kind)
        if found is not None:
            values[leaf] = found
    if skipped:
        notes.append(f"{definition.name}: {', '.join(skipped)} left as they are (which appliance serves each is for the operator to say)")
    return values, tuple(notes)


def appliance_leaves(definition: ComponentDefinition, versions: Mapping[str, str] | None = None) -> frozenset[str]:
    """The site variables the component's appliances fill by themselves (once downloaded);
    `versions` (record id -> the version that is downloaded or will be) fills versioned groups."""
    stand_in = {r: InstalledAppliance(r, r, (versions or {}).get(r, ""), 1, 1, 1) for r in definition.appliance_record_ids()}
    return frozenset(appliance_values(definition, stand_in)[0])


def fill_changes(
    config: SiteConfig,
    facts: CloudFacts,
    definitions: Mapping[str, ComponentDefinition] | None = None,
) -> tuple[tuple[FillChange, ...], tuple[str, ...]]:
    """The changes that bring core.yaml in line with the cloud, and notes on what was left."""
    proposed: list[tuple[str, Any, str]] = []
    notes: list[str] = list(facts.notes)
    if facts.objectstore_address:
        scheme, port = _s3_parts(config.get("site_s3_server.endpoint"))
        for path, value in cloud_fill(objectstore_address=facts.objectstore_address, s3_scheme=scheme, s3_port=port):
            proposed.append((path, value, f"the object store VM: {facts.objectstore_source or 'toolkit deployment'}"))
    if facts.gate_endpoint:
        for path, value in cloud_fill(gate_endpoint=facts.gate_endpoint):
            proposed.append((path, value, f"the platform's ONEGATE_ENDPOINT {facts.gate_endpoint}"))
    if facts.default_network_id is not None:
        proposed.append(("site_networks_id.default", facts.default_network_id, facts.default_network_source or "the toolkit's default network"))
    if definitions:
        key = config.variables_key
        for component in config.components():
            definition = definitions.get(component)
            if definition is None or not definition.appliances:
                continue
            values, component_notes = appliance_values(definition, facts.appliances)
            notes.extend(component_notes)
            for leaf, value in values.items():
                record = _record_for(definition, facts.appliances, value)
                proposed.append((f"{key}.{component}.{leaf}", value, f"downloaded appliance {record}"))
    changes: list[FillChange] = []
    for path, value, source in proposed:
        old = lookup(config.data, path)
        if old is not MISSING and old == value and type(old) is type(value):
            continue
        changes.append(FillChange(path, None if old is MISSING else old, value, source))
    return tuple(changes), tuple(notes)


def _record_for(definition: ComponentDefinition, installed: Mapping[str, InstalledAppliance], value: int) -> str:
    for record in definition.appliance_record_ids():
        found = installed.get(record)
        if found is not None and value in (found.image_id, found.template_id, found.service_template_id):
            return f"{found.name} {found.version}"
    return ""


def as_edits(changes: Sequence[FillChange]) -> list[tuple[str, Any]]:
    return [(change.path, change.new) for change in changes]
