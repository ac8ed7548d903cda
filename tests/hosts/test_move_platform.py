"""The database move against what the platform's source does: a CPU model the host cannot give
fails the boot (BOOT_UNDEPLOY_FAILURE) and the VM is put back; a platform without updateconf's
append flag (before 6.2) is refused before anything changes; the move works on every emulated version."""

from __future__ import annotations

from functools import partial
from typing import Callable

import pytest

from tests.hosts.conftest import FAST, Connect, collect
from tests.hosts.test_move import BROADWELL, WESTMERE, _actions, _manager, _sections
from tui.errors import SiteError
from tui.procedures.hosts.move_plan import STEP_UNDEPLOY, STEP_WAIT_RUNNING, plan_move, plan_redeploy, preview_move
from tui.procedures.hosts.move_vm import MoveFailed, MoveLedger, move_vm
from tui.sim.server import SimServer


async def test_a_model_the_host_cannot_give_fails_the_boot_and_the_vm_goes_back(
        deployed: SimServer, connect: Connect, ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    before = _sections(manager)
    plan = await plan_move(site, manager.id, BROADWELL)
    # the host's libvirt no longer offers the model it reported when the plan was made
    with deployed.site.lock:
        host = deployed.site.hosts[BROADWELL]
        host.template = [(k, " ".join(m for m in v.split() if m != plan.cpu_model) if k == "KVM_CPU_MODELS" else v)
                         for k, v in host.template]

    with pytest.raises(MoveFailed) as caught:
        await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=ledger))
    failure = caught.value
    assert failure.step == STEP_WAIT_RUNNING
    assert failure.vm_state.startswith("BOOT_UNDEPLOY_FAILURE")
    assert f"CPU model {plan.cpu_model}" in failure.reason and "fallback='forbid'" in failure.reason
    assert "The platform says:" in failure.reason  # the ERROR the failed boot left
    put_back = f"sitetk hosts redeploy {manager.id} --host {WESTMERE} --cpu-model ''"
    assert put_back in failure.detail and failure.as_json()["redeploy"] == put_back

    back = await plan_redeploy(site, manager.id, WESTMERE)
    events = await collect(partial(move_vm, site, back, timeouts=FAST, ledger=ledger))
    assert events[0].step == STEP_UNDEPLOY and "failed boot" in events[0].message
    assert events[-1].state == "done"
    vm = await site.cloud.vm_info(manager.id)
    assert vm.summary.running and vm.summary.host_id == WESTMERE and vm.cpu_model == ""
    assert _sections(vm) == before
    assert ("hosts.recover", "ok") in _actions(ledger) and ("hosts.redeploy", "done") in _actions(ledger)


async def test_a_platform_before_6_2_refuses_the_move_and_changes_nothing(
        site_factory: Callable[..., SimServer], connect: Connect, ledger: MoveLedger) -> None:
    server = site_factory(scenario="deployed", one_version="6.0.0")
    site = connect(server)
    manager = await _manager(site)
    before = _sections(manager)
    plan = await plan_move(site, manager.id, BROADWELL)
    # the preview says so before anything is confirmed, not only the run
    warnings = preview_move(plan).warnings
    assert any("6.0.0" in w and "no append flag" in w and "will stop before changing anything" in w for w in warnings)
    with pytest.raises(MoveFailed) as caught:
        await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=ledger))
    assert caught.value.step == STEP_UNDEPLOY
    assert "6.0.0" in caught.value.reason and "no append flag" in caught.value.reason
    assert "Nothing was changed" in caught.value.reason
    vm = await site.cloud.vm_info(manager.id)
    assert vm.summary.running and vm.summary.host_id == WESTMERE and _sections(vm) == before
    assert not any(action.startswith(("hosts.undeploy", "hosts.set_cpu_model")) for action, _ in _actions(ledger))


async def test_the_move_works_on_every_platform_version(
        sim_factory: Callable[..., SimServer], connect: Connect, ledger: MoveLedger, one_version: str) -> None:
    server = sim_factory(scenario="deployed", one_version=one_version)
    site = connect(server)
    manager = await _manager(site)
    before = _sections(manager)
    plan = await plan_move(site, manager.id, BROADWELL)
    assert not any("no append flag" in w for w in preview_move(plan).warnings)
    events = await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=ledger))
    assert events[-1].state == "done"
    vm = await site.cloud.vm_info(manager.id)
    assert vm.ready and vm.summary.host_id == BROADWELL and vm.cpu_model == plan.cpu_model
    assert _sections(vm) == before


async def test_a_put_back_to_a_host_that_does_not_offer_the_model_is_refused_naming_who_does(
        deployed: SimServer, connect: Connect, ledger: MoveLedger) -> None:
    """Issue 22 item 4: `hosts redeploy <vm> --host <h>` kept the VM's model, one host h's libvirt
    does not list (KVM_CPU_MODELS: src/im_mad/remotes/kvm-probes.d/host/system/machines_models.rb),
    booted into BOOT_UNDEPLOY_FAILURE and left the manager down; its hint repeated the same command.
    The plan refuses, before any change, naming the hosts that offer the model and the target's own."""
    site = connect(deployed)
    manager = await _manager(site)
    await collect(partial(move_vm, site, await plan_move(site, manager.id, BROADWELL), timeouts=FAST, ledger=ledger))
    moved = await site.cloud.vm_info(manager.id)
    assert moved.cpu_model == "Broadwell-noTSX" and moved.summary.host_id == BROADWELL
    with pytest.raises(SiteError) as caught:
        await plan_redeploy(site, manager.id, WESTMERE)  # the model: the VM's own, Broadwell-noTSX
    error = caught.value
    assert error.title == f"Host {WESTMERE} kvm-westmere-01 does not offer CPU model Broadwell-noTSX"
    assert "Host 2 offers: qemu64 kvm64 Nehalem Westmere." in error.detail
    assert "Hosts that offer Broadwell-noTSX: " in error.detail and f"{BROADWELL} kvm-broadwell-01" in error.detail
    assert "0 kvm-cascadelake-01" in error.detail
    assert "`--cpu-model Westmere`" in error.detail and "Nothing was changed" in error.detail
    after = await site.cloud.vm_info(manager.id)
    assert after.summary.running and after.summary.host_id == BROADWELL
    # a model the host offers, or none, is planned as before
    assert (await plan_redeploy(site, manager.id, WESTMERE, "Westmere")).cpu_model == "Westmere"
    assert (await plan_redeploy(site, manager.id, WESTMERE, "")).cpu_model == ""
