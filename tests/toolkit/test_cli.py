"""`sitetk toolkit ...` headless, in-process against the embedded site (settings from the environment,
as on a frontend): inputs, validate, deploy (secrets asked with getpass), vms, key --grant."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.sim.flow_support import values_key
from tests.toolkit.conftest import compatible_hosts_only, download_toolkit, settings_for
from tui.domain.input_file import load_input_file, render_input_file
from tui.procedures.connection import SiteConnection
from tui.sim.scenarios import AUTOMATION_PASSWORD
from tui.sim.server import SimServer

SECRETS = {
    "app_objectstore_root_password": "Obj-secret-81x",
    "app_automation_password": "Aut-secret-22y",
    "app_automation_sites_token": "Tok-secret-93z",
    "app_automation_cloud_password": AUTOMATION_PASSWORD,  # the embedded site's tkauto: the login is checked
    "app_manager_admin_password": "Mgr-secret-55v",
    "app_timeseries_password": "Tsd-secret-66u",
    "app_timeseries_token": "Tst-secret-77t",
}

#: every test here writes or reads the input file under the key of the site's OneFlow (7.x
#: `user_inputs_values`, 6.x `custom_attrs_values`) and deploys with it: it runs at every version
pytestmark = pytest.mark.every_version


@pytest.fixture
def frontend(sim_factory: Any, monkeypatch: pytest.MonkeyPatch) -> SimServer:
    """A site with the toolkit downloaded; the environment points the CLI at it."""
    server = sim_factory()
    compatible_hosts_only(server)

    async def setup() -> None:
        site = SiteConnection(settings_for(server))
        try:
            await download_toolkit(site)
        finally:
            await site.close()

    asyncio.run(setup())
    monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
    monkeypatch.setenv("ONE_AUTH", str(server.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONEFLOW_URL", server.flow_url)
    return server


run = run_cli


def write_inputs(frontend: SimServer, path: Path, capsys: pytest.CaptureFixture[str], *, secrets: bool) -> Path:
    code, data, _ = run(capsys, "toolkit", "inputs", "--json")
    assert code == 0
    values = data["file"][values_key(frontend)]  # the key of the site's OneFlow
    values.update({"app_objectstore_hostname": "s3.site.org", "app_manager_sites_branch": "demo-site",
                   "app_manager_deployment_site": "demo-site", "app_automation_cloud_username": "tkauto"})
    for name in SECRETS:
        values.pop(name)
        if secrets:
            values[name] = SECRETS[name]
    path.write_text(json.dumps(data["file"], indent=2))
    path.chmod(0o600)
    return path


def test_inputs_prints_a_skeleton_and_writes_it_private(frontend: SimServer, capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    code, text, _ = run(capsys, "toolkit", "inputs")
    assert code == 0
    file = load_input_file(text)
    assert file.name == "Site Toolkit v0.5.0" and file.networks == (("Public", "0"),)
    values = file.value_map()
    port = frontend.xmlrpc_url.rsplit(":", 1)[1].split("/")[0]
    assert len(values) == 23 and values["app_automation_cloud_endpoint"] == f"http://10.11.28.1:{port}/RPC2"
    assert values["app_automation_cloud_username"] == ""  # never the console's own user
    assert all(values[name] == "" for name in SECRETS)
    target = tmp_path / "inputs.json"
    code, _, _ = run(capsys, "toolkit", "inputs", "--output", str(target))
    assert code == 0 and stat.S_IMODE(os.stat(target).st_mode) == 0o600
    code, _, err = run(capsys, "toolkit", "inputs", "--output", str(target))
    assert code == 1 and "exists" in err


def test_validate_reports_errors_line_and_column_and_secrets_left_out(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = write_inputs(frontend, tmp_path / "good.json", capsys, secrets=False)
    code, data, _ = run(capsys, "toolkit", "validate", str(good), "--json")
    assert code == 0 and data["ok"] and sorted(data["asked_at_deploy"]) == sorted(SECRETS)

    file = load_input_file(good.read_text())
    bad = tmp_path / "bad.json"
    bad.write_text(render_input_file(file.with_values({"app_automation_cloud_flow_endpoint": "http://x/flow",
                                                        "app_automation_cloud_insecure": "NO"})))
    code, data, _ = run(capsys, "toolkit", "validate", str(bad), "--json")
    assert code == 3 and not data["ok"]
    errors = {p["name"] for p in data["problems"] if p["severity"] == "error"}
    assert errors == {"app_automation_cloud_flow_endpoint", "app_automation_cloud_insecure"}

    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "name": "x",\n  "custom_attrs_values": {"a": 1}\n}\n')
    code, _, err = run(capsys, "toolkit", "validate", str(broken))
    assert code == 2 and "line 3, column" in err and "must be a string" in err
    code, data, _ = run(capsys, "toolkit", "validate", str(bad), "--offline", "--json")
    assert code == 3 and "offline" in data["template"]


def test_deploy_asks_missing_secrets_then_vms_and_key_grant(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = write_inputs(frontend, tmp_path / "inputs.json", capsys, secrets=False)
    asked: list[str] = []

    def fake_terminal_getpass(prompt: str) -> str:
        name = prompt.split(" ", 1)[0]
        asked.append(name)
        return SECRETS[name]

    # the operator's terminal: getpass answers, as the operator would type the secret
    monkeypatch.setattr("tui.cli.toolkit_deploy.getpass.getpass", fake_terminal_getpass)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    code, data, _ = run(capsys, "toolkit", "deploy", "--input", str(inputs), "--dry-run", "--json")
    assert code == 0 and data["preview"]["changes"][0]["cli"].startswith("oneflow-template instantiate ")
    assert asked == []  # a dry run asks nothing
    code, data, _ = run(capsys, "toolkit", "deploy", "--input", str(inputs), "--wait", "--yes", "--json",
                        "--poll", "0.05")
    assert code == 0, data
    assert sorted(asked) == sorted(SECRETS)
    key = values_key(frontend)
    assert data["plan"]["values_key"] == key
    assert data["plan"]["merge_template"][key]["app_automation_password"] == "***"
    record = data["result"]["record"]
    assert record["state"] == "RUNNING" and record["automation_public_key"].startswith("ssh-")
    assert not any(secret in json.dumps(data) for secret in SECRETS.values())

    code, data, _ = run(capsys, "toolkit", "vms", "--json")
    assert code == 0 and data["service_id"] == record["service_id"]
    assert {vm["role"] for vm in data["vms"]} == {"objectstore", "automation", "manager", "timeseries"}
    assert all(vm["ready"] for vm in data["vms"])

    code, data, _ = run(capsys, "toolkit", "key", "--grant", "--dry-run", "--json")
    assert code == 0 and data["grant"]["preview"]["changes"][0]["cli"] == "oneuser update tkauto <key file> --append"
    code, data, _ = run(capsys, "toolkit", "key", "--grant", "--yes", "--json")
    assert code == 0 and data["grant"]["result"]["changed"] is True
    code, data, _ = run(capsys, "toolkit", "key", "--grant", "--yes", "--json")
    assert code == 0 and data["grant"]["result"]["changed"] is False
    code, text, _ = run(capsys, "toolkit", "key")
    assert code == 0 and record["automation_public_key"] in text


def test_deploy_refuses_without_a_terminal_for_missing_secrets_and_in_read_only(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    inputs = write_inputs(frontend, tmp_path / "inputs.json", capsys, secrets=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    code, _, err = run(capsys, "toolkit", "deploy", "--input", str(inputs), "--yes")
    assert code == 2 and "no terminal to ask on" in err
    code, _, err = run(capsys, "--read-only", "toolkit", "deploy", "--input", str(inputs), "--yes")
    assert code == 2 and "read-only" in err
    code, _, err = run(capsys, "toolkit", "vms")
    assert code == 2 and "no toolkit deployment recorded" in err
