"""The site networks the setup checks (spec "Site networks" and "Limits"), as pure rules.

- The default network (the site's OAM network) is a /24 on a preexisting Linux bridge that
  shares the NIC with the management interface: `default_network_problems`.
- The trial-network VXLAN network rides on that bridge (its PHYDEV) and carries a GUEST_MTU
  lower than the NIC's MTU by at least the VXLAN headers (50 bytes over IPv4, 54 with a VLAN
  tag): `trial_network_problems`, `mtu_margin`.
- The addresses .211 to .240 of the /24 are the ones the site's public IP forwards to: port xx211
  to .211 at port xx211, and so on (xx: the site's port prefix). `forwarded_addresses` says, for
  each, whether a lease or a VM holds it and whether the network can lease it at all.

What the cloud cannot tell (whether the bridge really carries the management interface on every
host) is said as such, never assumed.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from tui.domain.networks import Vnet

#: bytes of headers VXLAN adds: 50 over IPv4, 54 with a VLAN tag on the outer frame
VXLAN_HEADERS_MIN = 50
VXLAN_HEADERS_MAX = 54
#: the forwarded host numbers of the default /24
FORWARDED_FIRST = 211
FORWARDED_LAST = 240
#: drivers whose network sits on a plain Linux bridge
BRIDGE_DRIVERS = frozenset({"bridge", "fw", "ebtables", "dummy"})


@dataclass(frozen=True)
class Lease:
    """One used address of a network: the VM holding it (-1: on hold, no VM)."""

    ip: str
    vm_id: int


def prefix_length(vnet: Vnet) -> int | None:
    """The prefix length from NETWORK_MASK (dotted or a bare number); None when not set or invalid."""
    mask = vnet.network_mask.strip()
    if not mask:
        return None
    try:
        if mask.isdigit():
            return int(mask) if 0 <= int(mask) <= 32 else None
        return ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen
    except ValueError:
        return None


def network_of(vnet: Vnet) -> ipaddress.IPv4Network | None:
    """NETWORK_ADDRESS/NETWORK_MASK as a network; None when either is missing or invalid."""
    length = prefix_length(vnet)
    address = vnet.network_address.strip()
    if length is None or not address:
        return None
    try:
        return ipaddress.IPv4Network(f"{address}/{length}", strict=False)
    except ValueError:
        return None


def default_network_problems(vnet: Vnet) -> tuple[str, ...]:
    """Why `vnet` cannot be the site's default network ("" tuple: it can), each with the fix."""
    problems: list[str] = []
    net = network_of(vnet)
    if net is None:
        problems.append(f"network {vnet.id} declares no NETWORK_ADDRESS/NETWORK_MASK: set them to the OAM /24 "
                        f"(onevnet update {vnet.id} --append with NETWORK_ADDRESS and NETWORK_MASK=\"255.255.255.0\")")
    elif net.prefixlen != 24:
        problems.append(f"network {vnet.id} is a /{net.prefixlen} ({net}), not a /24: the forwarded addresses .211-.240 "
                        "need the site's OAM /24; choose that network or create it")
    if not vnet.bridge:
        problems.append(f"network {vnet.id} names no BRIDGE: set BRIDGE to the preexisting Linux bridge that carries "
                        "the management interface on every host")
    if vnet.vn_mad and vnet.vn_mad not in BRIDGE_DRIVERS:
        problems.append(f"network {vnet.id} uses the {vnet.vn_mad} driver: the default network uses the preexisting "
                        "Linux bridge (driver bridge)")
    return tuple(problems)


def mtu_margin(guest_mtu: int, nic_mtu: int) -> int:
    return nic_mtu - guest_mtu


def trial_network_problems(vxlan: Vnet, default: Vnet | None) -> tuple[str, ...]:
    """Why `vxlan` is not the trial-network VXLAN network the site needs (each with the fix)."""
    problems: list[str] = []
    if vxlan.vn_mad != "vxlan":
        problems.append(f"network {vxlan.id} uses the {vxlan.vn_mad or 'unknown'} driver, not vxlan")
    if default is not None and default.bridge:
        over = {default.bridge} | ({default.phydev} if default.phydev else set())
        if not vxlan.phydev:
            problems.append(f"network {vxlan.id} names no PHYDEV: set it to the default network's bridge "
                            f"{default.bridge} (onevnet update {vxlan.id} --append with PHYDEV=\"{default.bridge}\")")
        elif vxlan.phydev not in over and default.phydev:
            problems.append(f"network {vxlan.id} rides on {vxlan.phydev}, not on the default network's bridge "
                            f"{default.bridge} ({default.phydev}): create the VXLAN network over that bridge")
    nic = nic_mtu(vxlan, default)
    if vxlan.guest_mtu is None:
        problems.append(f"network {vxlan.id} has no GUEST_MTU: set it {VXLAN_HEADERS_MIN}-{VXLAN_HEADERS_MAX} bytes "
                        f"below the NIC MTU{f' ({nic})' if nic else ''}, e.g. GUEST_MTU=\"{(nic or 1500) - VXLAN_HEADERS_MIN}\"")
    elif nic is not None:
        margin = mtu_margin(vxlan.guest_mtu, nic)
        if margin < VXLAN_HEADERS_MIN:
            wanted = nic - VXLAN_HEADERS_MIN
            what = "not below" if margin <= 0 else f"only {margin} bytes below"
            problems.append(f"GUEST_MTU {vxlan.guest_mtu} is {what} the NIC MTU {nic}; VXLAN adds "
                            f"{VXLAN_HEADERS_MIN}-{VXLAN_HEADERS_MAX} bytes of headers, so full-size packets are "
                            f"dropped: set GUEST_MTU to {wanted} or less (onevnet update {vxlan.id} --append with "
                            f"GUEST_MTU=\"{wanted}\")")
    return tuple(problems)


