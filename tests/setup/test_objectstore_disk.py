"""The objectstore-disk step: done only when disk0 of the object store VM, read from the VM, is at
the wanted size (default 30G, `--disk-size`); `setup run` grows it with the same operation as
`sitetk toolkit disk --apply` (previewed with `onevm disk-resize`), waits for it, and a re-run
changes nothing; too little room in the disk's datastore fails the step with the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import write_inputs
from tui.procedures.audit import AUDIT_ENV
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)
TOKEN = "app_automation_sites_token"
STEP = "objectstore-disk"


@pytest.fixture
def deployed(sim_factory, monkeypatch, tmp_path: Path) -> tuple[SimServer, Path, Path]:
    """The deployed scenario, the input file it was deployed with, its own audit log."""
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch, vault_file=False)
    audit = tmp_path / "audit.jsonl"
    monkeypatch.setenv(AUDIT_ENV, str(audit))
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs, branch=EXISTING_SITE)
    data = json.loads(inputs.read_text())
    data["custom_attrs_values"][TOKEN] = SIM_VAULT_PASSWORD
    inputs.write_text(json.dumps(data))
    return server, inputs, audit


def _disk0_mb(server: SimServer) -> tuple[int, int]:
    with server.site.lock:
        vm = next(vm for vm in server.site.vms.values() if vm.name.startswith("objectstore_") and vm.state == 3)
        disk = dict(next(v for k, v in vm.template if k == "DISK" and ("DISK_ID", "0") in v))
        return vm.id, int(disk["SIZE"])


def test_the_step_grows_disk0_to_30g_and_is_done_after(deployed, capsys) -> None:
    server, inputs, audit = deployed
    vm_id, before = _disk0_mb(server)
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)[STEP]
    assert step["state"] == "to do" and step["mandatory"], step
    assert f"VM {vm_id} " in step["evidence"][0] and f"{before} MB), wanted 30.0 GB (30720 MB)" in step["evidence"][0]
    assert "system datastore 0 'system'" in step["evidence"][1]
    assert step["command"] == f"sitetk setup run --input FILE --only {STEP}"

    code, data, _ = run(capsys, "setup", "run", "--input", str(inputs), "--only", STEP, "--dry-run", "--json")
    assert code == 0 and [c["cli"] for c in data["preview"]["changes"]] == [f"onevm disk-resize {vm_id} 0 30G"]
    assert _disk0_mb(server)[1] == before

    code, data, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", STEP, "--yes", "--poll", "0.02",
                          "--json")
    assert code == 0, (data, err)
    assert _disk0_mb(server)[1] == 30720
    assert steps(data["checklist"])[STEP]["state"] == "done"
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["action"], r["outcome"]) for r in records if r["action"] == "vm.disk.resize"] == [("vm.disk.resize", "ok")]

    # again: nothing to do, nothing sent; a smaller size is done too, a larger one is not
    code, data, _ = run(capsys, "setup", "run", "--input", str(inputs), "--only", STEP, "--yes", "--json")
    assert code == 0 and data["events"][-1]["message"].startswith(f"{STEP} is done")
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--disk-size", "20G", "--json")
    assert steps(data)[STEP]["state"] == "done" and steps(data)[STEP]["title"] == "Object store data disk at 20G"
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--disk-size", "40960", "--json")
    assert steps(data)[STEP]["state"] == "to do" and steps(data)[STEP]["title"] == "Object store data disk at 40G"
    assert len([line for line in audit.read_text().splitlines() if '"vm.disk.resize"' in line]) == 1


def test_too_little_room_fails_the_step_and_the_run_sends_nothing(deployed, capsys) -> None:
    server, inputs, audit = deployed
    vm_id, before = _disk0_mb(server)
    with server.site.lock:
        server.site.datastores[0].free_mb = 2048
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)[STEP]
    assert step["state"] == "failed"
    assert any("has 2.0 GB (2048 MB) free; growing disk 0 needs" in e for e in step["evidence"])
    assert "smaller --disk-size" in step["action"]
    code, data, _ = run(capsys, "setup", "run", "--input", str(inputs), "--only", STEP, "--yes", "--json")
    assert code == 1 and data["step"] == STEP
    assert _disk0_mb(server)[1] == before
    assert not audit.exists() or '"vm.disk.resize"' not in audit.read_text()
    # a size that fits the room is possible
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--disk-size", f"{before + 1024}M", "--json")
    assert steps(data)[STEP]["state"] == "to do"


def test_a_bad_disk_size_is_a_usage_error(deployed, capsys) -> None:
    _, inputs, _ = deployed
    with pytest.raises(SystemExit) as info:
        run(capsys, "setup", "status", "--input", str(inputs), "--disk-size", "30 gigs")
    assert info.value.code == 2 and "is not a size" in capsys.readouterr().err
