"""`sitetk market ...` headless, against the embedded site through the platform's own conventions
(ONE_AUTH and ONE_XMLRPC), with JSON output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.market.conftest import TOOLKIT_FILE_TEXT, served_series
from tui.__main__ import main
from tui.cli.common import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tui.sim.server import SimServer


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    def point_at(server: SimServer) -> SimServer:
        monkeypatch.setenv("ONE_AUTH", str(server.site.state_dir / "one_auth"))
        monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
        monkeypatch.setenv("ONEFLOW_URL", server.flow_url)  # service appliances are created through OneFlow
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        return server

    return point_at


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["market", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_list_json_has_every_appliance_with_status(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    code, data = run(capsys, "list", "--json")
    assert code == EXIT_OK and data["ok"] and data["platform_version"] == sim.site.config.one_version
    names = {a["name"] for a in data["appliances"]}
    # the VPN gateway lists 6.6, 6.8 and 6.10 only (the marketplace answers the site's series)
    assert {"Site Toolkit", "DNS Server"} <= names
    assert ("VPN Gateway" in names) == (served_series(sim) == "6.10")
    assert [m["marketplace_id"] for m in data["marketplaces"]] == [100]
    # each record is an app the cloud can export
    assert all(isinstance(a["cloud_app"]["app_id"], int) for a in data["appliances"])
    odd = next(a for a in data["appliances"] if a["id"] == "service_container_cluster")
    assert odd["version_conforming"] is False and odd["software_version"] == "1.31.3"
    assert all(a["status"] == "not downloaded" for a in data["appliances"])


def test_list_filter_and_text_output(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    assert main(["market", "list", "--filter", "dns"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "DNS Server" in out and "Bastion" not in out and "(!) marks" in out


def test_list_fails_when_every_marketplace_fails(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    sim.site.faults.market_faults[""] = "error"
    code, data = run(capsys, "list", "--json")
    assert code == EXIT_FAILED and not data["ok"] and len(data["failures"]) == 1


def test_show_prints_the_split_version(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    assert main(["market", "show", "UE and RAN Simulator"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "software version   v4.3.0.23" in out and "build stamp        20250919-1159" in out
    assert "version problem" in out
    code, data = run(capsys, "show", "nothing-like-this", "--json")
    assert code == EXIT_FAILED and "No appliance" in data["error"]["title"]


def test_download_dry_run_changes_nothing_then_download_then_rerun(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    before = len(sim.site.images)
    code, data = run(capsys, "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--dry-run", "--json")
    assert code == EXIT_OK and data["dry_run"] and len(sim.site.images) == before
    assert any("onemarketapp export" in c["cli"] for c in data["preview"]["changes"])
    code, data = run(capsys, "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--name", "dns", "--yes", "--json",
                     "--poll", "0.02")
    assert code == EXIT_OK and data["ok"]
    result = data["events"][-1]["data"]["download"]
    assert len(result["image_ids"]) == 1 and len(sim.site.images) == before + 1
    code, data = run(capsys, "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--name", "dns", "--yes", "--json",
                     "--poll", "0.02")
    assert code == EXIT_OK and data["events"][-1]["data"]["download"]["reused"]
    assert len(sim.site.images) == before + 1


def test_download_by_app_id_and_usage_errors(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    app_id = next(a.id for a in sim.site.marketapps.values() if a.name == "Bastion")
    code, data = run(capsys, "download", "--app-id", str(app_id), "--datastore", "1", "--dry-run", "--json")
    assert code == EXIT_OK and data["plan"]["app_id"] == app_id and data["plan"]["name"] == "Bastion v1.3.0"
    code, data = run(capsys, "download", "--datastore", "1", "--dry-run", "--json")
    assert code == EXIT_USAGE and "APPLIANCE or --app-id" in data["error"]["detail"]
    code, data = run(capsys, "download", f"{sim.market_url}#service_dns", "--datastore", "0", "--dry-run", "--json")
    assert code == EXIT_FAILED and "SYSTEM datastore" in data["error"]["title"]


def test_download_without_yes_on_a_pipe_refuses(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    before = len(sim.site.images)
    assert main(["market", "download", f"{sim.market_url}#service_dns", "--datastore", "1"]) == EXIT_USAGE
    assert len(sim.site.images) == before


def test_download_failure_is_json_with_the_rollback(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    before = set(sim.site.images)
    code, data = run(capsys, "download", "service_traffic_generator", "--datastore", "1", "--yes", "--json",
                     "--poll", "0.02")
    assert code == EXIT_FAILED and "ERROR" in data["error"]["title"]
    assert any(e["step"].startswith("rollback") for e in data["events"])
    assert set(sim.site.images) == before


def test_attrs_writes_the_file_and_tags_the_images(sim: SimServer, env, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    target = tmp_path / "toolkit"
    code, data = run(capsys, "attrs", f"{sim.market_url}#service_toolkit", "--file-only", "--write-file", str(target), "--json")
    assert code == EXIT_OK and target.read_text() == TOOLKIT_FILE_TEXT and data["file"] == TOOLKIT_FILE_TEXT
    code, data = run(capsys, "attrs", f"{sim.market_url}#service_toolkit", "--image", "0", "--dry-run", "--json")
    assert code == EXIT_OK and data["preview"]["changes"][0]["cli"] == "oneimage update 0 <attribute file> --append"
    code, data = run(capsys, "attrs", f"{sim.market_url}#service_toolkit", "--image", "0", "--yes", "--json")
    assert code == EXIT_OK and [e["data"].get("result") for e in data["events"] if "result" in e["data"]] == ["updated"]
    code, data = run(capsys, "attrs", f"{sim.market_url}#service_toolkit", "--image", "0", "--yes", "--json")
    assert [e["data"].get("result") for e in data["events"] if "result" in e["data"]] == ["unchanged"]
    # an appliance not downloaded is a state of the cloud, not bad usage (issue 22: the soak saw exit 2)
    code, data = run(capsys, "attrs", f"{sim.market_url}#service_dns", "--yes", "--json")
    assert code == EXIT_FAILED and data["error"]["title"] == "DNS Server is not downloaded"
    assert "sitetk market download" in data["error"]["detail"]


def test_read_only_refuses_mutations(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    code = main(["--read-only", "market", "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--yes", "--json"])
    assert code == EXIT_USAGE and "read-only" in json.loads(capsys.readouterr().out)["error"]["detail"]


def test_upgrades_table_and_apply(sim_factory, env, capsys) -> None:  # type: ignore[no-untyped-def]
    server = env(sim_factory(scenario="deployed"))
    code, data = run(capsys, "upgrades", "--json")
    assert code == EXIT_OK and data["table"] == {"columns": ["Software", "Previous", "New"], "rows": [
        ["Site Toolkit", "v0.4.0-20250219-2235", "v0.5.0-20250403-1109"]]}
    code, data = run(capsys, "upgrades", "--apply", "--json")
    assert code == EXIT_USAGE and "--datastore" in data["error"]["detail"]
    before = len(server.site.images)
    code, data = run(capsys, "upgrades", "--apply", "--datastore", "1", "--yes", "--json", "--poll", "0.02")
    assert code == EXIT_OK and len(server.site.images) == before + 5
    core = data["events"][-1]["data"]["core_yaml"]
    assert sum(1 for c in core if c["kind"] == "image") == 5


def test_upgrades_apply_keeps_the_appliance_of_a_rebuild_under_the_same_software_version(  # type: ignore[no-untyped-def]
        sim: SimServer, env, capsys) -> None:
    """Issue 22 item 0 headless: DNS Server v1.1.0 installed under its default name, then tagged as
    an older build of v1.1.0; `market upgrades --apply --yes` downloads the rebuild under its whole
    version and deletes only the old build, never what it just downloaded."""
    env(sim)
    code, data = run(capsys, "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--yes", "--json",
                     "--poll", "0.02")
    assert code == EXIT_OK
    with sim.site.lock:
        [old] = [i for i in sim.site.images.values() if i.name == "DNS Server v1.1.0"]
        old.template = [(k, "20240101-0000" if k == "PLATFORM_MARKETPLACE_APPLIANCE_VERSION" else v)
                        for k, v in old.template]
    code, data = run(capsys, "upgrades", "--dry-run", "--json")
    assert code == EXIT_OK and "'DNS Server v1.1.0-20250520-0931'" in json.dumps(data)
    code, data = run(capsys, "upgrades", "--apply", "--datastore", "1", "--yes", "--json", "--poll", "0.02")
    assert code == EXIT_OK, data
    download = [e["data"]["download"] for e in data["events"] if "download" in e.get("data", {})][-1]
    names = {i.name for i in sim.site.images.values()}
    assert download["name"] == "DNS Server v1.1.0-20250520-0931" and download["reused"] == []
    assert "DNS Server v1.1.0" not in names and "DNS Server v1.1.0-20250520-0931" in names
    assert set(download["template_ids"]) <= set(sim.site.templates)
