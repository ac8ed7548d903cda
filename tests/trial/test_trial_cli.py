"""`sitetk trial run|status|destroy` on the deployed embedded site whose manager answers: the test
trial network activates (a VXLAN network and a bastion VM appear in the cloud) and is reported;
a failing activation is reported with the pipeline and the manager's log and leaves nothing after
destroy; bad input (a wrong admin password, the manager unreachable, a timeout, hostile text in
the log); previews with curl lines holding no secret; audit records; read-only refusals."""

from __future__ import annotations

import json
import re
import threading

import pytest

from tests.setup.conftest import run
from tui.sim.manager_api import _admin, manager_of, manager_vm
from tui.sim.server import SimServer
from tui.timing import Clock

pytestmark = pytest.mark.timeout(300)
FAST = ("--poll", "0.02")


def _live(server: SimServer, tn_id: str) -> tuple[list[str], list[str]]:
    """Names of the live VMs and the networks the trial network made in the cloud."""
    with server.site.lock:
        vms = [vm.name for vm in server.site.vms.values() if vm.name.startswith(f"{tn_id}-") and vm.state != 6]
        nets = [n.name for n in server.site.vnets.values() if n.name.startswith(f"{tn_id}-")]
    return vms, nets


def _secrets(server: SimServer) -> tuple[str, ...]:
    with server.site.lock:
        return (_admin(server.site, manager_vm(server.site))[1],)


def test_run_activates_reports_and_destroy_leaves_nothing(trial_site, capsys) -> None:
    server, inputs, audit = trial_site
    code, data, err = run(capsys, "trial", "run", "--dry-run", "--json")
    assert code == 0, (data, err)
    commands = data["preview"]["changes"]
    proxy = f"curl -x {server.market_url}"  # the manager VM's address, through the site's port as a proxy
    assert [c["cli"].split(" -H ")[0].split(" -u ")[0] for c in commands][:3] == [
        f"{proxy} -X POST", f"{proxy} -X POST", f"{proxy} -X PUT"]
    assert commands[2]["cli"].endswith(":5000/api/v1/trial-networks/sitetktest/activate")
    text = json.dumps(data)
    assert all(secret not in text for secret in _secrets(server)) and "demo-sites-token" not in text
    assert "deployment_site_token=<VAULT_PASSWORD_FILE" in commands[1]["cli"]
    assert data["plan"]["manager"]["user_source"].startswith("the manager VM")
    assert data["plan"]["checked_against"].startswith("TNLCM v0.5.2")
    assert "its API as TNLCM v0.5.2" in commands[0]["description"]
    assert _live(server, "sitetktest") == ([], [])

    code, data, err = run(capsys, "trial", "run", "--yes", "--json", *FAST)
    assert code == 0, (data, err)
    assert data["result"]["state"] == "activated" and data["result"]["pipeline"] == "TNLCM/TN_DEPLOY_sitetktest"
    assert "sitetktest-tn_bastion" in data["result"]["report"]
    assert _live(server, "sitetktest") == (["sitetktest-tn_bastion"], ["sitetktest-tn_vxlan"])
    states = [e["message"] for e in data["events"]]
    assert any("activating: waiting for the manager's deploy pipeline" in m for m in states), states

    # again: already activated, nothing created twice
    code, data, _ = run(capsys, "trial", "run", "--yes", "--json", *FAST)
    assert code == 0 and data["result"]["already"] and len(_live(server, "sitetktest")[0]) == 1

    code, data, _ = run(capsys, "trial", "status", "--json")
    assert code == 0 and data["state"] == "activated" and "sitetktest-tn_vxlan" in data["report"]

    code, data, err = run(capsys, "trial", "destroy", "--yes", "--json")
    assert code == 0, (data, err)
    assert data["result"]["steps"] == ["destroy", "purge"]
    assert _live(server, "sitetktest") == ([], [])
    with server.site.lock:
        assert manager_of(server.site).trial_networks == {}
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["action"], r["outcome"]) for r in records] == [("trial_network.run", "ok"),
                                                             ("trial_network.destroy", "ok")]
    assert all(secret not in audit.read_text() for secret in _secrets(server))
    code, data, _ = run(capsys, "trial", "destroy", "--yes", "--json")
    assert code == 0 and data["events"] == []


def test_a_failing_activation_shows_the_pipeline_and_log_and_destroy_leaves_nothing(trial_site, capsys) -> None:
    server, inputs, audit = trial_site
    hostile = "ERROR: ansible failed \x1b]0;owned\x07\x1b[2J on bastion\rhidden \u202eevil"
    server.site.faults.manager_fail_activation = hostile
    code, data, err = run(capsys, "trial", "run", "--yes", *FAST)
    assert code == 1
    assert "Trial network sitetktest failed to activate (failed-activation)" in err
    assert "The pipeline that failed: TNLCM/TN_DEPLOY_sitetktest" in err
    assert "The end of the manager's log:" in err and "Trial network failed-activation" in err
    assert "\x1b" not in err and "\r" not in err and "\u202e" not in err
    assert "\\x1b]0;owned" in err
    assert _live(server, "sitetktest") == (["sitetktest-tn_bastion"], ["sitetktest-tn_vxlan"])
    code, data, _ = run(capsys, "trial", "status", "--json")
    assert code == 0 and data["state"] == "failed-activation" and "\x1b" not in data["log_tail"]
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert (records[-1]["action"], records[-1]["outcome"]) == ("trial_network.run", "failed")
    assert records[-1]["details"]["pipeline"] == "TNLCM/TN_DEPLOY_sitetktest"

    code, data, err = run(capsys, "trial", "destroy", "--yes", "--json")
    assert code == 0 and data["result"]["steps"] == ["destroy", "purge"], (data, err)
    assert _live(server, "sitetktest") == ([], [])
    with server.site.lock:  # purged: the manager holds no record of it either
        assert manager_of(server.site).trial_networks == {}


