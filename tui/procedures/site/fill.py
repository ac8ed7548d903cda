"""Fill core.yaml from the cloud, and the cloud facts the checks need.

`gather_cloud_facts(site, config, definitions)` reads, concurrently:
- the object store VM's address: the toolkit deployment's site record (`load_site_record`), its
  object store role's VM read back live by ID; without a record, the newest toolkit service's
  object store role nodes through the flow client (VMs are never looked up by name);
- the gate endpoint: the platform configuration's ONEGATE_ENDPOINT (`one.system.config`);
- the default network: the one the toolkit was deployed on (site record or service), else the
  file's `site_networks_id.default`; its MTU is the NIC MTU of the guest-MTU check;
- the IDs of downloaded appliances: the images carrying each component appliance's marketplace
  attributes (the newest build), the VM template whose disk is that image;
- the IDs that exist (VM templates, images, service templates, networks) for the ID checks;
- what each image, template and service template is (`appliance_facts`: marketplace attributes,
  disks, roles) and the record names of the listed components' appliances, with the operator's
  confirmations, for the check that each appliance ID is its component's appliance;
- the automation cloud user (record, else the service's input value).
A fact that cannot be read becomes a note, never a failure of the whole fill.

`plan_fill` turns the facts into `FillChange`s (domain.site_fill) with a preview (what changes,
where each value came from, the hand-run `ansible-vault edit`); `fill_site_file` applies them
with `edit_file` (decrypted in memory, comments kept, re-encrypted, atomic, audit-logged).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from tui.adapters.vault import VaultPassword
from tui.domain.appliance_identity import ApplianceFacts, Confirmation, ImageFacts, ServiceTemplateFacts, TemplateFacts
from tui.domain.components import ComponentDefinition
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.domain.images import ImageInfo
from tui.domain.naming import NamingProfile
from tui.domain.networks import Vnet
from tui.domain.services import SERVICE_DONE, Service
from tui.domain.site_checks import CloudIds
from tui.domain.site_config import SiteConfig
from tui.domain.site_fill import CloudFacts, FillChange, InstalledAppliance, as_edits, fill_changes
from tui.domain.site_record import SiteRecord
from tui.domain.vmtemplates import VmTemplate
from tui.errors import AuthenticationFailed, SiteError
from tui.procedures.concurrent import gather
from tui.procedures.market.attributes import role_template_ids
from tui.procedures.market.marketplaces import MarketCatalog, load_catalog
from tui.procedures.operation import RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site.config import ConfigWritten, WriteLedger, edit_file, load_site_config, show_value, vault_cli
from tui.procedures.site.confirmations import load_confirmations
from tui.procedures.site_record import load_site_record

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


# -- the toolkit deployment ---------------------------------------------------------------------


@dataclass(frozen=True)
class Deployment:
    """What the fill needs from the toolkit deployment."""

    service_id: int
    objectstore_vm_ids: tuple[int, ...]
    network_id: int | None
    automation_user: str
    #: where it was read: "the site record of service" or "toolkit service" (followed by the ID)
    source: str


def _network_id(networks: Sequence[tuple[str, str]]) -> int | None:
    for _name, ident in networks:
        if str(ident).strip().isdigit():
            return int(ident)
    return None


def _from_record(record: SiteRecord, site: "SiteConnection") -> Deployment:
    role = record.role(site.naming.role_objectstore)
    return Deployment(record.service_id, role.vm_ids if role else (), _network_id(record.networks), record.cloud_username, "the site record of service")


def _from_service(service: Service, site: "SiteConnection") -> Deployment:
    role = service.role(site.naming.role_objectstore)
    networks: list[tuple[str, str]] = []
    for item in service.networks_values:
        for name, target in item.items():
            if isinstance(target, Mapping) and "id" in target:
                networks.append((str(name), str(target["id"])))
    user = str(service.input_values.get(site.naming.input_name("automation_cloud_username"), ""))
    return Deployment(service.id, role.vm_ids if role else (), _network_id(networks), user, "toolkit service")


async def find_deployment(site: "SiteConnection") -> Deployment | None:
    """The toolkit deployment: the site record's, else the newest live service with an object store role."""
    record = load_site_record(site.settings)
    if record is not None:
        found = _from_record(record, site)
        if found.objectstore_vm_ids:
            return found
        # recorded at instantiation, before the role had VMs (the platform answers the service
        # PENDING, its roles empty): read them from the service itself
        try:
            return _from_service(await site.flow.get_service(record.service_id), site)
        except SiteError as error:
            if error.retryable:
                raise
            return found
    services = await site.flow.list_services()
    toolkit = [s for s in services if s.state != SERVICE_DONE and s.role(site.naming.role_objectstore) is not None]
    if not toolkit:
        return None
    return _from_service(max(toolkit, key=lambda s: (s.start_time, s.id)), site)


