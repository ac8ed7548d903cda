"""`sitetk trial`: prove the site works with a test trial network through the manager's REST API.

    sitetk trial run [--input FILE] [--tn-id ID] [--branch B] [--site DIR] [--library-ref REF]
                     [--timeout S] [--yes] [--dry-run] [--json]
        log in to the manager (its admin user and password: the input file's, else the manager
        VM's CONTEXT), create the trial network from the component library's sample descriptor
        for tn_init against the site's branch and directory (validated by the manager), activate
        it and follow its state until the deploy pipeline has finished (at most --timeout
        seconds; Ctrl-C stops the wait, the manager goes on), then print its report. A failed
        activation prints the pipeline that failed and the end of the manager's log (exit 1).
    sitetk trial status [--input FILE] [--tn-id ID] [--json]
        the trial network's state, pipeline, report (activated) or the end of its log.
    sitetk trial destroy [--input FILE] [--tn-id ID] [--timeout S] [--yes] [--dry-run] [--json]
        destroy it (activated, failed-activation, failed-destruction) and purge it: nothing left.

The manager is at `http://<the manager VM's address>:5000`, or at the `manager_url` setting
([site] table, or SITETK_MANAGER_URL). Previews print curl commands that hold no secret (the
login asks the password; the vault password is read from a file). `--read-only` refuses run and
destroy. Exit codes as every verb (tui.cli.exit_codes).
"""

from __future__ import annotations

import argparse
from typing import Any

from tui import timing
from tui.cli.common import EXIT_OK, emit_json, non_negative_seconds, site_command
from tui.cli.exit_codes import EXIT_FAILED
from tui.cli.runner import run_cli
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.trial.network import (
    DEFAULT_TN_ID,
    DEFAULT_WAIT,
    Destroyed,
    DestroyTrialNetwork,
    RunTrialNetwork,
    TrialResult,
    check_tn_id,
    manager_access,
    plan_trial,
    read_trial,
)


def tn_id(text: str) -> str:
    problem = check_tn_id(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r}: {problem} (the manager's rule)")
    return text


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


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", metavar="FILE", help="the toolkit's input file (the manager's admin credentials, the "
                   "site's branch and directory, the vault password); default: read from the live toolkit")
    p.add_argument("--tn-id", type=tn_id, default=DEFAULT_TN_ID, metavar="ID",
                   help=f"the trial network's id (a letter first, at most 15 characters; default {DEFAULT_TN_ID})")
    p.add_argument("--json", action="store_true", help="print JSON")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("trial", help="prove the site works: a test trial network through the manager",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("run", help="create, activate and report a test trial network")
    _common(p)
    p.add_argument("--branch", metavar="BRANCH", help="the site's branch of the sites repository (default: the inputs')")
    p.add_argument("--site", metavar="DIR", help="the site's directory on that branch (default: the inputs')")
    p.add_argument("--library-ref", metavar="BRANCH", help="the component library's branch (default: its default branch)")
    p.add_argument("--timeout", type=non_negative_seconds, default=DEFAULT_WAIT, metavar="SECONDS",
                   help=f"time the manager's deploy pipeline may take (default {DEFAULT_WAIT:g})")
    p.add_argument("--poll", type=non_negative_seconds, default=timing.PROFILE.poll_interval, help=argparse.SUPPRESS)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the preview (curl commands) and change nothing")
    p.set_defaults(func=site_command(run_command))

    p = verbs.add_parser("status", help="a trial network's state, report or the end of the manager's log")
    _common(p)
    p.set_defaults(func=site_command(status_command))

    p = verbs.add_parser("destroy", help="destroy and purge a trial network")
    _common(p)
    p.add_argument("--timeout", type=non_negative_seconds, default=DEFAULT_WAIT, metavar="SECONDS",
                   help=f"time the manager's destroy pipeline may take (default {DEFAULT_WAIT:g})")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the preview (curl commands) and change nothing")
    p.set_defaults(func=site_command(destroy_command))
