"""`sitetk site ...`: the site configuration (core.yaml), the sites repository and components.

    sitetk site encrypt PATH            vault-encrypt a plain core.yaml in place (checked first)
    sitetk site decrypt PATH            print the decrypted text (never written to disk)
    sitetk site edit PATH --set K=V     change values in memory and re-encrypt (comments kept)
    sitetk site check PATH              the checks: components, variables, MTU, object store
                                        (--cloud: also the IDs and the NIC MTU of the cloud)
    sitetk site fill PATH               fill the object store endpoint, gate, network and
                                        appliance IDs from the cloud (--dry-run: preview)
    sitetk site confirm PATH VAR --reason TEXT
                                        record that an appliance ID that is not marked as the
                                        component's appliance is right (audit-logged)
    sitetk site components              the component library with each component's variables
    sitetk site enable COMPONENT        offer a component (operation 9): download its appliance,
                                        grant the automation cloud user, list it with its site
                                        variables (--set var=value); --submit pushes it after
    sitetk site branches|open|create    the sites repository's site branches
    sitetk site submit                  check, show the decrypted diff, then commit and push;
                                        refused while the check has errors unless
                                        --override-reason TEXT (commit message, audit log)

The vault password comes from `--vault-password-file` (or SITETK_VAULT_PASSWORD_FILE, or
vault_password_file in the [site] table of the config file), else a prompt. Repositories come
from --repo/--library, else the settings (sites_repo, library_repo). Repository tokens come from
`--token-file`, the settings' token files or the SITETK_SITES_TOKEN / SITETK_LIBRARY_TOKEN
environment variables, never from the command line. Commands that read the cloud use the
platform's usual credentials (ONE_AUTH, ONE_XMLRPC).

`encrypt`, `edit`, `fill`, `confirm`, `enable`, `create` and `submit` are operations
(tui.procedures.operation) run by the CLI runner (tui.cli.runner: --dry-run, --yes, --json,
exit codes; read-only mode refused by the operation type, the refusal audit-logged). The verbs
live beside this registration: `site_file` (encrypt, decrypt, edit, check, fill, confirm),
`site_enable` (components, enable), `site_branches` (branches, open, create, submit), and what
they share in `site_options` (the options, light, in `site_args`). Each verb's module is imported
when the verb runs (`verb`), so `sitetk site --help` imports none of them.
"""

from __future__ import annotations

import argparse

from tui import timing
from tui.cli.common import local_command, verb
from tui.cli.site_args import common_options, library_options, repo_options


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    site = subparsers.add_parser("site", help="site configuration, sites repository and components")
    verbs = site.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("encrypt", help="vault-encrypt a plain core.yaml in place")
    p.add_argument("path")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_file", "encrypt_command")))

    p = verbs.add_parser("decrypt", help="print the decrypted core.yaml (nothing is written)")
    p.add_argument("path")
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_file", "decrypt_command")))

    p = verbs.add_parser("edit", help="set values in an encrypted core.yaml (comments kept)")
    p.add_argument("path")
    p.add_argument("--set", action="append", metavar="PATH=VALUE", help="dotted path and YAML value; repeatable")
    p.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_file", "edit_command")))

    p = verbs.add_parser("check", help="check a core.yaml (encrypted or plain)")
    p.add_argument("path")
    p.add_argument("--nic-mtu", type=int, help="MTU of the NIC/bridge the VXLAN rides on")
    p.add_argument("--cloud", action="store_true", help="also check IDs against the cloud and take the NIC MTU from its default network")
    library_options(p)
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_file", "check_command")))

    p = verbs.add_parser("fill", help="fill core.yaml from the cloud (object store, gate, network, appliance IDs)")
    p.add_argument("path")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    library_options(p)
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_file", "fill_command")))

    p = verbs.add_parser("confirm", help="record that an appliance ID is right although it is not marked as the appliance")
    p.add_argument("path", help="core.yaml")
    p.add_argument("variable", help="dotted path of the ID, e.g. site_variables.tn_bastion.image_id")
    p.add_argument("--reason", required=True, metavar="TEXT", help="why this object is right (audit-logged)")
    p.add_argument("--dry-run", action="store_true", help="show what would be recorded")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    library_options(p)
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_file", "confirm_command")))

    p = verbs.add_parser("components", help="list the component library")
    library_options(p)
    common_options(p, password=False)
    p.set_defaults(func=local_command(verb("tui.cli.site_enable", "components_command")))

    p = verbs.add_parser("enable", help="list a component in site_variables with its site variables")
    p.add_argument("component")
    p.add_argument("--path", help="core.yaml to change (default: the open site of the working clone)")
    p.add_argument("--site", help="site directory (default: named after the branch)")
    p.add_argument("--set", action="append", metavar="VAR=VALUE", help="site variable value; repeatable")
    p.add_argument("--allow-incomplete", action="store_true", help="write even when site variables are left unset")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    p.add_argument("--input", metavar="FILE", help="the toolkit input file: its app_automation_cloud_username is the "
                   "user the appliances are granted to")
    p.add_argument("--cloud-user", metavar="NAME", help="the automation cloud user the appliances are granted to "
                   "(instead of --input; never guessed)")
    p.add_argument("--datastore", type=int, metavar="ID", help="IMAGE datastore for downloads (default: the first)")
    p.add_argument("--no-cloud", action="store_true", help="offline: do not download or grant; write the IDs given with "
                   "--set (without it, an unreachable cloud is an error)")
    p.add_argument("--poll", type=float, default=timing.PROFILE.poll_interval, metavar="SECONDS", help="seconds between checks of a downloading image")
    p.add_argument("--submit", action="store_true", help="then show the diff and commit and push the site branch")
    p.add_argument("--override-reason", metavar="TEXT", help="with --submit: submit even though the check has errors, for this reason")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    library_options(p)
    repo_options(p)
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_enable", "enable_command")))

    p = verbs.add_parser("branches", help="list the site branches of the sites repository")
    repo_options(p)
    common_options(p, password=False)
    p.set_defaults(func=local_command(verb("tui.cli.site_branches", "branches_command")))

    p = verbs.add_parser("open", help="open an existing site branch in the working clone")
    p.add_argument("branch")
    p.add_argument("--site", help="site directory (default: named after the branch)")
    repo_options(p)
    common_options(p, password=False)
    p.set_defaults(func=local_command(verb("tui.cli.site_branches", "open_command")))

    p = verbs.add_parser("create", help="create a site from the template (pushed on submit)")
    p.add_argument("branch")
    p.add_argument("--site", help="site directory, app_manager_deployment_site (default: the branch name)")
    p.add_argument("--set", action="append", metavar="PATH=VALUE", help="initial value; repeatable")
    p.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    repo_options(p)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_branches", "create_command")))

    p = verbs.add_parser("submit", help="show the decrypted diff, then commit and push core.yaml")
    p.add_argument("--branch", help="site branch (default: the open one)")
    p.add_argument("--site", help="site directory (default: named after the branch)")
    p.add_argument("--message", "-m", help="commit message")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="show the diff only")
    p.add_argument("--reveal", action="store_true", help="show secret values in the diff")
    p.add_argument("--override-reason", metavar="TEXT",
                   help="submit even though the check has errors; the reason goes into the commit message and the audit log")
    repo_options(p)
    library_options(p)
    common_options(p)
    p.set_defaults(func=local_command(verb("tui.cli.site_branches", "submit_command")))
