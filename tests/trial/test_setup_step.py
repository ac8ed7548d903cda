"""The setup's optional trial-run step: blocked until a toolkit runs, not read by `setup status`
(reading it logs in to the manager), and `setup run --only trial-run` does it with the same
operation as `sitetk trial run` and reads it back from the manager: done when activated, failed
with the fix when the activation failed."""

from __future__ import annotations

import json

import pytest

from tests.setup.conftest import run, steps
from tui.sim.manager_api import _admin, manager_vm

pytestmark = pytest.mark.timeout(300)
STEP = "trial-run"


def test_setup_run_only_trial_run_activates_it_and_a_failed_one_fails_the_step(trial_site, capsys) -> None:
    server, inputs, audit = trial_site
    with server.site.lock:  # the input file the toolkit was deployed with holds the manager's password
        password = _admin(server.site, manager_vm(server.site))[1]
    data = json.loads(inputs.read_text())
    data["custom_attrs_values"]["app_manager_admin_password"] = password
    inputs.write_text(json.dumps(data))
    file = ("--input", str(inputs))
    code, data, _ = run(capsys, "setup", "status", *file, "--json")
    step = steps(data)[STEP]
    assert step["state"] == "optional" and not step["mandatory"] and step["group"] == "Optional", step
    assert step["evidence"] == ["not read: reading it logs in to the manager (`sitetk trial status` reads it)"]
    assert step["command"] == f"sitetk setup run --input FILE --only {STEP}"

    code, data, err = run(capsys, "setup", "run", *file, "--only", STEP, "--dry-run", "--json")
    assert code == 0, (data, err)
    assert " -X PUT " in data["preview"]["changes"][2]["cli"]

    server.site.faults.manager_fail_activation = "ERROR: the bastion's VPN did not start"
    code, data, err = run(capsys, "setup", "run", *file, "--only", STEP, "--yes", "--poll", "0.02", "--json")
    assert code != 0 and "failed to activate" in str(data), (data, err)
    assert "the bastion's VPN did not start" in str(data)
    code, data, err = run(capsys, "setup", "run", *file, "--only", STEP, "--yes", "--poll", "0.02", "--json")
    assert code != 0 and "trial destroy" in str(data), data  # the step is failed: its fix, nothing re-run

    server.site.faults.manager_fail_activation = ""
    code, data, err = run(capsys, "trial", "destroy", "--yes", "--json")
    assert code == 0, (data, err)
    code, data, err = run(capsys, "setup", "run", *file, "--only", STEP, "--yes", "--poll", "0.02", "--json")
    assert code == 0, (data, err)
    assert steps(data["checklist"])[STEP]["state"] == "done"
    assert "trial network sitetktest is activated" in steps(data["checklist"])[STEP]["evidence"][0]
