"""The template's example values (the public address 12.34.56.78, its example domain, the fake
administrators' key) are asked for and block "done" until replaced: without them the run stops
before the submit with nothing pushed, saying which and how to give them; a value that cannot be
the site's (not an address, the example itself) is refused; given (`--set`, or asked on a terminal
or in the console), they go into core.yaml before the whole check and the one commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import BRANCH, SITE_SETS, SITE_VALUES, write_inputs
from tests.setup.observe import observe
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.site_config import SiteConfig
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(400)
TOKEN = "app_automation_sites_token"
FAST = ("--poll", "0.05", "--timeout", "120")


def _on_remote(server: SimServer) -> bool:
    found = subprocess.run(["git", "-C", str(server.site.sites_repo), "rev-parse", "--verify", "--quiet",
                            f"refs/heads/{BRANCH}"], capture_output=True, text=True, check=False)
    return found.returncode == 0


def test_example_values_are_asked_for_and_block_done(sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    values = write_inputs(inputs)
    # no terminal and no --set: everything up to the submit, then it stops saying what to give
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 2, err
    assert "site_public_ip" in err and "site_domain" in err and "site_admin_ssh_public_key" in err
    assert "--set site_public_ip=" in err
    assert not _on_remote(server)  # nothing submitted
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["submitted"]
    assert code == 3 and step["state"] == "to do", step
    assert any("site_public_ip is still the template's example '12.34.56.78'" in e for e in step["evidence"])
    assert any("site_admin_ssh_public_key" in e for e in step["evidence"])
    assert "public address" in step["action"]
    assert [e["path"] for e in step["data"]["examples"]] == ["site_public_ip", "site_domain",
                                                             "site_admin_ssh_public_key"]
    # a value that cannot be the site's: refused before anything changes
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST, *SITE_SETS,
                       "--set", "site_public_ip=12.34.56.78")
    assert code == 1 and "site_public_ip: that is the template's example" in err
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST, *SITE_SETS,
                       "--set", "site_public_ip=not-an-address")
    assert code == 1 and "site_public_ip: not an IP address" in err
    assert not _on_remote(server)
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", "--set", "site_gate=1.2.3.4")
    assert code == 2 and "--set 'site_gate=1.2.3.4'" in err
    # given: written, checked whole, submitted once
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST, *SITE_SETS)
    assert code == 0, err
    config = SiteConfig.parse(observe(server, BRANCH, values[TOKEN]).core_yaml, DEFAULT_NAMING)
    assert {path: config.get(path) for path in SITE_VALUES} == SITE_VALUES
    assert run(capsys, "setup", "status", "--input", str(inputs))[0] == 0
