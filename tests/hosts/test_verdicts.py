"""Verdicts that never say "fine" about what they do not know, against the embedded site.

- A database VM whose verdict is unknown (its host reports no CPU features) and that is not ready
  counts as at risk: `sitetk hosts check` exits 3 and says why, with the fix.
- Disabled, offline, failed and unmonitored hosts are never "compatible" and never targets: their
  verdict names the state and how to bring the host back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hosts.conftest import Connect
from tui.__main__ import main
from tui.cli.common import EXIT_FINDINGS, EXIT_OK
from tui.domain.cpu import HOST_CHECKED, HostVerdictKind, VmVerdictKind, evaluate_host
from tui.domain.hosts import Host
from tui.errors import SiteError
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.procedures.hosts.move_plan import plan_move, plan_redeploy
from tui.sim.server import SimServer

WESTMERE, BROADWELL_DISABLED, CASCADELAKE_OFFLINE = 2, 5, 6
GOOD_FEATURES = ("sse4_2", "avx")


def _host(state: int, features: tuple[str, ...] | None = GOOD_FEATURES) -> Host:
    return Host(id=7, name="h7", state=state, state_name=f"S{state}", im_mad="kvm", vm_mad="kvm", cluster_id=0,
                cluster="default", arch="x86_64", model_name="Xeon", kvm_cpu_model="Broadwell-noTSX",
                kvm_cpu_models=("Broadwell-noTSX",), kvm_cpu_features=features, hypervisor="kvm", total_cpu=800,
                used_cpu=0, max_cpu=800, total_mem_kb=16 << 20, used_mem_kb=0, max_mem_kb=16 << 20, running_vms=0,
                vm_ids=())


@pytest.mark.parametrize(("state", "word", "fix"), [
    (4, "disabled", "onehost enable 7"), (7, "disabled", "onehost enable 7"), (8, "offline", "onehost enable 7"),
    (3, "error", "onehost show 7"), (5, "error", "onehost show 7"), (0, "not monitored", "onehost show 7"),
    (6, "not monitored", "onehost show 7"),
])
def test_a_host_out_of_service_is_unavailable_whatever_its_cpu(state: int, word: str, fix: str) -> None:
    verdict = evaluate_host(_host(state))
    assert verdict.kind is HostVerdictKind.UNAVAILABLE and verdict.word == word
    assert verdict.cpu_kind is HostVerdictKind.COMPATIBLE  # the CPU alone would pass
    assert "its CPU: compatible" in verdict.reasons[1]
    assert fix in verdict.fix and verdict.checked == HOST_CHECKED


def test_every_host_verdict_says_what_it_checked_and_the_fix() -> None:
    good = evaluate_host(_host(2))
    assert good.kind is HostVerdictKind.COMPATIBLE and good.fix == "" and "KVM_CPU_FEATURES" in good.checked
    silent = evaluate_host(_host(2, features=None))
    assert silent.kind is HostVerdictKind.UNKNOWN and "onehost sync 7 --force" in silent.fix
    no_avx = evaluate_host(_host(2, features=("sse4_2",)))
    assert no_avx.kind is HostVerdictKind.INCOMPATIBLE and "sitetk hosts move" in no_avx.fix


async def test_disabled_and_offline_hosts_are_not_compatible_nor_targets(sim: SimServer, connect: Connect) -> None:
    inventory = await load_inventory(connect(sim))
    rows = {row.id: row for row in inventory.hosts}
    for host_id, word in ((BROADWELL_DISABLED, "disabled"), (CASCADELAKE_OFFLINE, "offline")):
        row = rows[host_id]
        assert row.verdict.kind is HostVerdictKind.UNAVAILABLE and row.verdict.word == word
        assert not row.compatible and row not in inventory.compatible_hosts
        assert host_id not in [ranked.host.id for ranked in inventory.ranking.eligible]
        data = row.as_json()
        assert data["verdict"] == "unavailable" and data["cpu_verdict"] == "compatible"
        assert f"onehost enable {host_id}" in data["fix"]
    assert [row.id for row in inventory.compatible_hosts] == [0, 1]


async def test_a_disabled_host_is_refused_as_move_and_redeploy_target(deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    [manager] = (await load_inventory(site)).db_vms
    with pytest.raises(SiteError, match="not a suitable target") as caught:
        await plan_move(site, manager.id, BROADWELL_DISABLED)
    assert "DISABLED" in caught.value.detail and "onehost enable 5" in caught.value.detail
    with pytest.raises(SiteError, match="cannot take the VM") as caught:
        await plan_redeploy(site, manager.id, CASCADELAKE_OFFLINE)
    assert "OFFLINE" in caught.value.detail


def _silence_host_features(server: SimServer, host_id: int) -> None:
    """The host's monitoring stops reporting KVM_CPU_FEATURES (an older probe)."""
    with server.site.lock:
        host = server.site.hosts[host_id]
        host.template = [item for item in host.template if item[0] != "KVM_CPU_FEATURES"]


async def test_unknown_verdict_on_a_vm_that_is_not_ready_is_at_risk(deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    _silence_host_features(deployed, WESTMERE)
    inventory = await load_inventory(site)
    [manager] = inventory.db_vms
    assert manager.verdict.kind is VmVerdictKind.UNKNOWN and not manager.ready
    assert manager.at_risk and manager in inventory.at_risk
    assert "reports no CPU features" in manager.risk and "not ready" in manager.risk
    assert f"sitetk hosts move {manager.id}" in inventory.fix(manager)


@pytest.fixture
def site_env(deployed: SimServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> SimServer:
    monkeypatch.setenv("ONE_AUTH", str(deployed.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONE_XMLRPC", deployed.xmlrpc_url)
    monkeypatch.setenv("ONE_XMLRPC_TIMEOUT", "10")
    monkeypatch.setenv("SITETK_AUDIT_LOG", str(tmp_path / "audit.log"))
    return deployed


def test_hosts_check_exits_3_on_an_unknown_verdict_while_not_ready(site_env: SimServer,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _silence_host_features(site_env, WESTMERE)
    assert main(["hosts", "check"]) == EXIT_FINDINGS
    out = capsys.readouterr().out
    assert "At risk" in out and "unknown" in out and "reports no CPU features" in out and "not ready" in out
    assert "fix: move it: `sitetk hosts move" in out and "Checked:" in out

    assert main(["hosts", "check", "--json"]) == EXIT_FINDINGS
    data = json.loads(capsys.readouterr().out)
    [vm] = data["document_db_vms"]
    assert data["at_risk"] == [vm["id"]] and vm["verdict"] == "unknown" and vm["at_risk"]
    assert "not ready" in vm["risk"] and vm["fix"].startswith("move it")

    assert main(["hosts", "list"]) == EXIT_OK
    listed = capsys.readouterr().out
    assert "disabled: host state DISABLED" in listed and "offline: host state OFFLINE" in listed