async def _objectstore_address(site: "SiteConnection", deployment: Deployment) -> tuple[str | None, str]:
    for vm_id in deployment.objectstore_vm_ids:
        try:
            detail = await site.cloud.vm_info(vm_id)
        except SiteError as error:
            if error.retryable or isinstance(error, AuthenticationFailed):
                raise
            continue
        ips = [ip for ip in detail.summary.ips if ip]
        if ips:
            return ips[0], f"{deployment.source} {deployment.service_id}, VM {vm_id}"
    return None, ""


# -- downloaded appliances ------------------------------------------------------------------------


def installed_from_catalog(record_id: str, catalog: MarketCatalog, templates: Sequence[VmTemplate], documents: Sequence[Any]) -> InstalledAppliance | None:
    """The newest downloaded build of a record: its newest tagged image, the VM template whose disk
    it is (same name first) and a service template using that VM template; None when not downloaded."""
    try:
        entry = catalog.newest(record_id)
    except SiteError:
        return None
    tagged = entry.status.images
    if not tagged:
        return None
    newest = max(tagged, key=lambda t: t.version.semantic_key()).version
    images: list[ImageInfo] = sorted((t.image for t in tagged if t.version.same_release(newest)), key=lambda i: i.id)
    image = images[-1]
    using = [t for t in templates if image.id in t.image_ids]
    template = next((t for t in using if t.name == image.name), None) or (max(using, key=lambda t: t.id) if using else None)
    service_template = None
    if template is not None:
        service_template = next((d.id for d in documents if d.body and template.id in role_template_ids(d.body)), None)
    return InstalledAppliance(
        record_id, entry.record.name, newest.label, image.id, template.id if template is not None else None, service_template
    )


async def installed_appliances(site: "SiteConnection", record_ids: Sequence[str]) -> tuple[dict[str, InstalledAppliance], tuple[str, ...]]:
    """record id -> the downloaded appliance's IDs, for every record that is downloaded."""
    if not record_ids:
        return {}, ()
    catalog, templates, documents = await gather(
        load_catalog(site), site.cloud.list_templates(), site.cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT)
    )
    return _installed(catalog, record_ids, templates, documents)


def _installed(catalog: MarketCatalog, record_ids: Sequence[str], templates: Sequence[VmTemplate],
               documents: Sequence[Any]) -> tuple[dict[str, InstalledAppliance], tuple[str, ...]]:
    notes = [f"marketplace {f.source.name}: {f.title}" for f in catalog.failures]
    found: dict[str, InstalledAppliance] = {}
    for record_id in dict.fromkeys(record_ids):
        installed = installed_from_catalog(record_id, catalog, templates, documents)
        if installed is not None:
            found[record_id] = installed
    return found, tuple(notes)


