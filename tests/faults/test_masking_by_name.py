"""Masking by name (issue 22 item 8): what is secret is masked in the audit log, and only that."""

from __future__ import annotations

from pathlib import Path

from tui.domain.secret_names import MASK
from tui.procedures.audit import AuditLog, Redactor


def test_an_audit_record_masks_the_secret_inputs_and_only_them(tmp_path: Path) -> None:
    """Issue 22 item 8: every `toolkit.instantiate` record masked `values_key` (its value is the name
    of the body's key, `user_inputs_values`); a secret-named value inside is still masked."""
    log = AuditLog(tmp_path / "audit.log", Redactor())
    log.record("toolkit.instantiate", "Site Toolkit", details={
        "values_key": "user_inputs_values", "platform_version": "7.0.0",
        "inputs": {"app_automation_cloud_username": "tkauto", "app_automation_cloud_password": "hunter22"},
        "tls_key": "-----BEGIN PRIVATE KEY-----", "primary_key": "id"})
    (entry,) = log.entries()
    assert entry["details"]["values_key"] == "user_inputs_values" and entry["details"]["primary_key"] == "id"
    assert entry["details"]["inputs"] == {"app_automation_cloud_username": "tkauto",
                                          "app_automation_cloud_password": MASK}
    assert entry["details"]["tls_key"] == MASK and "hunter22" not in log.path.read_text()
