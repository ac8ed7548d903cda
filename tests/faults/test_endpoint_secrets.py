"""Credentials written into an endpoint URL never show and are never copied (issue 15, item 7).

Before: `ONE_XMLRPC=http://user:pass@host:2633/RPC2` was printed whole by `sitetk info` (which says
secrets are redacted) and by connection errors, and copied into the toolkit input skeleton.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.toolkit.conftest import compatible_hosts_only, download_toolkit, settings_for
from tui.__main__ import main
from tui.domain.endpoints import endpoint_secrets, has_credentials, redact_endpoint, without_credentials
from tui.domain.input_file import load_input_file
from tui.procedures.connection import SiteConnection
from tui.sim.server import SimServer

PASSWORD = "Url-secret-9q8"
FLOW_PASSWORD = "Flow-secret-7r6"


def _with_credentials(url: str, user: str, password: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{user}:{password}@{rest}"


def test_the_one_function_redacts_and_strips() -> None:
    url = "http://oneadmin:pa:ss@front.example:2633/RPC2"
    assert redact_endpoint(url) == "http://***@front.example:2633/RPC2"
    assert without_credentials(url) == "http://front.example:2633/RPC2"
    assert has_credentials(url) and not has_credentials("http://front.example:2633/RPC2")
    assert endpoint_secrets(url) == ("oneadmin:pa:ss", "pa:ss")
    assert redact_endpoint("not a url") == "not a url" and endpoint_secrets("http://host/x") == ()


def test_info_redacts_endpoint_credentials_and_says_where_they_belong(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SITETK_CONFIG", raising=False)
    monkeypatch.setenv("ONE_XMLRPC", f"http://oneadmin:{PASSWORD}@front.example:2633/RPC2")
    monkeypatch.setenv("ONEFLOW_URL", f"http://oneadmin:{FLOW_PASSWORD}@front.example:2474")
    assert main(["info", "--json"]) == 0
    out = capsys.readouterr().out
    assert PASSWORD not in out and FLOW_PASSWORD not in out
    view = json.loads(out)
    assert view["xmlrpc_url"] == "http://***@front.example:2633/RPC2"
    assert view["flow_url"] == "http://***@front.example:2474"
    assert any("ONE_XMLRPC" in w and "ONE_AUTH" in w for w in view["warnings"])
    assert any("ONEFLOW_URL" in w for w in view["warnings"])
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert PASSWORD not in text and FLOW_PASSWORD not in text
    assert "move them to the credential file" in text


def test_connection_errors_never_carry_endpoint_credentials(
        sim: SimServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SITETK_CONFIG", raising=False)
    monkeypatch.setenv("ONE_AUTH", str(sim.site.state_dir / "one_auth"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("ONE_XMLRPC", f"http://oneadmin:{PASSWORD}@127.0.0.1:{port}/RPC2")
    monkeypatch.setenv("ONE_XMLRPC_TIMEOUT", "2")
    for argv in (["market", "list", "--json"], ["market", "list"]):
        assert main(argv) != 0
        captured = capsys.readouterr()
        assert PASSWORD not in captured.out + captured.err
        assert "***@127.0.0.1" in captured.out + captured.err


def test_the_input_skeleton_gets_the_endpoints_without_credentials(
        sim_factory: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server = sim_factory()
    compatible_hosts_only(server)

    async def setup() -> None:
        site = SiteConnection(settings_for(server))
        try:
            await download_toolkit(site)
        finally:
            await site.close()

    asyncio.run(setup())
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("SITETK_CONFIG", raising=False)
    monkeypatch.setenv("ONE_AUTH", str(server.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONE_XMLRPC", _with_credentials(server.xmlrpc_url, "oneadmin", PASSWORD))
    monkeypatch.setenv("ONEFLOW_URL", _with_credentials(server.flow_url, "oneadmin", FLOW_PASSWORD))
    assert main(["toolkit", "inputs"]) == 0
    captured = capsys.readouterr()
    assert PASSWORD not in captured.out + captured.err and FLOW_PASSWORD not in captured.out + captured.err
    values = load_input_file(captured.out).value_map()
    # as the VMs reach the frontend (the console's loopback host becomes the gate's), no credentials
    assert values["app_automation_cloud_endpoint"] == f"http://10.11.28.1:{urlsplit(server.xmlrpc_url).port}/RPC2"
    assert values["app_automation_cloud_flow_endpoint"] == f"http://10.11.28.1:{urlsplit(server.flow_url).port}"


def test_the_site_record_never_holds_endpoint_credentials(tmp_path: Any) -> None:
    from dataclasses import replace

    from tui.domain.site_record import SiteRecord
    from tui.procedures.site_record import save_site_record, site_record_path
    from tui.settings import Settings

    plain = replace(Settings(state_dir=tmp_path / "state"), xmlrpc_url="http://front.example:2633/RPC2")
    with_password = replace(plain, xmlrpc_url=f"http://oneadmin:{PASSWORD}@front.example:2633/RPC2")
    assert site_record_path(with_password) == site_record_path(plain)  # the same cloud, the same file
    record = SiteRecord(without_credentials(with_password.xmlrpc_url), 5, "toolkit", 3, "Site Toolkit", "7.0.0",
                        "2026-01-01T00:00:00Z")
    path = save_site_record(with_password, record)
    assert PASSWORD not in path.read_text() and "http://front.example:2633/RPC2" in path.read_text()


MALFORMED = ["http://oneadmin:{p}@[::1/RPC2", "oneadmin:{p}@front.example:2633/RPC2",
             "http:/oneadmin:{p}@front.example:2633/RPC2", "http://oneadmin:{p}@front.example:99999/RPC2",
             "http://oneadmin:pa/{p}@front.example:2633/RPC2"]


@pytest.mark.parametrize("shape", MALFORMED, ids=["ipv6-bracket", "no-scheme", "one-slash", "bad-port",
                                                  "slash-in-password"])
def test_credentials_in_a_malformed_endpoint_never_show(
        shape: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 22 item 8: an endpoint that does not parse as a URL was printed whole, its password
    with it, by `sitetk info` and by the connection error's "Tried:" line."""
    url = shape.format(p=PASSWORD)
    assert PASSWORD not in redact_endpoint(url) and PASSWORD in endpoint_secrets(url)[-1]
    assert PASSWORD not in without_credentials(url) and has_credentials(url)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SITETK_CONFIG", raising=False)
    monkeypatch.setenv("ONE_XMLRPC", url)
    monkeypatch.setenv("ONE_XMLRPC_TIMEOUT", "2")
    main(["info"])
    main(["info", "--json"])
    main(["hosts", "list"])  # cannot connect: the error says what was tried
    captured = capsys.readouterr()
    assert PASSWORD not in captured.out + captured.err
    assert "***@" in captured.out


@pytest.mark.parametrize("url", ["http://oneadmin:12/{p}@front.example:2633/RPC2",
                                 "http://oneadmin:p@ss{p}/x@front.example:2633/RPC2",
                                 "http://oneadmin:pa\tss{p}@front.example:2633/RPC2",
                                 "http://oneadmin:a#{p}@front.example:2633/RPC2"])
def test_a_password_holding_url_delimiters_is_hidden_whole(url: str) -> None:
    """A password with `/`, `@`, a tab or `#` ends urlsplit's authority inside it: the credentials
    run to the last `@`, so no part of the password shows."""
    url = url.format(p=PASSWORD)
    assert PASSWORD not in redact_endpoint(url) and PASSWORD not in without_credentials(url)
    assert redact_endpoint(url).endswith("***@front.example:2633/RPC2")
