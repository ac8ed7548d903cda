"""Re-runs find their own work: `toolkit deploy` run again after a failure or an interrupted wait
follows the service it made from the same inputs instead of creating another (24 VMs after six
re-runs, before); another name is another deployment."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Callable

import pytest

from tests.faults.conftest import PointAt
from tests.faults.processes import Runner
from tests.toolkit.test_cli import frontend, run, write_inputs  # noqa: F401 (fixture)
from tui.sim.server import SimServer

SERVICE = 100  # the document type of a OneFlow service


def _services(server: SimServer) -> list[int]:
    with server.site.lock:
        return sorted(d.id for d in server.site.documents.values() if d.type == SERVICE)


def test_a_deploy_run_again_after_a_failure_follows_the_failed_service_instead_of_creating_another(
        frontend: SimServer, env: PointAt, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:  # noqa: F811
    env(frontend)
    inputs = write_inputs(frontend, tmp_path / "inputs.json", capsys, secrets=True)
    frontend.site.faults.fail_role = "automation"
    argv = ("toolkit", "deploy", "--input", str(inputs), "--wait", "--yes", "--json", "--poll", "0.05",
            "--timeout", "60")
    code, first, _ = run(capsys, *argv)
    assert code == 1 and "FAILED_DEPLOYING" in json.dumps(first["error"])
    made = _services(frontend)
    assert len(made) == 1
    for _ in range(3):
        code, again, _ = run(capsys, *argv)
        assert code == 1 and "FAILED_DEPLOYING" in json.dumps(again["error"])
        step = again["events"][1]
        assert step["step"] == "instantiate" and step["state"] == "skipped" and step["data"]["service_id"] == made[0]
        assert "made earlier from the same inputs: following it instead of creating another" in step["message"]
    assert _services(frontend) == made  # no new service, no new VMs


def test_a_deploy_run_again_after_an_unfollowed_start_follows_it_to_running(
        frontend: SimServer, env: PointAt, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:  # noqa: F811
    env(frontend)
    inputs = write_inputs(frontend, tmp_path / "inputs.json", capsys, secrets=True)
    code, first, _ = run(capsys, "toolkit", "deploy", "--input", str(inputs), "--yes", "--json")
    assert code == 0, first
    made = _services(frontend)
    code, again, _ = run(capsys, "toolkit", "deploy", "--input", str(inputs), "--wait", "--yes", "--json",
                         "--poll", "0.05", "--timeout", "60")
    assert code == 0, again
    assert again["result"]["service_id"] == made[0] and again["result"]["record"]["state"] == "RUNNING"
    assert _services(frontend) == made

    other = tmp_path / "other.json"  # another name: another deployment, made only when asked for by that name
    data = json.loads(inputs.read_text())
    data["name"] = "Site Toolkit second"
    other.write_text(json.dumps(data))
    other.chmod(0o600)
    code, third, _ = run(capsys, "toolkit", "deploy", "--input", str(other), "--yes", "--json")
    assert code == 2 and third["error"]["title"] == "A toolkit is already deployed" and _services(frontend) == made
    code, third, _ = run(capsys, "toolkit", "deploy", "--input", str(other), "--yes", "--json",
                         "--another", "Site Toolkit second")
    assert code == 0 and third["result"]["service_id"] not in made
    assert len(_services(frontend)) == 2


def test_a_deploy_stopped_by_a_hang_up_is_followed_by_the_next_run(
        frontend: SimServer, env: PointAt, capsys: pytest.CaptureFixture[str], tmp_path: Path,  # noqa: F811
        sitetk: Callable[[SimServer], Runner]) -> None:
    env(frontend)
    inputs = write_inputs(frontend, tmp_path / "inputs.json", capsys, secrets=True)
    runner = sitetk(frontend)
    frontend.site.hold_clock()  # the VMs stay in their boot: the session drops while the deploy is followed
    argv = ("toolkit", "deploy", "--input", str(inputs), "--wait", "--yes", "--poll", "0.05", "--timeout", "120")
    run = runner.start(*argv)
    run.wait_for_line("created")
    run.process.send_signal(signal.SIGHUP)
    assert run.finish() == 128 + signal.SIGHUP, run.stderr
    assert "stopped following" in run.stderr and "run the same command again" in run.stderr
    made = _services(frontend)
    assert len(made) == 1
    for _ in range(frontend.site.pending_events()):  # what was held happens now, and the site runs on
        frontend.site.run_next_event()
    frontend.site.release_clock()
    code, again = runner.run_here(*argv)
    assert code == 0, again.stderr
    assert "made earlier from the same inputs: following it instead of creating another" in again.stderr
    assert _services(frontend) == made
