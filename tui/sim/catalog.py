"""The embedded site's appliance catalogue: marketplace HTTP records and the cloud's marketplaces.

Two HTTP marketplaces are served: the site's own (path prefix "") and a community one (prefix
"/community", UUID record ids, lagging behind: it still carries older builds of some appliances,
under the same names). Every record has the fields of reference/marketplace.md; some leave
optional fields out and some carry fields the console does not know. A fresh cloud has the
bootstrap marketplaces 0 and 1 (disabled) and the site's own marketplace registered as 100; the
community one is served but not registered (`seed_catalog`). The cloud's apps come from
monitoring (`tui.sim.market_monitor`, with `tui.sim.market_driver` for what the `one` driver
prints per record), one app per name across marketplaces, as oned keeps them.

Stored records hold site-relative URLs (`/appliance/<id>/download`); the marketplace server makes
them absolute from its own address (`site.base_url`, appmarket-simple's APPMARKET_URL), since the
listening port may be known only after seeding.
Product words come from the site's naming profile.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from tui.domain.naming import NamingProfile
from tui.domain.one_states import MarketPlaceState
from tui.domain.permissions import Permissions
from tui.sim.market_monitor import monitor_all, start_monitoring
from tui.sim.state import SimMarketplace, SimSite
from tui.sim.uuids import uuid5_text

MAIN_PREFIX = ""
COMMUNITY_PREFIX = "/community"
PREFIXES = (MAIN_PREFIX, COMMUNITY_PREFIX)

TOOLKIT_RECORD_ID = "service_toolkit"
TOOLKIT_VERSION = "v0.5.0-20250403-1109"
TOOLKIT_OLD_VERSION = "v0.4.0-20250219-2235"

GIB = 1024**3
_UUID_NAMESPACE = "6c1f3f0e-8f4a-4d8e-9a55-3b1c2a7d9e10"


@dataclass(frozen=True)
class FileSpec:
    """One downloadable file of an image record."""

    name: str
    size: int
    type: str = "OS"
    dev_prefix: str = "vd"
    driver: str = "qcow2"


@dataclass(frozen=True)
class ApplianceSpec:
    """What one marketplace record says; `record()` renders it in the marketplace's JSON shape."""

    record_id: str
    name: str
    version: str
    kind: str  # IMAGE, VMTEMPLATE or SERVICE_TEMPLATE
    publisher: str
    short_description: str = ""
    description: str = ""
    opennebula_version: str = "6.10, 7.0"
    tags: tuple[str, ...] = ()
    files: tuple[FileSpec, ...] = ()
    #: the VM template (image and VM-template records) or service template body (services)
    template: dict[str, Any] | None = None
    disks: tuple[str, ...] = ()
    roles: tuple[tuple[str, str], ...] = ()
    os: tuple[str, str, str] | None = ("Ubuntu", "22.04", "x86_64")
    hypervisor: str | None = "KVM"
    logo: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()
    broken: bool = False

    @property
    def creation_time(self) -> int:
        return _epoch_of(self.version)


# -- record rendering ---------------------------------------------------------------------------
def _epoch_of(version: str) -> int:
    """The build time in a version string as epoch seconds (a fixed date when there is none)."""
    match = re.search(r"(?<![0-9])([0-9]{8})(?:-([0-9]{4}))?(?![0-9])", version)
    text = (match.group(1) + (match.group(2) or "0000")) if match else "202401010000"
    try:
        stamp = datetime.strptime(text, "%Y%m%d%H%M").replace(tzinfo=timezone.utc)
    except ValueError:
        stamp = datetime(2024, 1, 1, tzinfo=timezone.utc)
    return int(stamp.timestamp())


def _checksums(seed: str) -> dict[str, str]:
    return {"md5": hashlib.md5(seed.encode()).hexdigest(), "sha256": hashlib.sha256(seed.encode()).hexdigest()}


def file_path(prefix: str, record_id: str, index: int, name: str) -> str:
    """Site-relative URL of a record's file (served by the marketplace server)."""
    return f"{prefix}/appliance/{record_id}/files/{index}/{name}"


