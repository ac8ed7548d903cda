"""`sitetk info`: every endpoint and path in use, with where it came from, secrets redacted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tui.__main__ import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("ONE_AUTH", "ONE_XMLRPC", "ONEFLOW_URL", "ONEFLOW_USER", "ONEFLOW_PASSWORD", "ONE_XMLRPC_TIMEOUT",
                 "ONE_DISABLE_SSL_VERIFY", "ONE_CERT_DIR", "SITETK_CONFIG", "XDG_CONFIG_HOME", "XDG_STATE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    auth = tmp_path / ".one" / "one_auth"
    auth.parent.mkdir()
    auth.write_text("oneadmin:T0pSecret\n")
    os.chmod(auth, 0o600)
    return tmp_path


def test_info_json_lists_endpoints_paths_and_sources(home: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ONE_XMLRPC", "http://frontend:2633/RPC2")
    assert main(["info", "--json"]) == 0
    out = capsys.readouterr().out
    assert "T0pSecret" not in out
    view = json.loads(out)
    assert view["xmlrpc_url"] == "http://frontend:2633/RPC2"
    assert view["sources"]["xmlrpc_url"] == "env ONE_XMLRPC"
    assert view["session"] == "oneadmin:***"
    assert view["auth_file"] == str(home / ".one" / "one_auth")
    assert view["config_path"] == str(home / ".config" / "sitetk" / "config.toml")
    assert view["audit_log"].startswith(str(home))


def test_info_text_redacts_and_reports_missing_credentials(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "T0pSecret" not in out
    assert "oneadmin:***" in out
    (home / ".one" / "one_auth").unlink()
    assert main(["info"]) == 0
    assert "no credentials found" in capsys.readouterr().out


def test_info_on_a_malformed_config_file_exits_2(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = home / ".config" / "sitetk" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("theme = \n")
    assert main(["info"]) == 2
    assert "Malformed config file" in capsys.readouterr().err
