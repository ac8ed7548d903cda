"""`sitetk hosts ...` headless, against the embedded site reached through the usual environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tui.__main__ import main
from tui.cli.common import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from tui.sim.server import SimServer

WESTMERE, BROADWELL = 2, 1


@pytest.fixture
def site_env(deployed: SimServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> SimServer:
    """The environment a frontend user would have: ONE_AUTH and ONE_XMLRPC name the site."""
    monkeypatch.setenv("ONE_AUTH", str(deployed.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONE_XMLRPC", deployed.xmlrpc_url)
    monkeypatch.setenv("ONE_XMLRPC_TIMEOUT", "10")
    monkeypatch.setenv("SITETK_AUDIT_LOG", str(tmp_path / "audit.log"))
    return deployed


def _json(capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    return json.loads(capsys.readouterr().out)


def _manager_id(capsys: pytest.CaptureFixture[str]) -> int:
    assert main(["hosts", "check", "--json"]) == EXIT_FINDINGS
    return _json(capsys)["at_risk"][0]


def test_list_shows_hosts_and_database_vms(site_env: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hosts", "list"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "kvm-westmere-01" in out and "incompatible: no AVX" in out
    assert "Cascadelake-Server-noTSX *" in out  # known-good mark
    assert "manager_0_(service_1)" in out

    assert main(["hosts", "list", "--json"]) == EXIT_OK
    data = _json(capsys)
    hosts = {h["name"]: h for h in data["hosts"]}
    assert hosts["kvm-westmere-01"]["avx"] is False and hosts["kvm-legacy-01"]["avx"] is None
    assert hosts["arm-ampere-01"]["verdict"] == "incompatible"
    assert data["targets"] == [0, 1]


def test_check_exits_3_while_a_database_vm_is_at_risk_and_0_after_the_move(
        site_env: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hosts", "check"]) == EXIT_FINDINGS
    assert "At risk" in capsys.readouterr().out
    vm_id = _manager_id(capsys)

    assert main(["hosts", "move", str(vm_id), "--host", str(BROADWELL), "--yes", "--json", "--timeout", "60"]) == EXIT_OK
    result = _json(capsys)
    assert result["ok"] and result["plans"][0]["cpu_model"] == "Broadwell-noTSX"
    assert [e["state"] for e in result["events"]][-1] == "done"

    assert main(["hosts", "check", "--json"]) == EXIT_OK
    assert _json(capsys)["at_risk"] == []


def test_dry_run_prints_the_preview_and_changes_nothing(site_env: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    vm_id = _manager_id(capsys)
    assert main(["hosts", "move", str(vm_id), "--dry-run"]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"onevm undeploy {vm_id}" in out and f"onevm deploy {vm_id} 0" in out
    assert main(["hosts", "move", str(vm_id), "--dry-run", "--json"]) == EXIT_OK
    assert _json(capsys)["preview"]["destructive"] is True
    assert main(["hosts", "check", "--json"]) == EXIT_FINDINGS  # still at risk


def test_bad_requests_exit_with_the_right_codes(site_env: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    vm_id = _manager_id(capsys)
    # an incompatible target is refused before anything changes
    assert main(["hosts", "move", str(vm_id), "--host", str(WESTMERE), "--yes"]) == EXIT_FAILED
    assert "not a suitable target" in capsys.readouterr().err
    # no confirmation on a non-interactive stdin
    assert main(["hosts", "move", str(vm_id)]) == EXIT_USAGE
    assert "refusing without --yes" in capsys.readouterr().err
    # read-only mode refuses every move
    assert main(["--read-only", "hosts", "move", str(vm_id), "--yes", "--json"]) == EXIT_USAGE
    assert "read-only" in _json(capsys)["error"]["detail"]
    # a VM id or --all-flagged, not both, not neither
    assert main(["hosts", "move", "--yes"]) == EXIT_USAGE
    assert main(["hosts", "move", str(vm_id), "--all-flagged", "--yes"]) == EXIT_USAGE
    assert main(["hosts", "check", "--json"]) == EXIT_FINDINGS


def test_a_failed_move_reports_step_and_state_then_resumes(site_env: SimServer,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    vm_id = _manager_id(capsys)
    site_env.site.faults.fail_next_deploys = 1
    assert main(["hosts", "move", str(vm_id), "--yes", "--json", "--timeout", "60"]) == EXIT_FAILED
    failure = _json(capsys)["failure"]
    assert failure["step"] == "deploy" and failure["vm_state"].startswith("UNDEPLOYED")
    assert failure["resume"] == f"sitetk hosts move {vm_id} --host 0"

    assert main(["hosts", "move", str(vm_id), "--yes", "--timeout", "60"]) == EXIT_OK
    err = capsys.readouterr().err
    assert "[  skip] undeploy" in err and "[    ok] wait ready" in err


def test_no_credentials_is_a_clear_failure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ONE_AUTH", str(tmp_path / "missing"))
    monkeypatch.setenv("ONE_XMLRPC", "http://127.0.0.1:9/RPC2")
    assert main(["hosts", "list", "--json"]) == EXIT_FAILED
    assert _json(capsys)["error"]["title"] == "No credentials for the cloud"
