"""Fixtures of the fault tests: `env`, the CLI pointed at the embedded site through the platform's own
conventions (ONE_AUTH, ONE_XMLRPC, ONEFLOW_URL), with audit log, config and state under tmp_path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.faults.processes import sitetk  # noqa: F401 (fixture: a real sitetk process)
from tui.__main__ import main
from tui.procedures.audit import AUDIT_ENV
from tui.sim.server import SimServer

PointAt = Callable[[SimServer], SimServer]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> PointAt:
    monkeypatch.setenv(AUDIT_ENV, str(tmp_path / "audit" / "audit.log"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SITETK_CONFIG", raising=False)

    def point_at(server: SimServer) -> SimServer:
        monkeypatch.setenv("ONE_AUTH", str(server.site.state_dir / "one_auth"))
        monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
        monkeypatch.setenv("ONEFLOW_URL", server.flow_url)
        return server

    return point_at


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """`sitetk <argv>` (with --json among them): the exit code and the JSON answer."""
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out)
