"""The used addresses of one virtual network: `one.vn.info` lists them under AR_POOL/AR/LEASES.

Each LEASE carries IP (for IPv4 ranges) and VM, the VM holding it (-1 for an address put on hold
with `onevnet hold`). Source: OpenNebula/one `src/vnm/AddressRange.cc` (`to_xml`, leases written
for `one.vn.info` only, not for the pool).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.adapters.cloud_parse import expect_root
from tui.adapters.cloud_transport import parse_document
from tui.domain.setup_networks import Lease

if TYPE_CHECKING:  # pragma: no cover
    from tui.adapters.cloud import CloudClient


def parse_leases(text: str) -> tuple[Lease, ...]:
    root = expect_root(parse_document(text, "one.vn.info"), "VNET")
    leases: list[Lease] = []
    for lease in root.iterfind("AR_POOL/AR/LEASES/LEASE"):
        ip = (lease.findtext("IP") or "").strip()
        vm = (lease.findtext("VM") or "").strip()
        if ip:
            leases.append(Lease(ip, int(vm) if vm.lstrip("-").isdigit() else -1))
    return tuple(leases)


async def vnet_leases(cloud: "CloudClient", vnet_id: int) -> tuple[Lease, ...]:
    """The leases of network `vnet_id` (raises the client's `SiteError` when it cannot be read)."""
    return parse_leases(await cloud.raw("one.vn.info", int(vnet_id), False))
