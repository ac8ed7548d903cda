"""`sitetk setup run`: from a fresh embedded site to a set-up one with the existing procedures,
resumable after a kill at several points and after work done by hand, with nothing doubled."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.procedure_run import run_procedure
from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import BRANCH, SITE_SETS, write_inputs
from tests.setup.observe import Observed, observe
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.site_config import SiteConfig
from tui.procedures.connection import SiteConnection
from tui.settings import Settings
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)

TOKEN = "app_automation_sites_token"
FAST = ("--poll", "0.05", "--timeout", "120", *SITE_SETS)


def _main_commits(server: SimServer) -> int:
    out = subprocess.run(["git", "-C", str(server.site.sites_repo), "rev-list", "--count", "main"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def assert_set_up(server: SimServer, seen: Observed, *, branch: str = BRANCH) -> None:
    """The done-when: a RUNNING toolkit, four tagged images, the key granted, the database VM on a
    compatible host, the object store's data disk at 30 GB, the branch holding a vault-encrypted
    core.yaml naming the object store VM."""
    assert seen.toolkit_templates == 1
    assert seen.toolkit_images == 5 and seen.tagged_images == 5  # each VM template has its own images
    assert [state for _, state in seen.live_services] == ["RUNNING"]
    assert seen.user_keys >= 1
    assert seen.db_vms and all(host and not flagged for _, host, flagged in seen.db_vms)
    assert seen.objectstore_disk_mb == 30 * 1024
    assert f"https://{_objectstore_ip(server)}:9000" in seen.core_yaml
    assert_components_enabled(seen)


def assert_components_enabled(seen: Observed) -> None:
    """The minimal component set and the recommended ones the library offers listed, the appliance
    ones with the IDs of downloaded appliance images (not the template's 0)."""
    config = SiteConfig.parse(seen.core_yaml, DEFAULT_NAMING)
    assert set(config.components()) == {"tn_bastion", "tn_vxlan", "tn_init", "vnet", "vm_kvm", "cluster",
                                        "core_net_cluster", "core_net_vm", "ran_sim"}
    for name in ("tn_bastion", "vm_kvm", "core_net_vm", "ran_sim"):
        ids = config.component_variables(name)
        assert int(ids["image_id"]) > 0 and int(ids["template_id"]) > 0, (name, ids)


def _objectstore_ip(server: SimServer) -> str:
    async def read() -> str:
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))
        try:
            await site.connect()
            services = [s for s in await site.flow.list_services() if s.state_name != "DONE"]
            vm_id = services[-1].role("objectstore").vm_ids[0]  # type: ignore[union-attr]
            return (await site.cloud.vm_info(vm_id)).summary.ips[0]
        finally:
            await site.close()
    return asyncio.run(read())


@pytest.fixture
def fresh(sim_factory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[SimServer, Path, dict[str, str]]:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    values = write_inputs(inputs)
    return server, inputs, values


# the whole setup, fresh and deployed, at every platform version (tests/conftest.py): the toolkit's
# deploy under the version's values key, the CLI helper step, the series' appliances, OneFlow's states
@pytest.mark.every_version
def test_fresh_site_to_set_up_then_nothing_to_do(fresh, capsys) -> None:
    server, inputs, values = fresh
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0, err
    assert "every mandatory step is done" in err
    seen = observe(server, BRANCH, values[TOKEN])
    assert_set_up(server, seen)
    ip = _objectstore_ip(server)
    assert f"https://{ip}:9000" in seen.core_yaml
    assert seen.branch_commits == _main_commits(server) + 1  # one commit: core.yaml filled, components enabled, checked whole
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert code == 0, [s for s in data["steps"] if s["state"] != "done" and s["mandatory"]]
    # again: nothing doubled, nothing committed
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0 and "every mandatory step is done" in err
    assert observe(server, BRANCH, values[TOKEN]) == seen


@pytest.mark.every_version
def test_deployed_site_moves_the_manager_grants_and_fills(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys,
                                                          tmp_path: Path) -> None:
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs, branch=EXISTING_SITE)
    data = json.loads(inputs.read_text())
    data["custom_attrs_values"][TOKEN] = SIM_VAULT_PASSWORD  # the demo branch's vault password
    inputs.write_text(json.dumps(data))
    before = observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD)
    assert before.db_vms and before.db_vms[0][2]  # the manager starts on a host without AVX
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0, err
    assert "database-host" in err and "grant" in err
    seen = observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD)
    assert [state for _, state in seen.live_services] == ["RUNNING"]
    assert seen.db_vms and not seen.db_vms[0][2]
    assert seen.user_keys == 1
    assert f"https://{_objectstore_ip(server)}:9000" in seen.core_yaml
    assert seen.branch_commits == before.branch_commits + 1  # one commit: filled, components enabled, checked whole
    assert seen.toolkit_templates == before.toolkit_templates  # no second download
    assert_components_enabled(seen)  # the demo branch listed them with the template's placeholder IDs


