"""How the setup checklist writes a step: its state, the evidence it read, what to do or what stops
it, and the `sitetk setup run --only <step>` that does it (`tui.procedures.setup.status` and
`tui.procedures.setup.site_steps` decide with these)."""

from __future__ import annotations

from typing import Any, Sequence

from tui.domain.setup_steps import UNREADABLE, SetupStep, StepFound, StepId, StepState


def run_command(step: StepId) -> str:
    return f"sitetk setup run --input FILE --only {step.value}"


def step(step_id: StepId, title: str, state: StepState, evidence: Sequence[str] = (), action: str = "", *,
         blocked_by: str = "", mandatory: bool = True, command: str = "", data: dict[str, Any] | None = None,
         found: StepFound | None = None) -> SetupStep:
    return SetupStep(step_id, title, state, tuple(e for e in evidence if e), action, blocked_by, mandatory, command,
                     data or (found.as_json() if found is not None else {}), found)


def blocked(step_id: StepId, title: str, by: StepId | str, why: str, evidence: Sequence[str] = (), *,
            mandatory: bool = True) -> SetupStep:
    by_text = by.value if isinstance(by, StepId) else by
    return step(step_id, title, StepState.BLOCKED, evidence, why, blocked_by=by_text, mandatory=mandatory)


def unknown(step_id: StepId, title: str, what: str, *, mandatory: bool = True) -> SetupStep:
    """A step whose source could not be read: blocked by that, never assumed done."""
    return blocked(step_id, title, UNREADABLE, f"{what} could not be read: see the notes, then refresh",
                   mandatory=mandatory)
