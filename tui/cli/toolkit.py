"""`sitetk toolkit ...`: the toolkit's inputs, its deployment, its VMs and the automation key.

    sitetk toolkit inputs [--template ID] [--output FILE]     a skeleton input file from the template
    sitetk toolkit validate FILE [--template ID | --offline]  check an input file against the site (exit 3 on
                                                             errors); --offline: its shape only
    sitetk toolkit deploy --input FILE [--template ID] [--wait] [--yes] [--dry-run] [--another NAME]
                                                             instantiate (operation 3), follow, record (4)
    sitetk toolkit vms [--service ID] [--rebuild-record]     the recorded VMs, read back live (an unreadable
                                                             record set aside and rebuilt from the cloud)
    sitetk toolkit key [--service ID] [--wait S] [--grant [--user NAME]] [--yes] [--dry-run]
                                                             the automation VM's key; give it to the user (5)
    sitetk toolkit disk [--size 30G] [--apply [--yes] [--dry-run]] [--service ID] [--timeout S]
                                                             the object store's data disk (disk0), grown to
                                                             --size (default 30G) with --apply

Every verb takes `--json`. Secrets missing from the input file (saved without them) are asked
on the terminal with getpass at deploy time, never taken from the command line. The template
defaults to the newest toolkit service template of the cloud. `--read-only` (before `toolkit`)
refuses deploy, --grant and disk --apply (in the operation type, tui.procedures.operation). Exit codes: see
`tui.cli.common` (2 also for a malformed input file, with its line and column, and for an
unconfirmed deploy or grant; 3 for `validate` finding errors).

The verbs live beside this registration: `toolkit_inputs` (inputs, validate), `toolkit_deploy`
(deploy, the secrets prompt `ask_secrets`), `toolkit_key` (vms, key), `toolkit_disk` (disk); each
is imported when its verb runs (`verb`), so `sitetk toolkit --help` (and `sitetk setup`, which
takes `disk_size` from here) imports none of them.
"""

from __future__ import annotations

import argparse

from tui import timing
from tui.cli.common import non_negative_seconds, site_command, verb
from tui.domain.disk_size import DEFAULT_OBJECTSTORE_DISK_MB, SizeError, format_mb, parse_size_mb

#: the defaults of tui.procedures.toolkit.follow (deploy) and .objectstore_disk (disk), read from
#: the timing profile they read them from: importing those procedures here cost every verb ~60 ms
DEFAULT_TIMEOUT = timing.PROFILE.deploy_timeout
DEFAULT_KEY_TIMEOUT = timing.PROFILE.key_timeout
DEFAULT_HEARTBEAT = timing.PROFILE.heartbeat
DEFAULT_WAIT = timing.PROFILE.disk_resize_timeout


def disk_size(text: str) -> int:
    """argparse type of --size (and of `setup --disk-size`): MB, or a number with M, G or T (as
    `onevm disk-resize` reads it)."""
    try:
        return parse_size_mb(text)
    except SizeError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("toolkit", help="the toolkit's inputs, deployment, VMs and automation key",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("inputs", help="a skeleton input file from the toolkit's service template")
    p.add_argument("--template", type=int, metavar="ID", help="service template ID (default: the newest toolkit one)")
    p.add_argument("--output", metavar="FILE", help="write the file (mode 0600) instead of printing it")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.toolkit_inputs", "inputs_command")))

    p = verbs.add_parser("validate", help="check an input file (exit 3 when it has errors)")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--template", type=int, metavar="ID", help="service template ID (default: the newest toolkit one)")
    p.add_argument("--offline", action="store_true",
                   help="check only the shape against the spec's 23 inputs, without the cloud (the site checks are skipped)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=verb("tui.cli.toolkit_inputs", "validate_command"))

    p = verbs.add_parser("deploy", help="instantiate the toolkit (operation 3), follow it and record its VMs (4)")
    p.add_argument("--input", required=True, metavar="FILE", help="the input file (spec JSON shape)")
    p.add_argument("--template", type=int, metavar="ID", help="service template ID (default: the newest toolkit one)")
    p.add_argument("--wait", action="store_true", help="follow the service to RUNNING, record VMs, capture the key")
    p.add_argument("--timeout", type=non_negative_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"time the service may take to reach RUNNING (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--key-timeout", type=non_negative_seconds, default=DEFAULT_KEY_TIMEOUT, metavar="SECONDS",
                   help=f"time the automation VM may take to publish its key (default {DEFAULT_KEY_TIMEOUT:g})")
    p.add_argument("--poll", type=non_negative_seconds, default=timing.PROFILE.poll_interval, help=argparse.SUPPRESS)
    p.add_argument("--heartbeat", type=non_negative_seconds, default=DEFAULT_HEARTBEAT, metavar="SECONDS",
                   help=f"while waiting, say every SECONDS what each role waits for and why (default "
                        f"{DEFAULT_HEARTBEAT:g})")
    p.add_argument("--another", metavar="NAME",
                   help="deploy a second toolkit beside a live one made from other inputs; NAME is the input file's "
                        "service name (refused without it, and for a name a live service has)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the preview and change nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.toolkit_deploy", "deploy_command")))

    p = verbs.add_parser("vms", help="the recorded toolkit VMs, read back live (operation 4)")
    p.add_argument("--service", type=int, metavar="ID", help="the service (default: the last recorded deployment)")
    p.add_argument("--rebuild-record", action="store_true",
                   help="set an unreadable site record aside and record the deployment from the cloud (--service, "
                        "else the live toolkit service)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.toolkit_key", "vms_command")))

    p = verbs.add_parser("key", help="the automation VM's public key; --grant gives it to the cloud user (5)")
    p.add_argument("--service", type=int, metavar="ID", help="the service (default: the last recorded deployment)")
    p.add_argument("--wait", type=non_negative_seconds, default=0.0, metavar="SECONDS",
                   help="wait this long for the key when it is not published yet (default: do not wait)")
    p.add_argument("--grant", action="store_true", help="add the key to the cloud user's SSH_PUBLIC_KEY")
    p.add_argument("--user", metavar="NAME", help="the cloud user (default: the deployment's cloud-username input)")
    p.add_argument("--poll", type=non_negative_seconds, default=timing.PROFILE.poll_interval, help=argparse.SUPPRESS)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the preview and change nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.toolkit_key", "key_command")))

    p = verbs.add_parser("disk", help="the object store's data disk (disk0): its size; --apply grows it to --size")
    p.add_argument("--size", type=disk_size, default=DEFAULT_OBJECTSTORE_DISK_MB, metavar="SIZE",
                   help=f"the size wanted: MB, or with a unit M, G or T (default {format_mb(DEFAULT_OBJECTSTORE_DISK_MB)}, "
                        "the installer's)")
    p.add_argument("--apply", action="store_true", help="resize the disk (onevm disk-resize) and wait for it")
    p.add_argument("--service", type=int, metavar="ID", help="the toolkit service (default: the live one)")
    p.add_argument("--timeout", type=non_negative_seconds, default=DEFAULT_WAIT, metavar="SECONDS",
                   help=f"time the platform may take to resize (default {DEFAULT_WAIT:g})")
    p.add_argument("--poll", type=non_negative_seconds, default=timing.PROFILE.poll_interval, help=argparse.SUPPRESS)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the preview and change nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.toolkit_disk", "disk_command")))
