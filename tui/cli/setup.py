"""`sitetk setup ...`: the first-time setup checklist, headless (spec operation 8, done better).

    sitetk setup status [--input FILE] [--json]     every step with its state and evidence;
                                                    exit 0 only when every mandatory step is done, 3 otherwise

Every state is read from the live site (the cloud, OneFlow, the sites repository), never from a
local diary, so the answer is the same after a crash, on another machine or after work done by
hand. `--input` is the toolkit input file of the spec: it names the automation cloud user, the
site branch and directory and the default network, and its app_automation_sites_token is the
vault password core.yaml is checked with (else the configured vault password file).
"""

from __future__ import annotations

import argparse
from typing import Any

from tui.adapters.errors import SiteError
from tui.cli.common import EXIT_FINDINGS, EXIT_OK, UsageError, emit_json, site_command
from tui.domain.setup_steps import SetupChecklist, StepState
from tui.procedures.connection import SiteConnection
from tui.procedures.setup_facts import SetupTarget, target_from_file


def load_target(path: str | None, site: SiteConnection) -> SetupTarget:
    """The intent of the input file (bad file: usage error with its line and column)."""
    if not path:
        return SetupTarget()
    from tui.domain.toolkit_inputs import secret_names

    try:
        return target_from_file(path, secret_names(site.naming), site.naming)
    except SiteError as error:
        raise UsageError(f"{error.title}: {error.detail}") from None


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


async def _status(args: argparse.Namespace, site: SiteConnection) -> int:
    from tui.procedures.setup_status import setup_status

    target = load_target(args.input, site)
    checklist, _facts = await setup_status(site, target)
    if args.json:
        emit_json({"ok": True, **checklist.as_json()})
    else:
        print(checklist_text(checklist))
    return EXIT_OK if checklist.complete else EXIT_FINDINGS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("setup", help="the first-time setup checklist: status and run",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    p = verbs.add_parser("status", help="every setup step with its state (exit 3 until every mandatory one is done)")
    p.add_argument("--input", metavar="FILE", help="the toolkit input file (spec JSON shape)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=site_command(_status))