def appliance_facts(
    naming: NamingProfile,
    images: Sequence[ImageInfo],
    templates: Sequence[VmTemplate],
    documents: Sequence[Any],
    definitions: Mapping[str, ComponentDefinition],
    catalog: MarketCatalog | None,
    confirmations: Sequence[Confirmation] = (),
) -> ApplianceFacts:
    """What the identity check needs: each image's marketplace attributes, each template's disks,
    each service template's roles, and the record names each component's appliances carry."""
    image_facts = {
        i.id: ImageFacts(i.id, i.name, i.attributes.get(naming.appliance_name_attribute),
                         i.attributes.get(naming.appliance_version_attribute),
                         i.attributes.get(naming.appliance_software_version_attribute))
        for i in images
    }
    template_facts = {t.id: TemplateFacts(t.id, t.name, t.image_ids) for t in templates}
    services = {d.id: ServiceTemplateFacts(d.id, d.name, role_template_ids(d.body) if d.body else ()) for d in documents}
    expected: dict[str, tuple[str, ...]] = {}
    unknown: dict[str, str] = {}
    for name, definition in definitions.items():
        if not definition.appliances:
            continue
        if catalog is None:
            unknown[name] = "the marketplaces could not be read"
            continue
        names: list[str] = []
        for record_id in definition.appliance_record_ids():
            try:
                names.append(catalog.newest(record_id).record.name)
            except SiteError as error:
                unknown[name] = f"its appliance {record_id} is not in the marketplaces ({error.title})"
                break
        else:
            expected[name] = tuple(dict.fromkeys(names))
    return ApplianceFacts(image_facts, template_facts, services, expected, unknown, tuple(confirmations))


# -- gathering ----------------------------------------------------------------------------------


def _configured_network(config: SiteConfig | None) -> int | None:
    if config is None:
        return None
    value = config.get("site_networks_id.default")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


async def _guard(what: str, call: Any, notes: list[str]) -> Any:
    """Run one read; a non-retryable failure becomes a note and None."""
    try:
        return await call
    except AuthenticationFailed:
        raise  # the session is refused: every other read would be too
    except SiteError as error:
        notes.append(f"{what}: {error.title}")
        return None


async def gather_cloud_facts(
    site: "SiteConnection",
    config: SiteConfig | None = None,
    definitions: Mapping[str, ComponentDefinition] | None = None,
) -> CloudFacts:
    """Everything the fill and the checks learn from the cloud (see the module docstring)."""
    notes: list[str] = []
    listed = set(config.components()) if config is not None else set(definitions or {})
    record_ids = [r for name, d in (definitions or {}).items() if name in listed for r in d.appliance_record_ids()]
    deployment, system, templates, images, documents, vnets, catalog = await gather(
        _guard("toolkit deployment", find_deployment(site), notes),
        _guard("platform configuration", site.cloud.system_config(), notes),
        _guard("VM templates", site.cloud.list_templates(), notes),
        _guard("images", site.cloud.list_images(), notes),
        _guard("service templates", site.cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT), notes),
        _guard("virtual networks", site.cloud.list_vnets(), notes),
        _guard("marketplaces", load_catalog(site), notes) if record_ids else _nothing(),
    )
    appliances = None
    if catalog is not None and templates is not None and documents is not None:
        appliances = _installed(catalog, record_ids, templates, documents)
    elif record_ids:
        notes.append("downloaded appliances: unknown (the marketplaces, templates or service templates could not be read)")
    address, address_source = (None, "")
    if deployment is None:
        notes.append("no toolkit deployment found (site record or service): the object store address is unknown")
    else:
        address, address_source = await _objectstore_address(site, deployment)
        if address is None:
            notes.append(f"the object store VM of service {deployment.service_id} has no address yet")
    gate = system.onegate_endpoint if system is not None else None
    if system is not None and not gate:
        notes.append("the platform configuration has no ONEGATE_ENDPOINT")
    network_id = deployment.network_id if deployment is not None else None
    network_source = ""
    if deployment is not None and network_id is not None:
        network_source = f"the toolkit's default network ({deployment.source} {deployment.service_id})"
    nets: dict[int, Vnet] = {v.id: v for v in vnets or ()}
    mtu_network = network_id if network_id is not None else _configured_network(config)
    nic_mtu = nets[mtu_network].mtu if mtu_network in nets else None
    if vnets is not None and mtu_network is not None and mtu_network not in nets:
        notes.append(f"network {mtu_network} does not exist: the NIC MTU is unknown")
    installed, market_notes = appliances if appliances is not None else ({}, ())
    notes.extend(market_notes)
    identity = None
    if definitions and images is not None and templates is not None and documents is not None:
        identity = appliance_facts(site.naming, images, templates, documents, {n: d for n, d in definitions.items() if n in listed},
                                   catalog, _confirmations(site, notes))
    ids = CloudIds(
        templates=frozenset(t.id for t in templates) if templates is not None else None,
        images=frozenset(i.id for i in images) if images is not None else None,
        service_templates=frozenset(d.id for d in documents) if documents is not None else None,
        networks=frozenset(nets) if vnets is not None else None,
    )
    return CloudFacts(
        objectstore_address=address,
        objectstore_source=address_source,
        gate_endpoint=gate or None,
        default_network_id=network_id,
        default_network_source=network_source,
        nic_mtu=nic_mtu,
        ids=ids,
        automation_user=deployment.automation_user if deployment is not None else "",
        appliances=installed,
        identity=identity,
        notes=tuple(notes),
    )


