"""What planning a setup step takes and gives: the run's options (`RunOptions`), what a planner has to
hand (`PlanRequest`: the site, its reading, how to ask the operator), the plan (`StepPlan`: the
preview and how to run it), the stop that hands the step back to the operator (`SetupStopped`) and
the plan of a step an `Operation` does (`operation_step`). The planners live beside the steps they
run (`toolkit_runs`, `site_runs`, `optional_runs`); `tui.procedures.setup.steps` names each step's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

from tui import timing
from tui.domain.setup_steps import SetupStep, StepId, StepState
from tui.errors import SiteError
from tui.procedures.operation_stream import run_part
from tui.procedures.preview import Preview
from tui.procedures.setup.facts import SetupFacts

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection
    from tui.procedures.hosts.move_plan import MoveTimeouts
    from tui.procedures.operation import Operation, RunContext


@dataclass(frozen=True)
class RunOptions:
    datastore_id: int | None = None
    only: StepId | None = None
    poll_interval: float = timing.PROFILE.poll_interval
    #: one image download, one wait for VMs to get a host
    step_timeout: float = timing.PROFILE.setup_step_timeout
    deploy_timeout: float = timing.PROFILE.deploy_timeout
    key_timeout: float = timing.PROFILE.setup_key_timeout
    move_timeouts: "MoveTimeouts | None" = None
    #: stop after this many steps ran (the console does one step a key press); None: until done
    max_steps: int | None = None


class SetupStopped(SiteError):
    """The run cannot go on by itself: `step` names where, the detail says why and the fix;
    `refused` when read-only mode refused the step (the pipeline's `ReadOnlyRefused`); `rejected`
    names the inputs whose values the site checks refused (a console forgets such asked secrets)."""

    def __init__(self, step: StepId | None, title: str, detail: str, *, refused: bool = False,
                 rejected: tuple[str, ...] = ()) -> None:
        super().__init__(title, detail, retryable=False)
        self.step = step
        self.refused = refused
        self.rejected = rejected


@dataclass(frozen=True)
class StepPlan:
    """One step the console is about to do: its preview and how to run it: `run(context)` reports
    to the context `run_setup` relays to its own (the events named after the step)."""

    step: SetupStep
    preview: Preview
    run: "Callable[[RunContext], Awaitable[object]]" = field(compare=False)
    #: the step changes nothing (a wait, a follow): no confirmation needed
    wait_only: bool = False


Confirm = Callable[[StepPlan], Awaitable[bool]]
AskSecrets = Callable[[list[str]], Awaitable[dict[str, str]]]
#: ask the operator for site values: (dotted path, what to give) -> {path: value}
AskValues = Callable[[list[tuple[str, str]]], Awaitable[dict[str, str]]]


@dataclass(frozen=True)
class PlanRequest:
    """What a step's planner has to hand: the site and this round's reading of it, the run's
    options, how to ask the operator for secrets (`ask`) and site values (`ask_values`), the site
    values given up front (the CLI's --set), and whether only the preview is wanted (a dry run asks
    nothing)."""

    site: "SiteConnection"
    facts: SetupFacts
    options: RunOptions
    ask: AskSecrets
    ask_values: AskValues | None = None
    site_values: Mapping[str, str] = field(default_factory=dict)
    preview_only: bool = False


#: how a step runs: its plan now, or `SetupStopped` when only the operator can do it
Planner = Callable[[PlanRequest, SetupStep], Awaitable[StepPlan]]


def stop(step: SetupStep, why: str = "") -> SetupStopped:
    """The stop for a step the run cannot do now: its state (or `why`), its evidence and its fix."""
    fix = step.action or "see the evidence"
    evidence = "; ".join(step.evidence)
    reason = why or {StepState.BLOCKED: f"blocked by {step.blocked_by}", StepState.FAILED: "failed",
                     StepState.TODO: "needs the operator"}.get(step.state, step.state.value)
    return SetupStopped(step.id, f"Setup stopped at {step.title!r}: {reason}",
                        f"{evidence + chr(10) if evidence else ''}Fix: {fix}")


def operation_step(site: "SiteConnection", step: SetupStep, operation: "Operation[Any, Any]", plan: object) -> StepPlan:
    """A step done by an `Operation`: its preview, and its run through `run_operation` (the
    read-only refusal, the time limit, the cancel, the one audit record) with the events streamed."""
    async def run(context: "RunContext") -> object:
        return await run_part(site, operation, context, plan)

    return StepPlan(step, operation.preview(plan), run)
