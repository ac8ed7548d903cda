"""The toolkit's service template and its input form, and the toolkit VMs a deployment left.

Shared by the form screen, the key view and `sitetk toolkit ...`:

- `find_toolkit_template(site, template_id=None)`: the template to instantiate (by ID, else the
  newest service template that declares the toolkit's inputs or carries its name);
- `load_form(site, template)`: the form built from the template's own input descriptions
  joined with the spec's meanings (`domain.toolkit_inputs.form_fields`), prefilled with what the
  console knows (the endpoints it is connected to, its user, the template's defaults), the
  site's networks to choose the default network from, and an instance name carrying the
  toolkit version;
- `ToolkitForm.problems(name, values, networks)`: every problem of the form (the domain's input
  checks plus the instance name, the networks and a warning for loopback endpoints);
- `toolkit_vms(site, record)` and `refresh_site_record(site, record)`: the recorded VMs, read
  back live by ID (never by name);
- `read_automation_key(site, record)`: the automation VM and the public key it published.

Instantiation and following live in `instantiate_toolkit`, the key grant in `grant_ssh_key`, the
record file in `site_record`.
"""

from __future__ import annotations

import ipaddress
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from tui.adapters.output_file import write_output_file
from tui.domain.attribute_file import installed_version_from_image_template
from tui.domain.bounded import BoundedInputError, read_text_file
from tui.domain.endpoints import frontend_host, is_loopback_host, url_host, vm_facing, with_host, without_credentials
from tui.domain.input_file import (
    InputFile,
    InputFileError,
    load_input_file,
    render_input_file,
    skeleton_input_file,
    suggested_instance_name,
)
from tui.domain.input_specs import NetworkSpec
from tui.domain.naming import NamingProfile
from tui.domain.networks import Vnet
from tui.domain.object_names import control_problem
from tui.domain.services import Service, ServiceTemplate
from tui.domain.severity import Severity
from tui.domain.site_record import RecordedRole, RecordedVm, SiteRecord
from tui.domain.ssh_keys import SshKeyError, SshPublicKey, parse_public_key
from tui.domain.toolkit_inputs import (
    Component,
    FormField,
    Problem,
    form_fields,
    input_name,
    meanings_by_name,
    missing_from_template,
    prefill,
    secret_names,
    validate_inputs,
)
from tui.domain.vm_detail import VmDetail
from tui.errors import AuthenticationFailed, SiteError
from tui.procedures.concurrent import gather

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: the pseudo input names `ToolkitForm.problems` uses for the instance name and the networks
NAME_FIELD = "name"
NETWORK_FIELD_PREFIX = "network:"

_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?\b")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


async def platform_version(site: "SiteConnection") -> str:
    """The cloud's version (from the start-up check when it ran, else asked now)."""
    if site.info is not None and site.info.version:
        return site.info.version
    return await site.cloud.version()


def network_field(name: str) -> str:
    return f"{NETWORK_FIELD_PREFIX}{name}"


def is_toolkit_template(template: ServiceTemplate, naming: NamingProfile) -> bool:
    """Declares one of the spec's inputs, or carries the toolkit appliance's name."""
    known = meanings_by_name(naming)
    return any(spec.name in known for spec in template.inputs) or template.name.startswith(naming.toolkit_appliance_name)


async def list_toolkit_templates(site: "SiteConnection") -> tuple[ServiceTemplate, ...]:
    """The site's service templates that look like the toolkit, newest (highest ID) first."""
    templates = await site.flow.list_service_templates()
    found = [t for t in templates if is_toolkit_template(t, site.naming)]
    return tuple(sorted(found, key=lambda t: t.id, reverse=True))


async def find_toolkit_template(site: "SiteConnection", template_id: int | None = None) -> ServiceTemplate:
    """The service template to instantiate; raises SiteError saying what to do when there is none."""
    if template_id is not None:
        try:
            return await site.flow.get_service_template(int(template_id))
        except SiteError as error:
            if error.code == 404:
                raise SiteError(f"No service template {template_id}",
                                "List them with `oneflow-template list` (or `sitetk toolkit inputs` without --template "
                                "picks the toolkit's).") from None
            raise
    found = await list_toolkit_templates(site)
    if not found:
        raise ToolkitTemplateMissing(
            "The toolkit's service template is not in the cloud",
            f"Download the {site.naming.toolkit_appliance_name} appliance first (operation 2: the console's Marketplace "
            "screen, or `sitetk market download KEY --datastore ID` with the key `sitetk market list` shows); it creates the service template this form instantiates.")
    return found[0]


