"""core.yaml is submitted last: the setup fills it and enables the components in the working clone,
checks the whole file with the cloud and the component library, and only then commits and pushes.
A run stopped at any step leaves no commit on the remote that fails `sitetk site check --cloud`,
and `setup status` never says "checked" or "submitted" for a branch whose core.yaml fails it."""

from __future__ import annotations

import asyncio
import json
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.procedure_run import collect
from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import BRANCH, SITE_SETS, write_inputs
from tui.domain.setup_steps import StepId
from tui.domain.toolkit_inputs import secret_names
from tui.procedures.audit import AUDIT_ENV, AuditLog
from tui.procedures.connection import SiteConnection
from tui.procedures.setup.facts import target_from_file
from tui.procedures.setup.run import RunOptions, SetupStopped, StepPlan, run_setup
from tui.settings import Settings
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)

TOKEN = "app_automation_sites_token"


def _git(server: SimServer, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(server.site.sites_repo), *args], capture_output=True, text=True,
                          check=False)


def _run_until(inputs: Path, stop_at: StepId) -> SetupStopped:
    """`setup run` at the procedure level (the console's and the CLI's), declining `stop_at`."""
    async def scenario() -> SetupStopped:
        site = SiteConnection(Settings.load())
        try:
            await site.connect()
            target = target_from_file(str(inputs), secret_names(site.naming), site.naming)

            async def confirm(plan: StepPlan) -> bool:
                return plan.step.id is not stop_at

            async def no_secrets(names: list[str]) -> dict[str, str]:
                raise AssertionError(f"asked for {names}")

            try:
                await collect(partial(run_setup, site, target, RunOptions(poll_interval=0.05, step_timeout=120,
                                                                          deploy_timeout=120, key_timeout=120),
                                      confirm=confirm, ask_secrets=no_secrets))
            except SetupStopped as stopped:
                return stopped
            raise AssertionError("the run did not stop")
        finally:
            await site.close()
    return asyncio.run(scenario())


def _check_cloud(capsys: pytest.CaptureFixture[str], server: SimServer, tmp_path: Path, branch: str,
                 password: str) -> dict[str, Any]:
    """`sitetk site check --cloud` of what the remote branch holds."""
    text = _git(server, "show", f"{branch}:{branch}/core.yaml")
    assert text.returncode == 0, text.stderr
    copy = tmp_path / "remote-core.yaml"
    copy.write_text(text.stdout)
    secret = tmp_path / "vault-pass"
    secret.write_text(password)
    secret.chmod(0o600)
    code, data, err = run(capsys, "site", "check", str(copy), "--cloud", "--vault-password-file", str(secret), "--json")
    assert isinstance(data, dict), err
    return {"code": code, **data}


def test_a_run_stopped_before_the_components_pushes_nothing(sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    """Stopped at the components step (the template's `template_id: 0` still in core.yaml): the
    branch has not reached the remote, no submit was recorded, and the status says neither
    "checked" nor "submitted"."""
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    audit = tmp_path / "audit.jsonl"
    monkeypatch.setenv(AUDIT_ENV, str(audit))
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs)
    stopped = _run_until(inputs, StepId.COMPONENTS)
    assert stopped.step is StepId.COMPONENTS and "not confirmed" in stopped.title
    assert _git(server, "rev-parse", "--verify", "--quiet", f"refs/heads/{BRANCH}").returncode != 0, \
        "the branch reached the remote before core.yaml passed the whole check"
    assert "site.submit" not in [e["action"] for e in AuditLog(audit).entries()]
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert code == 3
    found = steps(data)
    assert found["core-yaml"]["state"] == "done" and "checked" not in found["core-yaml"]["title"]
    assert "working clone" in " ".join(found["core-yaml"]["evidence"])
    assert found["components"]["state"] == "to do"
    assert found["submitted"]["state"] == "blocked" and found["submitted"]["blocked_by"] == "components"
    # run again: the components are enabled, the whole file checked, then submitted once
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", "--poll", "0.05", "--timeout", "120",
                       *SITE_SETS)
    assert code == 0, err
    checked = _check_cloud(capsys, server, tmp_path, BRANCH, json.loads(inputs.read_text())["custom_attrs_values"][TOKEN])
    assert checked["code"] == 0 and checked["ok"] and checked["complete"], checked
    submits = [e for e in AuditLog(audit).entries() if e["action"] == "site.submit"]
    assert [e["outcome"] for e in submits] == ["ok"]
    assert submits[0]["details"]["check"] == "passed" and submits[0]["details"]["unchecked"] == []


def test_a_branch_failing_the_check_is_never_submitted_or_checked(sim_factory, monkeypatch, capsys,
                                                                   tmp_path: Path) -> None:
    """An operator filled the demo branch from the cloud and forced the submit while tn_bastion and
    vm_kvm kept the template's `template_id: 0`: `site check --cloud` finds errors in what the
    remote holds, so the status says neither "checked" nor "submitted" (the submitted step
    fails, listing the errors), and the run stops there instead of finishing."""
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch)
    code, opened, err = run(capsys, "site", "open", EXISTING_SITE, "--json")
    assert code == 0, err
    path = opened["path"] if "path" in opened else opened["site"]["path"]
    code, _, err = run(capsys, "site", "fill", path, "--json")
    assert code == 0, err
    code, _, err = run(capsys, "site", "submit", "--yes", "--override-reason", "forced for the test", "--json")
    assert code == 0, err
    checked = _check_cloud(capsys, server, tmp_path, EXISTING_SITE, SIM_VAULT_PASSWORD)
    assert checked["code"] == 3 and not checked["ok"]
    errors = [f["path"] for f in checked["findings"] if f["severity"] == "error"]
    assert any("tn_bastion" in p for p in errors), errors
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs, branch=EXISTING_SITE)
    data = json.loads(inputs.read_text())
    data["custom_attrs_values"][TOKEN] = SIM_VAULT_PASSWORD
    inputs.write_text(json.dumps(data))
    code, status, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert code == 3
    found = steps(status)
    assert "checked" not in found["core-yaml"]["title"]
    assert found["submitted"]["state"] != "done", found["submitted"]
    assert found["components"]["state"] == "to do"  # the placeholder IDs: the components step comes first
