"""`sitetk market ...`: the appliance marketplaces, operations 1 and 2 and upgrades, headless.

    sitetk market list [--filter TEXT] [--all-versions] [--json]
    sitetk market show APPLIANCE [--json]
    sitetk market download APPLIANCE --datastore DS_ID [--name NAME] [--no-attributes] [--timeout S]
                           [--yes] [--dry-run] [--json]
    sitetk market download --app-id APP_ID --datastore DS_ID [...]
    sitetk market attrs APPLIANCE [--image ID ...] [--template ID] [--service-template ID]
                        [--write-file PATH [--force]] [--yes] [--dry-run] [--json]
    sitetk market upgrades [--only NAME ...] [--apply --datastore DS_ID [--branch B] [--site DIR]
                           [--override-reason TEXT] [--no-site] [--set PATH=VALUE ...]] [--yes] [--dry-run] [--json]

APPLIANCE is a record id (`service_toolkit`), a name (`"Site Toolkit"`) or a key as `list` shows
it (`<marketplace url>#<id>`, or `<marketplace name>#<id>`). An id or name several marketplaces
hold, or one a marketplace that did not answer may hold, is an error naming them: give the key.
Marketplaces are the ones the cloud has registered plus `[marketplace] urls` of the config file.

Mutating verbs print their preview (with the equivalent platform CLI commands), ask for
confirmation unless `--yes`, then print one line per step on stderr. `--dry-run` prints the
preview only. `attrs` without an image option tags the images that look like the appliance and
carry no attributes (and reports those already tagged with this version as unchanged); with
`--write-file` it also writes the attribute file (no extension); an existing file or a symlink
there is refused unless `--force` (which replaces it atomically, never writing through the link). `upgrades` prints the
`Software | Previous | New` table and the plan; `--apply` runs it and asks before removing each
old version (with `--yes`: removes without asking); then the site's core.yaml (the live toolkit's
sites branch, or --branch) gets the new image and template IDs where it held the old ones (each
key previewed, vault kept) and is submitted with the upgrade named in the commit message
(tui.procedures.site.follow_upgrade); site variables the library defines that it lacks are listed. Exit codes: see `tui.cli.common`.

The verbs live in `market_verbs`, imported when one of them runs (`tui.cli.common.verb`).
"""

from __future__ import annotations

import argparse

from tui import timing
from tui.cli.common import positive_seconds, site_command, verb

#: the defaults of tui.procedures.market.download, read from the timing profile it reads them from
DEFAULT_STEP_TIMEOUT = timing.PROFILE.download_step_timeout
DEFAULT_POLL_INTERVAL = timing.PROFILE.poll_interval


def _mutating(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    parser.add_argument("--dry-run", action="store_true", help="print the preview and change nothing")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _waiting(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--timeout", type=positive_seconds, default=DEFAULT_STEP_TIMEOUT, metavar="SECONDS",
                        help=f"time an image may stay LOCKED (default {DEFAULT_STEP_TIMEOUT:g} s)")
    parser.add_argument("--poll", type=positive_seconds, default=DEFAULT_POLL_INTERVAL, metavar="SECONDS",
                        help=argparse.SUPPRESS)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("market", help="appliance marketplaces: list, download, attributes, upgrades",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("list", help="every appliance with its install status")
    p.add_argument("--filter", default="", metavar="TEXT", help="keep appliances whose fields contain every word")
    p.add_argument("--all-versions", action="store_true",
                   help="keep records that do not list this platform version")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.market_verbs", "list_command")))

    p = verbs.add_parser("show", help="one appliance in full")
    p.add_argument("appliance", metavar="APPLIANCE")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(verb("tui.cli.market_verbs", "show_command")))

    p = verbs.add_parser("download", help="export an appliance into an IMAGE datastore (operation 2)")
    p.add_argument("appliance", nargs="?", metavar="APPLIANCE")
    p.add_argument("--app-id", type=int, default=None, metavar="APP_ID", help="the cloud's marketplace app id")
    p.add_argument("--datastore", type=int, required=True, metavar="DS_ID", help="IMAGE datastore id")
    p.add_argument("--name", default="", help="final name (default: appliance name and software version)")
    p.add_argument("--no-attributes", action="store_true", help="do not attach the marketplace attributes")
    _waiting(p)
    _mutating(p)
    p.set_defaults(func=site_command(verb("tui.cli.market_verbs", "download_command")))

    p = verbs.add_parser("attrs", help="attach the marketplace attributes to images (operation 1)")
    p.add_argument("appliance", metavar="APPLIANCE")
    p.add_argument("--image", type=int, action="append", metavar="IMAGE_ID", help="an image (repeatable)")
    p.add_argument("--template", type=int, action="append", metavar="TEMPLATE_ID",
                   help="the images of a VM template (repeatable)")
    p.add_argument("--service-template", type=int, default=None, metavar="ID",
                   help="every image of a service template")
    p.add_argument("--write-file", default="", metavar="PATH", help="also write the attribute file (no extension)")
    p.add_argument("--file-only", action="store_true", help="only print (or write) the attribute file")
    p.add_argument("--force", action="store_true",
                   help="replace an existing file (or symlink) at --write-file, atomically")
    _mutating(p)
    p.set_defaults(func=site_command(verb("tui.cli.market_verbs", "attrs_command")))

    p = verbs.add_parser("upgrades", help="the upgrade plan (Software | Previous | New); --apply runs it")
    p.add_argument("--only", action="append", metavar="NAME", help="only this appliance (repeatable)")
    p.add_argument("--apply", action="store_true", help="run the plan")
    p.add_argument("--datastore", type=int, default=None, metavar="DS_ID", help="IMAGE datastore for new versions")
    p.add_argument("--branch", metavar="BRANCH", help="the site branch whose core.yaml follows the new IDs "
                   "(default: the live toolkit service's sites branch)")
    p.add_argument("--site", metavar="DIR", help="the site directory on that branch (default: the service's deployment "
                   "site, else the branch name)")
    p.add_argument("--vault-password-file", metavar="FILE", help="vault password file of core.yaml "
                   "(default: $SITETK_VAULT_PASSWORD_FILE, else a prompt)")
    p.add_argument("--override-reason", metavar="TEXT", help="submit core.yaml's new IDs even when its check has errors "
                   "(the reason goes into the commit message and the audit log)")
    p.add_argument("--no-site", action="store_true", help="leave core.yaml alone (the IDs to change are listed)")
    p.add_argument("--set", action="append", metavar="PATH=VALUE",
                   help="a new site variable the upgraded components need (YAML value), written with the new IDs; "
                        "those not given are asked on a terminal, else listed; repeatable")
    _waiting(p)
    _mutating(p)
    p.set_defaults(func=site_command(verb("tui.cli.market_verbs", "upgrades_command")))