def record_from_spec(spec: ApplianceSpec, prefix: str) -> dict[str, Any]:
    """The marketplace JSON record (site-relative URLs, nulls omitted)."""
    record: dict[str, Any] = {
        "_id": {"$oid": spec.record_id},
        "links": {"download": {"href": f"{prefix}/appliance/{spec.record_id}/download"}},
        "name": spec.name,
        "version": spec.version,
        "publisher": spec.publisher,
    }
    if spec.description:
        record["description"] = spec.description
    if spec.short_description:
        record["short_description"] = spec.short_description
    if spec.tags:
        record["tags"] = list(spec.tags)
    if spec.kind == "IMAGE":
        record["format"] = spec.files[0].driver if spec.files else "qcow2"
    record["creation_time"] = spec.creation_time
    if spec.os is not None:
        record["os-id"], record["os-release"], record["os-arch"] = spec.os
    if spec.hypervisor:
        record["hypervisor"] = spec.hypervisor
    record["opennebula_version"] = spec.opennebula_version
    if spec.template is not None:
        record["opennebula_template"] = json.dumps(spec.template, indent=2)
    if spec.logo:
        record["logo"] = spec.logo
    if spec.kind != "IMAGE":
        record["type"] = spec.kind
    if spec.roles:
        record["roles"] = dict(spec.roles)
    if spec.disks:
        record["disks"] = list(spec.disks)
    if spec.files:
        record["files"] = [
            {
                "name": f.name,
                "url": file_path(prefix, spec.record_id, i, f.name),
                "type": f.type,
                "dev_prefix": f.dev_prefix,
                "driver": f.driver,
                "size": f.size,
                "checksum": _checksums(f"{spec.record_id}/{spec.version}/{f.name}"),
                # the legacy (OpenNebula) form adds md5 beside checksum (appmarket-simple
                # `src/lib/appliance/image.rb` `to_h`); the market driver reads this one
                "md5": _checksums(f"{spec.record_id}/{spec.version}/{f.name}")["md5"],
            }
            for i, f in enumerate(spec.files)
        ]
    for key, value in spec.extra:
        record[key] = value
    return record


# -- content ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolkitInput:
    """One user input of the toolkit service template."""

    name: str
    mandatory: bool
    type: str
    description: str
    params: str = ""
    default: str = ""

    def descriptor(self) -> str:
        """`M|type|description|params|default` as a service template carries it."""
        return "|".join(("M" if self.mandatory else "O", self.type, self.description, self.params, self.default))


def toolkit_inputs(naming: NamingProfile) -> tuple[ToolkitInput, ...]:
    """The 23 user inputs of the toolkit service, in the spec's order."""
    obj, aut, man, ts = naming.roles

    def i(suffix: str, mandatory: bool, type_: str, description: str, default: str = "") -> ToolkitInput:
        return ToolkitInput(naming.input_name(suffix), mandatory, type_, description, "", default)

    return (
        i(f"{obj}_hostname", True, "text", "Comma-separated host names or host patterns of the object store"),
        i(f"{obj}_opts", False, "text", "Extra object store server options", '--console-address ":9001"'),
        i(f"{obj}_tls_cert", False, "text64", "Object store TLS certificate (empty without TLS)"),
        i(f"{obj}_tls_key", False, "text64", "Object store TLS key (empty without TLS)"),
        i(f"{obj}_root_user", True, "text", "Object store admin user", "admin"),
        i(f"{obj}_root_password", True, "password", "Object store admin password"),
        i(f"{aut}_username", True, "text", "Login of the automation server web interface", "admin"),
        i(f"{aut}_password", True, "password", "Password of the automation server web interface"),
        i(f"{aut}_sites_token", True, "password", "Secret that encrypts the site branch of the sites repository"),
        i(f"{aut}_cloud_endpoint", True, "text", "Cloud RPC endpoint of the site (http://<host>:<port>/RPC2)"),
        i(f"{aut}_cloud_flow_endpoint", True, "text", "Cloud multi-VM service endpoint of the site (http://<host>:<port>)"),
        i(f"{aut}_cloud_username", True, "text", "Cloud user the automation server deploys trial networks with"),
        i(f"{aut}_cloud_password", True, "password", "Password of that cloud user"),
        i(f"{aut}_cloud_insecure", True, "boolean", "YES unless the cloud endpoints are TLS-protected", "YES"),
        i(f"{man}_admin_user", True, "text", "Manager admin user", "admin"),
        i(f"{man}_admin_password", True, "password", "Manager admin password"),
        i(f"{man}_sites_branch", True, "text", "Default branch of the sites repository for this site"),
        i(f"{man}_deployment_site", True, "text", "Directory of the sites repository holding core.yaml"),
        i(f"{ts}_user", True, "text", "Time-series database admin user", "admin"),
        i(f"{ts}_password", True, "password", "Time-series database admin password"),
        i(f"{ts}_org", True, "text", "Time-series organization name", "site"),
        i(f"{ts}_bucket", True, "text", "Default time-series bucket", "results"),
        i(f"{ts}_token", True, "password", "Time-series database access token"),
    )


