"""A change without its record (issue 22 item 5): when the audit log cannot be written, the change
does not start.

`site edit` used to write core.yaml, then fail on its record with a traceback (exit 1): the change
landed, unrecorded. The audit log is now opened and checked before the change (a directory, a
dangling symlink, a symlink to a file, a full file system), and it is never written through a
symlink. A record that still fails (the disk filled during the run) says so with the entry."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.conftest import isolate_home
from tui.__main__ import main
from tui.adapters.vault import VaultPassword, read_vault_file, write_vault_file
from tui.cli.exit_codes import EXIT_FAILED, EXIT_OK
from tui.procedures import audit as audit_module
from tui.procedures.audit import AUDIT_ENV, AuditLog, AuditUnwritable
from tui.sim.repos import template_core_yaml


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


def _edit(capsys: pytest.CaptureFixture[str], core: Path, password_file: Path) -> tuple[int, dict[str, Any], str]:
    code = main(["site", "edit", str(core), "--vault-password-file", str(password_file), "--set",
                 "site_dns=9.9.9.9", "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def _directory(path: Path) -> None:
    path.mkdir(parents=True)


def _dangling(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(path.parent / "nowhere" / "audit.log")


def _to_a_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    target = path.parent / "elsewhere.log"
    target.write_text("someone else's file\n")
    path.symlink_to(target)


BROKEN: dict[str, Callable[[Path], None]] = {"directory": _directory, "dangling symlink": _dangling,
                                             "symlink to a file": _to_a_file}


@pytest.mark.parametrize("broken", list(BROKEN), ids=[k.replace(" ", "-") for k in BROKEN])
def test_site_edit_with_an_audit_log_it_cannot_write_changes_nothing(
        broken: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        password_file: Path, password: VaultPassword) -> None:
    log = tmp_path / "audit" / "audit.log"
    BROKEN[broken](log)
    monkeypatch.setenv(AUDIT_ENV, str(log))
    core = tmp_path / "core.yaml"
    write_vault_file(core, template_core_yaml(), password)
    before = core.read_bytes()
    code, data, err = _edit(capsys, core, password_file)
    assert code == EXIT_FAILED and data["ok"] is False, data
    assert data["error"]["title"] == f"The audit log cannot be written: {log}"
    assert "Nothing was changed" in data["error"]["detail"] and "Traceback" not in err
    assert core.read_bytes() == before and "9.9.9.9" not in read_vault_file(core, password)
    if broken == "symlink to a file":
        assert "symbolic link" in data["error"]["detail"]
        assert (log.parent / "elsewhere.log").read_text() == "someone else's file\n"  # never followed
    if broken == "dangling symlink":
        assert not (log.parent / "nowhere").exists()


def test_site_edit_on_a_full_file_system_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str], password_file: Path,
                                                          password: VaultPassword) -> None:
    real = os.fstatvfs

    def full(fd: int) -> Any:
        found = real(fd)
        return os.statvfs_result((found.f_bsize, found.f_frsize, found.f_blocks, 0, 0, found.f_files, 0, 0,
                                  found.f_flag, found.f_namemax))

    monkeypatch.setattr(audit_module.os, "fstatvfs", full)
    core = tmp_path / "core.yaml"
    write_vault_file(core, template_core_yaml(), password)
    before = core.read_bytes()
    code, data, err = _edit(capsys, core, password_file)
    assert code == EXIT_FAILED and "file system is full (0 bytes free)" in data["error"]["detail"]
    assert core.read_bytes() == before


def test_a_record_that_fails_after_the_check_says_what_it_could_not_keep(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.log")
    log.check_writable()
    assert log.path.exists() and log.path.stat().st_mode & 0o777 == 0o600 and log.entries() == []
    log.path.unlink()
    log.path.mkdir()  # taken away during the run
    with pytest.raises(AuditUnwritable) as caught:
        log.record("site.edit", "core.yaml", "ok", {"changes": {"site_dns": "9.9.9.9"}})
    assert "This entry could not be kept:" in caught.value.detail and '"site_dns": "9.9.9.9"' in caught.value.detail


def test_a_writable_audit_log_records_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], password_file: Path,
                                                 password: VaultPassword) -> None:
    log = tmp_path / "audit" / "audit.log"
    monkeypatch.setenv(AUDIT_ENV, str(log))
    core = tmp_path / "core.yaml"
    write_vault_file(core, template_core_yaml(), password)
    code, data, err = _edit(capsys, core, password_file)
    assert code == EXIT_OK and [e["action"] for e in AuditLog(log).entries()] == ["site.edit"]
