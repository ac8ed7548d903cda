"""Settings resolution: the platform CLI's conventions for credentials and endpoints, the TOML
config file, sources, redaction. Real files in a temporary home; the environment is passed in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tui.domain.cpu import DEFAULT_KNOWN_GOOD_MODELS
from tui.errors import SiteError
from tui.settings import DEFAULT_FLOW, DEFAULT_XMLRPC, Settings


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, mode)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


@pytest.fixture
def system_dir(tmp_path: Path) -> Path:
    return tmp_path / "var-lib-one" / ".one"


def load(home: Path, system_dir: Path, **env: str) -> Settings:
    return Settings.load(env=env, home=home, system_dir=system_dir)


def test_defaults_without_any_file(home: Path, system_dir: Path) -> None:
    s = load(home, system_dir)
    assert s.xmlrpc_url == DEFAULT_XMLRPC
    assert s.flow_url == DEFAULT_FLOW
    assert s.session == ""
    assert not s.has_credentials
    assert "one_auth" in s.credentials_problem and "ONE_AUTH" in s.credentials_problem
    assert s.sources["xmlrpc_url"] == "default"
    assert s.config_path == home / ".config" / "sitetk" / "config.toml"
    assert s.state_dir == home / ".local" / "state" / "sitetk"
    assert s.audit_log == s.state_dir / "audit.log"
    assert s.known_good_cpu_models == DEFAULT_KNOWN_GOOD_MODELS


def test_auth_file_order_env_then_home_then_system(home: Path, system_dir: Path, tmp_path: Path) -> None:
    write(system_dir / "one_auth", "sys:syspw\n")
    assert load(home, system_dir).session == "sys:syspw"
    write(home / ".one" / "one_auth", "me:mypw\n")
    assert load(home, system_dir).session == "me:mypw"
    env_file = write(tmp_path / "other_auth", "envuser:envpw  \n")
    s = load(home, system_dir, ONE_AUTH=str(env_file))
    assert s.session == "envuser:envpw"
    assert s.auth_file == env_file
    assert s.sources["session"].startswith("env ONE_AUTH")
    # ONE_AUTH naming a missing file falls through, as the CLI does
    assert load(home, system_dir, ONE_AUTH=str(tmp_path / "missing")).session == "me:mypw"


def test_session_split_on_first_colon_only(home: Path, system_dir: Path) -> None:
    write(home / ".one" / "one_auth", "oneadmin:pa:ss:word\t \n")
    s = load(home, system_dir)
    assert (s.one_user, s.one_password) == ("oneadmin", "pa:ss:word")


def test_malformed_auth_file_is_a_problem_not_a_crash(home: Path, system_dir: Path) -> None:
    write(home / ".one" / "one_auth", "no-colon-here\n")
    s = load(home, system_dir)
    assert not s.has_credentials
    assert "user:password" in s.credentials_problem


def test_world_readable_auth_file_warns(home: Path, system_dir: Path) -> None:
    write(home / ".one" / "one_auth", "a:b\n", mode=0o644)
    s = load(home, system_dir)
    assert s.has_credentials
    assert any("chmod 600" in w for w in s.warnings)


def test_endpoint_order(home: Path, system_dir: Path) -> None:
    write(system_dir / "one_endpoint", "http://sys:2633/RPC2\n")
    assert load(home, system_dir).xmlrpc_url == "http://sys:2633/RPC2"
    write(home / ".one" / "one_endpoint", "http://home:2633/RPC2\n")
    s = load(home, system_dir)
    assert s.xmlrpc_url == "http://home:2633/RPC2"
    assert s.sources["xmlrpc_url"] == "file ~/.one/one_endpoint"
    s = load(home, system_dir, ONE_XMLRPC="http://env:2633/RPC2")
    assert s.xmlrpc_url == "http://env:2633/RPC2"
    assert s.sources["xmlrpc_url"] == "env ONE_XMLRPC"


def test_flow_endpoint_and_credentials(home: Path, system_dir: Path) -> None:
    write(home / ".one" / "one_auth", "me:mypw\n")
    write(home / ".one" / "oneflow_endpoint", "http://flow-file:2474\n")
    s = load(home, system_dir)
    assert (s.flow_url, s.flow_user, s.flow_password) == ("http://flow-file:2474", "me", "mypw")
    s = load(home, system_dir, ONEFLOW_URL="http://flow-env:2474", ONEFLOW_USER="fu", ONEFLOW_PASSWORD="fp")
    assert (s.flow_url, s.flow_user, s.flow_password) == ("http://flow-env:2474", "fu", "fp")
    assert s.sources["flow_password"] == "env ONEFLOW_PASSWORD"


def test_timeout_and_tls_from_environment(home: Path, system_dir: Path) -> None:
    s = load(home, system_dir, ONE_XMLRPC_TIMEOUT="12.5", ONE_DISABLE_SSL_VERIFY="yes", ONE_CERT_DIR="/etc/ca")
    assert s.xmlrpc_timeout == 12.5
    assert s.ssl_verify is False
    assert s.cert_dir == Path("/etc/ca")
    assert load(home, system_dir, ONE_DISABLE_SSL_VERIFY="no").ssl_verify is True


@pytest.mark.parametrize("value", ["abc", "0", "-3"])
def test_bad_timeout_is_a_clear_error(home: Path, system_dir: Path, value: str) -> None:
    with pytest.raises(SiteError) as info:
        load(home, system_dir, ONE_XMLRPC_TIMEOUT=value)
    assert "ONE_XMLRPC_TIMEOUT" in info.value.title


def test_config_file_values_and_sources(home: Path, system_dir: Path) -> None:
    write(home / ".config" / "sitetk" / "config.toml", """
