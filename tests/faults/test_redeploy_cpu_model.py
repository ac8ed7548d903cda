"""`hosts redeploy <vm> --host <h>` and a CPU model the host cannot give (issue 22 item 4).

The platform matches no CPU model at deploy time: the scheduler's automatic requirements name only
CPU_MODEL/FEATURES (src/vm/VirtualMachine.cc, release-7.0.2 lines 1753-1768: `KVM_CPU_FEATURES =
"*f*"` per feature), and a deploy to a named host skips the scheduler; the KVM driver then asks
libvirt for exactly the VM's MODEL (`<model fallback='forbid'>`, src/vmm/LibVirtDriverKVM.cc lines
970 and 988-999), so a host whose libvirt does not list it as usable (KVM_CPU_MODELS, written by
src/im_mad/remotes/kvm-probes.d/host/system/machines_models.rb lines 114-124) fails the boot and
the VM is left in BOOT_UNDEPLOY_FAILURE. Before: the put-back kept such a model, booted into that
failure, and its "run it again" hint repeated the same failing command.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from tests.hosts.conftest import FAST, collect
from tests.hosts.test_move import BROADWELL, WESTMERE
from tui.__main__ import main
from tui.procedures.connection import SiteConnection
from tui.procedures.hosts.move_plan import move_command, plan_move, plan_redeploy
from tui.procedures.hosts.move_vm import MoveFailed, MoveLedger, move_vm
from tui.settings import Settings
from tui.sim.server import SimServer


def _manager(server: SimServer) -> tuple[int, int | None, str]:
    with server.site.lock:
        vm = next(v for v in server.site.vms.values() if v.name.startswith("manager_0"))
        cpu = next((v for k, v in vm.template if k == "CPU_MODEL" and isinstance(v, list)), [])
        return vm.id, vm.history[-1].host_id if vm.history else None, next((v for k, v in cpu if k == "MODEL"), "")


def test_the_cli_refuses_a_put_back_to_a_host_without_the_model_and_changes_nothing(
        sim_factory, env, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    server = env(sim_factory(scenario="deployed"))
    vm_id = _manager(server)[0]
    assert main(["hosts", "move", str(vm_id), "--host", str(BROADWELL), "--yes", "--timeout", "60"]) == 0
    capsys.readouterr()
    moved = _manager(server)
    assert moved[1:] == (BROADWELL, "Broadwell-noTSX")
    code = main(["hosts", "redeploy", str(vm_id), "--host", str(WESTMERE), "--yes", "--timeout", "60"])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    said = " ".join((out + err).split())
    assert f"Host {WESTMERE} kvm-westmere-01 does not offer CPU model Broadwell-noTSX" in said
    assert "Hosts that offer Broadwell-noTSX: " in said and f"{BROADWELL} kvm-broadwell-01" in said
    assert "--cpu-model Westmere" in said and "Nothing was changed" in said
    assert _manager(server) == moved  # still running where it was, with its model
    with server.site.lock:
        vm = server.site.vms[vm_id]
        assert vm.state == 3  # ACTIVE


def _site(server: SimServer) -> SiteConnection:
    return SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))


async def test_a_refused_boot_never_hints_the_same_failing_command(sim_factory, env) -> None:  # type: ignore[no-untyped-def]
    server = env(sim_factory(scenario="deployed"))
    site = _site(server)
    try:
        vm_id = _manager(server)[0]
        plan = await plan_move(site, vm_id, BROADWELL)
        with server.site.lock:  # the host's libvirt no longer offers the model it reported at plan time
            host = server.site.hosts[BROADWELL]
            host.template = [(k, " ".join(m for m in v.split() if m != plan.cpu_model) if k == "KVM_CPU_MODELS" else v)
                             for k, v in host.template]
        with pytest.raises(MoveFailed) as caught:
            await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=MoveLedger()))
        detail = caught.value.detail
        assert caught.value.vm_state.startswith("BOOT_UNDEPLOY_FAILURE")
        assert move_command(plan) not in detail and "Run it again" not in detail, detail
        assert "Running the same command again would fail the same way" in detail
        assert f"sitetk hosts redeploy {vm_id} --host {WESTMERE} --cpu-model ''" in detail  # put back
        assert f"--cpu-model {plan.cpu_model}" in detail and f"onehost show {BROADWELL}" in detail
    finally:
        await site.close()


async def test_a_host_that_reports_no_models_is_said_unknown(sim_factory, env) -> None:  # type: ignore[no-untyped-def]
    server = env(sim_factory(scenario="deployed"))
    with server.site.lock:
        host = server.site.hosts[WESTMERE]
        host.template = [(k, v) for k, v in host.template if k != "KVM_CPU_MODELS"]
    site = _site(server)
    try:
        vm_id = _manager(server)[0]
        plan: Any = await plan_redeploy(site, vm_id, WESTMERE, "Broadwell-noTSX")
        assert any("reports no KVM_CPU_MODELS" in w and "Broadwell-noTSX" in w and "not known" in w
                   for w in plan.warnings), plan.warnings
    finally:
        await site.close()


def _require_features(server: SimServer, vm_id: int, features: str) -> None:
    """Give the VM's CPU_MODEL a FEATURES list (as `onevm updateconf` would)."""
    with server.site.lock:
        vm = server.site.vms[vm_id]
        cpu = next((v for k, v in vm.template if k == "CPU_MODEL" and isinstance(v, list)), None)
        if cpu is None:
            cpu = []
            vm.template.append(("CPU_MODEL", cpu))
        cpu[:] = [(k, v) for k, v in cpu if k != "FEATURES"] + [("FEATURES", features)]


