"""`sitetk toolkit deploy`: instantiate the toolkit (operation 3), follow it and record it (4).

The inputs are read and checked against the site first (a wrong user or network is said before
any secret is asked); then the `DeployToolkit` operation goes through the CLI runner: preview
(`--dry-run` stops there, secrets stand in as placeholders), read-only refusal, the secrets left
out of the file asked on the terminal (`ask_secrets`: getpass, never argv), the question
(`--yes`), the run.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from dataclasses import replace

from tui.cli.common import EXIT_USAGE, UsageError, emit_json, print_error
from tui.cli.runner import run_cli
from tui.cli.toolkit_inputs import print_problems, problem_json, read_inputs, toolkit_form
from tui.domain.site_record import SiteRecord
from tui.procedures.connection import SiteConnection
from tui.procedures.toolkit.input_checks import SiteCheckReport, check_inputs_on_site
from tui.procedures.toolkit.instantiate import Deployed, DeployPlan, DeployToolkit, InvalidInputs, plan_deploy
from tui.procedures.toolkit.own_service import SecondToolkitRefused
from tui.procedures.toolkit.service import ToolkitForm

#: what stands for a secret that is asked only when the deployment runs (previews, dry runs)
ASKED_LATER = "(asked at deploy time)"


def ask_secrets(names: list[str], form: ToolkitForm | None = None) -> dict[str, str]:
    """Ask each missing secret on the terminal (getpass: no echo, never in argv or history); with
    the form, each prompt also names what the input is for."""
    if not names:
        return {}
    if not sys.stdin.isatty():
        raise UsageError(f"{', '.join(names)} not in the input file and no terminal to ask on: add them to the file "
                         "(keep it mode 0600) or run on a terminal")
    answers: dict[str, str] = {}
    for name in names:
        field = form.field(name) if form is not None else None
        prompt = f"{name} ({field.help.split('.')[0]}): " if field else f"{name}: "
        value = getpass.getpass(prompt)
        if not value:
            raise UsageError(f"{name} is required")
        answers[name] = value
    return answers


async def deploy_command(args: argparse.Namespace, site: SiteConnection) -> int:
    form = await toolkit_form(args, site)
    loaded = read_inputs(args.input, form.secrets)
    values = loaded.file.value_map()
    missing = [f.name for f in form.fields if f.secret and f.mandatory and not values.get(f.name)]
    networks = dict(loaded.file.networks)
    # the site checks run before any secret is asked: a wrong user or network is said at once
    report = await check_inputs_on_site(site, form, values, networks)
    if report.errors:
        return _site_refusal(report, args.json, str(loaded.path))
    operation = DeployToolkit(form, loaded.file, {name: ASKED_LATER for name in missing}, str(loaded.path),
                              wait=args.wait, timeout=args.timeout, key_timeout=args.key_timeout,
                              poll_interval=args.poll, heartbeat=args.heartbeat, another=args.another)
    try:
        plan = await operation.plan(site)
    except InvalidInputs as error:
        return _invalid(error, args.json, str(loaded.path))
    except SecondToolkitRefused as error:
        print_error(error, args.json)
        return EXIT_USAGE

    async def with_secrets(plan: DeployPlan) -> DeployPlan:
        """The secrets asked now that the deployment runs; the vault token asked is checked too."""
        extra = ask_secrets(missing, form)
        try:  # what the preview said of a live service (followed, or deployed beside) holds for the run
            asked = replace(plan_deploy(form, loaded.file, extra), follows=plan.follows, beside=plan.beside)
        except InvalidInputs as error:
            raise UsageError(f"{error.title}: " + "; ".join(f"{p.name}: {p.message}" for p in error.problems)) from None
        if extra:  # the asked secrets get the site checks too (the vault token, the cloud user's login)
            checked = await check_inputs_on_site(site, form, {**values, **extra}, networks)
            if checked.errors:
                raise UsageError(f"the inputs in {loaded.path} do not fit the site; nothing was created: "
                                 + "; ".join(f"{c.name}: {c.message}" for c in checked.errors))
        return asked

    def warn(plan: DeployPlan) -> None:
        for check in report.failed:
            print(f"warning: {check.name}: {check.message}", file=sys.stderr)
        for check in report.skipped:
            print(f"note: {check.name} not checked: {check.found}", file=sys.stderr)

    def describe(result: Deployed) -> str:
        record = result.record
        lines = [f"service {result.service_id} {record.state if record else ''}".rstrip()]
        if record is not None and args.wait:
            lines += _record_lines(record)
        elif not args.wait:
            lines.append("follow it with `sitetk toolkit vms`; capture the key with `sitetk toolkit key`")
        return "\n".join(lines)

    return await run_cli(args, site, operation, plan=plan, extra={"site_checks": report.as_json()}, before=warn,
                         prepare=with_secrets if missing else None, describe=describe)


def _invalid(error: InvalidInputs, as_json: bool, path: str) -> int:
    if as_json:
        emit_json({"ok": False, "error": {"title": error.title, "detail": error.detail},
                   "problems": [problem_json(p) for p in error.problems]})
    else:
        print(f"error: {error.title} in {path}", file=sys.stderr)
        print_problems(error.problems)
    return EXIT_USAGE


def _site_refusal(report: SiteCheckReport, as_json: bool, path: str) -> int:
    if as_json:
        emit_json({"ok": False, "error": {"title": "The inputs do not fit the site",
                                          "detail": "; ".join(f"{c.name}: {c.message}" for c in report.errors)},
                   "site_checks": report.as_json()})
    else:
        print(f"error: the inputs in {path} do not fit the site; nothing was created", file=sys.stderr)
        print_problems(report.problems)
    return EXIT_USAGE


def _record_lines(record: SiteRecord) -> list[str]:
    """The recorded VMs (and the key), one line each."""
    lines = [f"  {role.name:<12} VM {vm.vm_id:<6} {vm.name:<34} {', '.join(vm.ips) or '-'}"
             for role in record.roles for vm in role.vms]
    if record.automation_public_key:
        lines.append(f"  automation key: {record.automation_public_key}")
    return lines

