"""What the setup checklist reads from the live site: the cloud, OneFlow and the sites repository.

`read_setup_facts(site, target)` reads everything concurrently; a source that cannot be read
becomes a note (and the steps that need it say "not known"), never a guess. The site record in
the console's state directory is never the truth: the toolkit service is found live (the newest
service that is not DONE and has the toolkit's roles), its VMs by ID from its role nodes.

`SetupTarget` is what the operator intends, from the toolkit input file when one is given (the
spec's JSON: the automation cloud user, the sites branch and directory, the default network and
the site secret that is also the vault password), else from the live toolkit service's inputs.

The console imports this module before its first rows (the front door's check; guarded by
tests/test_startup_imports.py): what only reading the site needs and the console has not loaded by
then (the inventory, the marketplaces' listings, the input checks, the leases, the manager's client,
about a dozen modules, 0.6 s at load 24 here) is imported inside the function that reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Mapping, TypeVar

from tui.adapters.vault import VaultPassword, decrypt_text_async, is_vault_text
from tui.domain.bounded import BoundedInputError, read_text_file
from tui.domain.datastores import Datastore
from tui.domain.disk_size import DEFAULT_OBJECTSTORE_DISK_MB
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.domain.hosts import Host
from tui.domain.images import ImageInfo
from tui.domain.marketapps import MarketApp, Marketplace
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.networks import Vnet
from tui.domain.services import Service, ServiceTemplate
from tui.domain.setup_networks import Lease, default_candidates
from tui.domain.site_config import SiteConfig, SiteConfigError
from tui.domain.ssh_keys import SshKeyError, parse_public_key
from tui.domain.system import SystemConfig
from tui.domain.users import User
from tui.domain.vm_detail import VmDetail
from tui.domain.vms import VmSummary
from tui.errors import AuthenticationFailed, SiteError
from tui.procedures.concurrent import gather
from tui.procedures.reading_pass import branches as pass_branches
from tui.procedures.reading_pass import synced
from tui.procedures.site.component_library import library_definitions
from tui.procedures.site.verdict import site_verdict
from tui.procedures.site.workspace import prompted_password, sites_repo, vault_password
from tui.procedures.site_record import site_record_problem
from tui.procedures.toolkit.service import list_toolkit_templates, load_form, read_input_file, toolkit_service

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.acls import AclRule
    from tui.domain.documents import Document
    from tui.domain.input_site import SiteCheck
    from tui.domain.vmtemplates import VmTemplate
    from tui.procedures.connection import SiteConnection
    from tui.procedures.hosts.cpu_inventory import HostInventory
    from tui.procedures.market.marketplaces import MarketCatalog
    from tui.procedures.setup.optional import RouteManagerAnswer
    from tui.procedures.site.verdict import SiteVerdict
    from tui.procedures.toolkit.input_checks import SiteCheckReport
    from tui.procedures.toolkit.service import ToolkitForm
    from tui.procedures.trial.network import TrialFact

T = TypeVar("T")
SITE_CONFIG_FILE = "core.yaml"


@dataclass(frozen=True)
class SetupTarget:
    """What the operator intends (input file, else the live service's inputs)."""

    cloud_username: str = ""
    branch: str = ""
    site_dir: str = ""
    network_id: int | None = None
    #: the site secret (app_automation_sites_token), which is the vault password of core.yaml
    vault_password: VaultPassword | None = field(default=None, repr=False)
    input_path: str = ""
    #: input name -> value of the input file (secrets included, never printed)
    values: Mapping[str, str] = field(default_factory=dict, repr=False)
    instance_name: str = ""
    networks: tuple[tuple[str, str], ...] = ()
    #: where the intent came from ("input file <path>", "service 3", "")
    source: str = ""
    #: what is worth fixing in the input file (readable by others while it holds secrets)
    warnings: tuple[str, ...] = ()
    #: the size the object store's data disk (disk0) is grown to (`sitetk setup ... --disk-size`)
    objectstore_disk_mb: int = DEFAULT_OBJECTSTORE_DISK_MB
    #: the test trial network whose state the manager is asked for ("": the manager is not read;
    #: `setup run --only trial-run` sets it, since reading it logs in to the manager)
    trial_tn_id: str = ""


@dataclass(frozen=True)
class RepoFacts:
    """The sites repository as read now (None fields: not known)."""

    configured: str = ""
    reachable: bool | None = None
    reach_error: str = ""
    writable: bool | None = None
    write_error: str = ""
    default_branch: str = ""
    branches: tuple[str, ...] = ()
    #: the site's core.yaml as it stands (vault text), None when absent: the working clone's when it
    #: holds changes of the site not pushed yet (what the next submit pushes), else origin's
    core_yaml: str | None = None
    #: decrypted text when the password was known and right
    core_plain: str | None = None
    decrypt_error: str = ""
    #: the working clone holds changes of the site not pushed yet
    pending: tuple[str, ...] = ()
    #: origin's core.yaml of the site branch (vault text), None when the remote has none
    remote_yaml: str | None = None

    @property
    def in_clone(self) -> bool:
        """`core_yaml` is the working clone's (not submitted yet), not origin's."""
        return bool(self.pending) and self.core_yaml is not None


@dataclass(frozen=True)
class SetupFacts:
    endpoint: str
    version: str
    user: str
    group: str
    target: SetupTarget
    system: SystemConfig | None = None
    marketplaces: tuple[Marketplace, ...] | None = None
    configured_markets: tuple[str, ...] = ()
    marketapps: tuple[MarketApp, ...] | None = None
    datastores: tuple[Datastore, ...] | None = None
    vnets: tuple[Vnet, ...] | None = None
    leases: tuple[Lease, ...] | None = None
    vms: tuple[VmSummary, ...] | None = None
    users: tuple[User, ...] | None = None
    images: tuple[ImageInfo, ...] | None = None
    toolkit_templates: tuple[ServiceTemplate, ...] | None = None
    #: image IDs of the newest toolkit service template (its roles' disks)
    toolkit_image_ids: tuple[int, ...] | None = None
    service: Service | None = None
    services_known: bool = False
    #: why OneFlow did not answer the services' list with the session ("" it answered)
    flow_error: str = ""
    flow_url: str = ""
    #: every HTTP marketplace (the cloud's and the configured ones) listed now, the failures among
    #: them, and the install status of each record (what `sitetk market list` and `market upgrades`
    #: read); None: not read
    catalog: "MarketCatalog | None" = None
    #: the automation VM's published key line ("" none yet), None when not read
    automation_key: str | None = None
    automation_key_problem: str = ""
    inventory: "HostInventory | None" = None
    hosts: tuple[Host, ...] | None = None
    form: "ToolkitForm | None" = None
    #: VM templates, service templates (documents) and ACL rules: who may use the components' objects
    vm_templates: "tuple[VmTemplate, ...] | None" = None
    service_template_docs: "tuple[Document, ...] | None" = None
    acl_rules: "tuple[AclRule, ...] | None" = None
    repo: RepoFacts = RepoFacts()
    #: the whole check of `repo.core_plain` (the cloud and the component library), None: not run
    site_verdict: "SiteVerdict | None" = None
    #: the input file's values checked against the site (`check_inputs_on_site`: the same checks
    #: as the form and `sitetk toolkit validate`), None when there is no input file or no form
    input_checks: "SiteCheckReport | None" = None
    #: the automation cloud user's login with the file's password (None: not tried)
    cloud_login: "SiteCheck | None" = None
    notes: tuple[str, ...] = ()
    naming: NamingProfile = DEFAULT_NAMING
    #: why the console's site record of this endpoint cannot be read ("" when it can or is absent):
    #: `toolkit vms` and `toolkit key` read it
    site_record_problem: str = ""
    #: the object store role's VM, read whole (its disks), None when there is none or it was not read
    objectstore_vm: VmDetail | None = None
    #: the manager's answer about `target.trial_tn_id` (None: not asked)
    trial: "TrialFact | None" = None
    #: what the route manager core.yaml names answered its token (None: core.yaml names none)
    route_manager: "RouteManagerAnswer | None" = None

    @property
    def default_network(self) -> Vnet | None:
        if self.vnets is None:
            return None
        wanted = self.default_network_id
        if wanted is not None:
            return next((v for v in self.vnets if v.id == wanted), None)
        found = default_candidates(self.vnets)
        return found[0] if found else None

    @property
    def default_network_id(self) -> int | None:
        if self.target.network_id is not None:
            return self.target.network_id
        if self.service is not None:
            for item in self.service.networks_values:
                for target in item.values():
                    if isinstance(target, Mapping) and str(target.get("id", "")).strip().isdigit():
                        return int(target["id"])
        return None

    @property
    def objectstore_ip(self) -> str:
        """The object store VM's first address, from the live service's role nodes ("" unknown)."""
        if self.service is None or self.vms is None:
            return ""
        role = self.service.role(self.naming.role_objectstore)
        ids = set(role.vm_ids) if role else set()
        for vm in self.vms:
            if vm.id in ids and vm.ips:
                return vm.ips[0]
        return ""


async def _guard(what: str, call: Awaitable[T], notes: list[str], failed: dict[str, str] | None = None) -> T | None:
    """One source: a failure becomes a note and None (its steps say "could not be read"); a
    refused session stops the whole reading (every other source would fail the same way).
    `failed` keeps the failure's text under `what` for a step that names it."""
    try:
        return await call
    except AuthenticationFailed:
        raise
    except SiteError as error:
        text = f"{error.title}{f' ({error.detail.splitlines()[0]})' if error.detail else ''}"
        notes.append(f"{what}: {text}")
        if failed is not None:
            failed[what] = text
        return None


def target_from_file(path: str | Path, secrets: frozenset[str], naming: Any) -> SetupTarget:
    """The intent of a toolkit input file (SiteError when it cannot be read or is malformed)."""
    loaded = read_input_file(path, secrets)
    values = loaded.file.value_map()
    network = next((int(i) for _, i in loaded.file.networks if str(i).strip().isdigit()), None)
    token = values.get(naming.input_name(f"{naming.role_automation}_sites_token"), "")
    branch = values.get(naming.input_name(f"{naming.role_manager}_sites_branch"), "")
    return SetupTarget(
        cloud_username=values.get(naming.input_name(f"{naming.role_automation}_cloud_username"), ""),
        branch=branch,
        site_dir=values.get(naming.input_name(f"{naming.role_manager}_deployment_site"), "") or branch,
        network_id=network,
        vault_password=prompted_password(token) if token else None,
        input_path=str(loaded.path),
        values=values,
        instance_name=loaded.file.name,
        networks=loaded.file.networks,
        source=f"input file {loaded.path}",
        warnings=loaded.warnings,
    )


def with_service_inputs(target: SetupTarget, service: Service | None, naming: Any) -> SetupTarget:
    """Fill what the target does not say from the live toolkit service's inputs (never its secrets)."""
    if service is None:
        return target
    values = service.input_values

    def pick(current: str, suffix: str) -> str:
        return current or str(values.get(naming.input_name(suffix), ""))

    user = pick(target.cloud_username, f"{naming.role_automation}_cloud_username")
    branch = pick(target.branch, f"{naming.role_manager}_sites_branch")
    site_dir = pick(target.site_dir, f"{naming.role_manager}_deployment_site") or branch
    source = target.source or f"toolkit service {service.id}"
    return replace(target, cloud_username=user, branch=branch, site_dir=site_dir, source=source)


async def _toolkit_images(site: "SiteConnection", templates: tuple[ServiceTemplate, ...] | None,
                          notes: list[str]) -> tuple[int, ...] | None:
    # imported here, not at the top: keeps the console's start-up light (module docstring)
    from tui.procedures.market.attributes import images_of_service_template

    if not templates:
        return None if templates is None else ()
    return await _guard("toolkit images", images_of_service_template(site, templates[0].id), notes)


async def _automation_key(site: "SiteConnection", service: Service | None,
                          notes: list[str]) -> tuple[str | None, str]:
    """The automation VM's published key ("" none yet, None not known) and what is wrong with what
    it published; a VM that cannot be read is not known (a note), never a problem of the VM."""
    if service is None:
        return None, ""
    role = service.role(site.naming.role_automation)
    if role is None or not role.vm_ids:
        return "", ""
    detail = await _guard(f"the automation VM {role.vm_ids[0]}", site.cloud.vm_info(role.vm_ids[0]), notes)
    if detail is None:
        return None, ""
    published = detail.user_template.get(site.naming.automation_key_attribute).strip()
    if not published:
        return "", ""
    try:
        return parse_public_key(published).line, ""
    except SshKeyError as exc:
        return "", f"VM {detail.id} published {site.naming.automation_key_attribute}, not an SSH public key: {exc}"


async def _inventory(site: "SiteConnection", service: Service | None, notes: list[str]) -> "HostInventory | None":
    # imported here, not at the top: keeps the console's start-up light (module docstring)
    from tui.procedures.hosts.cpu_inventory import load_inventory

    ids: tuple[int, ...] = ()
    if service is not None:
        ids = tuple(vm for r in service.roles if r.name in site.naming.document_db_roles for vm in r.vm_ids)
    return await _guard("hosts and database VMs", load_inventory(site, record_vm_ids=ids), notes)


async def _form(site: "SiteConnection", templates: tuple[ServiceTemplate, ...] | None,
                notes: list[str]) -> "ToolkitForm | None":
    if not templates:
        return None
    return await _guard("toolkit input form", load_form(site, templates[0]), notes)


async def read_repo(site: "SiteConnection", target: SetupTarget) -> RepoFacts:
    """The sites repository: reachable, writable, the site branch and its core.yaml (decrypted
    when the vault password is known)."""
    settings = site.settings
    if not settings.sites_repo:
        return RepoFacts()
    await site.wait_for_repositories()
    repo = sites_repo(settings)
    facts: dict[str, Any] = {"configured": str(settings.sites_repo)}
    try:
        try:
            await synced(repo)
        except SiteError as error:
            return RepoFacts(reachable=False, reach_error=f"{error.title}: {error.detail}", **facts)
        branches = await pass_branches(repo)
        facts.update(reachable=True, default_branch=branches.default, branches=tuple(branches.heads))
        ok, message = await repo.can_push()
        facts.update(writable=ok, write_error="" if ok else message)
        site_dir = target.site_dir or target.branch
        config_path = f"{site_dir}/{SITE_CONFIG_FILE}"
        remote = None
        if target.branch and target.branch in facts["branches"]:
            remote = await repo.read_file(f"origin/{target.branch}", config_path)
        facts["remote_yaml"] = remote
        text = remote
        if target.branch and await repo.current_branch() == target.branch:
            changed = [p for p in await repo.changed_paths() if p.startswith(f"{site_dir}/")]
            if await repo.unpushed(target.branch, remote=facts["branches"]):
                changed.append(f"commits on {target.branch} not pushed")
            facts["pending"] = tuple(changed)
            if changed:  # what the next submit pushes is the working clone's file
                text = _clone_file(repo.workdir / config_path)
        facts["core_yaml"] = text
        password = target.vault_password
        if password is None:
            try:
                password = vault_password(settings)
            except SiteError:
                password = None
        if text is not None and password is not None and is_vault_text(text):
            try:
                facts["core_plain"] = await decrypt_text_async(text, password, f"{target.branch}:{SITE_CONFIG_FILE}")
            except SiteError as error:
                facts["decrypt_error"] = f"{error.title}: {error.detail}"
    finally:
        repo.close()
    return RepoFacts(**facts)


def _clone_file(path: Path) -> str | None:
    """The working clone's core.yaml of the site (None when it has none or it cannot be read)."""
    try:
        return read_text_file(path, str(path))
    except (OSError, BoundedInputError):
        return None


async def whole_verdict(site: "SiteConnection", repo: RepoFacts, notes: list[str]) -> "SiteVerdict | None":
    """The whole check of the site's core.yaml as it stands: the cloud's facts and the component
    library's definitions (what `sitetk site check --cloud` runs); None when it does not open."""
    if repo.core_plain is None:
        return None
    try:
        config = SiteConfig.parse(repo.core_plain, site.naming)
    except SiteConfigError:
        return None
    definitions = await _guard("component library", library_definitions(site), notes)
    return await site_verdict(config, site=site, definitions=definitions)


async def _input_checks(site: "SiteConnection", target: SetupTarget, form: "ToolkitForm | None",
                        users: tuple[User, ...] | None) -> "tuple[SiteCheckReport | None, SiteCheck | None]":
    """The input file checked against the site (with the form: every check of
    `check_inputs_on_site`), and the automation cloud user's login (also without the form, once the
    user exists)."""
    # imported here, not at the top: keeps the console's start-up light (module docstring)
    from tui.procedures.toolkit.input_checks import check_cloud_login, check_inputs_on_site

    naming = site.naming
    password_name = naming.input_name(f"{naming.role_automation}_cloud_password")
    if form is not None and target.input_path:
        report = await check_inputs_on_site(site, form, target.values, dict(target.networks))
        return report, report.check(password_name)
    exists = any(u.name == target.cloud_username for u in users or ())
    if not (target.input_path and target.cloud_username and exists):
        return None, None
    login = await check_cloud_login(site, password_name, target.cloud_username, target.values.get(password_name, ""))
    return None, login


async def read_setup_facts(site: "SiteConnection", target: SetupTarget | None = None) -> SetupFacts:
    """Read the whole site once (see the module docstring): one reading pass
    (`tui.procedures.reading_pass`), so that each pool is read once for every check of this
    reading, and read again by the next."""
    async with site.reading_pass():
        return await _read_setup_facts(site, target)


async def _read_setup_facts(site: "SiteConnection", target: SetupTarget | None) -> SetupFacts:
    # imported here, not at the top: keeps the console's start-up light (module docstring)
    from tui.adapters.vnet_leases import vnet_leases
    from tui.procedures.market.marketplaces import load_catalog
    from tui.procedures.setup.optional import probe_route_manager

    if site.info is None:
        await site.connect()
    info = site.info
    assert info is not None

    target = target or SetupTarget()
    notes: list[str] = []
    failed: dict[str, str] = {}
    cloud = site.cloud
    # two groups of five: gather's results are typed for at most seven awaitables
    (system, markets, apps, datastores, vnets), (vms, users, images, templates, services) = await gather(
        gather(
            _guard("platform configuration", cloud.system_config(), notes),
            _guard("marketplaces", cloud.list_marketplaces(), notes),
            _guard("marketplace apps", cloud.list_marketapps(), notes),
            _guard("datastores", cloud.list_datastores(), notes),
            _guard("virtual networks", cloud.list_vnets(), notes),
        ),
        gather(
            _guard("VMs", cloud.list_vms(), notes),
            _guard("users", cloud.list_users(), notes),
            _guard("images", cloud.list_images(), notes),
            _guard("service templates", list_toolkit_templates(site), notes),
            _guard("services", site.flow.list_services(), notes, failed),
        ),
    )
    service = toolkit_service(services, site.naming, target.values if target.input_path else None) \
        if services is not None else None
    target = with_service_inputs(target, service, site.naming)
    partial = SetupFacts(info.endpoint, info.version, info.user, info.group, target, vnets=vnets, service=service,
                         naming=site.naming)
    default = partial.default_network
    (leases, image_ids, key, inventory, form, repo, objectstore) = await gather(
        _guard("leases of the default network", vnet_leases(cloud, default.id), notes) if default else _none(),
        _toolkit_images(site, templates, notes),
        _automation_key(site, service, notes),
        _inventory(site, service, notes),
        _form(site, templates, notes),
        _guard("sites repository", read_repo(site, target), notes),
        _objectstore_vm(site, service, notes),
    )
    key_line, key_problem = key
    repo_facts = repo or RepoFacts(configured=str(site.settings.sites_repo or ""))
    verdict, (input_checks, login), vm_templates, documents, rules, catalog = await gather(
        _guard("the whole check of core.yaml", whole_verdict(site, repo_facts, notes), notes),
        _input_checks(site, target, form, users),
        _guard("VM templates", cloud.list_templates(), notes),
        _guard("service template documents", cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT), notes),
        _guard("ACL rules", cloud.acl_list(), notes),
        _guard("the marketplaces' listings", load_catalog(site), notes))
    trial = None
    if target.trial_tn_id and service is not None:
        # imported here, not at the top: keeps the console's start-up light (module docstring)
        from tui.procedures.trial.network import read_trial_fact

        trial = await read_trial_fact(site, target.values, target.trial_tn_id, service)
    route_manager = await probe_route_manager(site, repo_facts.core_plain)
    return SetupFacts(
        endpoint=info.endpoint, version=info.version, user=info.user, group=info.group, target=target,
        system=system, marketplaces=markets, configured_markets=tuple(site.settings.marketplace_urls),
        marketapps=apps, datastores=datastores, vnets=vnets, leases=leases, vms=vms, users=users, images=images,
        toolkit_templates=templates, toolkit_image_ids=image_ids, service=service, services_known=services is not None,
        flow_error=failed.get("services", ""), flow_url=site.settings.flow_url, catalog=catalog,
        automation_key=key_line, automation_key_problem=key_problem, inventory=inventory, form=form,
        vm_templates=vm_templates, service_template_docs=documents, acl_rules=rules,
        repo=repo_facts, site_verdict=verdict, input_checks=input_checks, cloud_login=login, notes=tuple(notes),
        naming=site.naming, site_record_problem=site_record_problem(site.settings), objectstore_vm=objectstore,
        trial=trial, route_manager=route_manager,
    )


async def _objectstore_vm(site: "SiteConnection", service: Service | None, notes: list[str]) -> VmDetail | None:
    """The object store role's first VM, read whole (its disk0 decides the objectstore-disk step)."""
    role = service.role(site.naming.role_objectstore) if service is not None else None
    if role is None or not role.vm_ids:
        return None
    return await _guard("the object store VM", site.cloud.vm_info(role.vm_ids[0]), notes)


async def _none() -> None:
    return None
