"""`sitetk toolkit inputs` and `sitetk toolkit validate`: the toolkit's input file, and the helpers
the other toolkit verbs share to read it (the template's form, the file, its problems).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tui.cli.common import EXIT_FINDINGS, EXIT_OK, UsageError, emit_json, settings_command, site_command, usage
from tui.domain.input_file import render_input_file
from tui.domain.input_site import Outcome
from tui.domain.severity import Severity
from tui.domain.toolkit_inputs import Problem, form_fields, secret_names, validate_inputs
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.toolkit.input_checks import OFFLINE_NOTE, SiteCheckReport, check_inputs_on_site
from tui.procedures.toolkit.service import (
    NAME_FIELD,
    ToolkitForm,
    find_toolkit_template,
    load_form,
    read_input_file,
    save_input_file,
)
from tui.settings import Settings


def problem_json(problem: Problem) -> dict[str, str]:
    return {"name": problem.name, "severity": problem.severity.value, "message": problem.message}


def print_problems(problems: tuple[Problem, ...]) -> None:
    for p in problems:
        mark = "error" if p.severity is Severity.ERROR else "warning"
        print(f"  {mark:>7}  {p.name}: {p.message}")


async def toolkit_form(args: argparse.Namespace, site: SiteConnection) -> ToolkitForm:
    template = await find_toolkit_template(site, getattr(args, "template", None))
    return await load_form(site, template)


def read_inputs(path: str, secrets: frozenset[str]) -> Any:
    try:
        loaded = read_input_file(path, secrets)
    except SiteError as error:
        raise UsageError(f"{error.title}: {error.detail}") from None
    for warning in loaded.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return loaded


# -- inputs and validate --------------------------------------------------------------------------


async def inputs_command(args: argparse.Namespace, site: SiteConnection) -> int:
    form = await toolkit_form(args, site)
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
        emit_json({"ok": not errors, "file": path, "template": template, "problems": [problem_json(p) for p in problems],
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
        print_problems(problems)
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
    form = await toolkit_form(args, site)
    loaded = read_inputs(args.file, form.secrets)
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


def validate_command(args: argparse.Namespace) -> int:
    """`validate`: against the cloud's template, or `--offline` against the spec's inputs."""
    return (settings_command(_validate_offline) if args.offline else site_command(_validate))(args)