def _vm_template(cpu: str, memory: str, *, logo: str = "", inputs: str = "") -> dict[str, Any]:
    """An appliance VM template in the marketplace's JSON form (values are strings)."""
    template: dict[str, Any] = {
        "CONTEXT": {
            "NETWORK": "YES",
            "SSH_PUBLIC_KEY": "$USER[SSH_PUBLIC_KEY]",
            "SET_HOSTNAME": "$NAME",
            "TOKEN": "YES",
            "REPORT_READY": "YES",
        },
        "CPU": cpu,
        "VCPU": cpu,
        "MEMORY": memory,
        "GRAPHICS": {"LISTEN": "0.0.0.0", "TYPE": "vnc"},
        "OS": {"ARCH": "x86_64"},
    }
    if logo:
        template["LOGO"] = logo
    if inputs:
        template["INPUTS_ORDER"] = inputs
    return template


def _dns_template() -> dict[str, Any]:
    """The DNS appliance's VM template: its context, inputs and their order as 6G-SANDBOX/
    marketplace-community appliances/dns/dns.yaml lines 34-60 give them."""
    template = _vm_template("2", "2048", inputs="ONEAPP_DNS_DOMAIN,ONEAPP_DNS_PASSWORD,ONEAPP_DNS_FORWARDERS")
    template["CONTEXT"] = {"NETWORK": "YES", "SET_HOSTNAME": "$NAME", "SSH_PUBLIC_KEY": "$USER[SSH_PUBLIC_KEY]",
                           "NETCFG_TYPE": "interfaces", "TOKEN": "YES",
                           "ONEAPP_DNS_PASSWORD": "$ONEAPP_DNS_PASSWORD",
                           "ONEAPP_DNS_FORWARDERS": "$ONEAPP_DNS_FORWARDERS",
                           "ONEAPP_DNS_DOMAIN": "$ONEAPP_DNS_DOMAIN"}
    template["USER_INPUTS"] = {
        "ONEAPP_DNS_PASSWORD": "O|password|ONEAPP_DNS_PASSWORD: Admin user password. If not provided, a new one "
                               "will be generated at instanciate time with `openssl rand -base64 32`.",
        "ONEAPP_DNS_FORWARDERS": "O|text|ONEAPP_DNS_FORWARDERS: Comma separated list of forwarders to be used by "
                                 "the DNS server.| |8.8.8.8,1.1.1.1",
        "ONEAPP_DNS_DOMAIN": "M|text|ONEAPP_DNS_DOMAIN: Domain name for creating the new zone.",
    }
    return template


def _route_manager_template() -> dict[str, Any]:
    """The route manager's VM template: its context as appliances/routemanager/routemanager.yaml lines
    31-49 give it (the token is a context variable, not a user input there)."""
    template = _vm_template("2", "2048")
    template["CONTEXT"] = {"NETWORK": "YES", "SET_HOSTNAME": "$NAME", "SSH_PUBLIC_KEY": "$USER[SSH_PUBLIC_KEY]",
                           "NETCFG_TYPE": "interfaces", "TOKEN": "YES",
                           "ONEAPP_ROUTEMANAGER_APITOKEN": "$ONEAPP_ROUTEMANAGER_APITOKEN"}
    return template