class ToolkitTemplateMissing(SiteError):
    """No toolkit service template in the cloud: the appliance is not downloaded yet (the console's
    toolkit form names the keys to the Marketplace screen)."""


@dataclass(frozen=True)
class NetworkChoice:
    id: int
    name: str
    label: str


def network_choices(vnets: Sequence[Vnet]) -> tuple[NetworkChoice, ...]:
    """The site's networks, labelled with driver, bridge and address for the Select."""
    out: list[NetworkChoice] = []
    for vnet in sorted(vnets, key=lambda v: v.id):
        address = vnet.network_address
        mask = vnet.network_mask
        where = f"{address}/{_prefix(mask)}" if address and mask else address
        details = ", ".join(part for part in (vnet.vn_mad, vnet.bridge, where) if part)
        out.append(NetworkChoice(vnet.id, vnet.name, f"{vnet.id} {vnet.name}" + (f" ({details})" if details else "")))
    return tuple(out)


def _prefix(mask: str) -> str:
    try:
        return str(ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen)
    except ValueError:
        return mask


def default_network(spec: NetworkSpec, vnets: Sequence[Vnet]) -> str:
    """The network preselected for a template network: the ID its description names, else the
    site's only bridged (non-VXLAN) network, the spec's default network; "" when unsure."""
    ids = {str(v.id) for v in vnets}
    if spec.kind == "id" and spec.default_id in ids:
        return spec.default_id
    bridged = [v for v in vnets if v.vn_mad == "bridge"]
    return str(bridged[0].id) if len(bridged) == 1 else ""


def loopback_problem(value: str, frontend: str = "") -> str | None:
    """An error when an endpoint names a loopback address of the frontend: from the automation VM it
    is the VM itself. The fix names the address the VMs would use (`frontend`: the host of the
    platform's ONEGATE_ENDPOINT) with the endpoint's port and path."""
    host = url_host(value)
    if not host or not is_loopback_host(host):
        return None
    suggestion = with_host(value, frontend) if frontend else ""
    use = (f"use {suggestion} (the frontend's address the VMs reach, the host of ONEGATE_ENDPOINT)" if suggestion
           else "use the frontend's address on the default network (the host of ONEGATE_ENDPOINT)")
    return f"{host} is a loopback address of the frontend: seen from the automation VM it is the VM itself; {use}"


@dataclass(frozen=True)
class ToolkitForm:
    """Everything the form and the skeleton file need, read from one service template."""

    template: ServiceTemplate
    platform_version: str
    naming: NamingProfile
    fields: tuple[FormField, ...]
    #: starting values (template defaults and what the console knows); never secrets
    values: Mapping[str, str]
    networks: tuple[NetworkSpec, ...]
    choices: tuple[NetworkChoice, ...]
    #: network name -> preselected network id ("" none)
    network_defaults: Mapping[str, str]
    suggested_name: str
    #: spec inputs the template does not declare (an older or newer toolkit release)
    missing_inputs: tuple[str, ...] = ()
    secrets: frozenset[str] = field(default_factory=frozenset)
    #: the address VMs reach the frontend at (the host of ONEGATE_ENDPOINT), "" when unknown
    frontend_host: str = ""

    def field(self, name: str) -> FormField | None:
        return next((f for f in self.fields if f.name == name), None)

    def groups(self) -> tuple[tuple[str, tuple[FormField, ...]], ...]:
        """Fields by group heading, in form order."""
        out: dict[str, list[FormField]] = {}
        for f in self.fields:
            out.setdefault(f.group, []).append(f)
        return tuple((group, tuple(items)) for group, items in out.items())

    def skeleton(self) -> InputFile:
        """A file to fill in: the prefilled values, secrets empty, the preselected networks."""
        networks = tuple((spec.name, self.network_defaults.get(spec.name, "") or spec.default_id or "0")
                         for spec in self.networks) or (("Public", "0"),)
        return skeleton_input_file(self.fields, self.suggested_name, networks).with_values(
            {k: v for k, v in self.values.items() if k not in self.secrets}).for_platform(self.platform_version)

    def problems(self, name: str, values: Mapping[str, str], networks: Mapping[str, str]) -> tuple[Problem, ...]:
        """Every problem of the form, in form order: instance name, networks, then each input."""
        out: list[Problem] = []
        if not name.strip():
            out.append(Problem(NAME_FIELD, Severity.ERROR, "required: the name of the service instance"))
        elif "\n" in name or "\r" in name:
            out.append(Problem(NAME_FIELD, Severity.ERROR, "must be one line"))
        elif (control := control_problem(name)) is not None:
            out.append(Problem(NAME_FIELD, Severity.ERROR, control))
        known = {str(c.id) for c in self.choices}
        for spec in self.networks:
            chosen = networks.get(spec.name, "")
            if not chosen:
                out.append(Problem(network_field(spec.name), Severity.ERROR,
                                   f"choose the site's default network for {spec.name}"))
            elif self.choices and chosen not in known:
                out.append(Problem(network_field(spec.name), Severity.ERROR, f"there is no network {chosen}"))
        out.extend(validate_inputs(self.fields, values, self.naming))
        for suffix in ("cloud_endpoint", "cloud_flow_endpoint"):
            key = input_name(self.naming, Component.AUTOMATION, suffix)
            problem = loopback_problem(values.get(key, ""), self.frontend_host) if self.field(key) else None
            if problem and not any(p.name == key and p.severity is Severity.ERROR for p in out):
                out.append(Problem(key, Severity.ERROR, problem))
        return tuple(out)

    def unknown_inputs(self, values: Mapping[str, str]) -> tuple[str, ...]:
        """Names in `values` the template does not declare."""
        declared = {f.name for f in self.fields}
        return tuple(name for name in values if name not in declared)


