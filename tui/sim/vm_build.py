"""Building a new VM's template at allocation, as the platform does on one.template.instantiate.

DISK entries naming an image get the image's attributes (and fail on a LOCKED or ERROR image),
NIC entries naming a network get a lease (IP, MAC) from its address ranges, CONTEXT gets the
network values and `$VARIABLE` references filled in, and the attributes the platform does not
keep in VM/TEMPLATE move to USER_TEMPLATE. Failures raise `OneError` and release what was taken.
"""

from __future__ import annotations

import re

from tui.domain.error_codes import ALLOCATE
from tui.domain.one_states import ImageState
from tui.domain.template_text import Template, Vector, first, scalar
from tui.sim.leases import ip_at, lease, mac_at, release
from tui.sim.platform import INHERIT_VNET_ATTR, context_network_variables, inherit_datastore_attr, version_key
from tui.sim.rpc_errors import OneError
from tui.sim.state import SimImage, SimSite, SimVnet
from tui.sim.uuids import uuid4_text
from tui.sim.xml_render import split_vm_template

#: attributes the platform writes itself at allocation (a copied value is replaced)
_GENERATED = frozenset({"AUTOMATIC_REQUIREMENTS", "AUTOMATIC_NIC_REQUIREMENTS", "AUTOMATIC_DS_REQUIREMENTS",
                        "TEMPLATE_ID", "TM_MAD_SYSTEM", "VMID"})
_VARIABLE = re.compile(r"\$(?:([A-Z][A-Z0-9_]*)\[([A-Z0-9_]+)\]|\{?([A-Z][A-Z0-9_]*)\}?)")


def _alloc_error(detail: str) -> OneError:
    return OneError(ALLOCATE, f"Error allocating a new virtual machine. {detail}")


def _vget(vector: Vector, key: str, default: str = "") -> str:
    return next((v for k, v in vector if k == key), default)


def _find_image(site: SimSite, disk: Vector, uid: int) -> SimImage | None:
    image_id = _vget(disk, "IMAGE_ID")
    if image_id:
        try:
            return site.images.get(int(image_id))
        except ValueError:
            return None
    name = _vget(disk, "IMAGE")
    owner_name = _vget(disk, "IMAGE_UNAME")
    owner = site.user_by_name(owner_name) if owner_name else site.users.get(uid)
    try:
        owner_id = int(_vget(disk, "IMAGE_UID", str(owner.id if owner else uid)))
    except ValueError:
        return None
    return next((i for i in site.images.values() if i.name == name and i.uid == owner_id), None)


def _build_disk(site: SimSite, disk: Vector, disk_id: int, uid: int, target: str) -> tuple[Vector, SimImage | None]:
    if not (_vget(disk, "IMAGE_ID") or _vget(disk, "IMAGE")):
        volatile = [kv for kv in disk if kv[0] not in ("DISK_ID", "TARGET")]
        return volatile + [("DISK_ID", str(disk_id)), ("TARGET", _vget(disk, "TARGET", target))], None
    image = _find_image(site, disk, uid)
    if image is None:
        ref = _vget(disk, "IMAGE_ID") or _vget(disk, "IMAGE")
        raise _alloc_error(f"Image {ref} does not exist.")
    if image.state == ImageState.LOCKED:
        raise _alloc_error(f"Cannot acquire image {image.id}, it is locked")
    if image.state == ImageState.ERROR:
        raise _alloc_error(f"Cannot acquire image {image.id}, it is in an error state")
    if image.persistent and image.running_vms > 0:
        raise _alloc_error(f"Cannot acquire image {image.id}, it is persistent and already in use")
    ds = site.datastores.get(image.datastore_id)
    built: dict[str, str] = {
        "CLONE": "NO" if image.persistent else "YES",
        "CLONE_TARGET": "SYSTEM",
        "CLUSTER_ID": "0",
        "DATASTORE": ds.name if ds else "",
        "DATASTORE_ID": str(image.datastore_id),
        "DEV_PREFIX": "vd",
        "DISK_ID": str(disk_id),
        "DISK_SNAPSHOT_TOTAL_SIZE": "0",
        "DISK_TYPE": "FILE",
        "DRIVER": image.format or "qcow2",
        "FORMAT": image.format or "qcow2",
        "IMAGE": image.name,
        "IMAGE_ID": str(image.id),
        # the image's state once this VM holds it, USED or USED_PERS (a 7.0.2 frontend reads back 2)
        "IMAGE_STATE": str(int(ImageState.USED_PERS if image.persistent else ImageState.USED)),
        "LN_TARGET": "NONE",
        "ORIGINAL_SIZE": str(image.size_mb),
        "READONLY": "NO",
        "SAVE": "YES" if image.persistent else "NO",
        "SIZE": str(image.size_mb),
        "SOURCE": image.source,
        "TARGET": target,
        "TM_MAD": ds.tm_mad if ds else "shared",
        "TYPE": "FILE",
    }
    if ds is not None:  # the datastore's attributes a disk inherits (oned.conf INHERIT_DATASTORE_ATTR)
        for key in inherit_datastore_attr(site.config.one_version):
            value = scalar(ds.template, key, "")
            if value:
                built[key] = value
    for key, value in disk:  # what the template says (SIZE, TARGET, DEV_PREFIX, IMAGE_UNAME, ...) wins
        if key not in ("IMAGE_ID", "IMAGE", "IMAGE_UID", "DISK_ID"):
            built[key] = value
    return list(built.items()), image


