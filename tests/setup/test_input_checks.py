"""The setup runs the inputs' site checks (those of the form and `sitetk toolkit validate`) wherever
it takes a value: the input file in `setup status` and `setup run`, and the secrets it asks for.
A wrong cloud password stops at the cloud user (the platform refuses that login); a wrong sites
token, in the file or typed when asked (CLI and console), stops before it becomes core.yaml's
vault password. Nothing changes, and no secret is shown."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path

import pytest
from textual.widgets import Input

from tests.procedure_run import collect
from tests.setup.conftest import point_at, run, steps
from tests.setup.driving import SIZE, checklist_with_input, setup_app
from tests.setup.inputs import BRANCH, write_inputs
from tests.setup.observe import observe
from tui.domain.setup_steps import StepId
from tui.domain.toolkit_inputs import secret_names
from tui.procedures.audit import AUDIT_ENV, AuditLog
from tui.procedures.connection import SiteConnection
from tui.procedures.setup.facts import target_from_file
from tui.procedures.setup.run import RunOptions, SetupStopped, run_setup
from tui.screens.setup import SecretsModal
from tui.screenshots import wait_for, wait_for_screen
from tui.settings import Settings
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)

TOKEN = "app_automation_sites_token"
PASSWORD = "app_automation_cloud_password"
WRONG = "Not-the-Right-Secret-73"


def _inputs(path: Path, *, branch: str = BRANCH, leave_out: tuple[str, ...] = (), **values: str) -> dict[str, str]:
    written = write_inputs(path, branch=branch, leave_out=leave_out)
    data = json.loads(path.read_text())
    data["custom_attrs_values"].update(values)
    path.write_text(json.dumps(data))
    return {**written, **values}


def test_a_wrong_cloud_password_stops_at_the_cloud_user(sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    values = _inputs(inputs, **{PASSWORD: WRONG})
    before = observe(server, BRANCH, values[TOKEN])
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["cloud-user"]
    assert code == 3 and step["state"] == "failed"
    assert any("refused the login of tkauto" in e for e in step["evidence"]) and "oneuser passwd tkauto" in step["action"]
    code, out, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", "--json")
    assert code == 1 and out["step"] == "cloud-user"
    assert observe(server, BRANCH, values[TOKEN]) == before  # nothing downloaded, deployed or committed
    assert WRONG not in json.dumps(data) + json.dumps(out) + err
    # the right password: the same step is done, its evidence says the login worked
    _inputs(inputs)
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["cloud-user"]
    assert step["state"] == "done" and any("tkauto logged in" in e for e in step["evidence"])


def _deployed(sim_factory, monkeypatch, tmp_path: Path, **values: str) -> tuple[SimServer, Path]:
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch, vault_file=False)
    monkeypatch.setenv(AUDIT_ENV, str(tmp_path / "audit.jsonl"))
    inputs = tmp_path / "inputs.json"
    _inputs(inputs, branch=EXISTING_SITE, **values)
    return server, inputs


def test_a_wrong_sites_token_in_the_file_fails_the_inputs(sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    server, inputs = _deployed(sim_factory, monkeypatch, tmp_path, **{TOKEN: WRONG})
    before = observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD)
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["inputs"]
    assert code == 3 and step["state"] == "failed"
    assert any(e.startswith(f"{TOKEN}: {TOKEN} does not decrypt demo-site:demo-site/core.yaml") for e in step["evidence"])
    code, out, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", "--only", "core-yaml", "--json")
    assert code == 1
    assert observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD) == before
    assert WRONG not in json.dumps(data) + json.dumps(out) + err and SIM_VAULT_PASSWORD not in json.dumps(data)


def _core_yaml_step(server: SimServer, inputs: Path, answer: str) -> SetupStopped | None:
    """`setup run --only core-yaml` at the procedure level (the CLI's and the console's), the token
    typed when asked."""
    async def scenario() -> SetupStopped | None:
        site = SiteConnection(Settings.load())
        try:
            await site.connect()
            target = target_from_file(str(inputs), secret_names(site.naming), site.naming)

            async def yes(_plan: object) -> bool:
                return True

            async def ask(names: list[str]) -> dict[str, str]:
                assert names == [TOKEN]
                return {TOKEN: answer}

            try:
                await collect(partial(run_setup, site, target, RunOptions(only=StepId.CORE_YAML, poll_interval=0.05),
                                      confirm=yes, ask_secrets=ask))
            except SetupStopped as stopped:
                return stopped
            return None
        finally:
            await site.close()
    return asyncio.run(scenario())


def test_a_wrong_sites_token_typed_when_asked_is_refused(sim_factory, monkeypatch, tmp_path: Path) -> None:
    server, inputs = _deployed(sim_factory, monkeypatch, tmp_path, leave_out=(TOKEN,))
    before = observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD)
    stopped = _core_yaml_step(server, inputs, WRONG)
    assert stopped is not None and stopped.step is StepId.CORE_YAML and stopped.rejected == (TOKEN,)
    assert "does not decrypt demo-site:demo-site/core.yaml" in stopped.title
    assert observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD) == before
    assert AuditLog(tmp_path / "audit.jsonl").entries() == []  # nothing opened, filled or written
    assert WRONG not in stopped.title + stopped.detail
    # the right one: the step runs (filled in the working clone)
    assert _core_yaml_step(server, inputs, SIM_VAULT_PASSWORD) is None
    assert [e["action"] for e in AuditLog(tmp_path / "audit.jsonl").entries()] == ["site.edit"]


async def test_the_console_forgets_a_sites_token_the_checks_refuse(sim_factory, monkeypatch, tmp_path: Path) -> None:
    """The console's secret dialog: a wrong token is refused by the same check, the step stops, and
    the session does not keep the token (the checklist is not read with it)."""
    server: SimServer = sim_factory(scenario="deployed")
    inputs = tmp_path / "inputs.json"
    _inputs(inputs, branch=EXISTING_SITE, leave_out=(TOKEN,))
    app = setup_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await checklist_with_input(pilot, inputs, "core-yaml")
        await pilot.press("d")
        modal = await wait_for_screen(pilot, SecretsModal, what="the secret dialog")
        assert modal.names == [TOKEN]
        modal.query_one(f"#secret-{TOKEN}", Input).value = WRONG
        await pilot.click("#ok")
        await wait_for(pilot, lambda: not screen.running and not screen.reading, timeout=120, what="the step to stop")
        assert screen.last_message.startswith("✖") and TOKEN in screen.last_message
        assert f"{TOKEN} refused" in screen.last_message and "vault password" in screen.last_message
        assert TOKEN not in screen._secrets
        assert WRONG not in screen.last_message + "\n".join(screen.step_log)