def toolkit_service_body(naming: NamingProfile, description: str = "") -> dict[str, Any]:
    """The toolkit's service template body as a public marketplace record carries it.

    Public service records (OpenNebula/marketplace `appliances/service/*.yaml`, e.g.
    `oneke/oneke-133-service-x86_64.yaml`) give each role `vm_template_contents` (template text)
    and none of `type`, `template_id` or `vm_template`: `onemarketapp export` adds `vm_template`
    and the platform's validation converts the body on 7.x (`tui.sim.flow_templates`). This
    record is listed for 6.10 and 7.0, so its inputs are `custom_attrs`, which 6.10 reads and 7.x
    converts to `user_inputs` (the records listed for 6.x only do the same).
    """
    obj, aut, man, ts = naming.roles
    parents = {obj: [], ts: [], aut: [obj], man: [aut, ts]}

    def role(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "cardinality": 1,
            "parents": parents[name],
            "min_vms": 1,
            "max_vms": 1,
            "vm_template_contents": 'NIC = [\n  NAME = "NIC0",\n  NETWORK_ID = "$Public" ]\n',
            "cooldown": 300,
            "elasticity_policies": [],
            "scheduled_policies": [],
        }

    return {
        "name": naming.toolkit_appliance_name,
        "deployment": "straight",
        "description": description or f"{naming.toolkit_appliance_name}: the tools to create and manage trial networks",
        "roles": [role(obj), role(aut), role(man), role(ts)],
        "networks": {"Public": "M|network|Public||id:"},
        "custom_attrs": {inp.name: inp.descriptor() for inp in toolkit_inputs(naming)},
        "ready_status_gate": True,
        "automatic_deletion": False,
    }


def _toolkit(naming: NamingProfile, version: str, opennebula_version: str, newest: bool) -> list[ApplianceSpec]:
    """The toolkit service record, its four VM-template records and its four image records."""
    name = naming.toolkit_appliance_name
    obj, aut, man, ts = naming.roles
    publisher = f"{name} maintainers"
    software = version.split("-", 1)[0]
    images = {
        aut: (f"{name} {aut} disk", (FileSpec(f"{aut}-{software}.qcow2", 6 * GIB),)),
        man: (f"{name} {man} disk", (FileSpec(f"{man}-{software}.qcow2", 5 * GIB),)),
        f"{obj}0": (f"{name} {obj} disk0", (FileSpec(f"{obj}-disk0-{software}.qcow2", 3 * GIB),)),
        f"{obj}1": (f"{name} {obj} disk1", (FileSpec(f"{obj}-disk1-{software}.qcow2", 20 * GIB, type="DATABLOCK"),)),
    }
    role_disks = {
        obj: (images[f"{obj}0"][0], images[f"{obj}1"][0]),
        aut: (images[aut][0],),
        man: (images[man][0],),
        # the time-series database ships in the manager's image
        ts: (images[man][0],),
    }
    sizes = {obj: ("2", "4096"), aut: ("2", "4096"), man: ("2", "8192"), ts: ("1", "2048")}
    changes = "Adds the time-series role." if newest else "First release with the four roles."
    specs = [
        ApplianceSpec(
            record_id=TOOLKIT_RECORD_ID,
            name=name,
            version=version,
            kind="SERVICE_TEMPLATE",
            publisher=publisher,
            short_description=f"{name}: object store, automation server, manager and time-series database",
            description=(
                f"# {name}\n\nOne multi-VM service with the tools to create and manage trial networks "
                f"within one site:\n\n* **{obj}**: S3-compatible object store\n* **{aut}**: automation "
                f"server\n* **{man}**: trial-network lifecycle manager\n* **{ts}**: time-series database\n\n"
                f"{changes}\n"
            ),
            opennebula_version=opennebula_version,
            tags=("toolkit", "service", software),
            template=toolkit_service_body(naming),
            roles=tuple((role, f"{name} {role}") for role in naming.roles),
            logo="/logos/toolkit.png",
        )
    ]
    for role in naming.roles:
        cpu, memory = sizes[role]
        specs.append(
            ApplianceSpec(
                record_id=f"{TOOLKIT_RECORD_ID}_{role}",
                name=f"{name} {role}",
                version=version,
                kind="VMTEMPLATE",
                publisher=publisher,
                short_description=f"VM template of the {role} role of {name}",
                description=f"VM template of the **{role}** role of {name}.",
                opennebula_version=opennebula_version,
                template=_vm_template(cpu, memory, logo="/logos/toolkit.png"),
                disks=role_disks[role],
            )
        )
    for key, (image_name, files) in images.items():
        specs.append(
            ApplianceSpec(
                record_id=f"{TOOLKIT_RECORD_ID}_{key}_image",
                name=image_name,
                version=version,
                kind="IMAGE",
                publisher=publisher,
                short_description=f"Disk image of {name} ({image_name.rsplit(' ', 2)[-2]})",
                opennebula_version=opennebula_version,
                files=files,
            )
        )
    return specs