async def toolkit_version(site: "SiteConnection", template: ServiceTemplate) -> str:
    """The toolkit's software version: from the template's name (`Site Toolkit v0.5.0`), else the
    marketplace attributes of its first role's image; "" when neither says."""
    for text in (template.name, template.description):
        match = _VERSION.search(text)
        if match:
            return match.group(0) if match.group(0).startswith("v") else f"v{match.group(0)}"
    role = next((r for r in template.roles if r.template_id is not None), None)
    if role is None or role.template_id is None:
        return ""
    try:
        vm_template = await site.cloud.template_info(role.template_id)
        if not vm_template.image_ids:
            return ""
        image = await site.cloud.image_info(vm_template.image_ids[0])
    except AuthenticationFailed:
        raise
    except SiteError:
        return ""
    tag = installed_version_from_image_template(image.attributes, site.naming)
    return tag.software_version if tag else ""


async def load_form(site: "SiteConnection", template: ServiceTemplate) -> ToolkitForm:
    """The form for `template` (see the module docstring)."""
    version, vnets, software, frontend = await gather(
        platform_version(site), site.cloud.list_vnets(), toolkit_version(site, template), _frontend_host(site))
    naming = site.naming
    fields = form_fields(naming, template.inputs)
    # the endpoints as the VMs reach them (the console's own when it is not loopback, else the
    # frontend's address); never the console's user: the automation has a cloud user of its own
    values = prefill(fields, naming, rpc_endpoint=vm_facing(site.settings.xmlrpc_url, frontend),
                     flow_endpoint=vm_facing(site.settings.flow_url, frontend))
    secrets = secret_names(naming, template.inputs)
    return ToolkitForm(
        template=template,
        platform_version=version,
        naming=naming,
        fields=fields,
        values={k: ("" if k in secrets else v) for k, v in values.items()},
        networks=template.networks,
        choices=network_choices(vnets),
        network_defaults={spec.name: default_network(spec, vnets) for spec in template.networks},
        suggested_name=suggested_instance_name(software, naming),
        missing_inputs=missing_from_template(naming, template.inputs),
        secrets=frozenset(f.name for f in fields if f.secret) | secrets,
        frontend_host=frontend,
    )


async def _frontend_host(site: "SiteConnection") -> str:
    """The address VMs reach the frontend at: the host of ONEGATE_ENDPOINT ("" unknown)."""
    try:
        return frontend_host((await site.cloud.system_config()).onegate_endpoint)
    except SiteError:
        return ""


# -- the VMs a deployment left -----------------------------------------------------------------


@dataclass(frozen=True)
class ToolkitVm:
    """One recorded VM, read back live by its ID."""

    role: str
    vm_id: int
    name: str
    #: the platform CLI's short state (`runn`, `pend`, ...) or "gone" when the VM no longer exists
    state: str
    status: str
    host: str
    ips: tuple[str, ...]
    ready: bool

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "vm_id": self.vm_id, "name": self.name, "state": self.state,
                "status": self.status, "host": self.host, "ips": list(self.ips), "ready": self.ready}


