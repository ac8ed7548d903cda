"""Which names hold secrets: exact words, so `passthrough` is not a password (and the audit log says so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.domain.secret_names import MASK, is_secret_key, mask_yaml_line
from tui.procedures.audit import AuditLog, Redactor


@pytest.mark.parametrize("name", [
    "password", "PASSWORD", "app_automation_password", "ONEFLOW_PASSWORD", "adminPassword", "db_pass", "passwd",
    "registry_token", "authtoken", "app_automation_sites_token", "secret_key", "x.secret", "tls_key", "key",
    "access_key", "private_key", "api-key", "apiKey", "credentials", "vault_passphrase",
])
def test_secret_names(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize("name", [
    "passthrough", "cpu_passthrough", "bypass_cache", "compass", "passive", "ssh_public_key", "SSH_PUBLIC_KEY",
    "site_admin_ssh_public_key", "key_id", "keyboard", "monkey", "tokenizer_mode", "hard", "",
    # a key naming where values are kept (issue 22 item 8): the deploy's `values_key`, and the like
    "values_key", "inputs_key", "sort_key", "primary_key", "partition_key",
])
def test_words_that_merely_contain_a_secret_word_are_not_secret(name: str) -> None:
    assert not is_secret_key(name)


def test_the_audit_log_keeps_passthrough_and_masks_real_secrets(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.log", Redactor())
    log.record("vm.move", "VM 7", details={"passthrough": True, "cpu_model": "host-passthrough", "hard": False,
                                           "oneflow_password": "hunter22", "notes": "bypass the cache"})
    (entry,) = log.entries()
    assert entry["details"]["passthrough"] is True
    assert entry["details"]["cpu_model"] == "host-passthrough"
    assert entry["details"]["notes"] == "bypass the cache"
    assert entry["details"]["oneflow_password"] == MASK
    assert "hunter22" not in log.path.read_text()


def test_yaml_lines_mask_only_secret_keys() -> None:
    assert mask_yaml_line("  cpu_passthrough: yes") == "  cpu_passthrough: yes"
    assert mask_yaml_line("  registry_password: s3cr3t  # set me") == f"  registry_password: {MASK}  # set me"