def _find_vnet(site: SimSite, nic: Vector, uid: int) -> SimVnet | None:
    net_id = _vget(nic, "NETWORK_ID")
    if net_id:
        try:
            return site.vnets.get(int(net_id))
        except ValueError:
            return None
    name = _vget(nic, "NETWORK")
    owner_name = _vget(nic, "NETWORK_UNAME")
    matches = [n for n in site.vnets.values() if n.name == name]
    if owner_name:
        owner = site.user_by_name(owner_name)
        matches = [n for n in matches if owner and n.uid == owner.id]
    return matches[0] if matches else None


def _build_nic(site: SimSite, vm_id: int, nic: Vector, nic_id: int, uid: int) -> tuple[Vector, SimVnet]:
    vnet = _find_vnet(site, nic, uid)
    if vnet is None:
        ref = _vget(nic, "NETWORK_ID") or _vget(nic, "NETWORK") or "(none)"
        raise _alloc_error(f"Virtual network {ref} does not exist.")
    taken = lease(vnet, vm_id)
    if taken is None:
        raise _alloc_error(f"Cannot get IP/MAC lease from virtual network {vnet.id}.")
    ar, offset = taken
    # VirtualNetwork::nic_attribute (src/vnm/VirtualNetwork.cc 950-1070 at release-7.0.0): the network's
    # name, id, bridge, drivers and the lease, then the attributes of INHERIT_VNET_ATTR; no NETWORK_UNAME
    built: dict[str, str] = {
        "AR_ID": str(ar.ar_id),
        "BRIDGE": vnet.bridge,
        "BRIDGE_TYPE": "linux",
        "CLUSTER_ID": "0",
        "MAC": mac_at(ar, offset),
        "NAME": _vget(nic, "NAME", f"NIC{nic_id}"),
        "NETWORK": vnet.name,
        "NETWORK_ID": str(vnet.id),
        "NIC_ID": str(nic_id),
        "SECURITY_GROUPS": "0",
        "TARGET": f"one-{vm_id}-{nic_id}",
        "VN_MAD": vnet.vn_mad,
    }
    if ar.ip:
        built["IP"] = ip_at(ar, offset)
    for key in ("PHYDEV", "VLAN_ID", *INHERIT_VNET_ATTR):
        value = scalar(vnet.template, key, "")
        if value:
            built[key] = value
    for key, value in nic:
        if key not in ("NETWORK_ID", "NETWORK", "NIC_ID"):
            built.setdefault(key, value)
    return list(built.items()), vnet


def _substitute(value: str, lookup: dict[str, str], user_template: Template, nics: list[Vector]) -> str:
    """Fill `$NAME`, `$USER[ATTR]` and `$NETWORK[ATTR]`; references to nothing known are left as written."""

    def replace(match: re.Match[str]) -> str:
        outer, inner, plain = match.group(1), match.group(2), match.group(3)
        if outer == "USER":
            return scalar(user_template, inner, "")
        if outer == "NETWORK" and nics:
            return _vget(nics[0], inner, "")
        if plain and plain in lookup:
            return lookup[plain]
        return match.group(0)

    return _VARIABLE.sub(replace, value) if "$" in value else value