refresh_interval = 2.5
theme = "nord"
xmlrpc_timeout = 9
audit_log = "/tmp/audit-elsewhere.log"

[marketplace]
urls = ["http://market.example:8080", "http://community.example"]

[cpu]
min_free_percent = 25
min_free_memory_mib = 4096
known_good_models = ["Icelake-Server-noTSX"]
document_db_roles = ["manager", "mongo"]
document_db_attribute = "RUNS_MONGO"

[naming]
attribute_prefix = "ONEAPP"
role_manager = "tnlcm"
""")
    s = load(home, system_dir)
    assert s.config_found
    assert s.refresh_interval == 2.5 and s.theme == "nord" and s.xmlrpc_timeout == 9
    assert s.marketplace_urls == ("http://market.example:8080", "http://community.example")
    assert s.min_free_cpu_percent == 25 and s.min_free_memory_mib == 4096
    assert s.known_good_cpu_models == DEFAULT_KNOWN_GOOD_MODELS + ("Icelake-Server-noTSX",)
    assert s.naming.attribute_prefix == "ONEAPP"
    assert s.naming.appliance_name_attribute == "ONEAPP_MARKETPLACE_APPLIANCE_NAME"
    assert s.naming.role_manager == "tnlcm"
    assert s.naming.document_db_roles == ("manager", "mongo")
    assert s.naming.document_db_attribute == "RUNS_MONGO"
    assert s.audit_log == Path("/tmp/audit-elsewhere.log")
    assert s.sources["theme"] == "config"
    assert s.sources["marketplace_urls"] == "config"
    # the environment wins over the config file for the platform's own variable
    assert load(home, system_dir, ONE_XMLRPC_TIMEOUT="3").xmlrpc_timeout == 3


def test_xdg_and_explicit_config_locations(home: Path, system_dir: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    write(xdg / "sitetk" / "config.toml", 'theme = "from-xdg"\n')
    s = load(home, system_dir, XDG_CONFIG_HOME=str(xdg), XDG_STATE_HOME=str(tmp_path / "state"))
    assert s.theme == "from-xdg"
    assert s.state_dir == tmp_path / "state" / "sitetk"
    explicit = write(tmp_path / "elsewhere.toml", 'theme = "explicit"\n')
    assert load(home, system_dir, SITETK_CONFIG=str(explicit)).theme == "explicit"


@pytest.mark.parametrize(
    "text, words",
    [
        ("refresh_interval = ", "Malformed config file"),
        ("refresh_intervall = 3", "refresh_intervall"),
        ("refresh_interval = 'soon'", "refresh_interval"),
        ("refresh_interval = -1", "greater than 0"),
        ("[cpu]\nmin_free_percent = 140", "cpu.min_free_percent"),
        ("[marketplace]\nurls = 'http://one'", "marketplace.urls"),
        ("marketplace = 3", "[marketplace]"),
        ("[cpu]\nbogus = 1", "cpu.bogus"),
    ],
)
def test_bad_config_files_name_the_problem(home: Path, system_dir: Path, text: str, words: str) -> None:
    path = write(home / ".config" / "sitetk" / "config.toml", text + "\n")
    with pytest.raises(SiteError) as info:
        load(home, system_dir)
    message = f"{info.value.title} {info.value.detail}"
    assert words in message
    assert str(path) in message


def test_secrets_never_in_repr_or_redacted_view(home: Path, system_dir: Path) -> None:
    write(home / ".one" / "one_auth", "oneadmin:Sup3rSecret\n")
    s = load(home, system_dir, ONEFLOW_PASSWORD="Fl0wSecret")
    for text in (repr(s), str(s), str(s.redacted())):
        assert "Sup3rSecret" not in text
        assert "Fl0wSecret" not in text
    view = s.redacted()
    assert view["session"] == "oneadmin:***"
    assert view["one_password"] == "***" and view["flow_password"] == "***"
    assert set(s.secrets) >= {"Sup3rSecret", "Fl0wSecret"}


def test_for_site_points_settings_at_a_site(home: Path, system_dir: Path) -> None:
    base = load(home, system_dir)
    s = Settings.for_site("http://127.0.0.1:1/RPC2", "oneadmin:pw:x", "http://127.0.0.1:2",
                          ("http://127.0.0.1:3",), base=base)
    assert (s.one_user, s.one_password) == ("oneadmin", "pw:x")
    assert s.has_credentials
    assert s.flow_url == "http://127.0.0.1:2" and s.flow_password == "pw:x"
    assert s.marketplace_urls == ("http://127.0.0.1:3",)
    assert s.sources["xmlrpc_url"] == "embedded site"
    assert s.state_dir == base.state_dir
