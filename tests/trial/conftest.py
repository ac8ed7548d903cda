"""Fixtures of the trial-network tests: the deployed embedded site with its manager VM moved to a
host whose CPU runs its database (as the setup's database-host step does), so the manager's API
answers; the environment pointing the CLI at it (`SITETK_MANAGER_URL`: the embedded site serves
the manager's API on its own loopback port, the VM's address being unreachable from here)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.conftest import isolate_home
from tests.setup.conftest import point_at
from tests.setup.inputs import write_inputs
from tui.procedures.audit import AUDIT_ENV
from tui.sim.manager_api import manager_vm, ready_manager_step
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

PROXY_ENV = "SITETK_GUEST_PROXY"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


def _until(server: SimServer, probe: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server.site.advance()
        with server.site.lock:
            found = probe()
        if found:
            return found
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def manager_ready(server: SimServer) -> int:
    """Move the manager VM to an AVX host (undeploy, deploy) and wait until it reports READY."""
    _until(server, lambda: ready_manager_step(server.site), "the manager VM READY on a host that runs its database")
    with server.site.lock:
        vm = manager_vm(server.site)
        assert vm is not None
        return vm.id


@pytest.fixture
def trial_site(sim_factory, monkeypatch, tmp_path: Path) -> tuple[SimServer, Path, Path]:
    """The deployed scenario with its manager up; the input file it was deployed with (the vault
    password included); its own audit log."""
    server: SimServer = sim_factory(scenario="deployed")
    manager_ready(server)
    point_at(server, monkeypatch)  # the vault password file: what the manager decrypts core.yaml with
    monkeypatch.setenv(PROXY_ENV, server.market_url)  # the VMs reached through the site's port
    audit = tmp_path / "audit.jsonl"
    monkeypatch.setenv(AUDIT_ENV, str(audit))
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs, branch=EXISTING_SITE)
    data = json.loads(inputs.read_text())
    data["custom_attrs_values"]["app_automation_sites_token"] = SIM_VAULT_PASSWORD
    inputs.write_text(json.dumps(data))
    return server, inputs, audit


@pytest.fixture
def unused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
