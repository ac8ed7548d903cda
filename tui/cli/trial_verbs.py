"""The verbs of `sitetk trial` (registered in tui.cli.trial, which imports this module only when
one of them runs: the manager's client, httpx, costs ~0.2 s of CPU to import).
"""

from __future__ import annotations

import argparse
from typing import Any

from tui.cli.common import EXIT_OK, emit_json
from tui.cli.exit_codes import EXIT_FAILED
from tui.cli.runner import run_cli
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.trial.network import (
    Destroyed,
    DestroyTrialNetwork,
    RunTrialNetwork,
    TrialResult,
    manager_access,
    plan_trial,
    read_trial,
)


def _values(args: argparse.Namespace, site: SiteConnection) -> tuple[dict[str, str], str]:
    from tui.cli.setup_verbs import load_target

    target = load_target(getattr(args, "input", None), site)
    vault = target.vault_password.text if target.vault_password is not None else ""
    return dict(target.values), vault


async def run_command(args: argparse.Namespace, site: SiteConnection) -> int:
    values, vault = _values(args, site)
    plan = await plan_trial(site, values, tn_id=args.tn_id, branch=args.branch or "", site_dir=args.site or "",
                            vault_text=vault, library_ref=args.library_ref or "")
    operation = RunTrialNetwork(wait_timeout=args.timeout, poll_interval=args.poll)

    def describe(result: TrialResult) -> str:
        head = (f"trial network {result.tn_id} was already activated" if result.already else
                f"trial network {result.tn_id} activated in {result.seconds:.0f} s (pipeline {result.pipeline})")
        return f"{head}\n\nIts report:\n{result.report.rstrip()}\n\nRemove it: sitetk trial destroy --tn-id {result.tn_id}"

    return await run_cli(args, site, operation, plan=plan, describe=describe, timeout=None)


async def status_command(args: argparse.Namespace, site: SiteConnection) -> int:
    values, _ = _values(args, site)
    access = await manager_access(site, values)
    record, report, log = await read_trial(access, args.tn_id)
    state = str(record.get("state", "")) if record else ""
    jenkins = record.get("jenkins_deploy") if record else None
    pipeline = str(jenkins.get("pipeline_name", "")) if isinstance(jenkins, dict) else ""
    if args.json:
        emit_json({"ok": True, "manager": access.as_json(), "tn_id": args.tn_id, "found": record is not None,
                   "state": state, "pipeline": pipeline, "report": report, "log_tail": log})
        return EXIT_OK
    for warning in access.warnings:
        print(f"warning: {warning}")
    if record is None:
        print(f"the manager at {access.url} has no trial network {args.tn_id}")
        return EXIT_OK
    print(f"trial network {args.tn_id}: {state} (manager {access.url}; deploy pipeline {pipeline or 'none yet'})")
    if report:
        print(f"\nIts report:\n{report.rstrip()}")
    if state != "activated" and log:
        print(f"\nThe end of the manager's log:\n{log}")
    return EXIT_OK if state != "failed-activation" else EXIT_FAILED


async def destroy_command(args: argparse.Namespace, site: SiteConnection) -> int:
    values, _ = _values(args, site)
    operation = DestroyTrialNetwork(args.tn_id, wait_timeout=args.timeout, values=values)

    def describe(result: Destroyed) -> str:
        return f"trial network {result.tn_id} ({result.state_before}): {' and '.join(result.steps)}"

    def idle(plan: Any) -> str | None:
        if plan.steps:
            return None
        if not plan.state:
            return f"the manager has no trial network {plan.tn_id}: nothing to do"
        raise SiteError(f"Trial network {plan.tn_id} is {plan.state}", "The manager destroys or purges it only once "
                        "its transition has finished: wait (`sitetk trial status`), then run again.", retryable=True)

    return await run_cli(args, site, operation, describe=describe, nothing_to_do=idle, timeout=None)