def test_a_wrong_admin_password_is_refused_by_the_manager(trial_site, capsys) -> None:
    server, inputs, audit = trial_site  # the input file's manager password is not the deployed one
    code, data, err = run(capsys, "trial", "run", "--input", str(inputs), "--yes", "--json", *FAST)
    assert code == 1, data
    assert "The manager refused the login of 'admin' (HTTP 401)" in json.dumps(data)
    secret = json.loads(inputs.read_text())["custom_attrs_values"]["app_manager_admin_password"]
    assert secret not in json.dumps(data) and secret not in err
    assert _live(server, "sitetktest") == ([], [])


def test_an_unreachable_manager_is_said_with_its_address(trial_site, capsys, monkeypatch, unused_port) -> None:
    server, _, _ = trial_site
    monkeypatch.setenv("SITETK_MANAGER_URL", f"http://127.0.0.1:{unused_port}")
    code, data, _ = run(capsys, "trial", "run", "--yes", "--json", *FAST)
    assert code == 1 and f"Nothing listening at http://127.0.0.1:{unused_port}" in json.dumps(data), data


def test_a_manager_whose_database_is_down_does_not_answer(sim_factory, monkeypatch, capsys) -> None:
    """The deployed scenario as it is: the manager VM on a host without AVX (DB_ERROR)."""
    from tests.setup.conftest import point_at

    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch)
    monkeypatch.setenv("SITETK_GUEST_PROXY", server.market_url)
    code, data, _ = run(capsys, "trial", "run", "--dry-run", "--json")
    assert code == 0 and any("reports DB_ERROR" in w for w in data["preview"]["warnings"]), data
    assert data["plan"]["manager"]["url"].endswith(":5000") and data["plan"]["manager"]["proxy"] == server.market_url
    assert data["preview"]["changes"][0]["cli"].startswith(f"curl -x {server.market_url} -X POST -u ")
    code, data, _ = run(capsys, "trial", "run", "--yes", "--json", *FAST)
    assert code == 1 and "Nothing answering at http://" in data["error"]["title"], data
    assert "(through the proxy" in data["error"]["title"]


class _ClockPastTheWait(threading.Event):
    """The manager's hold (`faults.manager_hold`: the pipeline waits for it once the manager has taken
    the activation) that first moves the run's clock `seconds` on: past the wait's timeout, which
    the run then reaches at its next look instead of waiting it out."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        super().__init__()
        self.clock, self.seconds = clock, seconds

    def wait(self, timeout: float | None = None) -> bool:
        self.clock.advance(self.seconds)
        return super().wait(timeout)


def test_a_slow_activation_stops_waiting_at_the_timeout_and_status_follows(trial_site, capsys,
                                                                           driven_clock: Clock) -> None:
    server, _, _ = trial_site
    held = server.site.faults.manager_hold = _ClockPastTheWait(driven_clock, 601)  # held until the test releases it
    try:
        code, data, _ = run(capsys, "trial", "run", "--yes", "--json", "--timeout", "600", *FAST)
        assert code == 1
        # the first poll may come before the manager has taken the activation (validated, then activating)
        waited = re.search(r"Trial network sitetktest is still (validated|activating) after (\d+) s",
                           data["error"]["title"])
        assert waited and int(waited[2]) >= 600, data  # the run's clock, moved past its timeout
        assert "The manager goes on with its pipeline" in data["error"]["detail"]
        code, data, _ = run(capsys, "trial", "status", "--json")
        assert data["state"] == "activating"  # the manager took the PUT before the run stopped waiting
    finally:
        held.set()


def test_read_only_refuses_run_and_destroy_and_bad_ids_are_usage_errors(trial_site, capsys) -> None:
    server, _, audit = trial_site
    code, data, _ = run(capsys, "--read-only", "trial", "run", "--yes", "--json")
    assert code == 2 and "read-only" in json.dumps(data).lower()
    code, data, _ = run(capsys, "--read-only", "trial", "destroy", "--yes", "--json")
    assert code == 2
    assert _live(server, "sitetktest") == ([], [])
    assert [json.loads(line)["outcome"] for line in audit.read_text().splitlines()] == ["refused", "refused"]
    with pytest.raises(SystemExit):
        run(capsys, "trial", "run", "--tn-id", "1abc")
    with pytest.raises(SystemExit):
        run(capsys, "trial", "run", "--tn-id", "a" * 16)
