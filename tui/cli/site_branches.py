"""`sitetk site branches|open|create|submit`: the sites repository's site branches.

`create` is the `CreateSite` operation (tui.procedures.site.file_operations) through the CLI
runner (preview with the git and ansible-vault commands, --dry-run, --json, read-only refusal).
`submit` is the `SubmitSite` operation (tui.procedures.site.submit_operation) through the CLI runner:
the decrypted diff, the check and its gate first (check errors refuse with exit 3 unless
`--override-reason`), then the preview, the question (`--yes`) and the commit and push.
`site enable --submit` runs the same `submit` after the enable.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping

from tui.adapters.git_repo import GitRepo
from tui.adapters.vault import VaultPassword
from tui.cli.common import EXIT_FINDINGS, EXIT_OK, emit_json, follow, print_error
from tui.cli.runner import run_cli
from tui.cli.site_options import (
    configured_definitions,
    connect_if_reachable,
    findings_text,
    finish,
    local_site,
    parse_set,
    sites_repository,
    vault_password,
    warn,
)
from tui.errors import SiteError
from tui.procedures.operation_stream import stream_run
from tui.procedures.site.config import load_site_config
from tui.procedures.site.file_operations import CreateSite
from tui.procedures.site.repo import (
    SiteRef,
    current_site,
    list_sites,
    locate_site,
    open_site,
    preview_submit,
)
from tui.procedures.site.submit_operation import SubmitPlan, SubmitSite
from tui.procedures.site.verdict import SiteVerdict, SubmitGate, site_verdict, submit_gate


async def submit_verdict(args: argparse.Namespace, path: Path, password: VaultPassword) -> SiteVerdict:
    """The check a submit goes ahead on: the library when configured, the cloud when reachable."""
    definitions = await configured_definitions(args)
    config = (await load_site_config(path, password)).config
    site = await connect_if_reachable(args, "the IDs are checked without it")
    try:
        return await site_verdict(config, site=site, definitions=definitions)
    finally:
        if site is not None:
            await site.close()


def submit_gate_or_refusal(args: argparse.Namespace, verdict: SiteVerdict) -> SubmitGate | None:
    """The submit gate; None (after printing the refusal and the findings) when it refuses."""
    try:
        gate = submit_gate(verdict, args.override_reason)
    except SiteError as error:
        if args.json:
            print_error(error, True, verdict=verdict.as_json())
        else:
            print(findings_text(verdict.findings), file=sys.stderr)
            print_error(error, False)
        return None
    if not args.json:
        for item in verdict.unchecked():
            print(f"warning: not checked: {item}", file=sys.stderr)
        if gate.overridden:
            print(f"warning: submitting with {len(gate.overridden)} check error(s) overridden: {gate.override_reason}", file=sys.stderr)
    return gate


async def branches_command(args: argparse.Namespace) -> int:
    repo = sites_repository(args)
    try:
        listing = await list_sites(repo)
    finally:
        repo.close()
    finish(args.json, {"default_branch": listing.default_branch, "sites": list(listing.sites)}, "\n".join(listing.sites) or "(no site branches)")
    return EXIT_OK


async def open_command(args: argparse.Namespace) -> int:
    repo = sites_repository(args)
    opened: list[SiteRef] = []
    try:
        events = await follow(stream_run(partial(open_site, repo, args.branch, args.site), on_result=opened.append), args.json)
    finally:
        repo.close()
    site = opened[-1]
    finish(args.json, {"site": site.as_json(), "events": [e.as_json() for e in events]}, str(site.path))
    return EXIT_OK


async def create_command(args: argparse.Namespace) -> int:
    initial = dict(parse_set(args.set))
    warnings: list[str] = []
    password = vault_password(args, warnings)
    warn(warnings, args.json)
    repo = sites_repository(args)
    try:
        operation = CreateSite(repo, args.branch, args.site or args.branch, password, initial)
        return await run_cli(args, local_site(args), operation, extra=lambda plan: {"warnings": warnings, "site": plan.site.as_json()},
                             describe=lambda done: str(done.site.path))
    finally:
        repo.close()


async def submit_command(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = vault_password(args, warnings)
    warn(warnings, args.json)
    repo = sites_repository(args)
    try:
        site_ref = await current_site(repo, args.site) if not args.branch else locate_site(repo, args.branch, args.site)
        return await submit(args, repo, site_ref, password, message=args.message, extra={"warnings": warnings})
    finally:
        repo.close()


async def submit(args: argparse.Namespace, repo: GitRepo, site_ref: SiteRef, password: VaultPassword, *,
                 message: str | None = None, extra: Mapping[str, Any] | None = None,
                 answer_to: Callable[[dict[str, Any]], None] = emit_json) -> int:
    """The `SubmitSite` operation through the runner: the diff, then the check (its gate refuses
    with the findings before anything is shown, exit 3), then preview, question, commit and push."""
    preview = await preview_submit(repo, site_ref, password, reveal=bool(getattr(args, "reveal", False)))
    verdict = await submit_verdict(args, site_ref.path, password) if preview.pending else None
    gate = None
    if verdict is not None and not args.dry_run:
        gate = submit_gate_or_refusal(args, verdict)
        if gate is None:
            return EXIT_FINDINGS
    operation = SubmitSite(repo, site_ref, password, message, getattr(args, "override_reason", None))
    plan = SubmitPlan(preview, verdict, gate, message)

    def members(plan: SubmitPlan) -> dict[str, Any]:
        return {**(extra or {}), "preview": preview.as_json(), "changes": operation.preview(plan).as_json(),
                "verdict": verdict.as_json() if verdict is not None else None}

    def show_diff(plan: SubmitPlan) -> None:
        if not plan.pending:
            return
        print(f"Diff against {preview.base}:")
        print(preview.diff or "(no change to the configuration)")
        if args.dry_run and verdict is not None:
            print(f"check: {findings_text(verdict.findings)}")

    site = local_site(args)
    return await run_cli(args, site, operation, plan=plan, extra=members, before=show_diff, answer_to=answer_to,
                         nothing_to_do=lambda plan: None if plan.pending else f"{site_ref.branch}: nothing to submit",
                         describe=lambda done: f"{done.site.branch}: " + (f"pushed {done.commit}" if done.pushed else "up to date on the remote"))
