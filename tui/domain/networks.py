"""Virtual networks: `Vnet` with its bridge, driver, MTUs and address ranges."""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.object_header import Owned
from tui.domain.one_states import VNET_STATES


@dataclass(frozen=True)
class AddressRange:
    ar_id: int
    type: str
    ip: str
    mac: str
    size: int
    used_leases: int
    attributes: dict[str, str]

    @property
    def ip_end(self) -> str:
        return self.attributes.get("IP_END", "")


@dataclass(frozen=True)
class Vnet(Owned):
    state: int
    bridge: str
    bridge_type: str
    #: driver: bridge, vxlan, 802.1Q, ovswitch, ...
    vn_mad: str
    phydev: str
    vlan_id: str
    #: TEMPLATE/MTU and TEMPLATE/GUEST_MTU, None when unset or not a number
    mtu: int | None
    guest_mtu: int | None
    used_leases: int
    address_ranges: tuple[AddressRange, ...]
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def state_name(self) -> str:
        return VNET_STATES.get(self.state, f"STATE_{self.state}")

    @property
    def network_address(self) -> str:
        return self.template.get("NETWORK_ADDRESS")

    @property
    def network_mask(self) -> str:
        return self.template.get("NETWORK_MASK")

    @property
    def gateway(self) -> str:
        return self.template.get("GATEWAY")

    @property
    def dns(self) -> str:
        return self.template.get("DNS")