def _image(
    record_id: str,
    name: str,
    version: str,
    size_gib: float,
    short: str,
    *,
    publisher: str,
    opennebula_version: str = "6.10, 7.0",
    tags: tuple[str, ...] = (),
    os: tuple[str, str, str] | None = ("Ubuntu", "22.04", "x86_64"),
    cpu: str = "1",
    memory: str = "2048",
    logo: str | None = None,
    extra: tuple[tuple[str, Any], ...] = (),
    broken: bool = False,
    with_template: bool = True,
    description: str | None = None,
    template: dict[str, Any] | None = None,
) -> ApplianceSpec:
    file_name = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".qcow2"
    return ApplianceSpec(
        record_id=record_id,
        name=name,
        version=version,
        kind="IMAGE",
        publisher=publisher,
        short_description=short,
        description=description if description is not None else f"# {name}\n\n{short}.\n",
        opennebula_version=opennebula_version,
        tags=tags,
        files=(FileSpec(file_name, int(size_gib * GIB)),),
        template=(template or _vm_template(cpu, memory)) if with_template else None,
        os=os,
        logo=logo,
        extra=extra,
        broken=broken,
    )


def main_catalog(naming: NamingProfile, toolkit_version: str = TOOLKIT_VERSION) -> list[ApplianceSpec]:
    """The site's own marketplace: newest builds (the toolkit at `toolkit_version`)."""
    pub = "Site operations team"
    return _toolkit(naming, toolkit_version, "6.10, 7.0", newest=toolkit_version == TOOLKIT_VERSION) + [
        _image("service_dns", "DNS Server", "v1.1.0-20250520-0931", 2, "DNS server for deployed trial networks",
               publisher=pub, tags=("dns", "network"), logo="/logos/dns.png", template=_dns_template()),
        _image("service_route_manager", "Route Manager API", "v1.0.0-20250305-1412", 1.5,
               "A VM exposing a REST API to manage its static routes",
               publisher=pub, os=None, extra=(("downloads", 412), ("maintainer_notes", "static routes only")),
               template=_route_manager_template()),
        _image("service_bastion", "Bastion", "v1.3.0-20250612-1045", 2.5, "Entry point of every trial network",
               publisher=pub, tags=("bastion", "vpn"), logo="/logos/bastion.png"),
        _image("service_vm_kvm", "Ubuntu Base VM", "v1.2.0-20250301-0900", 2, "Simple Ubuntu VM to check the site",
               publisher=pub, tags=("ubuntu",), os=("Ubuntu", "24.04", "x86_64")),
        _image("service_ueransim", "UE and RAN Simulator", "v4.3.0.23-20250919-1159", 3,
               "User equipment and radio access network simulator on a VM", publisher=pub, tags=("ran", "ue")),
        _image("service_core_vm", "Core Network VM", "v2.7.2-20250702-1130", 4, "Mobile core network on one VM",
               publisher=pub, tags=("core",), cpu="2", memory="4096"),
        _image("service_container_cluster", "Container Cluster", "1.31.3-6.10.0-3-20251118-1327", 3,
               "Base image of the container cluster that cluster-based components run on",
               publisher=pub, tags=("cluster",), cpu="2", memory="4096"),
        _image("service_vpn_gateway", "VPN Gateway", "v0.8.2-20240611-0815", 1, "VPN gateway for remote trial-network access",
               publisher=pub, opennebula_version="6.6, 6.8, 6.10", tags=("vpn",)),
        _image("service_traffic_generator", "Traffic Generator", "v0.9.1-20250110-1200", 2.5,
               "Traffic generator (its image file is missing from the storage)", publisher=pub, broken=True,
               extra=(("status", "unmaintained"),)),
    ]


