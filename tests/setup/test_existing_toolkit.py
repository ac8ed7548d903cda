"""A toolkit deployed earlier with other inputs is not the one an input file describes: the
checklist compares the live service's recorded inputs (cloud user, sites branch and directory,
endpoints) with the file, names every difference with the fix, and never calls it done; the run
stops there and creates nothing. The same inputs: the live toolkit is the file's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import write_inputs
from tests.setup.observe import observe
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)
TOKEN = "app_automation_sites_token"


def _inputs(path: Path, **values: str) -> None:
    write_inputs(path, branch=EXISTING_SITE)
    data = json.loads(path.read_text())
    data["custom_attrs_values"].update({TOKEN: SIM_VAULT_PASSWORD, **values})
    path.write_text(json.dumps(data))


def test_a_toolkit_of_other_inputs_is_not_done(sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    _inputs(inputs, app_automation_cloud_endpoint="http://10.11.28.9:2633/RPC2",
            app_manager_sites_branch="other-site", app_manager_deployment_site="other-site")
    before = observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD)
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["instantiate"]
    assert code == 3 and step["state"] == "failed", step
    evidence = "\n".join(step["evidence"])
    assert "app_manager_sites_branch = 'demo-site' (the input file: 'other-site')" in evidence
    assert "app_automation_cloud_endpoint = 'http://10.11.28.1:2633/RPC2' (the input file: " in evidence
    assert "app_automation_cloud_username" not in evidence  # the same user: not a difference
    assert "oneflow delete" in step["action"]
    code, out, _ = run(capsys, "setup", "run", "--input", str(inputs), "--yes", "--json")
    assert code == 1 and out["step"] == "instantiate"
    assert [i for i, _ in observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD).services] == [i for i, _ in before.services]

    _inputs(inputs)  # the inputs it was deployed with
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["instantiate"]
    assert step["state"] != "failed" and any("deployed with the input file's" in e for e in step["evidence"])
