"""`sitetk setup ...`: the first-time setup checklist, headless (spec operation 8, done better).

    sitetk setup status [--input FILE] [--disk-size SIZE] [--json]
                                                    every step with its state and evidence;
                                                    exit 0 only when every mandatory step is done, 3 otherwise,
                                                    1 when a step could not be checked (what it needs could
                                                    not be read: never assumed done) or the session is refused
    sitetk setup run --input FILE [--yes] [--datastore ID] [--only STEP] [--disk-size SIZE] [--dry-run] [--json]
                                                    do the remaining steps in order, with the same
                                                    procedures as the console; stops at the first step
                                                    it cannot do (exit 1, the reason and the fix) and
                                                    resumes from where the site is when run again;
                                                    with --read-only: the next step's preview and the
                                                    checklist, then the refusal of the first step that
                                                    changes something (exit 2, audit-logged), no secret asked

Every state is read from the live site (the cloud, OneFlow, the sites repository), never from a
local diary, so the answer is the same after a crash, on another machine or after work done by
hand. `--input` is the toolkit input file of the spec: it names the automation cloud user, the
site branch and directory and the default network, and its app_automation_sites_token is the
vault password core.yaml is checked with (else the configured vault password file).

The verbs live in `setup_verbs`, imported when one of them runs (`verb`): `sitetk setup --help`
imports none of the setup procedures.
"""

from __future__ import annotations

import argparse

from tui import timing
from tui.cli.common import positive_seconds, site_command, verb
from tui.cli.toolkit import disk_size
from tui.domain.disk_size import DEFAULT_OBJECTSTORE_DISK_MB, format_mb
from tui.domain.setup_steps import StepId

#: the site values `setup run --set` may give: the template's examples only the operator knows
SITE_VALUE_PATHS = ("site_public_ip", "site_domain", "site_dns", "site_admin_ssh_public_key")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("setup", help="the first-time setup checklist: status and run",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("status", help="every setup step with its state (exit 3 until every mandatory one is done)")
    p.add_argument("--input", metavar="FILE", help="the toolkit input file (spec JSON shape)")
    p.add_argument("--disk-size", type=disk_size, default=DEFAULT_OBJECTSTORE_DISK_MB, metavar="SIZE",
                   help=f"the object store's data disk size (default {format_mb(DEFAULT_OBJECTSTORE_DISK_MB)}, the installer's)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.setup_verbs", "status_command")))

    p = verbs.add_parser("run", help="do the remaining setup steps in order (resumable)")
    p.add_argument("--input", required=True, metavar="FILE", help="the toolkit input file (spec JSON shape)")
    p.add_argument("--datastore", type=int, metavar="ID", help="IMAGE datastore of the toolkit download "
                   "(default: the one with the most free space)")
    p.add_argument("--only", choices=[s.value for s in StepId], metavar="STEP",
                   help="do this step only (" + ", ".join(s.value for s in StepId) + ")")
    p.add_argument("--disk-size", type=disk_size, default=DEFAULT_OBJECTSTORE_DISK_MB, metavar="SIZE",
                   help=f"the object store's data disk size (default {format_mb(DEFAULT_OBJECTSTORE_DISK_MB)}, the installer's)")
    p.add_argument("--timeout", type=positive_seconds, default=1800.0, metavar="SECONDS",
                   help="longest wait of one step (an image download, the deployment, the key; default 1800)")
    p.add_argument("--poll", type=positive_seconds, default=timing.PROFILE.poll_interval, help=argparse.SUPPRESS)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the next step's preview and change nothing")
    p.add_argument("--set", action="append", metavar="PATH=VALUE",
                   help="the site's own value for a template example core.yaml still holds (" + ", ".join(SITE_VALUE_PATHS)
                        + "), asked on a terminal when not given; or an optional appliance's input for --only dns / "
                          "route-manager (ONEAPP_DNS_DOMAIN=...; secrets are asked, never given here); repeatable")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.setup_verbs", "run_command")))