def _killed_at(server: SimServer, inputs: Path, marker: str) -> str:
    """Run `sitetk setup run` in a child process and SIGKILL it once a progress line has `marker`."""
    proc = subprocess.Popen([sys.executable, "-m", "tui", "setup", "run", "--input", str(inputs), "--yes", *FAST],
                            env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen: list[str] = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if marker in line:
                proc.kill()
                break
    finally:
        proc.wait(timeout=60)
        proc.stderr.close()
    assert proc.returncode == -9, f"{marker!r} never came:\n{''.join(seen[-20:])}"
    return "".join(seen)


#: the kill points, in the order a setup run passes them: each progress line marks a state a kill
#: may leave behind (what is done, what is half done)
KILL_POINTS = (
    "download: download ",          # images LOCKED, the service template created
    "[    ..] instantiate (",      # about to instantiate
    "instantiate: database VMs",   # the service deploying
    "[    ..] grant (",            # the key captured, not granted yet
    "components: vm_kvm",          # tn_bastion enabled in the working clone, vm_kvm's download under way
    "committed",                   # the commit made, not pushed
)


def test_killed_and_run_again_finishes_with_nothing_doubled(fresh, capsys) -> None:
    """SIGKILLed at each point in turn, each run taking up what the killed one left (the runs
    reach the points one after the other, so one site holds them all: a run per point, not a whole
    setup per point), then a last run finishes it with nothing doubled."""
    server, inputs, values = fresh
    for marker in KILL_POINTS:
        _killed_at(server, inputs, marker)
        assert all(count <= 1 for count in _component_downloads(server).values()), (marker, _component_downloads(server))
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0, err
    seen = observe(server, BRANCH, values[TOKEN])
    assert_set_up(server, seen)
    assert seen.user_keys == 1
    assert seen.branch_commits == _main_commits(server) + 1  # one commit: core.yaml filled, components enabled, checked whole
    assert f"https://{_objectstore_ip(server)}:9000" in seen.core_yaml
    assert_components_enabled(seen)
    assert _component_downloads(server) == {"Bastion": 1, "Ubuntu Base VM": 1, "Container Cluster": 1,
                                            "Core Network VM": 1, "UE and RAN Simulator": 1}


def _component_downloads(server: SimServer) -> dict[str, int]:
    """How many VM templates each component appliance has (a doubled download shows as 2)."""
    naming = server.site.naming
    with server.site.lock:
        names = [t.name for t in server.site.templates.values()]
    counts: dict[str, int] = {}
    for appliance in ("Bastion", "Ubuntu Base VM", "Container Cluster", "Core Network VM", "UE and RAN Simulator"):
        counts[appliance] = sum(1 for n in names if n.startswith(appliance) and not n.startswith(naming.toolkit_appliance_name))
    return counts


def test_a_download_done_by_hand_is_recognised(fresh, capsys) -> None:
    server, inputs, values = fresh

    async def by_hand() -> None:
        from tui.procedures.market.download import download_appliance, plan_download

        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))
        try:
            await site.connect()
            app = max((a for a in await site.cloud.list_marketapps() if a.name == site.naming.toolkit_appliance_name),
                      key=lambda a: a.version)
            plan = await plan_download(site, app.id, 1, "Site Toolkit by hand")
            await run_procedure(partial(download_appliance, site, plan, poll_interval=0.05, step_timeout=60))
        finally:
            await site.close()

    asyncio.run(by_hand())
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0, err
    assert "Download Site Toolkit" not in err
    assert_set_up(server, observe(server, BRANCH, values[TOKEN]))


