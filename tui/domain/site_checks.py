"""Checks of a site configuration: what is missing or wrong, as findings (error or warning).

- the spec's minimal component set (tn_bastion mandatory, tn_vxlan required, the recommended ones
  flagged); the identifiers are data (`MINIMAL_COMPONENT_SET`), and a site whose components carry
  other names maps them through the naming profile's extra settings (`component_<role>`);
- every site variable of each listed component present and set (given the library definitions);
- template, image, network and cluster IDs that exist in the cloud (given the sets of existing
  ids, so the checks stay pure);
- appliance IDs that are the component's appliance, not merely an object that exists
  (`tui.domain.appliance_identity`; given the facts, else the template's 0 flagged as unverified);
- values left from the sites repository's template (`TEMPLATE_PLACEHOLDERS`: the example public
  address, domain, gate address and name server, the fake admin key, `<...>` placeholders),
  errors or warnings by what they break;
- the trial-network guest MTU below the NIC MTU (VXLAN adds 50 to 54 bytes of headers);
- the shape of `site_s3_server` (its endpoint is the object store VM's address).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Iterator, Mapping, Sequence
from urllib.parse import urlsplit

from tui.domain.appliance_identity import ApplianceFacts, as_object_id, check_appliance_ids, unverified_appliance_ids
from tui.domain.components import ComponentDefinition
from tui.domain.findings import Finding
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.severity import Severity
from tui.domain.site_config import MISSING, SiteConfig, lookup
from tui.domain.ssh_keys import check_public_key

__all__ = ["Finding", "Severity", "CloudIds", "check_site_config", "check_placeholders", "TEMPLATE_PLACEHOLDERS"]

#: bytes of headers a VXLAN encapsulation adds (50 over IPv4, up to 54 with a VLAN tag)
VXLAN_OVERHEAD = 50

_HOSTNAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9\-]{0,61}[A-Za-z0-9])?)*$")


class Requirement(str, Enum):
    MANDATORY = "mandatory"
    REQUIRED = "required"
    RECOMMENDED = "recommended"
    OPTIONAL = "optional"


@dataclass(frozen=True)
class ComponentRequirement:
    #: stable role name; `naming.extra["component_<role>"]` overrides the identifier
    role: str
    component: str
    requirement: Requirement
    purpose: str


#: The spec's minimal component set. The product-named components use neutral identifiers.
MINIMAL_COMPONENT_SET: tuple[ComponentRequirement, ...] = (
    ComponentRequirement("bastion", "tn_bastion", Requirement.MANDATORY, "the entry point of every trial network"),
    ComponentRequirement("vxlan", "tn_vxlan", Requirement.REQUIRED, "strictly required to deploy any trial network (only listed, no installation)"),
    ComponentRequirement("init", "tn_init", Requirement.OPTIONAL, "deploys tn_vxlan and tn_bastion in one shorter pipeline"),
    ComponentRequirement("vnet", "vnet", Requirement.RECOMMENDED, "treated like tn_vxlan: only listed, no installation"),
    ComponentRequirement("vm", "vm_kvm", Requirement.RECOMMENDED, "a simple VM that checks the site works"),
    ComponentRequirement("cluster", "cluster", Requirement.RECOMMENDED, "the container cluster other cluster-based components build on"),
    ComponentRequirement("core_net_cluster", "core_net_cluster", Requirement.RECOMMENDED, "the core network on the container cluster"),
    ComponentRequirement("core_net_vm", "core_net_vm", Requirement.RECOMMENDED, "the core network on a VM"),
    ComponentRequirement("ran_sim", "ran_sim", Requirement.RECOMMENDED, "the UE/RAN simulator on a VM"),
)


def minimal_component_set(naming: NamingProfile = DEFAULT_NAMING) -> tuple[ComponentRequirement, ...]:
    """The minimal set with identifiers renamed by the naming profile (`component_<role>` extras)."""
    result = []
    for item in MINIMAL_COMPONENT_SET:
        name = naming.extra.get(f"component_{item.role}", item.component)
        result.append(ComponentRequirement(item.role, name, item.requirement, item.purpose))
    return tuple(result)


@dataclass(frozen=True)
class CloudIds:
    """IDs that exist in the cloud; a None set means "not known", and its check is skipped."""

    templates: frozenset[int] | None = None
    images: frozenset[int] | None = None
    service_templates: frozenset[int] | None = None
    networks: frozenset[int] | None = None
    clusters: frozenset[int] | None = None


def check_site_config(
    config: SiteConfig,
    *,
    naming: NamingProfile = DEFAULT_NAMING,
    definitions: Mapping[str, ComponentDefinition] | None = None,
    cloud: CloudIds | None = None,
    nic_mtu: int | None = None,
    requirements: Sequence[ComponentRequirement] | None = None,
    appliances: ApplianceFacts | None = None,
) -> tuple[Finding, ...]:
    """Every check; errors first, each group in file order.

    `appliances` (what the cloud and marketplaces say about images and templates) turns on the
    check that each appliance ID is its component's appliance; without it the template's
    placeholder 0 is flagged as unverified.
    """
    findings: list[Finding] = []
    findings += check_component_map(config)
    findings += check_minimal_components(config, requirements if requirements is not None else minimal_component_set(naming))
    if definitions is not None:
        findings += check_component_variables(config, definitions)
    if cloud is not None:
        findings += check_cloud_ids(config, cloud)
    if definitions is not None:
        if appliances is not None:
            findings += check_appliance_ids(config, definitions, appliances, name_attribute=naming.appliance_name_attribute)
        else:
            findings += unverified_appliance_ids(config, definitions)
    findings += check_mtu(config, nic_mtu)
    findings += check_s3_server(config)
    findings += check_placeholders(config)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    return tuple(errors + [f for f in findings if f.severity is not Severity.ERROR])


def check_component_map(config: SiteConfig) -> list[Finding]:
    key = config.variables_key
    value = config.data.get(key, MISSING)
    if value is MISSING:
        return [Finding(Severity.ERROR, key, f"{key} is missing: it must list every component the site offers")]
    if not isinstance(value, Mapping) or not value:
        return [Finding(Severity.ERROR, key, f"{key} must be a mapping of component -> site variables (null when none)")]
    return []


def check_minimal_components(config: SiteConfig, requirements: Sequence[ComponentRequirement]) -> list[Finding]:
    listed = set(config.components())
    findings = []
    for item in requirements:
        if item.component in listed:
            continue
        path = f"{config.variables_key}.{item.component}"
        if item.requirement is Requirement.MANDATORY:
            findings.append(Finding(Severity.ERROR, path, f"{item.component} is mandatory ({item.purpose}); list it and set its site variables"))
        elif item.requirement is Requirement.REQUIRED:
            findings.append(Finding(Severity.ERROR, path, f"{item.component} is required ({item.purpose}); list it"))
        elif item.requirement is Requirement.RECOMMENDED:
            findings.append(Finding(Severity.WARNING, path, f"{item.component} is highly recommended ({item.purpose}) but not listed"))
    return findings


def check_component_variables(config: SiteConfig, definitions: Mapping[str, ComponentDefinition]) -> list[Finding]:
    findings = []
    for component in config.components():
        path = f"{config.variables_key}.{component}"
        definition = definitions.get(component)
        if definition is None:
            findings.append(Finding(Severity.WARNING, path, f"{component} is not in the component library; its site variables cannot be checked"))
            continue
        value = config.component_variables(component)
        leaves = definition.variable_paths()
        if not leaves:
            continue
        if not isinstance(value, Mapping):
            names = ", ".join(name for name, _ in leaves)
            findings.append(Finding(Severity.ERROR, path, f"{component} needs its site variables: {names}"))
            continue
        versions = definition.version_groups()
        if versions and not any(lookup(value, group) is not MISSING for group in versions):
            findings.append(Finding(Severity.ERROR, path, f"{component} lists no version: give the IDs of at least one of {', '.join(versions)} "
                                                          "(sitetk site enable fills the versions a marketplace offers)"))
            continue
        for leaf, description in leaves:
            group = leaf.split(".", 1)[0]
            if group in versions and lookup(value, group) is MISSING:
                continue  # a version the site does not offer
            found = lookup(value, leaf)
            about = f" ({description})" if description else ""
            if found is MISSING:
                findings.append(Finding(Severity.ERROR, f"{path}.{leaf}", f"missing site variable{about}"))
            elif found is None or found == "":
                findings.append(Finding(Severity.ERROR, f"{path}.{leaf}", f"site variable not set{about}"))
    return findings


def _id_leaves(node: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(path, key, value) of every scalar leaf below `node`."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            child = f"{path}.{key}"
            if isinstance(value, (Mapping, list)):
                yield from _id_leaves(value, child)
            else:
                yield child, str(key), value


_as_id = as_object_id


@dataclass(frozen=True)
class Placeholder:
    """An example value the sites repository's template carries, and what leaving it breaks."""

    path: str
    value: str
    severity: Severity
    meaning: str
    fix: str


