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

The verbs live in `trial_verbs`, imported when one of them runs (`tui.cli.common.verb`).
"""

from __future__ import annotations

import argparse

from tui import timing
from tui.cli.common import non_negative_seconds, site_command, verb
from tui.domain.trial_ids import DEFAULT_TN_ID, check_tn_id

#: the default of tui.procedures.trial.network, read from the timing profile it reads it from
DEFAULT_WAIT = timing.PROFILE.trial_network_timeout


def tn_id(text: str) -> str:
    problem = check_tn_id(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{text!r}: {problem} (the manager's rule)")
    return text


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
    p.set_defaults(func=site_command(verb("tui.cli.trial_verbs", "run_command")))

    p = verbs.add_parser("status", help="a trial network's state, report or the end of the manager's log")
    _common(p)
    p.set_defaults(func=site_command(verb("tui.cli.trial_verbs", "status_command")))

    p = verbs.add_parser("destroy", help="destroy and purge a trial network")
    _common(p)
    p.add_argument("--timeout", type=non_negative_seconds, default=DEFAULT_WAIT, metavar="SECONDS",
                   help=f"time the manager's destroy pipeline may take (default {DEFAULT_WAIT:g})")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the preview (curl commands) and change nothing")
    p.set_defaults(func=site_command(verb("tui.cli.trial_verbs", "destroy_command")))