async def test_a_host_without_a_feature_the_vms_cpu_model_requires_is_refused(sim_factory, env) -> None:  # type: ignore[no-untyped-def]
    """CPU_MODEL/FEATURES are required of libvirt one by one (`<feature policy='require'>`,
    LibVirtDriverKVM.cc 1007-1018): a put-back or a move to a host without one would fail the boot."""
    server = env(sim_factory(scenario="deployed"))
    site = _site(server)
    try:
        vm_id = _manager(server)[0]
        _require_features(server, vm_id, "avx2,aes")
        with pytest.raises(Exception) as caught:
            await plan_redeploy(site, vm_id, WESTMERE, "Westmere")
        error: Any = caught.value
        assert error.title == f"Host {WESTMERE} kvm-westmere-01 lacks CPU feature(s) avx2 that VM {vm_id} requires"
        assert f"{BROADWELL} kvm-broadwell-01" in error.detail and "Nothing was changed" in error.detail
        with pytest.raises(Exception) as moved:
            await plan_move(site, vm_id, WESTMERE)
        assert "lacks CPU feature(s) avx2" in str(getattr(moved.value, "title", moved.value)) or \
            "not a suitable target" in str(getattr(moved.value, "title", ""))
        plan = await plan_move(site, vm_id)  # chosen: a host that has them
        with server.site.lock:
            chosen = server.site.hosts[plan.target_host_id].template
        flags = next(v for k, v in chosen if k == "KVM_CPU_FEATURES")
        assert "avx2" in flags and "aes" in flags
    finally:
        await site.close()


async def test_a_boot_refused_for_a_missing_feature_is_said(sim_factory, env) -> None:  # type: ignore[no-untyped-def]
    server = env(sim_factory(scenario="deployed"))
    site = _site(server)
    try:
        vm_id = _manager(server)[0]
        _require_features(server, vm_id, "avx2")
        plan = await plan_move(site, vm_id, BROADWELL)
        with server.site.lock:  # the host's flags changed after the plan (a BIOS setting, a microcode)
            host = server.site.hosts[BROADWELL]
            host.template = [(k, v.replace("avx2,", "") if k == "KVM_CPU_FEATURES" else v) for k, v in host.template]
        with pytest.raises(MoveFailed) as caught:
            await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=MoveLedger()))
        assert caught.value.vm_state.startswith("BOOT_UNDEPLOY_FAILURE")
        assert "does not provide required features: avx2" in caught.value.reason
        assert "Running the same command again would fail the same way" in caught.value.detail
    finally:
        await site.close()
