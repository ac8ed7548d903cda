"""The audit log: append-only JSON lines, mode 0600, secrets redacted."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tui.procedures.audit import AuditLog, Redactor, default_audit_path


def test_entries_are_appended_as_json_lines(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "state" / "audit.log", Redactor())
    log.record("site.edit", "core.yaml", details={"changes": {"site_domain": "x"}})
    log.record("site.submit", "lab-a", outcome="failed")
    lines = log.path.read_text().splitlines()
    assert [json.loads(line)["action"] for line in lines] == ["site.edit", "site.submit"]
    assert stat.S_IMODE(log.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(log.path.parent.stat().st_mode) == 0o700
    entry = log.entries()[0]
    assert entry["details"] == {"changes": {"site_domain": "x"}} and entry["time"] and entry["user"]


def test_existing_open_log_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    path.write_text("")
    path.chmod(0o644)
    AuditLog(path, Redactor()).record("x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_redaction_of_registered_values_and_secret_keys(tmp_path: Path) -> None:
    redactor = Redactor(["vault-pass-123"])
    redactor.register("ghp_token_value_456")
    redactor.register("ab")  # too short to register
    log = AuditLog(tmp_path / "audit.log", redactor)
    log.record(
        "site.edit",
        "clone of https://host/x with ghp_token_value_456",
        details={
            "cli": "echo vault-pass-123",
            "changes": {"site_variables.switch.registry_token": "plain-secret", "site_domain": "ab.example"},
            "app_objectstore_root_password": "pw",
            "tls_key": "-----BEGIN-----",
            "site_admin_ssh_public_key": "ssh-ed25519 AAAA",
            "nested": [{"secret_key": "s3-secret"}],
        },
    )
    text = log.path.read_text()
    for secret in ("vault-pass-123", "ghp_token_value_456", "plain-secret", "-----BEGIN-----", "s3-secret"):
        assert secret not in text
    entry = log.entries()[0]
    assert entry["details"]["site_admin_ssh_public_key"] == "ssh-ed25519 AAAA"
    assert entry["details"]["changes"]["site_domain"] == "ab.example"
    assert entry["target"] == "clone of https://host/x with ***"


def test_default_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_audit_path() == tmp_path / "xdg" / "sitetk" / "audit.log"
    monkeypatch.setenv("SITETK_AUDIT_LOG", str(tmp_path / "custom.log"))
    assert default_audit_path() == tmp_path / "custom.log"
