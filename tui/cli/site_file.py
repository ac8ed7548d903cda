"""`sitetk site encrypt|decrypt|edit|check|fill|confirm`: one core.yaml file.

`encrypt` (`EncryptSite`), `edit` (`EditSite`), `fill` (`FillSite`) and `confirm`
(`ConfirmApplianceId`) are operations through the CLI runner (--dry-run, --yes, --json, read-only
refusal in the operation type); `decrypt` and `check` only read the file. The cloud's side (fill,
confirm, `check --cloud`: ~0.3 s of CPU to import) is imported by the verbs that use it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tui.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    UsageError,
    connect_site,
    emit_json,
    write_data,
)
from tui.cli.runner import run_cli
from tui.cli.site_args import LIBRARY_REPO_ENV
from tui.cli.site_options import (
    configured_definitions,
    findings_text,
    load_component_library,
    local_site,
    needs_password,
    parse_set,
    site_settings,
    vault_password,
    warn,
)
from tui.procedures.site.config import ConfigWritten, load_site_config
from tui.procedures.site.file_operations import EditSite, EncryptSite
from tui.procedures.site.verdict import verdict_of


async def encrypt_command(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = vault_password(args, warnings)
    warn(warnings, args.json)
    operation = EncryptSite(Path(args.path), password)
    return await run_cli(args, local_site(args), operation, extra={"warnings": warnings},
                         describe=lambda done: f"encrypted {done.path} (mode 0600)" if done.changed else f"{done.path}: already encrypted")


async def decrypt_command(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = vault_password(args, warnings)
    warn(warnings, args.json)
    loaded = await load_site_config(Path(args.path), password)
    if args.json:
        emit_json({"ok": True, "warnings": warnings, "path": str(loaded.path), "encrypted": loaded.encrypted, "text": loaded.config.text})
    else:
        write_data(loaded.config.text)
    return EXIT_OK


async def edit_command(args: argparse.Namespace) -> int:
    changes = parse_set(args.set)
    if not changes:
        raise UsageError("nothing to change: give --set dotted.path=value (repeatable)")
    warnings: list[str] = []
    password = vault_password(args, warnings)
    warn(warnings, args.json)
    return await run_cli(args, local_site(args), EditSite(Path(args.path), password, changes), extra={"warnings": warnings},
                         describe=_written_text)


def _written_text(written: ConfigWritten) -> str:
    """An edit's text-mode summary: what happened, then what the checks found."""
    lines = [f"wrote {written.path} (vault-encrypted, mode 0600)" if written.changed else f"{written.path}: no change"]
    lines += [f"{f.severity.value}: {f.path}: {f.message}" for f in written.findings]
    return "\n".join(lines)


async def check_command(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = vault_password(args, warnings) if needs_password(Path(args.path)) else None
    warn(warnings, args.json)
    definitions = None
    problems: tuple[str, ...] = ()
    if args.library or os.environ.get(LIBRARY_REPO_ENV) or site_settings().library_repo:
        library = await load_component_library(args)
        definitions, problems = library.as_mapping(), library.problems
    if args.cloud:
        from tui.procedures.site.fill import gather_cloud_facts

        site = await connect_site(site_settings())
        try:
            loaded = await load_site_config(Path(args.path), password, site.naming)
            facts = await gather_cloud_facts(site, loaded.config, definitions)
        finally:
            await site.close()
        verdict = verdict_of(loaded.config, naming=site.naming, definitions=definitions, facts=facts, nic_mtu=args.nic_mtu)
    else:
        loaded = await load_site_config(Path(args.path), password)
        verdict = verdict_of(loaded.config, definitions=definitions, nic_mtu=args.nic_mtu)
    findings, notes = verdict.findings, verdict.notes
    if args.json:
        emit_json({"ok": verdict.ok, "complete": verdict.complete, "unchecked": list(verdict.unchecked()), "warnings": warnings,
                   "library_problems": list(problems), "cloud_notes": list(notes), "findings": [f.as_json() for f in findings]})
    else:
        for problem in problems:
            print(f"warning: component library: {problem}", file=sys.stderr)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        print(findings_text(findings))
        for item in verdict.unchecked():
            print(f"not checked: {item}")
    return EXIT_FINDINGS if verdict.errors else EXIT_OK




async def fill_command(args: argparse.Namespace) -> int:
    from tui.procedures.site.fill_operation import FillSite

    warnings: list[str] = []
    password = vault_password(args, warnings)
    warn(warnings, args.json)
    definitions = await configured_definitions(args)
    site = await connect_site(site_settings(), read_only=args.read_only)
    try:
        return await run_cli(args, site, FillSite(Path(args.path), password, definitions), extra={"warnings": warnings})
    finally:
        await site.close()


async def confirm_command(args: argparse.Namespace) -> int:
    from tui.procedures.site.confirm_operation import ConfirmApplianceId

    warnings: list[str] = []
    password = vault_password(args, warnings) if needs_password(Path(args.path)) else None
    warn(warnings, args.json)
    definitions = (await load_component_library(args)).as_mapping()
    site = await connect_site(site_settings(), read_only=args.read_only)
    try:
        config = (await load_site_config(Path(args.path), password, site.naming)).config
        operation = ConfirmApplianceId(config, args.variable, args.reason, definitions)
        return await run_cli(args, site, operation, extra=lambda plan: {"confirmation": plan.confirmation.as_json()},
                             describe=lambda done: f"recorded in {done.file} (audit-logged); sitetk site check --cloud "
                                                   "shows it as a warning")
    finally:
        await site.close()