async def _vm_or_none(site: "SiteConnection", vm_id: int) -> VmDetail | None:
    try:
        return await site.cloud.vm_info(vm_id)
    except SiteError as error:
        if error.retryable or isinstance(error, AuthenticationFailed):
            raise
        return None


async def toolkit_vms(site: "SiteConnection", record: SiteRecord) -> tuple[ToolkitVm, ...]:
    """Every VM of the record with its live state, host and addresses (by VM ID)."""
    pairs = [(role.name, vm) for role in record.roles for vm in role.vms]
    details = await gather(*(_vm_or_none(site, vm.vm_id) for _, vm in pairs))
    out: list[ToolkitVm] = []
    for (role, vm), detail in zip(pairs, details, strict=True):
        if detail is None:
            out.append(ToolkitVm(role, vm.vm_id, vm.name, "gone", "no such VM", "", vm.ips, False))
            continue
        summary = detail.summary
        out.append(ToolkitVm(role, vm.vm_id, summary.name, summary.state_name, summary.status, summary.host,
                             summary.ips or vm.ips, detail.ready))
    return tuple(out)


async def recorded_roles(site: "SiteConnection", service: Service) -> tuple[RecordedRole, ...]:
    """Each role's VMs as the service's role nodes list them, names and addresses read by VM ID."""
    ids = [node.vm_id for role in service.roles for node in role.nodes]
    details = dict(zip(ids, await gather(*(_vm_or_none(site, i) for i in ids)), strict=True))
    roles: list[RecordedRole] = []
    for role in service.roles:
        vms: list[RecordedVm] = []
        for node in role.nodes:
            detail = details.get(node.vm_id)
            name = detail.name if detail is not None else node.vm_name
            ips = detail.summary.ips if detail is not None else ()
            vms.append(RecordedVm(node.vm_id, name, tuple(ips)))
        roles.append(RecordedRole(role.name, tuple(vms), role.state_name))
    return tuple(roles)


async def refresh_site_record(site: "SiteConnection", record: SiteRecord) -> SiteRecord:
    """The record with the service's current state and role VMs (the record itself is not saved)."""
    try:
        service = await site.flow.get_service(record.service_id)
    except SiteError as error:
        if error.code == 404:
            raise SiteError(f"Service {record.service_id} no longer exists",
                            f"The recorded toolkit deployment {record.service_name!r} was deleted from the cloud. "
                            "Deploy the toolkit again (Toolkit screen or `sitetk toolkit deploy`).") from None
        raise
    return record.with_roles(await recorded_roles(site, service), service.state_name, utc_now())


def record_for_service(site: "SiteConnection", service: Service, template_id: int, template_name: str, version: str,
                       cloud_username: str, created: str | None = None) -> SiteRecord:
    """A new record for a service just created (roles without VMs until they are deployed)."""
    networks: list[tuple[str, str]] = []
    for item in service.networks_values:
        for name, target in item.items():
            if isinstance(target, Mapping) and "id" in target:
                networks.append((str(name), str(target["id"])))
    return SiteRecord(
        endpoint=without_credentials(site.settings.xmlrpc_url),
        service_id=service.id,
        service_name=service.name,
        template_id=template_id,
        template_name=template_name,
        platform_version=version,
        created=created or utc_now(),
        updated=created or utc_now(),
        state=service.state_name,
        roles=tuple(RecordedRole(r.name, tuple(RecordedVm(n.vm_id, n.vm_name) for n in r.nodes), r.state_name)
                    for r in service.roles),
        networks=tuple(networks),
        cloud_username=cloud_username,
        automation_role=site.naming.role_automation,
    )


# -- the automation VM's key -------------------------------------------------------------------


@dataclass(frozen=True)
class AutomationKey:
    """The automation VM and what it published under the naming profile's key attribute."""

    vm_id: int
    vm_name: str
    vm_state: str
    #: the attribute's raw value ("" not published yet)
    published: str
    key: SshPublicKey | None
    #: why the published value is not a usable key ("" when it is, or when nothing is published)
    problem: str = ""