#: Values of the sites repository's template (tui/sim/repos.py `template_core_yaml`, and the real
#: template's examples in shared/reference/site-repositories.md) that must not reach a site.
#: By meaning: an error breaks deployments (VMs report to another site's gate); a warning leaves
#: deployments working but breaks or misnames access to them (outside address, domain, name server).
TEMPLATE_PLACEHOLDERS: tuple[Placeholder, ...] = (
    Placeholder("site_public_ip", "12.34.56.78", Severity.WARNING,
                "trial networks are reached from outside through the site's public address (ports xx211-xx240 forward "
                "to .211-.240); deployments still work, outside access does not",
                "set the public address that forwards to the site"),
    Placeholder("site_domain", "trial.mysite.internal", Severity.WARNING,
                "trial-network VMs get names in the template's example domain",
                "set the site's own DNS domain"),
    Placeholder("site_onegate", "10.11.32.103", Severity.ERROR,
                "VMs report to the gate at this address; the template's example is another site's",
                "fill it from the platform's ONEGATE_ENDPOINT (ctrl+f, or sitetk site fill)"),
    Placeholder("site_dns", "10.11.28.107", Severity.WARNING,
                "trial networks would resolve names through the template's example name server",
                "set the site's name servers (the default is 8.8.8.8,1.1.1.1)"),
)

