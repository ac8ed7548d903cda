"""The verbs of `sitetk setup` (status, run; registered in tui.cli.setup, which imports this
module only when one of them runs) and what `sitetk trial` shares with them (`load_target`).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from typing import Any

from tui.cli.common import (
    EXIT_FAILED,
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    confirm,
    emit_json,
    print_error,
    print_event,
)
from tui.cli.setup import SITE_VALUE_PATHS
from tui.domain.disk_size import DEFAULT_OBJECTSTORE_DISK_MB
from tui.domain.setup_steps import SetupChecklist, StepId, StepState
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.operation import RunContext
from tui.procedures.setup.facts import SetupTarget, target_from_file


def load_target(path: str | None, site: SiteConnection, disk_mb: int = DEFAULT_OBJECTSTORE_DISK_MB) -> SetupTarget:
    """The intent of the input file (bad file: usage error with its line and column), with the
    object store disk's size (--disk-size)."""
    if not path:
        return SetupTarget(objectstore_disk_mb=disk_mb)
    from tui.domain.toolkit_inputs import secret_names

    try:
        target = target_from_file(path, secret_names(site.naming), site.naming)
    except SiteError as error:
        raise UsageError(f"{error.title}: {error.detail}") from None
    for warning in target.warnings:  # on stderr, --json too (its answer carries them as well)
        print(f"warning: {warning}", file=sys.stderr)
    return replace(target, objectstore_disk_mb=disk_mb)


def checklist_text(checklist: SetupChecklist) -> str:
    lines: list[str] = []
    group = ""
    for step in checklist.steps:
        if step.group != group:
            group = step.group
            lines.append(f"{group}")
        lines.append(f"  {step.state.glyph} {step.state.value:<8} {step.title}")
        for line in step.evidence:
            lines.append(f"      {line}")
        if step.action and step.state is not StepState.DONE:
            lines.append(f"      -> {step.action}")
        if step.command and step.state is not StepState.DONE:
            lines.append(f"      $ {step.command}")
    for note in checklist.notes:
        lines.append(f"note: {note}")
    nxt = checklist.next_step
    lines.append("")
    if nxt is None:
        lines.append("Every mandatory step is done: the site is set up.")
    else:
        waiting = sum(1 for s in checklist.steps if s.outstanding)
        lines.append(f"{waiting} mandatory step(s) not done. Next: {nxt.title} ({nxt.state.value})"
                     + (f": {nxt.action}" if nxt.action else ""))
    return "\n".join(lines)


async def status_command(args: argparse.Namespace, site: SiteConnection) -> int:
    from tui.procedures.setup.status import setup_status

    target = load_target(args.input, site, args.disk_size)
    checklist, _facts = await setup_status(site, target)
    unreadable = unreadable_error(checklist)
    if unreadable is not None:
        # a step whose evidence could not be read is neither done nor to do: an error (exit 1)
        if not args.json:
            print(checklist_text(checklist))
        print_error(unreadable, args.json, **checklist.as_json())
        return EXIT_FAILED
    if args.json:
        emit_json({"ok": True, **checklist.as_json(), **_warnings(target)})
    else:
        print(checklist_text(checklist))
    return EXIT_OK if checklist.complete else EXIT_FINDINGS


def _warnings(target: SetupTarget) -> dict[str, list[str]]:
    return {"warnings": list(target.warnings)} if target.warnings else {}


def unreadable_error(checklist: SetupChecklist) -> SiteError | None:
    """The error of a checklist some of whose steps could not be decided (None: every one was)."""
    steps = checklist.unreadable
    if not steps:
        return None
    why = "; ".join(checklist.notes) or "see the steps"
    return SiteError(f"{len(steps)} step(s) could not be checked: {', '.join(s.title for s in steps)}",
                     f"What could not be read: {why}. Nothing is assumed done; run `sitetk setup status` again once "
                     "the site answers.")


async def _ask_secrets(names: list[str]) -> dict[str, str]:
    """Secrets missing from the input file, asked as `toolkit deploy` asks them (imported here:
    the deploy verb's module costs every other verb ~0.4 s of CPU, issue 24)."""
    from tui.cli.toolkit_deploy import ask_secrets

    return ask_secrets(names)


def _site_values(pairs: list[str] | None) -> dict[str, str]:
    """--set values: the four site values, or an optional appliance's input (its USER_INPUTS name,
    such as ONEAPP_DNS_DOMAIN; a secret input is refused when the step runs)."""
    values: dict[str, str] = {}
    for pair in pairs or ():
        path, sep, value = pair.partition("=")
        name = path.strip()
        if not sep or (name not in SITE_VALUE_PATHS and not _APPLIANCE_INPUT.fullmatch(name)):
            raise UsageError(f"--set {pair!r}: give PATH=VALUE with PATH one of {', '.join(SITE_VALUE_PATHS)}, or an "
                             "optional appliance's input NAME=VALUE (ONEAPP_DNS_DOMAIN=...)")
        values[name] = value.strip()
    return values