#: a CONTEXT network variable -> (the NIC attribute, its alternative, whether the address range and
#: the network are looked up when the NIC has none) (src/vm/VirtualMachineContext.cc 44-72, release-7.0.0)
_CONTEXT_SOURCES: dict[str, tuple[str, str, bool]] = {
    "IP": ("IP", "", False), "MAC": ("MAC", "", False), "MASK": ("NETWORK_MASK", "", True),
    "NETWORK": ("NETWORK_ADDRESS", "", True), "GATEWAY": ("GATEWAY", "", True), "DNS": ("DNS", "", True),
    "SEARCH_DOMAIN": ("SEARCH_DOMAIN", "", True), "MTU": ("GUEST_MTU", "", True), "METRIC": ("METRIC", "", True),
    "METHOD": ("METHOD", "", True), "VLAN_ID": ("VLAN_ID", "", True), "VROUTER_IP": ("VROUTER_IP", "", False),
    "VROUTER_MANAGEMENT": ("VROUTER_MANAGEMENT", "", False), "EXTERNAL": ("EXTERNAL", "", False),
    "ROUTES": ("ROUTES", "", True), "IP6": ("IP6_GLOBAL", "IP6", False), "IP6_ULA": ("IP6_ULA", "", False),
    "IP6_GATEWAY": ("GATEWAY6", "", True), "IP6_METRIC": ("IP6_METRIC", "", True),
    "IP6_METHOD": ("IP6_METHOD", "", True), "IP6_PREFIX_LENGTH": ("PREFIX_LENGTH", "", True),
    "VROUTER_IP6": ("VROUTER_IP6_GLOBAL", "VROUTER_IP6", False),
}


def _context(site: SimSite, context: Vector, lookup: dict[str, str], owner_template: Template,
             nics: list[Vector], disk_id: int) -> Vector:
    values = {k: _substitute(v, lookup, owner_template, nics) for k, v in context}
    if values.get("NETWORK", "").upper() == "YES":
        # every NIC gets every variable, empty when nothing sets it (parse_context_network,
        # VirtualMachineContext.cc 341-383): the NIC's value, else its address range's, else its network's
        for nic in nics:
            vnet = site.vnets.get(int(_vget(nic, "NETWORK_ID", "-1")))
            prefix = f"ETH{_vget(nic, 'NIC_ID', '0')}_"
            for name in context_network_variables(site.config.one_version):
                attr, alt, ar_lookup = _CONTEXT_SOURCES[name]
                value = _vget(nic, attr) or (_vget(nic, alt) if alt else "")
                if not value and ar_lookup and vnet is not None:
                    value = scalar(vnet.template, attr, "")
                values.setdefault(prefix + name, value)
    values["DISK_ID"] = str(disk_id)
    values.setdefault("TARGET", "hda")
    return list(values.items())