#: the marker in the template's admin key (`...IFakeTemplateKeyReplaceMe admin@site`)
FAKE_KEY_MARKERS = ("FakeTemplateKey", "ReplaceMe")


def _placeholder_leaves(node: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _placeholder_leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _placeholder_leaves(value, f"{path}.{index}")
    elif isinstance(node, str):
        yield path, node


_ANGLE = re.compile(r"<[^<>\n]{1,60}>")


def check_placeholders(config: SiteConfig) -> list[Finding]:
    """Values left as the template has them: what each is for, what was found, the fix."""
    findings: list[Finding] = []
    for item in TEMPLATE_PLACEHOLDERS:
        value = config.get(item.path)
        if isinstance(value, str) and value.strip() == item.value:
            findings.append(Finding(item.severity, item.path, (
                f"still the template's example {item.value!r}: {item.meaning}. Fix: {item.fix}.")))
    key = config.get("site_admin_ssh_public_key")
    if isinstance(key, str) and key.strip():
        if any(marker in key for marker in FAKE_KEY_MARKERS):
            findings.append(Finding(Severity.WARNING, "site_admin_ssh_public_key", (
                "still the template's fake key (…FakeTemplateKeyReplaceMe): deployments work, but the site's administrators "
                "cannot log in to trial-network VMs. Fix: put the administrators' public key (ssh-ed25519 AAAA… user@host).")))
        elif (problem := check_public_key(key.strip())) is not None:
            findings.append(Finding(Severity.ERROR, "site_admin_ssh_public_key", f"not a public SSH key: {problem}. Fix: paste one key line."))
    for path, value in _placeholder_leaves(config.data, ""):
        if path == "site_s3_server.endpoint":
            continue  # the endpoint check says it with its own fix
        match = _ANGLE.search(value)
        if match:
            findings.append(Finding(Severity.ERROR, path, f"{value!r} still holds the template placeholder {match.group(0)}: fill in the real value"))
    return findings


@dataclass(frozen=True)
class ExampleValue:
    """A value core.yaml still has from the template's examples, which only the operator can give:
    the site's public address, its domain, its name servers, the administrators' key."""

    path: str
    #: what the template holds (shortened for the key)
    value: str
    #: what to give instead
    ask: str


#: what the operator gives for each example value (the gate is filled from the cloud, not asked)
_ASKED = {
    "site_public_ip": "the public address that forwards to the site (ports xx211-xx240 to .211-.240)",
    "site_domain": "the site's DNS domain for trial-network VMs",
    "site_dns": "the site's name servers, comma separated",
    "site_admin_ssh_public_key": "the site administrators' public SSH key (one line: ssh-ed25519 AAAA… user@host)",
}


def example_values(config: SiteConfig) -> tuple[ExampleValue, ...]:
    """The template's example values still in `config` that the operator must replace (the
    warnings of `check_placeholders`: deployments work, access to them does not)."""
    out: list[ExampleValue] = []
    for item in TEMPLATE_PLACEHOLDERS:
        value = config.get(item.path)
        if item.path in _ASKED and isinstance(value, str) and value.strip() == item.value:
            out.append(ExampleValue(item.path, item.value, _ASKED[item.path]))
    key = config.get("site_admin_ssh_public_key")
    if isinstance(key, str) and any(marker in key for marker in FAKE_KEY_MARKERS):
        out.append(ExampleValue("site_admin_ssh_public_key", "…FakeTemplateKeyReplaceMe", _ASKED["site_admin_ssh_public_key"]))
    return tuple(out)


def check_example_answer(path: str, value: str) -> str | None:
    """Why `value` cannot replace the example at `path` (None: it can)."""
    import ipaddress

    text = value.strip()
    if not text:
        return "required"
    example = next((p.value for p in TEMPLATE_PLACEHOLDERS if p.path == path), None)
    if text == example or any(marker in text for marker in FAKE_KEY_MARKERS):
        return "that is the template's example"
    if path == "site_public_ip":
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            return "not an IP address"
        if address.is_loopback or address.is_unspecified or address.is_multicast:
            return "not an address the site can be reached at from outside"
        return None
    if path == "site_domain":
        labels = text.rstrip(".").split(".")
        if len(labels) < 2 or not all(re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", label) for label in labels):
            return "not a DNS domain (labels of letters, digits and -, separated by dots)"
        return None
    if path == "site_dns":
        for part in (p.strip() for p in text.split(",")):
            try:
                ipaddress.ip_address(part)
            except ValueError:
                return f"{part!r} is not an IP address (name servers are addresses, comma separated)"
        return None
    if path == "site_admin_ssh_public_key":
        problem = check_public_key(text)
        return f"not a public SSH key: {problem}" if problem else None
    return None


def check_cloud_ids(config: SiteConfig, cloud: CloudIds) -> list[Finding]:
    findings: list[Finding] = []
    key = config.variables_key
    for path, name, value in _id_leaves(config.data.get(key), key):
        lowered = name.lower()
        if lowered.endswith("service_template_id"):
            known, kind = cloud.service_templates, "service template"
        elif lowered.endswith("template_id"):
            known, kind = cloud.templates, "VM template"
        elif lowered.endswith("image_id"):
            known, kind = cloud.images, "image"
        else:
            continue
        findings += _check_id(path, value, known, kind)
    networks = config.data.get("site_networks_id")
    if isinstance(networks, Mapping):
        for name, value in networks.items():
            findings += _check_id(f"site_networks_id.{name}", value, cloud.networks, "virtual network")
    clusters = config.data.get("site_clusters")
    if isinstance(clusters, list):
        for index, value in enumerate(clusters):
            findings += _check_id(f"site_clusters.{index}", value, cloud.clusters, "cluster")
    return findings


def _check_id(path: str, value: Any, known: frozenset[int] | None, kind: str) -> list[Finding]:
    if value is None or value == "":
        return []  # reported as "not set" by the variable check
    number = _as_id(value)
    if number is None:
        return [Finding(Severity.ERROR, path, f"{value!r} is not a {kind} ID (a whole number)")]
    if known is not None and number not in known:
        return [Finding(Severity.ERROR, path, f"{kind} {number} does not exist in the cloud")]
    return []


def check_mtu(config: SiteConfig, nic_mtu: int | None = None) -> list[Finding]:
    """Guest MTU of the trial-network VXLAN below the NIC MTU (`site_vxlan_mtu` or the given one)."""
    findings: list[Finding] = []
    guest_raw = config.get("site_vxlan_guest_mtu")
    declared_raw = config.get("site_vxlan_mtu")
    guest = _as_id(guest_raw)
    declared = _as_id(declared_raw)
    if guest_raw is not None and guest is None:
        findings.append(Finding(Severity.ERROR, "site_vxlan_guest_mtu", f"{guest_raw!r} is not an MTU (a whole number of bytes)"))
    if declared_raw is not None and declared is None:
        findings.append(Finding(Severity.ERROR, "site_vxlan_mtu", f"{declared_raw!r} is not an MTU (a whole number of bytes)"))
    if nic_mtu is not None and declared is not None and declared > nic_mtu:
        findings.append(Finding(Severity.WARNING, "site_vxlan_mtu", f"site_vxlan_mtu {declared} is above the network's MTU {nic_mtu}"))
    limit = nic_mtu if nic_mtu is not None else declared
    source = "the network's MTU" if nic_mtu is not None else "site_vxlan_mtu"
    if guest is None or limit is None:
        return findings
    if guest >= limit:
        findings.append(
            Finding(Severity.ERROR, "site_vxlan_guest_mtu", f"guest MTU {guest} must be lower than {source} {limit} (VXLAN adds {VXLAN_OVERHEAD}+ bytes of headers); use {limit - VXLAN_OVERHEAD} or less")
        )
    elif limit - guest < VXLAN_OVERHEAD:
        findings.append(
            Finding(Severity.WARNING, "site_vxlan_guest_mtu", f"guest MTU {guest} leaves {limit - guest} bytes below {source} {limit}; VXLAN headers need {VXLAN_OVERHEAD}, so large packets will fragment (use {limit - VXLAN_OVERHEAD})")
        )
    return findings


def _valid_host(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_HOSTNAME.match(host))


def check_s3_server(config: SiteConfig) -> list[Finding]:
    value = config.data.get("site_s3_server", MISSING)
    if value is MISSING or value is None:
        return [Finding(Severity.ERROR, "site_s3_server", "site_s3_server is missing: fill it from the object store VM (its endpoint is that VM's address)")]
    if not isinstance(value, Mapping):
        return [Finding(Severity.ERROR, "site_s3_server", "site_s3_server must be a mapping with endpoint, bucket, region, ...")]
    findings = []
    endpoint = value.get("endpoint")
    if not endpoint or not isinstance(endpoint, str):
        findings.append(Finding(Severity.ERROR, "site_s3_server.endpoint", "endpoint is not set: use https://<object store VM address>:9000"))
    else:
        problem = _endpoint_problem(endpoint)
        if problem:
            findings.append(Finding(Severity.ERROR, "site_s3_server.endpoint", problem))
    bucket = value.get("bucket")
    if not bucket or not isinstance(bucket, str):
        findings.append(Finding(Severity.ERROR, "site_s3_server.bucket", "bucket is not set (the object store bucket for trial-network files)"))
    insecure = value.get("insecure", MISSING)
    if insecure is not MISSING and not isinstance(insecure, bool):
        findings.append(Finding(Severity.WARNING, "site_s3_server.insecure", f"insecure should be true or false, not {insecure!r}"))
    return findings


def _endpoint_problem(endpoint: str) -> str:
    if "<" in endpoint or ">" in endpoint:
        return f"{endpoint!r} is still the template placeholder: fill in the object store VM's address"
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError as exc:
        return f"{endpoint!r} is not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"{endpoint!r} must start with http:// or https://"
    if parts.username or parts.password:
        return "the endpoint must not carry credentials; keep the keys in their own fields"
    host = parts.hostname or ""
    if not host or not _valid_host(host):
        return f"{endpoint!r} has no valid host: use the object store VM's address"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return f"{endpoint!r} must be scheme://host:port only, without a path"
    if port is None:
        return f"{endpoint!r} has no port (the object store listens on 9000 by default)"
    return ""
