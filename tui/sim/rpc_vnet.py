"""The XML-RPC methods that create a virtual network, remove an address range from one and delete one.

The console creates no networks; these are here because the recorded scenario creates networks
without address ranges to see how the platform writes an empty AR_POOL (tests/recordings/scenario.py
`_networks_without_ranges`). What each answers follows src/rm/api/VirtualNetworkAPI.cc and
src/vnm/VirtualNetwork.cc at release-7.4.0, and the recordings.
"""

from __future__ import annotations

from tui.domain.error_codes import ACTION, INTERNAL
from tui.domain.template_text import Template, scalar
from tui.sim.leases import mac_for_ip, used_leases
from tui.sim.rpc_context import Call, method, parse_text
from tui.sim.rpc_errors import OneError
from tui.sim.state import OWNER_ONLY, SimAddressRange, SimVnet

#: what the template keeps apart from the network's own attributes (VirtualNetwork::insert, src/vnm/
#: VirtualNetwork.cc 213-219 at release-7.4.0) and the address ranges (the AR_POOL)
_NOT_KEPT = ("NAME", "TEMPLATE_ID", "TEMPLATE_NAME", "AR")


@method("one.vn.allocate", "s", "i")
def vn_allocate(call: Call, text: str, cluster_id: int = -1) -> int:
    """A READY network at once (the platform's is LOCK_CREATE until its driver answers: the recorded
    scenario waits for READY). Its template: what was given, with BRIDGE (`onebr<id>` when unset,
    VirtualNetwork.cc 295-302), BRIDGE_TYPE (linux), PHYDEV, VLAN_ID and OUTER_VLAN_ID (empty) and
    SECURITY_GROUPS (0, the default group), sorted by name as oned's template is (recorded on
    7.4.0: `network: info (no address range)`)."""
    call.require("NET", "CREATE")
    attrs = parse_text(text)
    vnet_id = call.site.next_id("vnet")
    given = {name: value for name, value in attrs if isinstance(value, str)}
    bridge = given.get("BRIDGE") or f"onebr{vnet_id}"
    defaults = {"BRIDGE": bridge, "BRIDGE_TYPE": "linux", "OUTER_VLAN_ID": "", "PHYDEV": "",
                "SECURITY_GROUPS": "0", "VLAN_ID": ""}
    template: Template = [a for a in attrs if a[0] not in _NOT_KEPT and a[0] not in defaults]
    template += [(name, given.get(name, value) if name != "BRIDGE" else bridge) for name, value in defaults.items()]
    ranges = [dict(value) for name, value in attrs if name == "AR" and isinstance(value, list)]
    call.site.vnets[vnet_id] = SimVnet(
        vnet_id, scalar(attrs, "NAME", "").strip(), bridge, given.get("VN_MAD", ""),
        sorted(template, key=lambda attr: attr[0]),
        [SimAddressRange(ar_id, ar.get("IP", ""), ar.get("MAC") or mac_for_ip(ar.get("IP", "")),
                         int(ar.get("SIZE", "0")), ar.get("TYPE", "IP4")) for ar_id, ar in enumerate(ranges)],
        phydev=given.get("PHYDEV", ""), vlan_id=given.get("VLAN_ID", ""),
        uid=call.user.id, gid=call.user.gid, perms=OWNER_ONLY)
    return vnet_id


@method("one.vn.rm_ar", "ii", "b")
def vn_rm_ar(call: Call, vnet_id: int, ar_id: int, force: bool = False) -> int:
    """ADMIN on a network not made from a network template (VirtualNetworkAPI::rm_ar 253-272 at
    release-7.4.0); a range with leases stays unless forced (AddressRangePool::rm_ar 196-210)."""
    vnet = call.get(call.site.vnets, "NET", vnet_id, "ADMIN")
    ar = next((a for a in vnet.ars if a.ar_id == ar_id), None)
    if ar is None:
        raise OneError(INTERNAL, "Address Range does not exist", -1)
    if ar.leases and not force:
        raise OneError(INTERNAL, "Address Range has leases in use", -1)
    vnet.ars.remove(ar)
    return vnet_id


@method("one.vn.delete", "i")
def vn_delete(call: Call, vnet_id: int) -> int:
    """Refused while a lease is in use (VirtualNetworkAPI::drop 922-928, SharedAPI::del 1584-1592 at
    release-7.4.0)."""
    vnet = call.get(call.site.vnets, "NET", vnet_id, "MANAGE")
    if used_leases(vnet):
        raise OneError(ACTION, "Cannot delete virtual network. Can not remove a virtual network with leases in use", -1)
    del call.site.vnets[vnet_id]
    return vnet_id
