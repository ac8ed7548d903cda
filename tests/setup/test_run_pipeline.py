"""The guided setup's steps run their operations through the one pipeline (`run_operation`): a step
in read-only mode is refused there with one refusal record, and a failing step leaves exactly one
failed record (no per-step or per-object records besides)."""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path

import pytest

from tests.procedure_run import collect
from tests.setup.test_identity import USER, _identities, _inputs_for
from tui.domain.setup_steps import StepId
from tui.domain.toolkit_inputs import secret_names
from tui.procedures.audit import AUDIT_ENV, AuditLog
from tui.procedures.connection import SiteConnection
from tui.procedures.setup.facts import target_from_file
from tui.procedures.setup.run import RunOptions, SetupStopped, run_setup
from tui.settings import Settings
from tui.sim.server import SimServer


async def _yes(question: object) -> bool:
    return True


async def _no_secrets(names: list[str]) -> dict[str, str]:
    raise AssertionError(f"asked for {names}")


def _cloud_user_step(server: SimServer, inputs: Path, *, read_only: bool) -> SetupStopped | None:
    """`setup run --only cloud-user` at the procedure level; the SetupStopped it ended with."""
    async def scenario() -> SetupStopped | None:
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url),
                              read_only=read_only)
        try:
            await site.connect()
            target = target_from_file(str(inputs), secret_names(site.naming), site.naming)
            try:
                await collect(partial(run_setup, site, target, RunOptions(only=StepId.CLOUD_USER, poll_interval=0.05),
                                      confirm=_yes, ask_secrets=_no_secrets))
            except SetupStopped as stopped:
                return stopped
            return None
        finally:
            await site.close()
    return asyncio.run(scenario())


@pytest.fixture
def audit_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "audit.jsonl"
    monkeypatch.setenv(AUDIT_ENV, str(path))
    return path


def test_a_step_in_read_only_mode_is_refused_by_the_pipeline(sim_factory, tmp_path: Path, audit_path: Path) -> None:
    server: SimServer = sim_factory()
    inputs = tmp_path / "inputs.json"
    _inputs_for(inputs, USER)
    stopped = _cloud_user_step(server, inputs, read_only=True)
    assert stopped is not None and stopped.step is StepId.CLOUD_USER
    assert "refused" in stopped.title and "read-only" in stopped.title.lower() + stopped.detail
    entries = AuditLog(audit_path).entries()
    assert [(e["action"], e["outcome"]) for e in entries] == [("setup.cloud_user", "refused")]
    assert entries[0]["target"] == USER and entries[0]["details"]["reason"] == "read-only mode"
    assert USER not in _identities(server)[0]  # nothing created


def test_a_failing_step_leaves_exactly_one_failed_record(sim_factory, tmp_path: Path, audit_path: Path) -> None:
    server: SimServer = sim_factory()
    inputs = tmp_path / "inputs.json"
    values = _inputs_for(inputs, USER)
    with server.site.lock:
        server.site.faults.fail_methods["one.user.allocate"] = 1  # after the group was made
    stopped = _cloud_user_step(server, inputs, read_only=False)
    assert stopped is not None and stopped.step is StepId.CLOUD_USER and "failed" in stopped.title
    entries = AuditLog(audit_path).entries()
    assert [(e["action"], e["target"], e["outcome"]) for e in entries] == [("setup.cloud_user", USER, "failed")]
    made = entries[0]["details"]["made"]
    assert [m["what"] for m in made] == ["group"] and made[0]["name"] == USER  # what it left
    assert entries[0]["details"]["error"] in stopped.title
    assert values["app_automation_cloud_password"] not in audit_path.read_text()
    # run again: it finishes what was left, with one record of what that run made
    assert _cloud_user_step(server, inputs, read_only=False) is None
    entries = AuditLog(audit_path).entries()
    assert [(e["action"], e["outcome"]) for e in entries] == [("setup.cloud_user", "failed"), ("setup.cloud_user", "ok")]
    assert "group" not in [m["what"] for m in entries[1]["details"]["made"]]
