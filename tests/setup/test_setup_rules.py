"""The pure rules of the setup checklist: networks, forwarded addresses, step states and order."""

from __future__ import annotations

from dataclasses import replace

from tui.adapters.vnet_leases import parse_leases
from tui.domain.attributes import Attributes
from tui.domain.networks import AddressRange, Vnet
from tui.domain.setup_networks import (
    Lease,
    default_network_problems,
    forwarded_addresses,
    trial_network_problems,
    vxlan_unverified,
)
from tui.domain.setup_steps import STEP_ORDER, SetupChecklist, SetupStep, StepId, StepState


def vnet(id: int = 0, *, mask: str = "255.255.255.0", bridge: str = "br0", vn_mad: str = "bridge", phydev: str = "",
         mtu: int | None = 1500, guest_mtu: int | None = None, ar_ip: str = "10.0.0.200", ar_size: int = 20) -> Vnet:
    template = Attributes.from_template([("NETWORK_ADDRESS", "10.0.0.0"), ("NETWORK_MASK", mask)])
    ar = AddressRange(0, "IP4", ar_ip, "02:00:0a:00:00:c8", ar_size, 0, {})
    return Vnet(id, f"net{id}", 0, 0, "oneadmin", "oneadmin", 1, bridge, "linux", vn_mad, phydev, "", mtu, guest_mtu,
                0, (ar,), template)


def test_a_24_on_a_bridge_is_a_default_network() -> None:
    assert default_network_problems(vnet()) == ()
    assert "not a /24" in default_network_problems(vnet(mask="255.255.0.0"))[0]
    assert "names no BRIDGE" in default_network_problems(vnet(bridge=""))[0]
    assert "driver" in default_network_problems(vnet(vn_mad="vxlan"))[0]
    assert "NETWORK_MASK" in default_network_problems(vnet(mask=""))[0]


def test_guest_mtu_margins() -> None:
    default = vnet(mtu=9000)
    ok = vnet(1, vn_mad="vxlan", phydev="br0", guest_mtu=8950)
    assert trial_network_problems(ok, default) == ()
    equal = trial_network_problems(replace(ok, guest_mtu=9000), default)
    assert "not below the NIC MTU 9000" in equal[0] and "GUEST_MTU to 8950" in equal[0]
    close = trial_network_problems(replace(ok, guest_mtu=8990), default)
    assert "only 10 bytes below" in close[0]
    assert "no GUEST_MTU" in trial_network_problems(replace(ok, guest_mtu=None), default)[0]


def test_the_vxlan_must_ride_on_the_default_bridge() -> None:
    default = vnet(phydev="eth0")
    assert trial_network_problems(vnet(1, vn_mad="vxlan", phydev="eth0", guest_mtu=1450), default) == ()
    elsewhere = trial_network_problems(vnet(1, vn_mad="vxlan", phydev="eth9", guest_mtu=1450), default)
    assert "not on the default network's bridge br0" in elsewhere[0]
    # a bridge without PHYDEV: the cloud cannot tell which NIC it holds, and the rule says so
    unknown = vnet(1, vn_mad="vxlan", phydev="bond0", guest_mtu=1450)
    assert trial_network_problems(unknown, vnet()) == ()
    assert "not checked" in vxlan_unverified(unknown, vnet())


def test_forwarded_addresses_with_holders_and_ranges() -> None:
    rows = forwarded_addresses(vnet(), [Lease("10.0.0.211", 7), Lease("10.0.0.212", -1)], {9: ("10.0.0.240",)})
    assert len(rows) == 30
    assert rows[0].ip == "10.0.0.211" and rows[0].status == "VM 7" and rows[0].port == "xx211 -> .211:xx211"
    assert rows[1].status == "on hold"
    assert rows[-1].status == "VM 9"
    assert rows[2].leasable and not rows[-2].leasable  # the range is .200-.219
    assert forwarded_addresses(vnet(mask="255.255.0.0"), [], {}) == ()


def test_leases_parse_from_vn_info() -> None:
    text = ("<VNET><ID>0</ID><AR_POOL><AR><AR_ID>0</AR_ID><LEASES><LEASE><IP>10.0.0.5</IP><VM>3</VM></LEASE>"
            "<LEASE><IP>10.0.0.6</IP><VM>-1</VM></LEASE></LEASES></AR></AR_POOL></VNET>")
    assert parse_leases(text) == (Lease("10.0.0.5", 3), Lease("10.0.0.6", -1))


def test_checklist_complete_and_next() -> None:
    done = [SetupStep(step, step.value, StepState.DONE) for step in STEP_ORDER]
    assert SetupChecklist.ordered(done).complete
    mixed = list(reversed(done))
    mixed[0] = SetupStep(mixed[0].id, "the last, optional", StepState.OPTIONAL, mandatory=False)
    mixed[-1] = SetupStep(StepId.PLATFORM, "platform", StepState.FAILED, action="fix it")
    checklist = SetupChecklist.ordered(mixed)
    assert [s.id for s in checklist.steps] == list(STEP_ORDER)
    assert not checklist.complete
    assert checklist.next_step is not None and checklist.next_step.id is StepId.PLATFORM
    assert checklist.as_json()["next"] == "platform"