def community_catalog(naming: NamingProfile) -> list[ApplianceSpec]:
    """The community marketplace: UUID ids for its own records, older builds of some appliances."""

    def uid(name: str) -> str:
        return uuid5_text(_UUID_NAMESPACE, name)

    pub = "Community"
    return _toolkit(naming, TOOLKIT_OLD_VERSION, "6.8, 6.10, 7.0", newest=False) + [
        _image("service_dns", "DNS Server", "v1.0.0-20250110-1005", 2, "DNS server for deployed trial networks",
               publisher="Site operations team", tags=("dns",)),
        _image("service_container_cluster", "Container Cluster", "v1.29", 3, "Container cluster base image",
               publisher="Site operations team", opennebula_version="6.8, 6.10"),
        _image(uid("ubuntu-24.04"), "Ubuntu 24.04", "7.4.0-0-20260714", 0.6, "Ubuntu 24.04 LTS cloud image",
               publisher=pub, opennebula_version="7.0", tags=("ubuntu", "linux"), os=("Ubuntu", "24.04", "x86_64"),
               logo="/logos/ubuntu.png"),
        _image(uid("alpine-3.21"), "Alpine Linux 3.21", "6.10.0-3-20250115", 0.25, "",
               publisher=pub, opennebula_version="6.10", os=("Alpine", "", "x86_64"), description="",
               extra=(("import_id", "alpine321"), ("sha256sum", "see files"))),
        _image(uid("debian-12-arm"), "Debian 12 (arm64)", "6.10.0-2-20241210", 0.4, "Debian 12 cloud image for arm64",
               publisher=pub, opennebula_version="6.10, 7.0", os=("Debian", "12", "aarch64"), with_template=False),
    ]


# -- cloud side (MARKETPLACE and MARKETPLACEAPP objects) -------------------------------------------
def marketplace_names(naming: NamingProfile) -> dict[str, str]:
    """The name a cloud gives each HTTP marketplace when it registers it (by path prefix)."""
    return {MAIN_PREFIX: f"{naming.toolkit_appliance_name} Marketplace", COMMUNITY_PREFIX: "Community Marketplace"}


_DESCRIPTIONS = {MAIN_PREFIX: "Appliances of the site toolkit and its components",
                 COMMUNITY_PREFIX: "Community appliances"}
#: the bootstrap marketplaces' permissions (`set_permissions(1, 1, 1, 1, 0, 0, 1, 0, 0)`)
_BOOTSTRAP_PERMS = Permissions(1, 1, 1, 1, 0, 0, 1, 0, 0)


def bootstrap_marketplaces(site: SimSite) -> None:
    """The marketplaces a fresh oned creates (`src/market/MarketPlacePool.cc` lines 36-103 at
    release-7.0.2, 36-106 at 6.10.0, the same at 7.4.0): 0 "OpenNebula Public" (MARKET_MAD=one, no
    ENDPOINT: the driver's built-in public URL) and 1 "Linux Containers" (DISABLED in its bootstrap
    template), then user marketplaces from ID 100 (`set_lastOID(99)`). The source creates 0
    ENABLED; this site's operator disabled it (`onemarket disable 0`), as a frontend that must stay
    on loopback does (reference: real-platform.md, the real 6.10.5, 7.0.2 and 7.4.0 frontends
    had both disabled)."""
    site.marketplaces[0] = SimMarketplace(0, "OpenNebula Public", "one", "", [
        ("DESCRIPTION", "OpenNebula Systems MarketPlace"), ("MARKET_MAD", "one")],
        perms=_BOOTSTRAP_PERMS, state=MarketPlaceState.DISABLED)
    site.marketplaces[1] = SimMarketplace(1, "Linux Containers", "linuxcontainers", "", [
        ("DESCRIPTION", "MarketPlace for the public image server fo LXC & LXD hosted at linuxcontainers.org"),
        ("MARKET_MAD", "linuxcontainers")], perms=_BOOTSTRAP_PERMS, state=MarketPlaceState.DISABLED)
    site.reserve_ids("marketplace", 99)


