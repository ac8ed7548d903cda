"""Ambiguity is an error, not a guess (issue 15, item 4).

An appliance id or name several marketplaces hold, or one that a marketplace that did not answer
may hold, is an error naming them; the CLI takes `<marketplace url>#<id>` or `<marketplace name>#<id>`
to choose. Before: with the site's marketplace failing, `service_toolkit` resolved to the community
marketplace's older build and was downloaded, exit 0, no warning. And `site enable
--allow-incomplete` no longer falls back to offline mode when the cloud cannot be reached.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.faults.conftest import PointAt, run_json
from tests.market.conftest import register_community
from tui.cli.common import EXIT_FAILED, EXIT_OK
from tui.sim.repos import SIM_VAULT_PASSWORD, seed_repositories
from tui.sim.server import SimServer


def test_an_id_held_by_an_unanswered_marketplace_is_refused_not_resolved_elsewhere(
        sim: SimServer, env: PointAt, capsys: pytest.CaptureFixture[str]) -> None:
    env(sim)
    register_community(sim)  # the cloud registers the community marketplace too
    images, templates = set(sim.site.images), set(sim.site.templates)
    sim.site.faults.market_faults["/"] = "error"  # the site's own marketplace answers 500, every time
    code, answer = run_json(capsys, "market", "download", "service_toolkit", "--datastore", "1", "--yes", "--json",
                            "--poll", "0.02")
    assert code == EXIT_FAILED and not answer["ok"]
    assert answer["error"]["title"] == "Marketplace Site Toolkit Marketplace did not answer"
    assert "may hold 'service_toolkit' too" in answer["error"]["detail"]
    assert f"{sim.market_url}/community#service_toolkit" in answer["error"]["detail"]
    assert set(sim.site.images) == images and set(sim.site.templates) == templates
    # naming the one that answered is a choice, not a guess
    code, answer = run_json(capsys, "market", "show", f"{sim.market_url}/community#service_toolkit", "--json")
    assert code == EXIT_OK and answer["appliance"]["marketplace"] == "Community Marketplace"
    code, answer = run_json(capsys, "market", "show", f"{sim.market_url}#service_toolkit", "--json")
    assert code == EXIT_FAILED and "did not answer" in answer["error"]["title"]


def test_an_id_several_marketplaces_hold_needs_the_key(sim: SimServer, env: PointAt,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    env(sim)
    community = register_community(sim)  # monitored after the site's own: the cloud's DNS app holds its build
    code, answer = run_json(capsys, "market", "download", "service_dns", "--datastore", "1", "--dry-run", "--json")
    assert code == EXIT_FAILED and answer["error"]["title"] == "Appliance 'service_dns' is in several marketplaces"
    detail = answer["error"]["detail"]
    assert f"{sim.market_url}#service_dns" in detail and f"{sim.market_url}/community#service_dns" in detail
    assert "v1.1.0-20250520-0931" in detail and "v1.0.0-20250110-1005" in detail
    code, answer = run_json(capsys, "market", "show", "Community Marketplace#service_dns", "--json")
    assert code == EXIT_OK and answer["appliance"]["version"] == "v1.0.0-20250110-1005"
    code, answer = run_json(capsys, "market", "download", f"{sim.market_url}/community#service_dns", "--datastore",
                            "1", "--dry-run", "--json")
    assert code == EXIT_OK and answer["dry_run"]
    # the cloud keeps one app per name: the site's build is not exportable while the community lists it
    code, answer = run_json(capsys, "market", "download", f"{sim.market_url}#service_dns", "--datastore", "1",
                            "--dry-run", "--json")
    assert code == EXIT_FAILED and answer["error"]["title"] == "The cloud holds DNS Server from another marketplace"
    assert f"onemarket disable {community}" in answer["error"]["detail"]
    code, answer = run_json(capsys, "market", "show", "service_bastion", "--json")  # one holder: no question
    assert code == EXIT_OK


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_enable_does_not_fall_back_to_offline_when_the_cloud_is_unreachable(
        tmp_path: Path, env: PointAt, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    sites, library = seed_repositories(tmp_path / "state")
    auth = tmp_path / "one_auth"
    auth.write_text("oneadmin:secret\n")
    auth.chmod(0o600)
    monkeypatch.setenv("ONE_AUTH", str(auth))
    monkeypatch.setenv("ONE_XMLRPC", f"http://127.0.0.1:{_closed_port()}/RPC2")
    monkeypatch.setenv("ONE_XMLRPC_TIMEOUT", "2")
    password = tmp_path / "vault-pass"
    password.write_text(SIM_VAULT_PASSWORD + "\n")
    password.chmod(0o600)
    repo = ("--repo", str(sites), "--workdir", str(tmp_path / "work"))
    pw = ("--vault-password-file", str(password))
    code, _ = run_json(capsys, "site", "create", "lab-offline", *repo, *pw, "--json")
    assert code == EXIT_OK
    core = tmp_path / "work" / "lab-offline" / "core.yaml"
    before = core.read_bytes()
    libopts = ("--library", str(library), "--library-workdir", str(tmp_path / "lib"))
    code, answer = run_json(capsys, "site", "enable", "vm_kvm", *repo, *libopts, *pw, "--allow-incomplete", "--yes",
                            "--json")
    assert code == EXIT_FAILED and answer["error"]["title"].startswith("The cloud is not reachable")
    assert "--no-cloud" in answer["error"]["detail"] and "Nothing was written" in answer["error"]["detail"]
    assert core.read_bytes() == before
    # offline only when asked
    code, answer = run_json(capsys, "site", "enable", "vm_kvm", *repo, *libopts, *pw, "--no-cloud", "--set",
                            "template_id=3", "--set", "image_id=4", "--yes", "--json")
    assert code == EXIT_OK and core.read_bytes() != before
