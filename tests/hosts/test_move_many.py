"""Several flagged VMs moved together (`hosts move --all-flagged`, `M` on the hosts screen): the
multi-VM run once crashed with `NameError: replace` as soon as two VMs were flagged (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui.__main__ import main
from tui.cli.common import EXIT_OK
from tui.sim.server import SimServer

CASCADELAKE = 0


def _flag_a_second_database_vm(server: SimServer) -> int:
    with server.site.lock:
        manager = next(vm for vm in server.site.vms.values() if vm.name.startswith("manager_"))
        other = next(vm for vm in server.site.vms.values()
                     if vm.id != manager.id and vm.name.endswith(manager.name.split("_", 2)[-1]))
        other.user_template.append(("DOCUMENT_DB", "YES"))
    return other.id


def test_moving_every_flagged_vm_moves_both(deployed: SimServer, monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ONE_AUTH", str(deployed.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONE_XMLRPC", deployed.xmlrpc_url)
    monkeypatch.setenv("SITETK_AUDIT_LOG", str(tmp_path / "audit.log"))
    other = _flag_a_second_database_vm(deployed)
    assert main(["hosts", "check", "--json"]) != EXIT_OK
    capsys.readouterr()
    code = main(["hosts", "move", "--all-flagged", "--yes", "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK, answer
    moved = {plan["vm_id"] for plan in answer["plans"]}
    assert other in moved and len(moved) == 2
    # every step of both VMs was reported, named after its VM
    assert {e["step"].split(":")[0] for e in answer["events"]} == {f"VM {vm_id}" for vm_id in moved}
    assert main(["hosts", "check", "--json"]) == EXIT_OK