def nic_mtu(vxlan: Vnet, default: Vnet | None) -> int | None:
    """The MTU of the NIC the VXLAN rides on: the default network's MTU (its bridge's NIC), else the
    VXLAN network's own MTU attribute."""
    if default is not None and default.mtu is not None:
        return default.mtu
    return vxlan.mtu


def vxlan_unverified(vxlan: Vnet, default: Vnet | None) -> str:
    """What the cloud cannot confirm about the VXLAN's device ("" when it can)."""
    if default is None or not vxlan.phydev or vxlan.phydev == default.bridge:
        return ""
    if default.phydev and vxlan.phydev == default.phydev:
        return ""
    if not default.phydev:
        return (f"not checked: whether {vxlan.phydev} (the VXLAN's PHYDEV) is the NIC of bridge {default.bridge}; "
                f"the cloud does not say (check `bridge link` on a host)")
    return ""


def trial_candidates(vnets: Iterable[Vnet]) -> tuple[Vnet, ...]:
    return tuple(v for v in vnets if v.vn_mad == "vxlan")


def default_candidates(vnets: Iterable[Vnet]) -> tuple[Vnet, ...]:
    """Networks on a plain bridge with a /24, best first (lowest ID)."""
    found = [v for v in vnets if v.vn_mad in BRIDGE_DRIVERS and v.bridge and (n := network_of(v)) is not None
             and n.prefixlen == 24]
    return tuple(sorted(found, key=lambda v: v.id))


@dataclass(frozen=True)
class ForwardedAddress:
    """One of the addresses .211-.240 the public IP forwards to, and who holds it now."""

    ip: str
    #: the port pattern, e.g. "xx211 -> .211:xx211"
    port: str
    #: VM IDs using it (leases and NICs); -1 for a lease on hold
    holders: tuple[int, ...]
    #: whether an address range of the network covers it (the cloud can lease it)
    leasable: bool

    @property
    def taken(self) -> bool:
        return bool(self.holders)

    @property
    def status(self) -> str:
        if self.holders:
            return ", ".join("on hold" if vm < 0 else f"VM {vm}" for vm in self.holders)
        return "free" if self.leasable else "free, outside every address range"

    def as_json(self) -> dict[str, object]:
        return {"ip": self.ip, "port": self.port, "holders": list(self.holders), "leasable": self.leasable,
                "status": self.status}


def forwarded_addresses(vnet: Vnet, leases: Sequence[Lease], vm_ips: Mapping[int, Sequence[str]]) -> tuple[ForwardedAddress, ...]:
    """The table of forwarded addresses of the default network (empty when it is not a /24)."""
    net = network_of(vnet)
    if net is None or net.prefixlen != 24:
        return ()
    ranges = _ranges(vnet)
    by_ip: dict[str, set[int]] = {}
    for lease in leases:
        by_ip.setdefault(lease.ip, set()).add(lease.vm_id)
    for vm_id, ips in vm_ips.items():
        for ip in ips:
            by_ip.setdefault(ip, set()).add(vm_id)
    rows = []
    for host in range(FORWARDED_FIRST, FORWARDED_LAST + 1):
        address = net.network_address + host
        text = str(address)
        rows.append(ForwardedAddress(text, f"xx{host} -> .{host}:xx{host}", tuple(sorted(by_ip.get(text, ()))),
                                     any(lo <= address <= hi for lo, hi in ranges)))
    return tuple(rows)


def _ranges(vnet: Vnet) -> list[tuple[ipaddress.IPv4Address, ipaddress.IPv4Address]]:
    result = []
    for ar in vnet.address_ranges:
        try:
            first = ipaddress.IPv4Address(ar.ip)
        except ValueError:
            continue
        last = first + max(ar.size - 1, 0)
        result.append((first, last))
    return result
