"""The setup checklist decided from what the site shows now (`setup_facts`), step by step.

`build_checklist(facts)` turns one reading of the site into a `SetupChecklist` (pure: the same
facts give the same checklist) with each step's decision from the table of steps
(`tui.procedures.setup.steps`); `setup_status(site, target)` reads and decides. Each decision says
what it read (evidence) and, when the step is not done, what to do or what stops it. Steps the
console can do are named with the `sitetk setup run --only <step>` that does them; steps only the
operator can do (the platform configuration, the networks) say the platform command. The
decisions live by group: `preflight_steps`, `network_steps`, `toolkit_steps`, `site_steps`,
`optional_steps`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui.domain.setup_steps import SetupChecklist
from tui.procedures.setup.facts import SetupFacts, SetupTarget, read_setup_facts
from tui.procedures.setup.steps import STEPS

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


def build_checklist(facts: SetupFacts) -> SetupChecklist:
    return SetupChecklist.ordered((row.decide(facts) for row in STEPS), facts.notes)


async def setup_status(site: "SiteConnection", target: SetupTarget | None = None) -> tuple[SetupChecklist, SetupFacts]:
    """Read the site and decide every step (reads only: no preview, no audit)."""
    facts = await read_setup_facts(site, target)
    return build_checklist(facts), facts
