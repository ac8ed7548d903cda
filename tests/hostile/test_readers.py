"""Every file the console reads is bounded: nesting depth, size, number length and encoding give a
clear message (exit code, no traceback) in `toolkit validate`, `toolkit deploy --dry-run`,
`site check`, `site encrypt`, `site decrypt`, `sitetk info` and every other reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from tui.__main__ import main
from tui.adapters.vault import VaultPassword, encrypt_text
from tui.cli.common import EXIT_FAILED, EXIT_USAGE
from tui.domain.appliances import parse_record
from tui.domain.bounded import MAX_FILE_BYTES, BoundedInputError, load_json, read_text_file
from tui.domain.components import ComponentDefinitionError, parse_public_yaml
from tui.domain.input_file import InputFileError, load_input_file
from tui.domain.site_config import SiteConfigError, parse_value
from tui.procedures.audit import AuditLog, Redactor

DEEP = 5000
BIG_INT = "1" * 5000
PASSWORD = "hostile-vault-pass"


def _input_json(kind: str) -> bytes:
    if kind == "deep":
        return ('{"name": "x", "user_inputs_values": {"a": ' + "[" * DEEP + "]" * DEEP + "}}").encode()
    if kind == "bigint":
        return ('{"name": "x", "user_inputs_values": {"a": ' + BIG_INT + "}}").encode()
    if kind == "latin1":
        return '{"name": "café"}'.encode("latin-1")
    return b'{"name": "' + b"x" * (MAX_FILE_BYTES + 10) + b'"}'


def _core_yaml(kind: str) -> bytes:
    if kind == "deep":
        return ("site_domain: example.org\nsite_variables: " + "[" * DEEP + "]" * DEEP + "\n").encode()
    if kind == "bigint":
        return f"site_domain: example.org\nsite_mtu: {BIG_INT}\n".encode()
    if kind == "latin1":
        return "site_domain: café.example\n".encode("latin-1")
    return b"site_domain: " + b"x" * (MAX_FILE_BYTES + 10) + b"\n"


#: what the message names for each hostile case
SAYS = {"deep": "nested", "bigint": "digits", "latin1": "UTF-8", "huge": "larger than"}
KINDS = tuple(SAYS)


def _no_traceback(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "Traceback" not in text and "RecursionError" not in text
    return text


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("SITETK_CONFIG", "ONE_AUTH", "ONE_XMLRPC", "SITETK_VAULT_PASSWORD_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SITETK_AUDIT_LOG", str(tmp_path / "audit.log"))
    (tmp_path / "home").mkdir()
    password = tmp_path / "vault-pass"
    password.write_text(PASSWORD + "\n")
    password.chmod(0o600)
    return tmp_path


@pytest.mark.parametrize("kind", KINDS)
def test_toolkit_validate_refuses_hostile_input_files(kind: str, home: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = home / "inputs.json"
    path.write_bytes(_input_json(kind))
    code = main(["toolkit", "validate", str(path), "--offline"])
    text = _no_traceback(capsys)
    assert code in (EXIT_FAILED, EXIT_USAGE, 3) and SAYS[kind] in text, text[-500:]


@pytest.mark.parametrize("kind", KINDS)
def test_toolkit_deploy_dry_run_refuses_hostile_input_files(kind: str, home: Path, sim_factory, capsys,
                                                            monkeypatch) -> None:  # type: ignore[no-untyped-def]
    sim = sim_factory(scenario="deployed")  # the toolkit's service template is in the cloud
    monkeypatch.setenv("ONE_AUTH", str(sim.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONE_XMLRPC", sim.xmlrpc_url)
    monkeypatch.setenv("ONEFLOW_URL", sim.flow_url)
    path = home / "inputs.json"
    path.write_bytes(_input_json(kind))
    code = main(["toolkit", "deploy", "--input", str(path), "--dry-run"])
    text = _no_traceback(capsys)
    assert code in (EXIT_FAILED, EXIT_USAGE) and SAYS[kind] in text, text[-500:]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("verb", ["check", "encrypt", "decrypt"])
def test_site_verbs_refuse_a_hostile_core_yaml(kind: str, verb: str, home: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = home / "core.yaml"
    data = _core_yaml(kind)
    if verb == "decrypt" and kind != "huge":  # a vault file whose plain text is hostile
        path.write_text(encrypt_text(data.decode("latin-1") if kind == "latin1" else data.decode(),
                                     VaultPassword.from_text(PASSWORD)))
        if kind == "latin1":  # the plain text itself must be non-UTF-8: encrypt the raw bytes
            path.write_text(encrypt_text(data, VaultPassword.from_text(PASSWORD)))  # type: ignore[arg-type]
    else:
        path.write_bytes(data)
    before = path.read_bytes()
    code = main(["site", verb, str(path), "--vault-password-file", str(home / "vault-pass")])
    text = _no_traceback(capsys)
    assert code != 0 and SAYS[kind] in text, (verb, kind, text[-500:])
    assert path.read_bytes() == before  # nothing half-changed


@pytest.mark.parametrize("content", [b"refresh_interval = 5\n# caf\xe9\n", b"a = " + b"[" * DEEP + b"]" * DEEP,
                                     b"refresh_interval = " + BIG_INT.encode()])
def test_info_with_a_hostile_config_file_says_so(content: bytes, home: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    config = home / "config.toml"
    config.write_bytes(content)
    monkeypatch.setenv("SITETK_CONFIG", str(config))
    code = main(["info"])
    text = _no_traceback(capsys)
    assert code == EXIT_USAGE and str(config) in text


def test_a_non_utf8_session_file_is_a_credentials_problem(home: Path, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    auth = home / "one_auth"
    auth.write_bytes(b"oneadmin:p\xe4ss\n")
    auth.chmod(0o600)
    monkeypatch.setenv("ONE_AUTH", str(auth))
    assert main(["info", "--json"]) == 0
    text = _no_traceback(capsys)
    assert "UTF-8" in json.loads(text)["credentials_problem"]


HOSTILE_TEXTS: tuple[str, ...] = ("[" * DEEP + "]" * DEEP, "{\"a\": " + BIG_INT + "}")


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_each_domain_reader_says_what_is_wrong(text: str, tmp_path: Path) -> None:
    readers: list[tuple[Callable[[], object], type[Exception]]] = [
        (lambda: load_json(text, "x"), BoundedInputError),
        (lambda: load_input_file(text), InputFileError),
        (lambda: parse_value(text), SiteConfigError),
        (lambda: parse_public_yaml("comp", "site_variables: " + text), ComponentDefinitionError),
    ]
    for read, error in readers:
        with pytest.raises(error) as caught:
            read()
        assert "nested" in str(caught.value) or "digits" in str(caught.value)
    # a marketplace record whose template is hostile is kept, with a warning
    record = parse_record({"_id": {"$oid": "x"}, "name": "n", "version": "v1", "links": {"download": {"href": "h"}},
                           "opennebula_template": text}, "http://m")
    assert record.template is None and any("ignored" in w for w in record.warnings)
    # a hostile audit line is skipped like any unreadable line
    log = AuditLog(tmp_path / "audit.log", Redactor())
    log.record("x")
    with log.path.open("a") as handle:
        handle.write(text + "\n")
    assert [e["action"] for e in log.entries()] == ["x"]


def test_read_text_file_bounds_size_and_encoding(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"\xef\xbb\xbfok")
    assert read_text_file(path) == "ok"
    path.write_bytes(b"line\nab\xffc")
    with pytest.raises(BoundedInputError, match="line 2, column 3"):
        read_text_file(path)
    path.write_bytes(b"x" * 11)
    with pytest.raises(BoundedInputError, match="larger than"):
        read_text_file(path, max_bytes=10)


def test_a_non_utf8_token_file_is_a_clear_error(tmp_path: Path) -> None:
    from tui.errors import SiteError
    from tui.procedures.site.workspace import read_token

    path = tmp_path / "token"
    path.write_bytes(b"ghp_\xff\xfe\n")
    with pytest.raises(SiteError, match="UTF-8"):
        read_token(path, "UNSET_TOKEN_VARIABLE")
