"""`sitetk toolkit ...`: the toolkit's inputs, its deployment, its VMs and the automation key.

    sitetk toolkit inputs [--template ID] [--output FILE]     a skeleton input file from the template
    sitetk toolkit validate FILE [--template ID | --offline]  check an input file against the site (exit 3 on
                                                             errors); --offline: its shape only
    sitetk toolkit deploy --input FILE [--template ID] [--wait] [--yes] [--dry-run]
                                                             instantiate (operation 3), follow, record (4)
    sitetk toolkit vms [--service ID]                         the recorded VMs, read back live
    sitetk toolkit key [--service ID] [--wait S] [--grant [--user NAME]] [--yes] [--dry-run]
                                                             the automation VM's key; give it to the user (5)

Every verb takes `--json`. Secrets missing from the input file (saved without them) are asked
on the terminal with getpass at deploy time, never taken from the command line. The template
defaults to the newest toolkit service template of the cloud. `--read-only` (before `toolkit`)
refuses deploy and --grant. Exit codes: see `tui.cli.common` (2 also for a malformed input
file, with its line and column; 3 for `validate` finding errors).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from dataclasses import replace
from typing import Any

from tui.cli.common import (
    EXIT_FAILED,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    collecting,
    confirm,
    emit_json,
    follow,
    non_negative_seconds,
    print_error,
    settings_command,
    show_preview,
    site_command,
    usage,
)
from tui.cli.runner import print_event
from tui.domain.input_file import render_input_file
from tui.domain.input_site import Outcome
from tui.domain.severity import Severity
from tui.domain.site_record import SiteRecord, record_to_json
from tui.domain.toolkit_inputs import Component, Problem, form_fields, input_name, secret_names, validate_inputs
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.grant_ssh_key import GrantKey
from tui.procedures.input_site_checks import OFFLINE_NOTE, SiteCheckReport, check_inputs_on_site
from tui.procedures.instantiate_toolkit import (
    DEFAULT_HEARTBEAT,
    DEFAULT_KEY_TIMEOUT,
    DEFAULT_TIMEOUT,
    InvalidInputs,
    capture_automation_key,
    deploy_toolkit,
    plan_deploy,
)
from tui.procedures.operation import ReadOnlyRefused, RunContext, refuse_if_read_only, run_operation
from tui.procedures.progress import Progress
from tui.procedures.site_record import load_site_record, save_site_record
from tui.procedures.toolkit import (
    NAME_FIELD,
    ToolkitForm,
    find_toolkit_template,
    load_form,
    platform_version,
    read_automation_key,
    read_input_file,
    record_for_service,
    refresh_site_record,
    save_input_file,
    toolkit_vms,
)
from tui.settings import Settings

# -- plumbing -------------------------------------------------------------------------------------


def _problem_json(problem: Problem) -> dict[str, str]:
    return {"name": problem.name, "severity": problem.severity.value, "message": problem.message}


def _print_problems(problems: tuple[Problem, ...]) -> None:
    for p in problems:
        mark = "error" if p.severity is Severity.ERROR else "warning"
        print(f"  {mark:>7}  {p.name}: {p.message}")


async def _form(args: argparse.Namespace, site: SiteConnection) -> ToolkitForm:
    template = await find_toolkit_template(site, getattr(args, "template", None))
    return await load_form(site, template)


def _read(path: str, secrets: frozenset[str]) -> Any:
    try:
        loaded = read_input_file(path, secrets)
    except SiteError as error:
        raise UsageError(f"{error.title}: {error.detail}") from None
    for warning in loaded.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return loaded


# -- inputs and validate --------------------------------------------------------------------------


async def _inputs(args: argparse.Namespace, site: SiteConnection) -> int:
    form = await _form(args, site)
    file = form.skeleton()
    if args.output:
        path = save_input_file(args.output, file, overwrite=args.force)
        message = f"wrote {path} (mode 0600): fill in the values; secrets may be left out and are asked at deploy time"
    else:
        path, message = None, ""
    if args.json:
        emit_json({"ok": True, "template_id": form.template.id, "template_name": form.template.name,
                   "path": str(path) if path else None, "file": _file_json(file),
                   "fields": [{"name": f.name, "group": f.group, "mandatory": f.mandatory, "secret": f.secret,
                               "type": f.spec.type.value, "default": f.default, "help": f.help} for f in form.fields],
                   "networks": [{"name": c.name, "id": c.id, "label": c.label} for c in form.choices]})
    elif path:
        print(message)
    else:
        print(render_input_file(file), end="")
    return EXIT_OK


def _file_json(file: Any) -> Any:
    return json.loads(render_input_file(file))


def _validation(problems: tuple[Problem, ...], missing_secrets: list[str], as_json: bool, path: str,
                template: str, report: SiteCheckReport | None) -> int:
    """Print the findings; "valid" only when the site checks ran too (offline says they were skipped)."""
    errors = [p for p in problems if p.severity is Severity.ERROR]
    if as_json:
        emit_json({"ok": not errors, "file": path, "template": template, "problems": [_problem_json(p) for p in problems],
                   "asked_at_deploy": missing_secrets,
                   "site_checks": report.as_json() if report is not None else "skipped (offline)"})
    else:
        if errors:
            verdict = f"{len(errors)} error(s)"
        elif report is None:
            verdict = "no errors in the shape checks"
        else:
            verdict = "valid"
        print(f"{path}: {verdict} against {template}")
        _print_problems(problems)
        for name in missing_secrets:
            print(f"     note  {name}: not in the file; asked at deploy time")
        _print_site_checks(report)
    return EXIT_FINDINGS if errors else EXIT_OK


def _print_site_checks(report: SiteCheckReport | None) -> None:
    if report is None:
        print(f"     note  {OFFLINE_NOTE}")
        return
    print(f"  {report.summary()}")
    for check in report.checks:
        if check.outcome is Outcome.PASSED:
            print(f"       ok  {check.name}: {check.found} (checked {check.checked})")
        elif check.outcome is Outcome.SKIPPED:
            print(f"  skipped  {check.name}: {check.found}")


def _split_missing_secrets(problems: tuple[Problem, ...], values: dict[str, str],
                           secrets: frozenset[str]) -> tuple[tuple[Problem, ...], list[str]]:
    """Secrets absent from the file are not errors: deploy asks for them."""
    missing = [p.name for p in problems if p.name in secrets and p.message == "required" and not values.get(p.name)]
    kept = tuple(p for p in problems if p.name not in missing)
    return kept, missing


async def _validate(args: argparse.Namespace, site: SiteConnection) -> int:
    form = await _form(args, site)
    loaded = _read(args.file, form.secrets)
    values = loaded.file.value_map()
    problems = form.problems(loaded.file.name, values, dict(loaded.file.networks))
    problems, missing = _split_missing_secrets(problems, values, form.secrets)
    unknown = form.unknown_inputs(values)
    problems += tuple(Problem(n, Severity.WARNING, "the template declares no such input") for n in unknown)
    report = await check_inputs_on_site(site, form, values, dict(loaded.file.networks))
    problems += report.problems
    return _validation(problems, missing, args.json, str(loaded.path),
                       f"service template {form.template.id} {form.template.name!r}", report)


def _validate_offline(args: argparse.Namespace, settings: Settings) -> int:
    naming = settings.naming
    fields = form_fields(naming)
    secrets = secret_names(naming)
    try:
        loaded = read_input_file(args.file, secrets)
    except SiteError as error:
        return usage(f"{error.title}: {error.detail}", args.json)
    values = loaded.file.value_map()
    problems = validate_inputs(fields, values, naming)
    if not loaded.file.name.strip():
        problems = (Problem(NAME_FIELD, Severity.ERROR, "required: the name of the service instance"),) + problems
    problems, missing = _split_missing_secrets(problems, values, secrets)
    return _validation(problems, missing, args.json, str(loaded.path), "the spec's 23 inputs (offline)", None)


def _validate_command(args: argparse.Namespace) -> int:
    """`validate`: against the cloud's template, or `--offline` against the spec's inputs."""
    return (settings_command(_validate_offline) if args.offline else site_command(_validate))(args)


# -- deploy ---------------------------------------------------------------------------------------


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


async def _deploy(args: argparse.Namespace, site: SiteConnection) -> int:
    if args.read_only:
        raise UsageError("read-only mode: deploying is a change to the cloud")
    form = await _form(args, site)
    loaded = _read(args.input, form.secrets)
    values = loaded.file.value_map()
    missing = [f.name for f in form.fields if f.secret and f.mandatory and not values.get(f.name)]
    networks = dict(loaded.file.networks)
    # the site checks run before any secret is asked: a wrong user or network is said at once
    report = await check_inputs_on_site(site, form, values, networks)
    if report.errors:
        return _site_refusal(report, args.json, str(loaded.path))
    extra = ask_secrets(missing, form) if not args.dry_run else {n: "(asked at deploy time)" for n in missing}
    try:
        plan = plan_deploy(form, loaded.file, extra)
    except InvalidInputs as error:
        if args.json:
            emit_json({"ok": False, "error": {"title": error.title, "detail": error.detail},
                       "problems": [_problem_json(p) for p in error.problems]})
        else:
            print(f"error: {error.title} in {loaded.path}", file=sys.stderr)
            _print_problems(error.problems)
        return EXIT_USAGE
    token = input_name(form.naming, Component.AUTOMATION, "sites_token")
    if not args.dry_run and token in extra:  # the vault secret was asked: check it too
        report = await check_inputs_on_site(site, form, {**values, **extra}, networks)
        if report.errors:
            return _site_refusal(report, args.json, str(loaded.path))
    if not args.json:
        for check in report.failed:
            print(f"warning: {check.name}: {check.message}", file=sys.stderr)
        for check in report.skipped:
            print(f"note: {check.name} not checked: {check.found}", file=sys.stderr)
    if show_preview(plan.preview(str(loaded.path)), args, {"plan": plan.as_json(), "site_checks": report.as_json()}):
        return EXIT_OK
    if not confirm(f"Instantiate service template {plan.template_id} as {plan.service_name!r}", args.yes):
        return EXIT_FAILED
    events: list[Progress] = []
    try:
        await follow(collecting(deploy_toolkit(site, plan, wait=args.wait, timeout=args.timeout,
                                               key_timeout=args.key_timeout, poll_interval=args.poll,
                                               heartbeat=args.heartbeat), events),
                     args.json)
    except SiteError as error:
        print_error(error, args.json, service_id=_service_id(events), events=[e.as_json() for e in events])
        return EXIT_FAILED
    service_id = _service_id(events)
    record = load_site_record(site.settings, service_id) if service_id is not None else None
    if args.json:
        emit_json({"ok": True, "service_id": service_id, "plan": plan.as_json(),
                   "record": record_to_json(record) if record else None, "events": [e.as_json() for e in events]})
    else:
        print(f"service {service_id} {record.state if record else ''}".rstrip())
        if record is not None and args.wait:
            _print_record(record)
        elif not args.wait:
            print("follow it with `sitetk toolkit vms`; capture the key with `sitetk toolkit key`")
    return EXIT_OK


def _site_refusal(report: SiteCheckReport, as_json: bool, path: str) -> int:
    if as_json:
        emit_json({"ok": False, "error": {"title": "The inputs do not fit the site",
                                          "detail": "; ".join(f"{c.name}: {c.message}" for c in report.errors)},
                   "site_checks": report.as_json()})
    else:
        print(f"error: the inputs in {path} do not fit the site; nothing was created", file=sys.stderr)
        _print_problems(report.problems)
    return EXIT_USAGE


def _service_id(events: list[Progress]) -> int | None:
    return next((e.data["service_id"] for e in reversed(events) if "service_id" in e.data), None)


def _print_record(record: SiteRecord) -> None:
    for role in record.roles:
        for vm in role.vms:
            print(f"  {role.name:<12} VM {vm.vm_id:<6} {vm.name:<34} {', '.join(vm.ips) or '-'}")
    if record.automation_public_key:
        print(f"  automation key: {record.automation_public_key}")


# -- vms and key ----------------------------------------------------------------------------------


async def _record(args: argparse.Namespace, site: SiteConnection) -> SiteRecord:
    """The recorded deployment (latest, or --service), refreshed from the service and saved."""
    service_id = getattr(args, "service", None)
    record = load_site_record(site.settings, service_id)
    if record is None:
        if service_id is None:
            raise UsageError("no toolkit deployment recorded for this site: deploy it (`sitetk toolkit deploy`) or "
                             "name an existing service with --service ID")
        service = await site.flow.get_service(service_id)  # a deployment made elsewhere: record it now
        username = service.input_values.get(site.naming.input_name(f"{site.naming.role_automation}_cloud_username"), "")
        record = record_for_service(site, service, -1, "", await platform_version(site), username)
    record = await refresh_site_record(site, record)
    save_site_record(site.settings, record)
    return record


async def _vms(args: argparse.Namespace, site: SiteConnection) -> int:
    record = await _record(args, site)
    vms = await toolkit_vms(site, record)
    if args.json:
        emit_json({"ok": True, "service_id": record.service_id, "state": record.state,
                   "record": record_to_json(record), "vms": [vm.as_json() for vm in vms]})
        return EXIT_OK
    print(f"service {record.service_id} {record.service_name!r} {record.state}")
    print(f"  {'ROLE':<12} {'VM':>5}  {'NAME':<34} {'STATE':<5} {'READY':<5} {'HOST':<20} IPS")
    for vm in vms:
        print(f"  {vm.role:<12} {vm.vm_id:>5}  {vm.name:<34} {vm.state:<5} {'yes' if vm.ready else 'no':<5} "
              f"{vm.host or '-':<20} {', '.join(vm.ips) or '-'}")
    return EXIT_OK


async def _key(args: argparse.Namespace, site: SiteConnection) -> int:
    record = await _record(args, site)
    events: list[Progress] = []
    if not record.automation_public_key:
        found = await read_automation_key(site, record)
        if found.problem:
            raise SiteError("The automation VM published an invalid public key", found.problem)
        if found.key is None:
            await follow(collecting(capture_automation_key(site, record, timeout=args.wait, poll_interval=args.poll),
                                    events), args.json)
        else:
            record = _with_key(record, found.key.line)
            save_site_record(site.settings, record)
        record = load_site_record(site.settings, record.service_id) or record
    vm = record.automation_vm
    key = record.automation_public_key
    payload: dict[str, Any] = {"ok": True, "service_id": record.service_id,
                               "vm": {"vm_id": vm.vm_id, "name": vm.name, "ips": list(vm.ips)} if vm else None,
                               "public_key": key, "cloud_username": record.cloud_username}
    if not args.json:
        print(f"automation VM {vm.vm_id if vm else '?'} {vm.name if vm else ''} ({', '.join(vm.ips) if vm else '-'})")
        print(key)
    if not args.grant:
        if args.json:
            emit_json(payload)
        return EXIT_OK
    user = args.user or record.cloud_username
    if not user:
        raise UsageError("no cloud user to give the key to: the deployment records none; pass --user NAME")
    operation = GrantKey(key, user, record)
    plan = await operation.plan(site)
    payload["grant"] = {"plan": plan.as_json(), "preview": plan.preview().as_json()}
    if args.dry_run:
        if args.json:
            emit_json({**payload, "dry_run": True})
        else:
            print(plan.preview().as_text())
        return EXIT_OK
    if not args.json:
        print(plan.preview().as_text())
    try:
        refuse_if_read_only(site, operation)
    except ReadOnlyRefused as error:
        raise UsageError(error.detail) from None
    if not plan.already and not confirm(f"Add the key to SSH_PUBLIC_KEY of user {plan.user_name!r}", args.yes):
        return EXIT_FAILED
    context = RunContext(emit=(lambda event: None) if args.json else print_event)
    granted = await run_operation(site, operation, plan, context)
    payload["grant"]["events"] = [e.as_json() for e in context.events]
    payload["grant"]["changed"] = granted.changed
    if args.json:
        emit_json(payload)
    else:
        print(f"user {plan.user_name}: " + ("already had the key, unchanged" if plan.already else "key added"))
    return EXIT_OK


def _with_key(record: SiteRecord, line: str) -> SiteRecord:
    return replace(record, automation_public_key=line)


# -- registration ---------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("toolkit", help="the toolkit's inputs, deployment, VMs and automation key",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("inputs", help="a skeleton input file from the toolkit's service template")
    p.add_argument("--template", type=int, metavar="ID", help="service template ID (default: the newest toolkit one)")
    p.add_argument("--output", metavar="FILE", help="write the file (mode 0600) instead of printing it")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(_inputs))

    p = verbs.add_parser("validate", help="check an input file (exit 3 when it has errors)")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--template", type=int, metavar="ID", help="service template ID (default: the newest toolkit one)")
    p.add_argument("--offline", action="store_true",
                   help="check only the shape against the spec's 23 inputs, without the cloud (the site checks are skipped)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_validate_command)

    p = verbs.add_parser("deploy", help="instantiate the toolkit (operation 3), follow it and record its VMs (4)")
    p.add_argument("--input", required=True, metavar="FILE", help="the input file (spec JSON shape)")
    p.add_argument("--template", type=int, metavar="ID", help="service template ID (default: the newest toolkit one)")
    p.add_argument("--wait", action="store_true", help="follow the service to RUNNING, record VMs, capture the key")
    p.add_argument("--timeout", type=non_negative_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"time the service may take to reach RUNNING (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--key-timeout", type=non_negative_seconds, default=DEFAULT_KEY_TIMEOUT, metavar="SECONDS",
                   help=f"time the automation VM may take to publish its key (default {DEFAULT_KEY_TIMEOUT:g})")
    p.add_argument("--poll", type=non_negative_seconds, default=2.0, help=argparse.SUPPRESS)
    p.add_argument("--heartbeat", type=non_negative_seconds, default=DEFAULT_HEARTBEAT, metavar="SECONDS",
                   help=f"while waiting, say every SECONDS what each role waits for and why (default "
                        f"{DEFAULT_HEARTBEAT:g})")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the preview and change nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(_deploy))

    p = verbs.add_parser("vms", help="the recorded toolkit VMs, read back live (operation 4)")
    p.add_argument("--service", type=int, metavar="ID", help="the service (default: the last recorded deployment)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(_vms))

    p = verbs.add_parser("key", help="the automation VM's public key; --grant gives it to the cloud user (5)")
    p.add_argument("--service", type=int, metavar="ID", help="the service (default: the last recorded deployment)")
    p.add_argument("--wait", type=non_negative_seconds, default=0.0, metavar="SECONDS",
                   help="wait this long for the key when it is not published yet (default: do not wait)")
    p.add_argument("--grant", action="store_true", help="add the key to the cloud user's SSH_PUBLIC_KEY")
    p.add_argument("--user", metavar="NAME", help="the cloud user (default: the deployment's cloud-username input)")
    p.add_argument("--poll", type=non_negative_seconds, default=2.0, help=argparse.SUPPRESS)
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="print the preview and change nothing")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(_key))