async def read_automation_key(site: "SiteConnection", record: SiteRecord) -> AutomationKey:
    """Read the automation VM (by the recorded ID) and check what it published."""
    vm = record.automation_vm
    if vm is None:
        raise SiteError("No automation VM recorded yet",
                        f"Service {record.service_id} has no VM in role {record.automation_role!r} yet: wait for the "
                        "deployment to create it (Toolkit deployment view or `sitetk toolkit deploy --wait`).")
    detail = await site.cloud.vm_info(vm.vm_id)
    attribute = site.naming.automation_key_attribute
    published = detail.user_template.get(attribute).strip()
    if not published:
        return AutomationKey(vm.vm_id, detail.name, detail.state_name, "", None)
    try:
        key = parse_public_key(published)
    except SshKeyError as exc:
        return AutomationKey(vm.vm_id, detail.name, detail.state_name, published, None,
                             f"VM {vm.vm_id} published {attribute} but it is not an SSH public key: {exc}")
    return AutomationKey(vm.vm_id, detail.name, detail.state_name, published, key)


def cloud_username_of(form_values: Mapping[str, str], naming: NamingProfile) -> str:
    return form_values.get(input_name(naming, Component.AUTOMATION, "cloud_username"), "").strip()


# -- the input file on disk --------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedInputFile:
    file: InputFile
    path: Path
    #: things worth fixing that do not stop the load (a readable-by-others file holding secrets)
    warnings: tuple[str, ...] = ()


def read_input_file(path: Path | str, secret_inputs: frozenset[str] = frozenset()) -> LoadedInputFile:
    """Read and shape-check an input file; SiteError (with line and column) when it is malformed."""
    target = Path(path).expanduser()
    try:
        text = read_text_file(target, str(target))
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        raise SiteError(f"No input file {target}", "Check the path; `sitetk toolkit inputs` writes a skeleton.") from None
    except BoundedInputError as exc:
        raise SiteError(f"{target.name} is not a valid input file", f"{exc.message}.") from None
    except OSError as exc:
        raise SiteError(f"Cannot read {target}", str(getattr(exc, "strerror", None) or exc)) from None
    try:
        file = load_input_file(text)
    except InputFileError as exc:
        raise SiteError(f"{target.name} is not a valid input file", f"{target}: {exc}") from None
    warnings: list[str] = []
    held = [name for name, value in file.values if name in secret_inputs and value]
    if held and mode & 0o077:
        warnings.append(f"{target} holds {len(held)} secret(s) and is readable by others (mode {mode:04o}): "
                        f"run `chmod 600 {target}`")
    return LoadedInputFile(file, target, tuple(warnings))


def save_input_file(path: Path | str, file: InputFile, *, omit: frozenset[str] = frozenset(),
                    overwrite: bool = True) -> Path:
    """Write the file in the spec's shape, mode 0600, by the safe writer (an existing file or a
    symlink only with `overwrite`, replaced atomically); values named in `omit` left out."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise SiteError(f"{target} is a directory", "Give the path of the file to write.")
    return write_output_file(target, render_input_file(file, omit=omit), force=overwrite, secret=True)


def toolkit_service(services: tuple[Service, ...], naming: Any, wanted: Mapping[str, str] | None = None
                    ) -> Service | None:
    """The live toolkit deployment: the newest service not DONE with the toolkit's roles; with
    `wanted` (an input file's values), the newest one deployed with them first."""
    from tui.domain.deployed_inputs import input_differences
    from tui.procedures.toolkit.own_service import live_toolkits

    found = sorted(live_toolkits(services, naming), key=lambda s: (s.start_time, s.id), reverse=True)
    if wanted:
        same = [s for s in found if not input_differences(s.input_values, wanted, naming)]
        if same:
            return same[0]
    return found[0] if found else None


async def toolkit_deployed(site: "SiteConnection") -> bool:
    """Whether the site has a live toolkit service (the console's front door opens the checklist
    when it has none)."""
    return toolkit_service(await site.flow.list_services(), site.naming) is not None


async def site_branch(site: "SiteConnection") -> tuple[str, str]:
    """(branch, site directory) the live toolkit service names ("" each when none)."""
    naming = site.naming
    service = toolkit_service(tuple(await site.flow.list_services()), naming)
    values = service.input_values if service is not None else {}
    branch = str(values.get(naming.input_name(f"{naming.role_manager}_sites_branch"), "") or "")
    site_dir = str(values.get(naming.input_name(f"{naming.role_manager}_deployment_site"), "") or "")
    return branch, site_dir
