"""`site encrypt|edit|create` and the editor's save as operations: the operation type refuses them
in read-only mode (and audits the refusal), a dry run changes nothing, and a run that changed
something has one audit record."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tui.__main__ import main
from tui.adapters.vault import VaultPassword, read_vault_file, write_vault_file
from tui.cli.common import EXIT_OK, EXIT_USAGE
from tui.procedures.audit import AuditLog
from tui.procedures.connection import SiteConnection
from tui.procedures.operation import ReadOnlyRefused, RunContext, run_operation
from tui.procedures.site.file_operations import SaveSite
from tui.settings import Settings
from tui.sim.repos import template_core_yaml


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def _audit() -> list[dict[str, Any]]:
    return AuditLog(Settings.load().audit_log).entries()


def _branches(sites: Path) -> list[str]:
    out = subprocess.run(["git", "--git-dir", str(sites), "branch", "--format=%(refname:short)"],
                         capture_output=True, text=True, check=True).stdout
    return out.split()


def test_read_only_refuses_encrypt_edit_and_create(capsys: pytest.CaptureFixture[str], tmp_path: Path, password_file: Path,
                                                    password: VaultPassword, seeded: tuple[Path, Path]) -> None:
    """The verbs have no read-only check of their own: the operation type refuses after the
    preview (which a dry run still shows) and audits the refusal; nothing is written."""
    pw = ("--vault-password-file", str(password_file))
    plain = tmp_path / "plain" / "core.yaml"
    plain.parent.mkdir()
    plain.write_text(template_core_yaml())
    code, result = _cli(capsys, "--read-only", "site", "encrypt", str(plain), *pw, "--dry-run", "--json")
    assert code == EXIT_OK and result["dry_run"] and result["preview"]["changes"][0]["cli"].startswith("ansible-vault encrypt")
    code, result = _cli(capsys, "--read-only", "site", "encrypt", str(plain), *pw, "--json")
    assert code == EXIT_USAGE and result["error"]["detail"] == "read-only mode: encrypt rewrites core.yaml"
    assert plain.read_text() == template_core_yaml()

    vault = tmp_path / "vault" / "core.yaml"
    vault.parent.mkdir()
    write_vault_file(vault, template_core_yaml(), password)
    before = vault.read_bytes()
    code, result = _cli(capsys, "--read-only", "site", "edit", str(vault), *pw, "--set", "site_dns=9.9.9.9", "--json")
    assert code == EXIT_USAGE and result["error"]["detail"] == "read-only mode: edit writes core.yaml"
    assert vault.read_bytes() == before

    sites = seeded[0]
    repo = ("--repo", str(sites), "--workdir", str(tmp_path / "work"))
    code, result = _cli(capsys, "--read-only", "site", "create", "lab-ro", *repo, *pw, "--dry-run", "--json")
    assert code == EXIT_OK and [c["cli"].split()[:2] for c in result["preview"]["changes"]] == [
        ["git", "checkout"], ["git", "mv"], ["ansible-vault", "encrypt"]]
    code, result = _cli(capsys, "--read-only", "site", "create", "lab-ro", *repo, *pw, "--json")
    assert code == EXIT_USAGE and "read-only mode: create" in result["error"]["detail"]
    assert not (tmp_path / "work" / "lab-ro").exists() and "lab-ro" not in _branches(sites)

    refused = [(e["action"], e["outcome"]) for e in _audit()]
    assert refused == [("site.encrypt", "refused"), ("site.edit", "refused"), ("site.create", "refused")]


def test_each_run_that_changes_something_has_one_audit_record(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                               password_file: Path, password: VaultPassword,
                                                               seeded: tuple[Path, Path]) -> None:
    """Written once, by the operation type (the procedures record only when a direct caller hands
    them the audit log); a re-run changes nothing and records nothing."""
    pw = ("--vault-password-file", str(password_file))
    core = tmp_path / "core.yaml"
    core.write_text(template_core_yaml())
    for _ in range(2):
        assert _cli(capsys, "site", "encrypt", str(core), *pw, "--json")[0] == EXIT_OK
        code, result = _cli(capsys, "site", "edit", str(core), *pw, "--set", "site_dns=9.9.9.9", "--json")
        assert code == EXIT_OK
    assert result["result"]["changed"] is False and read_vault_file(core, password).count("9.9.9.9") == 1
    repo = ("--repo", str(seeded[0]), "--workdir", str(tmp_path / "work"))
    library = ("--library", str(seeded[1]), "--library-workdir", str(tmp_path / "lib"))
    for _ in range(2):
        code, result = _cli(capsys, "site", "create", "lab-once", *repo, *pw, "--yes", "--json")
        assert code == EXIT_OK and result["site"]["site_dir"] == "lab-once"
        code, result = _cli(capsys, "site", "enable", "vm_kvm", *repo, *library, *pw, "--set", "template_id=3",
                            "--set", "image_id=4", "--no-cloud", "--yes", "--json")
        assert code == EXIT_OK
    entries = _audit()
    assert [(e["action"], e["target"]) for e in entries] == [
        ("site.encrypt", str(core)), ("site.edit", str(core)), ("site.create", "lab-once"), ("site.enable_component", "vm_kvm")]
    assert entries[1]["details"]["changes"] == {"site_dns": "9.9.9.9"}
    assert {"site_variables.vm_kvm.template_id": 3, "site_variables.vm_kvm.image_id": 4}.items() <= entries[3]["details"]["changes"].items()


async def test_save_is_refused_in_read_only_mode_and_recorded_once(tmp_path: Path, password: VaultPassword) -> None:
    """The console editor's save (`SaveSite`): refused and audited in read-only mode with the file
    untouched; otherwise one `site.save` record, none for a save that changes nothing."""
    path = tmp_path / "core.yaml"
    write_vault_file(path, template_core_yaml(), password)
    audit_path = tmp_path / "audit.log"
    settings = replace(Settings(), audit_log=audit_path)
    text = template_core_yaml().replace("1450", "1400")
    operation = SaveSite(path, password, text, template_core_yaml())
    read_only = SiteConnection(settings, read_only=True)
    before = path.read_bytes()
    with pytest.raises(ReadOnlyRefused):
        await run_operation(read_only, operation, await operation.plan(read_only), RunContext(emit=lambda event: None))
    assert path.read_bytes() == before
    site = SiteConnection(settings)
    for _ in range(2):
        await run_operation(site, operation, await operation.plan(site), RunContext(emit=lambda event: None))
    assert read_vault_file(path, password) == text
    entries = AuditLog(audit_path).entries()
    assert [(e["action"], e["outcome"]) for e in entries] == [("site.save", "refused"), ("site.save", "ok")]
    assert entries[1]["details"]["cli"].startswith("ansible-vault edit") and entries[1]["target"] == str(path)