#: an appliance's input name (USER_INPUTS), as `--set` takes it for the dns and route-manager steps
_APPLIANCE_INPUT = re.compile(r"ONEAPP_[A-Z0-9_]+")


async def _ask_values(wanted: list[tuple[str, str]]) -> dict[str, str]:
    """The site's own values for the template's examples, asked on the terminal (not secret)."""
    import sys

    if not sys.stdin.isatty():
        sets = " ".join(f"--set {path}=..." for path, _ in wanted)
        raise UsageError(f"core.yaml still holds the template's example {', '.join(p for p, _ in wanted)} and there is no "
                         f"terminal to ask on: give them with {sets}")
    return {path: input(f"{path} ({ask}): ").strip() for path, ask in wanted}


async def _with_secrets(target: SetupTarget, site: SiteConnection, dry_run: bool) -> SetupTarget:
    """Ask, up front, the secrets the file leaves out and the remaining steps need: the site secret
    (the vault password of core.yaml) always, the other mandatory secrets while no toolkit service
    exists (they are the instantiation's). Nothing changes before they are all there."""
    from dataclasses import replace

    from tui.domain.toolkit_inputs import form_fields
    from tui.procedures.site.workspace import prompted_password
    from tui.procedures.toolkit.service import toolkit_service

    naming = site.naming
    token = naming.input_name(f"{naming.role_automation}_sites_token")
    needed = [token]
    if toolkit_service(await site.flow.list_services(), naming) is None:
        needed = [f.name for f in form_fields(naming) if f.secret and f.mandatory]
    missing = [name for name in needed if not target.values.get(name)]
    if not missing or dry_run:
        return target
    values = {**target.values, **await _ask_secrets(missing)}
    password = prompted_password(values[token]) if values.get(token) else target.vault_password
    return replace(target, values=values, vault_password=password)


def _confirmer(args: argparse.Namespace) -> Any:
    async def confirm_step(plan: Any) -> bool:
        if not args.json:
            print(plan.preview.as_text())
        # read-only: nothing to confirm, the pipeline refuses the step (`run_operation`)
        return True if args.read_only else confirm(f"Do {plan.step.title!r}", args.yes)
    return confirm_step


async def _no_secrets(names: list[str]) -> dict[str, str]:
    """Read-only mode asks for no secret: the first changing step is refused before using any."""
    return {}


async def run_command(args: argparse.Namespace, site: SiteConnection) -> int:
    from tui.procedures.setup.run import RunOptions, SetupStopped, run_setup
    from tui.procedures.setup.status import setup_status

    # read-only: the checklist and the next step's preview, then the pipeline refuses the first step
    # that changes something (`refuse_if_read_only`: one audit record); no secret is asked for
    target = load_target(args.input, site, args.disk_size)
    if not args.read_only:
        target = await _with_secrets(target, site, args.dry_run)
    options = RunOptions(datastore_id=args.datastore, only=StepId(args.only) if args.only else None,
                         poll_interval=args.poll, step_timeout=args.timeout, deploy_timeout=args.timeout,
                         key_timeout=args.timeout)
    context = RunContext(emit=(lambda event: None) if args.json else print_event)
    try:
        ran = await run_setup(site, target, options, context, confirm=_confirmer(args),
                              ask_secrets=_no_secrets if args.read_only else _ask_secrets, dry_run=args.dry_run,
                              site_values=_site_values(args.set), ask_values=None if args.read_only else _ask_values)
    except SetupStopped as error:
        checklist, _ = await setup_status(site, target)
        if error.refused and not args.json:
            print(checklist_text(checklist))
        print_error(error, args.json, step=error.step.value if error.step else None,
                    events=[e.as_json() for e in context.events], checklist=checklist.as_json())
        return EXIT_USAGE if error.refused else EXIT_FAILED
    events = [e.as_json() for e in context.events]
    if args.dry_run:
        if args.json:
            emit_json({"ok": True, "dry_run": True, "preview": ran.preview.as_json() if ran.preview else None,
                       "events": events})
        elif ran.preview is not None:
            print(ran.preview.as_text())
        else:
            print("nothing to do: every mandatory step is done")
        return EXIT_OK
    if args.json:
        emit_json({"ok": True, "checklist": ran.checklist.as_json(), "events": events, **_warnings(target)})
    else:
        print(ran.message)
    return EXIT_OK
