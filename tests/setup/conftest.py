"""Fixtures of the setup tests: an isolated home, and the environment that points the headless CLI
at an embedded site (the cloud, OneFlow, the sites repository and its vault password file), as on a
frontend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.conftest import isolate_home
from tui.sim.server import SimServer


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


def point_at(server: SimServer, monkeypatch: pytest.MonkeyPatch, *, vault_file: bool = True) -> None:
    """The environment of a frontend whose cloud and sites repository are the embedded site's."""
    site = server.site
    monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
    monkeypatch.setenv("ONE_AUTH", str(site.state_dir / "one_auth"))
    monkeypatch.setenv("ONEFLOW_URL", server.flow_url)
    monkeypatch.setenv("SITETK_SITES_REPO", str(site.sites_repo))
    monkeypatch.setenv("SITETK_LIBRARY_REPO", str(site.library_repo))
    if vault_file:
        monkeypatch.setenv("SITETK_VAULT_PASSWORD_FILE", str(site.vault_password_file))


run = run_cli


def steps(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {step["id"]: step for step in data["steps"]}