def build_vm_templates(site: SimSite, vm_id: int, attrs: Template, uid: int, gid: int,
                       template_id: int | None) -> tuple[Template, Template, list[SimImage]]:
    """(VM/TEMPLATE, USER_TEMPLATE, images used) for a new VM; raises OneError, leaving nothing taken."""
    system, user_attrs = split_vm_template([a for a in attrs if a[0] != "NAME"])
    images: list[SimImage] = []
    taken_vnets: list[SimVnet] = []
    result: Template = []
    disk_id = 0
    nic_id = 0
    nics: list[Vector] = []
    try:
        for name, value in system:
            if name == "DISK" and isinstance(value, list):
                target = "vd" + "abcdefghijklmnopqrstuvwxyz"[disk_id % 26]
                disk, image = _build_disk(site, value, disk_id, uid, target)
                disk_id += 1
                if image is not None:
                    images.append(image)
                result.append(("DISK", disk))
            elif name == "NIC" and isinstance(value, list):
                nic, vnet = _build_nic(site, vm_id, value, nic_id, uid)
                taken_vnets.append(vnet)
                nic_id += 1
                nics.append(nic)
                result.append(("NIC", nic))
            elif name != "CONTEXT" and name not in _GENERATED:
                result.append((name, value))
    except OneError:
        for vnet in taken_vnets:
            release(vnet, vm_id)
        raise
    owner = site.users.get(uid)
    group = site.groups.get(gid)
    lookup = {k: v for k, v in (*user_attrs, *result) if isinstance(v, str)}
    lookup.update({
        "VMID": str(vm_id), "UID": str(uid), "GID": str(gid),
        "UNAME": owner.name if owner else "", "GNAME": group.name if group else "",
        "TEMPLATE_ID": str(template_id if template_id is not None else -1),
    })
    context = first(system, "CONTEXT")
    if isinstance(context, list):
        result.append(("CONTEXT", _context(site, context, lookup, owner.template if owner else [], nics, disk_id)))
    result.extend([
        ("AUTOMATIC_REQUIREMENTS", _automatic_requirements(site, result)),
        ("TEMPLATE_ID", str(template_id if template_id is not None else -1)),
        ("VMID", str(vm_id)),
    ])
    if images or nics:
        # the cluster of the disks' datastores and the NICs' networks: cluster 0 on this site
        # (VirtualMachine::automatic_requirements, src/vm/VirtualMachine.cc 1770-1833 at release-7.0.0)
        result.append(("AUTOMATIC_DS_REQUIREMENTS", "(\"CLUSTERS/ID\" @> 0)"))
        result.append(("AUTOMATIC_NIC_REQUIREMENTS", "(\"CLUSTERS/ID\" @> 0)"))
    if nics:
        result.extend(_security_group_rules(nics))
    if not any(name == "OS" for name, _ in result):
        result.append(("OS", []))
    # every VM gets a UUID in OS (VirtualMachine::parse_os, src/vm/VirtualMachineParser.cc 221-227 at
    # release-6.10.0 and 7.0.0)
    result = [(name, [*value, ("UUID", uuid4_text(site.rng.getrandbits(128)))]
               if name == "OS" and isinstance(value, list) and not _vget(value, "UUID") else value)
              for name, value in result]
    return result, user_attrs, images


def _automatic_requirements(site: SimSite, template: Template) -> str:
    """AUTOMATIC_REQUIREMENTS (VirtualMachine::automatic_requirements, src/vm/VirtualMachine.cc): the
    clusters of the VM's disks and NICs first, then the pinning; 6.10 also excludes public clouds
    (release-6.10.0 1770-1795), 7.x no longer (release-7.0.0 1730-1750). Features of a CPU_MODEL follow."""
    clustered = any(name in ("DISK", "NIC") and isinstance(value, list) and _vget(value, "CLUSTER_ID")
                    for name, value in template)
    seven = version_key(site.config.one_version) >= (7, 0)
    text = "(CLUSTER_ID = 0) & " if clustered else ""
    text += "!(PIN_POLICY = PINNED)" if seven else "!(PUBLIC_CLOUD = YES) & !(PIN_POLICY = PINNED)"
    cpu_model = next((v for k, v in template if k == "CPU_MODEL" and isinstance(v, list)), [])
    for feature in [f for f in _vget(cpu_model, "FEATURES").split(",") if f]:
        text += f' & (KVM_CPU_FEATURES = "*{feature}*")'
    return text


def _security_group_rules(nics: list[Vector]) -> Template:
    """One SECURITY_GROUP_RULE per rule of the NICs' security groups. The only group here is the
    platform's default one (0 `default`: OUTBOUND then INBOUND, every protocol;
    src/secgroup/SecurityGroupPool.cc 34-41 at release-7.0.0, the same at 6.10.0)."""
    groups = {g.strip() for nic in nics for g in _vget(nic, "SECURITY_GROUPS").split(",") if g.strip()}
    rules: Template = []
    if "0" in groups:
        for rule_type in ("OUTBOUND", "INBOUND"):
            rules.append(("SECURITY_GROUP_RULE", [("PROTOCOL", "ALL"), ("RULE_TYPE", rule_type),
                                                  ("SECURITY_GROUP_ID", "0"), ("SECURITY_GROUP_NAME", "default")]))
    return rules
