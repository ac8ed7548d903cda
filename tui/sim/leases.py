"""Address-range leases of virtual networks: IP/MAC arithmetic, taking and releasing leases.

An address range (AR) is a first IP, a first MAC and a size; lease `n` is the n-th address. The
platform derives MACs from IPs (prefix 02:00 then the four IP bytes), which `mac_for_ip` mirrors.
"""

from __future__ import annotations

import ipaddress
import itertools

from tui.sim.state import SimAddressRange, SimVnet


def ip_at(ar: SimAddressRange, offset: int) -> str:
    return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address(ar.ip)) + offset)) if ar.ip else ""


def mac_at(ar: SimAddressRange, offset: int) -> str:
    value = int(ar.mac.replace(":", ""), 16) + offset
    raw = f"{value:012x}"
    return ":".join(raw[i : i + 2] for i in range(0, 12, 2))


def mac_for_ip(ip: str) -> str:
    """02:00:0a:0b:1c:01 for 10.11.28.1, the platform's default MAC prefix and rule."""
    octets = ipaddress.IPv4Address(ip).packed
    return "02:00:" + ":".join(f"{b:02x}" for b in octets)


def lease(vnet: SimVnet, vm_id: int) -> tuple[SimAddressRange, int] | None:
    """Take the first free lease of the network for `vm_id`; None when every range is full."""
    for ar in vnet.ars:
        if len(ar.leases) >= ar.size:
            continue
        # leases are mostly taken in order, so the count is usually the first free offset
        hint = len(ar.leases)
        for offset in itertools.chain((hint,), range(ar.size)):
            if offset < ar.size and offset not in ar.leases:
                ar.leases[offset] = vm_id
                ar.ever_leased = True
                return ar, offset
    return None


def release(vnet: SimVnet, vm_id: int) -> None:
    for ar in vnet.ars:
        for offset in [o for o, owner in ar.leases.items() if owner == vm_id]:
            del ar.leases[offset]


def used_leases(vnet: SimVnet) -> int:
    return sum(len(ar.leases) for ar in vnet.ars)
