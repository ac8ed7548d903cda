"""Fixtures of the site-configuration tests: an isolated home, vault password files, seeded repositories."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import AsyncIterator

import pytest

from tests.conftest import SimFactory, isolate_home, write_password_file
from tests.procedure_run import run_procedure
from tui.adapters.vault import VaultPassword
from tui.console import demo_settings
from tui.procedures.audit import AuditLog
from tui.procedures.connection import SiteConnection
from tui.procedures.site.config import load_site_config
from tui.procedures.site.repo import open_site
from tui.procedures.site.verdict import SubmitGate, submit_gate, verdict_of
from tui.procedures.site.workspace import sites_repo
from tui.settings import Settings
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD, seed_repositories
from tui.sim.server import SimServer

ANSIBLE_VAULT = str(Path(sys.executable).with_name("ansible-vault"))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME (no git identity, no credential helpers), state dir and audit log per test."""
    return isolate_home(tmp_path, monkeypatch)


@pytest.fixture
def sim_password_file(tmp_path: Path) -> Path:
    return write_password_file(tmp_path / "sim-vault-pass", SIM_VAULT_PASSWORD)


@pytest.fixture
def audit(tmp_path: Path) -> AuditLog:
    return AuditLog(tmp_path / "audit" / "audit.log")


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, Path]:
    """The embedded site's bare sites repository and component library."""
    return seed_repositories(tmp_path / "state")


def ansible_vault(*args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `ansible-vault` command."""
    env = dict(os.environ)
    return subprocess.run([ANSIBLE_VAULT, *args], capture_output=True, text=True, env=env, input=input, timeout=120, check=False)


async def offline_gate(path: Path, password: VaultPassword, reason: str | None = None) -> SubmitGate:
    """The submit gate on a core.yaml checked without the cloud or the library (git-mechanics tests
    give a reason when the file still has errors)."""
    config = (await load_site_config(path, password)).config
    return submit_gate(verdict_of(config), reason)


# --- the embedded cloud --------------------------------------------------------------------------


@pytest.fixture
def deployed(sim_factory: SimFactory) -> SimServer:
    """The embedded site after a toolkit deployment (with its repositories and vault password file)."""
    return sim_factory(scenario="deployed", time_scale=0.02)


def settings_for(server: SimServer, tmp_path: Path) -> Settings:
    """Console settings pointed at an embedded site, as `sitetk --demo` makes them."""
    return demo_settings(server, Settings(state_dir=tmp_path / "console-state", audit_log=tmp_path / "audit" / "audit.log"))


@pytest.fixture
async def cloud(deployed: SimServer, tmp_path: Path) -> AsyncIterator[SiteConnection]:
    """A connected `SiteConnection` to the deployed embedded site."""
    site = SiteConnection(settings_for(deployed, tmp_path))
    await site.connect()
    yield site
    await site.close()


async def open_demo_site(settings: Settings) -> Path:
    """Clone the sites repository and open the demo site; the path of its core.yaml."""
    repo = sites_repo(settings)
    try:
        _, site = await run_procedure(partial(open_site, repo, EXISTING_SITE, None))
    finally:
        repo.close()
    return site.path
