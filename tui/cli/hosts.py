"""`sitetk hosts ...`: host CPU compatibility for the document database, and operation 7 headless.

    sitetk hosts list [--json]       every host (verdict, free capacity) and every database VM
    sitetk hosts check [--json]      database VMs only; exit 3 when one is at risk
    sitetk hosts move VM_ID [--host HOST_ID] [--passthrough] [--hard] [--yes] [--dry-run] [--json]
    sitetk hosts move --all-flagged [--hard] [--yes] [--dry-run] [--json]
    sitetk hosts redeploy VM_ID --host HOST_ID [--cpu-model MODEL] [--yes] [--dry-run] [--json]

The connection comes from the environment and the platform's files, as for the console
(`sitetk info` shows what is used). A move prints its preview (every step and the equivalent
platform CLI commands), asks for confirmation unless `--yes`, then prints one line per step on
stderr. Running the same move again resumes it. `--read-only` (before `hosts`) refuses moves.
Exit codes: see `tui.cli.common`.

The verbs live in `hosts_verbs`, imported when one of them runs (`tui.cli.common.verb`).
"""

from __future__ import annotations

import argparse

from tui.cli.common import positive_seconds, site_command, verb


def _mutating_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    parser.add_argument("--dry-run", action="store_true", help="print the preview and change nothing")
    parser.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                        help="time limit of each waiting step (default 600 s undeploy, 900 s running, 900 s ready)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("hosts", help="host CPU compatibility for the document database; move VMs",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("list", help="every host with its verdict, and every document-database VM")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.hosts_verbs", "list_command")))

    p = verbs.add_parser("check", help="verdicts of the document-database VMs (exit 3 when one is at risk)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.hosts_verbs", "check_command")))

    p = verbs.add_parser("move", help="move a VM to a compatible host and set its CPU model (operation 7)")
    p.add_argument("vm_id", type=int, nargs="?", metavar="VM_ID")
    p.add_argument("--host", type=int, metavar="HOST_ID", help="target host (default: the best compatible one)")
    p.add_argument("--all-flagged", action="store_true", help="move every flagged document-database VM")
    p.add_argument("--passthrough", action="store_true",
                   help="use host-passthrough (only when no compatible host exists; discouraged)")
    p.add_argument("--hard", action="store_true", help="undeploy --hard (power cut) instead of a graceful shutdown")
    _mutating_options(p)
    p.set_defaults(func=site_command(verb("tui.cli.hosts_verbs", "move_command")))

    p = verbs.add_parser("redeploy", help="put a VM back on a host (where it was before a move)")
    p.add_argument("vm_id", type=int, metavar="VM_ID")
    p.add_argument("--host", type=int, metavar="HOST_ID", required=True, help="the host to deploy it on")
    p.add_argument("--cpu-model", default=None, metavar="MODEL",
                   help="CPU model to set there; '' removes it (default: the model it had before its last move)")
    p.add_argument("--hard", action="store_true", help=argparse.SUPPRESS)
    _mutating_options(p)
    p.set_defaults(func=site_command(verb("tui.cli.hosts_verbs", "redeploy_command")))