async def _nothing() -> None:
    return None


def _confirmations(site: "SiteConnection", notes: list[str]) -> tuple[Confirmation, ...]:
    try:
        return load_confirmations(site.settings)
    except SiteError as error:
        notes.append(f"{error.title}: {error.detail}")
        return ()


# -- plan and apply -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FillPlan:
    path: Path
    facts: CloudFacts
    changes: tuple[FillChange, ...]
    notes: tuple[str, ...]

    def preview(self, password: VaultPassword) -> Preview:
        cli = vault_cli("edit", self.path, password)
        items = tuple(
            Change(f"{c.path}: {show_value(c.path, c.old)} -> {show_value(c.path, c.new)} (from {c.source})", cli, "update") for c in self.changes
        ) or (Change(f"{self.path}: already in line with the cloud", "", "none"),)
        return Preview(f"Fill {self.path} from the cloud", items, warnings=self.notes)

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "changes": [c.as_json() for c in self.changes], "notes": list(self.notes)}


async def plan_fill(
    site: "SiteConnection",
    path: Path,
    password: VaultPassword,
    definitions: Mapping[str, ComponentDefinition] | None = None,
    config: SiteConfig | None = None,
) -> FillPlan:
    """Decrypt core.yaml (or take the editor's `config`), read the cloud, propose the changes."""
    path = Path(path)
    if config is None:
        config = (await load_site_config(path, password, site.naming)).config
    facts = await gather_cloud_facts(site, config, definitions)
    changes, notes = fill_changes(config, facts, definitions)
    return FillPlan(path, facts, changes, notes)


async def fill_site_file(
    site: "SiteConnection",
    plan: FillPlan,
    password: VaultPassword,
    context: RunContext,
    definitions: Mapping[str, ComponentDefinition] | None = None,
    *,
    record: bool = True,
    ledger: WriteLedger | None = None,
) -> ConfigWritten:
    """Write the planned changes (nothing to do: a skipped event); re-running changes nothing.

    `record=False`: the caller (the `FillSite` operation) writes the audit record; called outside
    an operation, the write records itself."""
    if not plan.changes:
        context.report(Progress("fill", 1, 1, "already in line with the cloud", state=ProgressState.SKIPPED,
                                data={"path": str(plan.path), "changed": False}))
        return ConfigWritten(plan.path, False)
    return await edit_file(plan.path, password, as_edits(plan.changes), context, naming=site.naming, definitions=definitions,
                           audit=site.audit if record else None, ledger=ledger)


def fill_text(config: SiteConfig, changes: Sequence[FillChange]) -> SiteConfig:
    """The editor's text with the changes applied (comments kept); nothing is written."""
    return config.edit(as_edits(changes))
