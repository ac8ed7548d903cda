"""VM state machines of the simulated cloud, driven and observed through the real pyone client."""

from __future__ import annotations

from typing import Any

import pyone
import pytest

from tests.sim.one_client import one, states
from tests.waiting import wait_until
from tui.domain.one_states import HostState, VmState
from tui.sim.server import SimServer

PENDING, HOLD, ACTIVE, STOPPED, SUSPENDED, DONE, POWEROFF, UNDEPLOYED = (
    VmState.PENDING, VmState.HOLD, VmState.ACTIVE, VmState.STOPPED, VmState.SUSPENDED, VmState.DONE, VmState.POWEROFF,
    VmState.UNDEPLOYED)


def _running(sim: SimServer, name: str = "vm", extra: str = "", hold: bool = False) -> tuple[Any, int]:
    client = one(sim)
    vm_id = client.template.instantiate(0, name, hold, extra, False)
    if not hold:
        wait_until(lambda: states(client, vm_id) == (ACTIVE, 3), what=f"VM {vm_id} RUNNING")
    return client, vm_id


def _observe(client: Any, vm_id: int, final: tuple[int, int], timeout: float = 20.0) -> list[tuple[int, int]]:
    """Every distinct (STATE, LCM_STATE) seen until `final`."""
    seen: list[tuple[int, int]] = []

    def reached() -> bool:
        current = states(client, vm_id)
        if not seen or seen[-1] != current:
            seen.append(current)
        return current == final

    wait_until(reached, timeout=timeout, what=f"VM {vm_id} in {final}", interval=0.005)
    return seen


def _stepped(sim: SimServer, vm_id: int, final: tuple[int, int], steps: int = 500) -> list[tuple[int, int]]:
    """Every distinct (STATE, LCM_STATE) the VM passes through until `final`, the site's events run
    one at a time (a site started with time_scale=1000.0 runs none unless stepped): no state can be
    missed between two polls, and nothing waits."""
    client = one(sim)
    seen = [states(client, vm_id)]
    for _ in range(steps):
        if seen[-1] == final:
            return seen
        assert sim.site.run_next_event(), f"nothing left to run, VM {vm_id} went through {seen}"
        current = states(client, vm_id)
        if current != seen[-1]:
            seen.append(current)
    raise AssertionError(f"VM {vm_id} not in {final} after {steps} events: {seen}")


def _stepped_running(sim: SimServer) -> tuple[Any, int]:
    client = one(sim)
    vm_id = client.template.instantiate(0, "vm", False, "", False)
    _stepped(sim, vm_id, (ACTIVE, 3))
    return client, vm_id


def test_a_new_vm_boots_through_prolog_and_boot_on_a_monitored_host(sim_factory) -> None:
    sim = sim_factory(time_scale=1000.0)  # no event runs unless stepped
    client = one(sim)
    vm_id = client.template.instantiate(0, "web")
    assert _stepped(sim, vm_id, (ACTIVE, 3)) == [(PENDING, 0), (ACTIVE, 1), (ACTIVE, 2), (ACTIVE, 3)]
    vm = client.vm.info(vm_id)
    history = vm.HISTORY_RECORDS.HISTORY
    assert len(history) == 1 and history[0].SEQ == 0
    assert sim.site.hosts[history[0].HID].state == HostState.MONITORED
    assert vm.DEPLOY_ID == f"one-{vm_id}"


def test_undeploy_and_deploy_on_a_chosen_host_add_a_history_record(sim_factory) -> None:
    sim = sim_factory(time_scale=1000.0)  # no event runs unless stepped
    client, vm_id = _stepped_running(sim)
    client.vm.action("undeploy", vm_id)
    assert _stepped(sim, vm_id, (UNDEPLOYED, 0)) == [(ACTIVE, 29), (ACTIVE, 30), (UNDEPLOYED, 0)]
    first = client.vm.info(vm_id).HISTORY_RECORDS.HISTORY[0]
    assert first.ETIME > 0 and first.ACTION == 5
    target = 1 if first.HID != 1 else 0
    client.vm.deploy(vm_id, target)
    assert _stepped(sim, vm_id, (ACTIVE, 3)) == [(ACTIVE, 31), (ACTIVE, 32), (ACTIVE, 3)]
    history = client.vm.info(vm_id).HISTORY_RECORDS.HISTORY
    assert [h.SEQ for h in history] == [0, 1]
    assert history[-1].HID == target and history[-1].HOSTNAME == sim.site.hosts[target].name


def test_undeploy_hard_goes_the_same_way(sim: SimServer) -> None:
    client, vm_id = _running(sim)
    client.vm.action("undeploy-hard", vm_id)
    wait_until(lambda: states(client, vm_id) == (UNDEPLOYED, 0), what="UNDEPLOYED")
    assert client.vm.info(vm_id).HISTORY_RECORDS.HISTORY[-1].ACTION == 6


