"""The setup checklist's network steps, decided from `setup_facts`: the default network, the
trial-network VXLAN and the forwarded addresses (`tui.procedures.setup.steps` lists every step in order)."""

from __future__ import annotations

from tui.domain.setup_networks import (
    VXLAN_HEADERS_MAX,
    VXLAN_HEADERS_MIN,
    default_network_problems,
    forwarded_addresses,
    mtu_margin,
    nic_mtu,
    trial_candidates,
    trial_network_problems,
    vxlan_unverified,
)
from tui.domain.setup_steps import (
    SetupStep,
    StepId,
    StepState,
)
from tui.procedures.setup.facts import SetupFacts
from tui.procedures.setup.step_forms import blocked as _blocked
from tui.procedures.setup.step_forms import step as _step
from tui.procedures.setup.step_forms import unknown as _unknown


def default_network_step(facts: SetupFacts) -> SetupStep:
    title = "Default network: a /24 on the management bridge"
    if facts.vnets is None:
        return _unknown(StepId.DEFAULT_NETWORK, title, "the virtual networks")
    vnet = facts.default_network
    chosen_by = ("the input file" if facts.target.network_id is not None else
                 f"toolkit service {facts.service.id}" if facts.default_network_id is not None and facts.service else
                 "the first /24 on a bridge (name it in the input file's networks_values)")
    if vnet is None:
        wanted = facts.default_network_id
        why = (f"network {wanted} ({chosen_by}) does not exist" if wanted is not None
               else "no network is a /24 on a Linux bridge")
        return _blocked(StepId.DEFAULT_NETWORK, title, "the site's OAM network",
                        "Create the default network: the site's OAM /24 on the preexisting Linux bridge that "
                        "carries the management interface (onevnet create with VN_MAD=bridge, BRIDGE, "
                        "NETWORK_ADDRESS, NETWORK_MASK=255.255.255.0)", (why,))
    evidence = [f"network {vnet.id} {vnet.name} (chosen by {chosen_by}): {vnet.network_address or '?'}/"
                f"{vnet.network_mask or '?'}, driver {vnet.vn_mad or '?'}, bridge {vnet.bridge or '(none)'}, "
                f"MTU {vnet.mtu if vnet.mtu is not None else '(not set)'}"]
    problems = default_network_problems(vnet)
    if problems:
        return _blocked(StepId.DEFAULT_NETWORK, title, f"network {vnet.id}", " ".join(problems), evidence)
    evidence.append(f"not checked: that {vnet.bridge} carries the management interface on every host "
                    "(the cloud does not say)")
    return _step(StepId.DEFAULT_NETWORK, title, StepState.DONE, evidence, data={"network_id": vnet.id})


def trial_network_step(facts: SetupFacts) -> SetupStep:
    title = "Trial-network VXLAN with GUEST_MTU below the NIC MTU"
    if facts.vnets is None:
        return _unknown(StepId.TRIAL_NETWORK, title, "the virtual networks")
    default = facts.default_network
    candidates = trial_candidates(facts.vnets)
    if not candidates:
        bridge = default.bridge if default else "<default bridge>"
        mtu = (default.mtu if default and default.mtu else 1500) - VXLAN_HEADERS_MIN
        return _blocked(StepId.TRIAL_NETWORK, title, "a VXLAN network",
                        f"Create the trial-network VXLAN network over {bridge} (onevnet create with VN_MAD=vxlan, "
                        f"PHYDEV={bridge}, GUEST_MTU={mtu}).", ("no network uses the vxlan driver",))
    ranked = sorted(candidates, key=lambda v: (len(trial_network_problems(v, default)), v.id))
    vxlan = ranked[0]
    nic = nic_mtu(vxlan, default)
    evidence = [f"network {vxlan.id} {vxlan.name}: vxlan over {vxlan.phydev or '(no PHYDEV)'}, bridge {vxlan.bridge}, "
                f"GUEST_MTU {vxlan.guest_mtu if vxlan.guest_mtu is not None else '(not set)'}, "
                f"NIC MTU {nic if nic is not None else '(unknown)'}"]
    if vxlan.guest_mtu is not None and nic is not None:
        margin = mtu_margin(vxlan.guest_mtu, nic)
        evidence.append(f"GUEST_MTU is {margin} bytes below the NIC MTU (VXLAN adds {VXLAN_HEADERS_MIN}-"
                        f"{VXLAN_HEADERS_MAX} bytes)" if margin > 0 else
                        f"GUEST_MTU is not below the NIC MTU ({-margin} bytes above or equal)")
    problems = trial_network_problems(vxlan, default)
    if problems:
        return _blocked(StepId.TRIAL_NETWORK, title, f"network {vxlan.id}", " ".join(problems), evidence)
    if nic is None:
        return _blocked(StepId.TRIAL_NETWORK, title, "the NIC MTU",
                        "Set MTU on the default network (the NIC's MTU) so the guest MTU can be checked.", evidence)
    evidence.append(vxlan_unverified(vxlan, default))
    return _step(StepId.TRIAL_NETWORK, title, StepState.DONE, evidence, data={"network_id": vxlan.id})


def forwarded_step(facts: SetupFacts) -> SetupStep:
    title = "Forwarded addresses .211-.240"
    vnet = facts.default_network
    if vnet is None or default_network_problems(vnet):
        return _blocked(StepId.FORWARDED, title, StepId.DEFAULT_NETWORK, "Fix the default network first.",
                        mandatory=False)
    if facts.vms is None:
        return _unknown(StepId.FORWARDED, title, "the VMs (whose addresses take these)", mandatory=False)
    vm_ips = {vm.id: vm.ips for vm in facts.vms}
    rows = forwarded_addresses(vnet, facts.leases or (), vm_ips)
    taken = [r for r in rows if r.taken]
    outside = [r for r in rows if not r.leasable]
    evidence = [f"{len(rows)} addresses of network {vnet.id}: {len(taken)} taken, {len(rows) - len(taken)} free, "
                f"{len(outside)} outside every address range",
                "port xx211 of the public IP forwards to .211 at port xx211, and so on (xx: the site's prefix)"]
    evidence += [f"{r.ip} ({r.port}): {r.status}" for r in taken]
    if facts.leases is None:
        evidence.append("not read: the leases of the network (only VM addresses were compared)")
    return _step(StepId.FORWARDED, title, StepState.DONE, evidence, mandatory=False,
                 data={"network_id": vnet.id, "addresses": [r.as_json() for r in rows]})