def test_a_service_deleted_by_hand_is_deployed_again(fresh, capsys) -> None:
    server, inputs, values = fresh
    assert run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)[0] == 0
    first = observe(server, BRANCH, values[TOKEN])

    async def oneflow_delete() -> None:
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))
        try:
            await site.connect()
            await site.flow.delete_service(first.live_services[0][0])
            for _ in range(2000):
                if not [s for s in await site.flow.list_services() if s.state_name != "DONE"]:
                    return
                await asyncio.sleep(0.02)
            raise AssertionError("the service was not removed")
        finally:
            await site.close()

    asyncio.run(oneflow_delete())
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert code == 3 and steps(data)["instantiate"]["state"] == "to do"
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0, err
    seen = observe(server, BRANCH, values[TOKEN])
    assert_set_up(server, seen)
    assert seen.live_services[0][0] != first.live_services[0][0]
    assert seen.toolkit_templates == 1 and seen.toolkit_images == 5
    assert f"https://{_objectstore_ip(server)}:9000" in seen.core_yaml


def test_dry_run_previews_the_next_step_and_changes_nothing(fresh, capsys) -> None:
    server, inputs, values = fresh
    before = observe(server, BRANCH, values[TOKEN])
    code, data, _ = run(capsys, "setup", "run", "--input", str(inputs), "--dry-run", "--json")
    assert code == 0
    assert data["dry_run"] is True and "onemarketapp export" in str(data["preview"])
    assert observe(server, BRANCH, values[TOKEN]) == before


@pytest.mark.parametrize("as_json", [False, True])
def test_read_only_previews_then_the_pipeline_refuses(sim_factory, monkeypatch, capsys, tmp_path: Path,
                                                     as_json: bool) -> None:
    """`setup run --read-only`: the next step's preview and the checklist, then the first changing
    step refused by `run_operation` (one audit record, exit 2); no secret asked (none is left in the
    file and there is no terminal), no confirmation asked (no --yes), nothing changed."""
    from tui.procedures.audit import AUDIT_ENV, AuditLog

    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    audit = tmp_path / "audit.jsonl"
    monkeypatch.setenv(AUDIT_ENV, str(audit))
    inputs = tmp_path / "inputs.json"
    values = write_inputs(inputs, leave_out=(TOKEN, "app_automation_password"))
    before = observe(server, BRANCH, values[TOKEN])
    code, out, err = run(capsys, "--read-only", "setup", "run", "--input", str(inputs), *(("--json",) if as_json else ()))
    assert code == 2, err
    assert "no terminal" not in err
    entries = AuditLog(audit).entries()
    assert [e["outcome"] for e in entries] == ["refused"]
    assert entries[0]["details"]["reason"] == "read-only mode"
    if as_json:
        assert out["ok"] is False and "read-only" in (out["error"]["title"] + out["error"]["detail"]).lower()
        assert out["step"] and any("preview" in (e.get("data") or {}) for e in out["events"])
        assert out["checklist"]["steps"]
    else:
        assert "read-only" in err.lower() and "refused" in err
        preview, _, checklist = out.partition("\nPreflight\n")
        assert preview.startswith("Download Site Toolkit") and "$ onemarketapp export 0" in preview
        assert "Toolkit appliance downloaded" in checklist and "Automation cloud user" in checklist
    assert observe(server, BRANCH, values[TOKEN]) == before


def test_missing_secrets_without_a_terminal_stop_before_any_change(sim_factory, monkeypatch, capsys,
                                                                   tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    values = write_inputs(inputs, leave_out=(TOKEN, "app_automation_password"))
    before = observe(server, BRANCH, values[TOKEN])
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes")
    assert code == 2
    assert TOKEN in err and "app_automation_password" in err and "no terminal" in err
    assert observe(server, BRANCH, values[TOKEN]) == before


def test_a_blocked_step_stops_the_run_with_the_fix(fresh, capsys) -> None:
    server, inputs, values = fresh
    with server.site.lock:
        template = server.site.vnets[1].template
        template[:] = [(k, v) for k, v in template if k != "GUEST_MTU"] + [("GUEST_MTU", "1500")]
    before = observe(server, BRANCH, values[TOKEN])
    code, data, _ = run(capsys, "setup", "run", "--input", str(inputs), "--yes", "--json")
    assert code == 1
    assert data["step"] == "trial-network"
    assert "GUEST_MTU to 1450" in data["error"]["detail"]
    assert observe(server, BRANCH, values[TOKEN]) == before
