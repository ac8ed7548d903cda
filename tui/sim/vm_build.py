"""Building a new VM's template at allocation, as the platform does on one.template.instantiate.

DISK entries naming an image get the image's attributes (and fail on a LOCKED or ERROR image),
NIC entries naming a network get a lease (IP, MAC) from its address ranges, CONTEXT gets the
network values and `$VARIABLE` references filled in, and the attributes the platform does not
keep in VM/TEMPLATE move to USER_TEMPLATE. Failures raise `OneError` and release what was taken.
"""

from __future__ import annotations

import re

from tui.domain.error_codes import ALLOCATE
from tui.domain.template_text import Template, Vector, first, scalar
from tui.sim.leases import ip_at, lease, mac_at, release
from tui.sim.rpc_errors import OneError
from tui.sim.state import SimImage, SimSite, SimVnet
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
    if image.state == 4:
        raise _alloc_error(f"Cannot acquire image {image.id}, it is locked")
    if image.state == 5:
        raise _alloc_error(f"Cannot acquire image {image.id}, it is in an error state")
    if image.persistent and image.running_vms > 0:
        raise _alloc_error(f"Cannot acquire image {image.id}, it is persistent and already in use")
    ds = site.datastores.get(image.datastore_id)
    owner = site.users.get(image.uid)
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
        "IMAGE_STATE": str(image.state),
        "IMAGE_UNAME": owner.name if owner else "",
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
    for key, value in disk:  # what the template says (SIZE, TARGET, DEV_PREFIX, ...) wins
        if key not in ("IMAGE_ID", "IMAGE", "IMAGE_UNAME", "IMAGE_UID", "DISK_ID"):
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
    owner = site.users.get(vnet.uid)
    built: dict[str, str] = {
        "AR_ID": str(ar.ar_id),
        "BRIDGE": vnet.bridge,
        "BRIDGE_TYPE": "linux",
        "CLUSTER_ID": "0",
        "MAC": mac_at(ar, offset),
        "NAME": _vget(nic, "NAME", f"NIC{nic_id}"),
        "NETWORK": vnet.name,
        "NETWORK_ID": str(vnet.id),
        "NETWORK_UNAME": owner.name if owner else "",
        "NIC_ID": str(nic_id),
        "SECURITY_GROUPS": "0",
        "TARGET": f"one-{vm_id}-{nic_id}",
        "VN_MAD": vnet.vn_mad,
    }
    if ar.ip:
        built["IP"] = ip_at(ar, offset)
    for key in ("MTU", "GUEST_MTU", "PHYDEV", "VLAN_ID"):
        value = scalar(vnet.template, key, "")
        if value:
            built[key] = value
    for key, value in nic:
        if key not in ("NETWORK_ID", "NETWORK", "NETWORK_UNAME", "NIC_ID"):
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


def _context(site: SimSite, context: Vector, lookup: dict[str, str], owner_template: Template,
             nics: list[Vector], disk_id: int) -> Vector:
    values = {k: _substitute(v, lookup, owner_template, nics) for k, v in context}
    if values.get("NETWORK", "").upper() == "YES":
        for index, nic in enumerate(nics):
            vnet = site.vnets.get(int(_vget(nic, "NETWORK_ID", "-1")))
            prefix = f"ETH{index}_"
            values.setdefault(prefix + "IP", _vget(nic, "IP"))
            values.setdefault(prefix + "MAC", _vget(nic, "MAC"))
            if vnet is not None:
                for key in ("GATEWAY", "DNS", "NETWORK_MASK", "SEARCH_DOMAIN"):
                    found = scalar(vnet.template, key, "")
                    if found:
                        values.setdefault(prefix + ("MASK" if key == "NETWORK_MASK" else key), found)
                mtu = scalar(vnet.template, "GUEST_MTU", "") or scalar(vnet.template, "MTU", "")
                if mtu:
                    values.setdefault(prefix + "MTU", mtu)
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
        ("AUTOMATIC_REQUIREMENTS", "!(PUBLIC_CLOUD = YES) & !(PIN_POLICY = PINNED)"),
        ("TEMPLATE_ID", str(template_id if template_id is not None else -1)),
        ("TM_MAD_SYSTEM", "shared"),
        ("VMID", str(vm_id)),
    ])
    if nics:
        result.append(("AUTOMATIC_NIC_REQUIREMENTS", "(\"CLUSTERS/ID\" @> 0)"))
    return result, user_attrs, images