def test_deploy_refuses_a_running_vm_a_missing_host_and_an_offline_host(sim: SimServer) -> None:
    client, vm_id = _running(sim)
    with pytest.raises(pyone.OneActionException) as error:
        client.vm.deploy(vm_id, 0)
    assert str(error.value) == "[one.vm.deploy] Deploy action is not available for state RUNNING"
    held = client.template.instantiate(0, "held", True)
    with pytest.raises(pyone.OneNoExistsException, match=r"Error getting host \[99\]"):
        client.vm.deploy(held, 99)
    offline = next(h.id for h in sim.site.hosts.values() if h.state == HostState.OFFLINE)
    with pytest.raises(pyone.OneActionException, match="offline"):
        client.vm.deploy(held, offline)


def test_deploy_from_hold_and_injected_deploy_failures(sim: SimServer) -> None:
    client = one(sim)
    vm_id = client.template.instantiate(0, "held", True)
    assert states(client, vm_id) == (HOLD, 0)
    sim.site.faults.fail_next_deploys = 1
    with pytest.raises(pyone.OneInternalException, match=r"\[one.vm.deploy\]"):
        client.vm.deploy(vm_id, 1)
    assert states(client, vm_id) == (HOLD, 0)
    client.vm.deploy(vm_id, 1, False, 0)
    wait_until(lambda: states(client, vm_id) == (ACTIVE, 3), what="RUNNING")
    assert client.vm.info(vm_id).HISTORY_RECORDS.HISTORY[-1].HID == 1


def test_terminate_releases_leases_and_images(sim_factory) -> None:
    sim = sim_factory(time_scale=1000.0)  # no event runs unless stepped
    client, vm_id = _stepped_running(sim)
    ip = client.vm.info(vm_id).TEMPLATE["NIC"]["IP"]
    assert any(lease.VM == vm_id for ar in client.vn.info(0).AR_POOL.AR for lease in ar.LEASES.LEASE)
    assert client.image.info(0).RUNNING_VMS == 1 and client.image.info(0).STATE == 2
    client.vm.action("terminate", vm_id)
    assert _stepped(sim, vm_id, (DONE, 0)) == [(ACTIVE, 12), (ACTIVE, 11), (DONE, 0)]
    assert ip not in [lease.IP for ar in client.vn.info(0).AR_POOL.AR for lease in (ar.LEASES.LEASE if ar.LEASES else [])]
    assert client.image.info(0).RUNNING_VMS == 0 and client.image.info(0).STATE == 1
    assert client.vm.info(vm_id).ETIME > 0


def test_terminate_of_pending_and_undeployed_vms_is_immediate(sim: SimServer) -> None:
    client = one(sim)
    held = client.template.instantiate(0, "held", True)
    client.vm.action("terminate", held)
    assert states(client, held) == (DONE, 0)


def test_poweroff_resume_suspend_and_stop(sim_factory) -> None:
    sim = sim_factory(time_scale=1000.0)  # no event runs unless stepped
    client, vm_id = _stepped_running(sim)
    client.vm.action("poweroff", vm_id)
    assert _stepped(sim, vm_id, (POWEROFF, 0)) == [(ACTIVE, 18), (POWEROFF, 0)]
    client.vm.action("resume", vm_id)
    assert _stepped(sim, vm_id, (ACTIVE, 3)) == [(ACTIVE, 20), (ACTIVE, 3)]
    client.vm.action("suspend", vm_id)
    assert _stepped(sim, vm_id, (SUSPENDED, 0)) == [(ACTIVE, 6), (SUSPENDED, 0)]
    client.vm.action("resume", vm_id)
    assert _stepped(sim, vm_id, (ACTIVE, 3)) == [(ACTIVE, 21), (ACTIVE, 3)]
    client.vm.action("stop", vm_id)
    assert _stepped(sim, vm_id, (STOPPED, 0)) == [(ACTIVE, 5), (ACTIVE, 10), (STOPPED, 0)]
    client.vm.action("resume", vm_id)
    assert _stepped(sim, vm_id, (ACTIVE, 3)) == [(PENDING, 0), (ACTIVE, 9), (ACTIVE, 22), (ACTIVE, 3)]


def test_resume_of_an_undeployed_vm_goes_back_through_the_scheduler(sim: SimServer) -> None:
    client, vm_id = _running(sim)
    client.vm.action("undeploy", vm_id)
    wait_until(lambda: states(client, vm_id) == (UNDEPLOYED, 0), what="UNDEPLOYED")
    client.vm.action("resume", vm_id)
    assert _observe(client, vm_id, (ACTIVE, 3))[-3:] == [(ACTIVE, 31), (ACTIVE, 32), (ACTIVE, 3)]


def test_undeploy_from_poweroff(sim: SimServer) -> None:
    client, vm_id = _running(sim)
    client.vm.action("poweroff-hard", vm_id)
    wait_until(lambda: states(client, vm_id) == (POWEROFF, 0), what="POWEROFF")
    client.vm.action("undeploy", vm_id)
    wait_until(lambda: states(client, vm_id) == (UNDEPLOYED, 0), what="UNDEPLOYED")