def register_marketplace(site: SimSite, prefix: str) -> SimMarketplace:
    """Register one of this site's HTTP marketplaces in the cloud, as `onemarket create` with
    MARKET_MAD=one and an ENDPOINT ending in a slash (what every driver version reads right);
    its apps come with the next monitoring (`tui.sim.market_monitor`)."""
    endpoint = f"{site.base_url.rstrip('/')}{prefix}/"
    market = SimMarketplace(site.next_id("marketplace"), marketplace_names(site.naming)[prefix], "one", endpoint, [
        ("DESCRIPTION", _DESCRIPTIONS[prefix]), ("ENDPOINT", endpoint), ("MARKET_MAD", "one")])
    site.marketplaces[market.id] = market
    return market


def seed_records(site: SimSite, toolkit_version: str = TOOLKIT_VERSION) -> None:
    """What both HTTP marketplaces serve; the site's own lists the toolkit at `toolkit_version`
    (TOOLKIT_VERSION, or TOOLKIT_OLD_VERSION: the release before)."""
    specs = {MAIN_PREFIX: main_catalog(site.naming, toolkit_version), COMMUNITY_PREFIX: community_catalog(site.naming)}
    with site.lock:
        for prefix, found in specs.items():
            site.market_records[prefix] = [record_from_spec(spec, prefix) for spec in found]


def seed_catalog(site: SimSite) -> None:
    """A fresh cloud's marketplaces: the bootstrap ones (0 and 1, disabled), the site's own
    marketplace registered as 100 and monitored once, then every MONITORING_INTERVAL_MARKET.

    The community marketplace is served over HTTP but not registered: the cloud holds one app
    per name (`tui.sim.market_monitor`), and the community lists older builds under the names of
    the site's own appliances. Register it (`register_marketplace(site, COMMUNITY_PREFIX)`) to see
    what the platform does then."""
    with site.lock:
        seed_records(site)
        if not site.marketplaces:
            bootstrap_marketplaces(site)
            register_marketplace(site, MAIN_PREFIX)
        monitor_all(site)
        start_monitoring(site)


def bind_base_url(site: SimSite) -> None:
    """Make the site's marketplaces' ENDPOINTs absolute once `site.base_url` is known (a site
    seeded before its server listens), and monitor them again: the apps' SOURCE and LINK follow."""
    if not site.base_url:
        return
    base = site.base_url.rstrip("/")
    with site.lock:
        for market in site.marketplaces.values():
            if not market.endpoint.startswith("/"):
                continue
            market.endpoint = base + market.endpoint
            market.template = [a for a in market.template if a[0] != "ENDPOINT"] + [("ENDPOINT", market.endpoint)]
        monitor_all(site)


# -- look-ups used by the marketplace server and the deployed scenario ----------------------------
def find_record(site: SimSite, prefix: str, *, record_id: str = "", name: str = "") -> dict[str, Any] | None:
    """A stored record of the marketplace at `prefix`, by id or by name."""
    for record in site.market_records.get(prefix, []):
        if record_id and record.get("_id", {}).get("$oid") == record_id:
            return record
        if name and record.get("name") == name:
            return record
    return None


def absolute(record: dict[str, Any], base: str) -> dict[str, Any]:
    """A copy of a stored record whose site-relative URLs start with `base`."""
    out = copy.deepcopy(record)
    href = out.get("links", {}).get("download", {}).get("href")
    if isinstance(href, str) and href.startswith("/"):
        out["links"]["download"]["href"] = base + href
    for item in out.get("files", []) if isinstance(out.get("files"), list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str) and item["url"].startswith("/"):
            item["url"] = base + item["url"]
    return out


def is_broken(site: SimSite, prefix: str, record_id: str) -> bool:
    """Whether the record's file is missing from the storage (its download fails)."""
    return record_id in _broken_ids(site.naming, prefix)


@functools.lru_cache(maxsize=16)
def _broken_ids(naming: NamingProfile, prefix: str) -> frozenset[str]:
    specs = main_catalog(naming) if prefix == MAIN_PREFIX else community_catalog(naming)
    return frozenset(spec.record_id for spec in specs if spec.broken)