def test_hold_release_and_reboot(sim: SimServer) -> None:
    client = one(sim)
    vm_id = client.template.instantiate(0, "held", True)
    client.vm.action("release", vm_id)
    wait_until(lambda: states(client, vm_id) == (ACTIVE, 3), what="RUNNING after release")
    client.vm.action("reboot", vm_id)
    assert states(client, vm_id) == (ACTIVE, 3)
    # no host fits: it stays PENDING however slow the machine running the test is
    pending = client.template.instantiate(0, "pending", False, 'SCHED_REQUIREMENTS = "ID = 999"')
    client.vm.action("hold", pending)
    assert states(client, pending) == (HOLD, 0)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("undeploy", 'Error performing action "undeploy": This action is not available for state HOLD'),
        ("poweroff", 'Error performing action "poweroff": This action is not available for state HOLD'),
        ("reboot", 'Error performing action "reboot": This action is not available for state HOLD'),
        ("resume", 'Error performing action "resume": This action is not available for state HOLD'),
        ("hold", 'Error performing action "hold": This action is not available for state HOLD'),
        ("stop", 'Error performing action "stop": This action is not available for state HOLD'),
    ],
)
def test_wrong_state_actions_answer_action_errors(sim: SimServer, action: str, message: str) -> None:
    client = one(sim)
    vm_id = client.template.instantiate(0, "held", True)
    with pytest.raises(pyone.OneActionException) as error:
        client.vm.action(action, vm_id)
    assert str(error.value) == "[one.vm.action] " + message.format(id=vm_id)


def test_wrong_state_names_the_lcm_state_while_active(sim: SimServer) -> None:
    client, vm_id = _running(sim)
    with pytest.raises(pyone.OneActionException, match="This action is not available for state RUNNING$"):
        client.vm.action("release", vm_id)


def test_the_scheduler_honours_requirements_and_waits_when_nothing_fits(sim: SimServer) -> None:
    client = one(sim)
    placed = client.template.instantiate(0, "placed", False, 'SCHED_REQUIREMENTS = "ID = 1"')
    wait_until(lambda: states(client, placed) == (ACTIVE, 3), what="placed VM RUNNING")
    assert client.vm.info(placed).HISTORY_RECORDS.HISTORY[-1].HID == 1
    stuck = client.template.instantiate(0, "stuck", False, 'SCHED_REQUIREMENTS = "HOSTNAME = \\"nowhere*\\""')
    wait_until(lambda: "SCHED_MESSAGE" in client.vm.info(stuck).USER_TEMPLATE, what="a scheduling message")
    assert states(client, stuck) == (PENDING, 0)


def test_nic_leases_come_from_the_network_and_run_out(sim: SimServer) -> None:
    client = one(sim)
    sim.site.vnets[1].ars[0].size = 1
    first = client.template.instantiate(0, "a", True, 'NIC = [ NETWORK = "trial-vxlan" ]')
    nic = client.vm.info(first).TEMPLATE["NIC"]
    # the NIC inherits MTU (oned.conf INHERIT_VNET_ATTR), not GUEST_MTU, which the context takes from
    # the network (src/vm/VirtualMachineContext.cc NETWORK_CONTEXT, ETH<n>_MTU)
    assert (nic["NETWORK_ID"], nic["IP"], nic["MTU"], "GUEST_MTU" in nic) == ("1", "192.168.100.10", "1500", False)
    assert client.vm.info(first).TEMPLATE["CONTEXT"]["ETH0_MTU"] == "1450"
    with pytest.raises(pyone.OneException, match="Cannot get IP/MAC lease from virtual network 1"):
        client.template.instantiate(0, "b", True, 'NIC = [ NETWORK_ID = "1" ]')
    with pytest.raises(pyone.OneException, match="Virtual network 77 does not exist"):
        client.template.instantiate(0, "c", True, 'NIC = [ NETWORK_ID = "77" ]')


def test_failed_role_boots_to_boot_failure_and_recovers(sim: SimServer) -> None:
    sim.site.faults.fail_role = "objectstore"
    client = one(sim)
    vm_id = client.template.instantiate(0, "os", False, 'ROLE_NAME = "objectstore"\nSERVICE_ID = "4"')
    wait_until(lambda: states(client, vm_id) == (ACTIVE, 36), what="BOOT_FAILURE")
    with pytest.raises(pyone.OneActionException, match="not available for state BOOT_FAILURE"):
        client.vm.action("poweroff", vm_id)
    sim.site.faults.fail_role = ""
    client.vm.recover(vm_id, 2)
    wait_until(lambda: states(client, vm_id) == (ACTIVE, 3), what="RUNNING after retry")
    client.vm.action("terminate-hard", vm_id)
    wait_until(lambda: states(client, vm_id) == (DONE, 0), what="DONE")
