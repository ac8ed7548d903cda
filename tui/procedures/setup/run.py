"""Running the setup checklist: the next step the site needs, with the existing procedures, until done.

`run_setup(site, target, options, context, confirm=..., ask_secrets=...)` loops: read the site
(`setup_status`), pick the next mandatory step that is not done, plan it (`plan_step`: the
preview with the equivalent platform commands), ask `confirm`, run it (`StepPlan.run`, a part of
this run: its events go to the run's context named after the step), read the site again. It
stops at the first step it cannot do (`SetupStopped`, naming the step, the reason and the fix) and
when every mandatory step is done, returning what it did and left (`SetupRan`). Each round
decides from the live site, so running it again after a kill, a failure or work done by hand
continues from where the site is, and nothing is doubled: a download whose objects exist is
reused or waited for, a service that exists is followed (never instantiated again), a key already
there is not added, a commit with no change is not made.

What runs each step is its row's planner in the table of steps (`tui.procedures.setup.steps`): the
preflight and toolkit steps in `toolkit_runs`, the sites repository's in `site_runs`, the optional
ones (dns, route-manager, trial-run: only with `--only`) in `optional_runs`, each module's docstring
with its table. Steps only the operator can do (platform configuration, networks, a failed service)
stop the run with the step's fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Mapping, ParamSpec, TypeVar

from tui import timing
from tui.domain.setup_steps import ComponentsMissing, SetupChecklist, SetupStep, StepId, StepState
from tui.domain.trial_ids import DEFAULT_TN_ID
from tui.errors import SiteError
from tui.procedures.operation import Operation, OperationCancelled, ReadOnlyRefused, RunContext
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.setup.facts import SetupFacts, SetupTarget
from tui.procedures.setup.status import setup_status
from tui.procedures.setup.step_plan import (
    AskSecrets,
    AskValues,
    Confirm,
    PlanRequest,
    RunOptions,
    SetupStopped,
    StepPlan,
    stop,
)
from tui.procedures.setup.steps import BY_ID
from tui.procedures.site.workspace import prompted_password

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: the run's own names, and the options, the plan and the stop it takes and gives (`step_plan`)
__all__ = ["MAX_ROUNDS", "RunOptions", "RunSetup", "SetupRan", "SetupStopped", "StepPlan", "StepRan", "choose",
           "older_build_note", "plan_step", "run_setup", "with_answers"]

P = ParamSpec("P")
T = TypeVar("T")

#: rounds after which the run stops whatever happens (each round does one step)
MAX_ROUNDS = 40


def choose(checklist: SetupChecklist, only: StepId | None) -> SetupStep | None:
    """The step to do now: `only`, else the next outstanding one (the database move first while the
    toolkit deploys, as soon as the manager VM has a host and is flagged)."""
    if only is not None:
        chosen = checklist.step(only)
        if (only is StepId.COMPONENTS and chosen.state is StepState.DONE and isinstance(chosen.found, ComponentsMissing)
                and chosen.found.recommended):
            return chosen  # asked for: the recommended components the mandatory ones left unlisted
        return None if chosen.state is StepState.DONE else chosen
    step = checklist.next_step
    if step is not None and step.id is StepId.INSTANTIATE:
        db = checklist.step(StepId.DATABASE_HOST)
        if db.state is StepState.TODO:
            return db
    return step


def older_build_note(checklist: SetupChecklist) -> str:
    """What the download step says of an older toolkit build (downloaded, or the cloud's app), with
    what to do ("": the newest, or not known)."""
    step = next((s for s in checklist.steps if s.id is StepId.DOWNLOAD), None)
    if step is None:
        return ""
    return next((line for line in step.evidence if line.startswith("older build:")), "")


def with_answers(target: SetupTarget, answers: Mapping[str, str], naming: Any) -> SetupTarget:
    """`target` with secrets asked during the run (the sites token is core.yaml's vault password)."""
    if not answers:
        return target
    values = {**target.values, **answers}
    token = values.get(naming.input_name(f"{naming.role_automation}_sites_token"), "")
    return replace(target, values=values, vault_password=prompted_password(token) if token else target.vault_password)


@dataclass(frozen=True)
class StepRan:
    """One step a run did: what it ran (its plan's title), in how long, and the step as the
    reading after it found it (said done only when that reading shows it done)."""

    step: SetupStep
    action: str
    seconds: float

    @property
    def done(self) -> bool:
        return self.step.state is StepState.DONE


@dataclass(frozen=True)
class SetupRan:
    """What `run_setup` did and left: the steps it ran, the checklist it read last (its counts say
    how many steps are done, to do, blocked or failed), what its last event said, and the step left
    for the next run: the one after `max_steps`, or a dry run's with its `preview` (None with no
    step left). A run that cannot go on raises `SetupStopped` (its failure: the step, why, the fix)."""

    checklist: SetupChecklist
    ran: tuple[StepRan, ...] = ()
    message: str = ""
    next_step: SetupStep | None = None
    preview: Preview | None = None

    @property
    def complete(self) -> bool:
        return self.checklist.complete


async def run_setup(site: "SiteConnection", target: SetupTarget, options: RunOptions, context: RunContext, *,
                    confirm: Confirm, ask_secrets: AskSecrets, dry_run: bool = False, ask_values: AskValues | None = None,
                    site_values: Mapping[str, str] | None = None) -> SetupRan:
    """Run the remaining steps (module docstring), reporting each to `context`; what the run did
    and left (`SetupRan`). With `dry_run`, only the next step's preview and nothing changes.
    `site_values` (the CLI's --set) and `ask_values` give the site's own values for the template's
    examples core.yaml still holds (public address, domain, name servers, the administrators'
    key); without either, the submit stops and says so."""
    # a question open when the run is cancelled (a stop signal: nobody left to answer) stops it
    confirm, ask_secrets = _answered(context, confirm), _answered(context, ask_secrets)
    ask_values = _answered(context, ask_values) if ask_values is not None else None
    if options.only is StepId.TRIAL_RUN and not target.trial_tn_id:  # its state is the manager's: read when asked
        target = replace(target, trial_tn_id=DEFAULT_TN_ID)
    last: tuple[StepId, StepState, tuple[str, ...]] | None = None
    started = timing.monotonic()
    ran: list[StepRan] = []
    asked: dict[str, str] = {}

    async def ask_once(names: list[str]) -> dict[str, str]:
        """Ask, and keep the answers for the rest of this run (the next readings of the site use them)."""
        answers = await ask_secrets(names)
        asked.update({k: v for k, v in answers.items() if v})
        return answers

    just_ran: tuple[SetupStep, str, float, int, int] | None = None
    for round_number in range(1, MAX_ROUNDS + 1):
        checklist, facts = await setup_status(site, with_answers(target, asked, site.naming))
        if just_ran is not None:  # what the step's run left, read now: never the step's title as a claim
            ran.append(_after_step(context, checklist, *just_ran))
            just_ran = None
        _stop_if_cancelled(context, ran)
        older = older_build_note(checklist)
        if round_number == 1 and older:  # said first: the run goes on with the build the cloud holds
            context.report(Progress("toolkit build", 1, 1, older, ProgressState.DONE,
                                    {"older_build": checklist.step(StepId.DOWNLOAD).data}))
        step = choose(checklist, options.only)
        if step is not None and options.max_steps is not None and len(ran) >= options.max_steps:
            message = f"next: {step.title} ({step.state.value})"
            context.report(Progress("setup", 1, 1, message, ProgressState.DONE,
                                    {"checklist": checklist.as_json(), "next": step.id.value}))
            return SetupRan(checklist, tuple(ran), message, step)
        outstanding = sum(1 for s in checklist.steps if s.outstanding)
        if step is None:
            return _all_done(context, checklist, tuple(ran), options, older, timing.monotonic() - started)
        seen = (step.id, step.state, step.evidence)
        if seen == last:
            raise SetupStopped(step.id, f"{step.title!r} is still not done after running it",
                               "; ".join(step.evidence) + f"\nFix: {step.action}")
        last = seen
        plan = await plan_step(site, facts, checklist, step, options, ask_once, ask_values=ask_values,
                               site_values=site_values, preview_only=dry_run)
        # the steps of this run so far and to come: the chosen one counts even when it is not an
        # outstanding one (an optional step asked with --only), never `(1/0)` (issue 20 item 11)
        total = round_number - 1 + outstanding + (0 if step.outstanding else 1)
        context.report(Progress(step.id.value, round_number, total, plan.preview.title, ProgressState.RUNNING,
                                {"preview": plan.preview.as_json(), "step": step.as_json()}))
        if dry_run:
            return SetupRan(checklist, tuple(ran), plan.preview.title, step, plan.preview)
        if not plan.wait_only and not plan.preview.is_noop and not await confirm(plan):
            raise SetupStopped(step.id, f"{step.title!r} not confirmed", "Nothing was changed; run again to continue.")
        step_started = timing.monotonic()
        await _run_step(step, plan, context)
        just_ran = (step, plan.preview.title, timing.monotonic() - step_started, round_number, total)
    raise SetupStopped(None, "Setup did not finish", f"{MAX_ROUNDS} steps ran without completing: run again.")


def _stop_if_cancelled(context: RunContext, ran: list[StepRan]) -> None:
    """The run's safe point between two steps: a cancel (the console's c, a stop signal) stops it
    here, with the site as the last step left it."""
    if context.cancel.is_set():
        done = f"after {len(ran)} step(s)" if ran else "before its first step"
        raise OperationCancelled("Cancelled", f"The setup stopped {done}; the site is left as it is: run it again to "
                                 "continue from there.", retryable=True)


def _answered(context: RunContext, ask: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """`ask` (a confirmation, secrets, site values asked of the operator), given up when the run is
    cancelled while it waits (`RunContext.answer`)."""
    async def asked(*args: P.args, **kwargs: P.kwargs) -> T:
        return await context.answer(ask(*args, **kwargs))

    return asked


def _all_done(context: RunContext, checklist: SetupChecklist, ran: tuple[StepRan, ...], options: RunOptions, older: str,
              seconds: float) -> SetupRan:
    """The run's end when no step is left (the one asked with --only, or every mandatory one)."""
    message = (f"{options.only.value} is done" if options.only else "every mandatory step is done")
    if older:
        message += f"; {older}"
    message += f" ({seconds:.0f} s)"
    context.report(Progress("setup", 1, 1, message, ProgressState.DONE, {"checklist": checklist.as_json()}))
    return SetupRan(checklist, ran, message)


async def _run_step(step: SetupStep, plan: StepPlan, context: RunContext) -> None:
    """`plan`'s run, a part of this one: its events named after `step`; a refusal or failure
    stops the setup there."""
    try:
        await plan.run(context.relay(lambda event: replace(event, step=f"{step.id.value}: {event.step}")))
    except (SetupStopped, OperationCancelled):  # a cancel: the step's operation stopped at its safe point
        raise
    except ReadOnlyRefused as error:
        raise SetupStopped(step.id, f"{step.title!r} refused: {error.title}", error.detail, refused=True) from None
    except SiteError as error:
        raise SetupStopped(step.id, f"{step.title!r} failed: {error.title}",
                           f"{error.detail}\nThe site is left as it is: run again to continue from there.") from None


def _after_step(context: RunContext, checklist: SetupChecklist, step: SetupStep, action: str, seconds: float, index: int,
                total: int) -> StepRan:
    """What running `step` (`action`, the plan's title) left, from the checklist read after it: the
    step is said done only when that reading shows it done (issue 22 item 10: the instantiate step's
    run creates the service and returns, and "Toolkit instantiated and RUNNING: finished" was printed
    while the service was DEPLOYING)."""
    now = checklist.step(step.id)
    if now.state is StepState.DONE:
        message = f"{step.title}: done ({action}, {seconds:.0f} s)"
    else:
        found = f": {now.evidence[0]}" if now.evidence else ""
        message = f"{action}: done in {seconds:.0f} s; {step.title!r} is not done yet ({now.state.value}{found})"
    context.report(Progress(step.id.value, index, total, message, ProgressState.DONE, {"step": now.as_json()}))
    return StepRan(now, action, seconds)


@dataclass(frozen=True)
class RunSetup(Operation[None, SetupRan]):
    """`run_setup` as an operation: how the console runs the guided setup, through `OperationRun`
    as every change a screen makes, so its progress, its cancel and the app's stop signal (which
    cancels every run under way and waits for it) are every operation's. The run plans each step
    as it comes (its preview is confirmed then). It changes nothing itself and writes no record of
    its own: each step that changes the site is an operation run through `run_operation`
    (`run_part`), refused in read-only mode and recorded there. A cancel stops it at a safe point:
    the step's operation at its own (a download deletes what it created), else between two steps
    or while a question is open."""

    target: SetupTarget
    options: RunOptions
    confirm: Confirm = field(compare=False)
    ask_secrets: AskSecrets = field(compare=False)
    ask_values: AskValues | None = field(default=None, compare=False)
    title: ClassVar[str] = "Set up the site"
    action: ClassVar[str] = "setup.run"
    mutating: ClassVar[bool] = False
    resumable: ClassVar[bool] = True
    on_stop: ClassVar[str] = "stopping at the next safe point; the site is left as it is"
    still_stopping: ClassVar[str] = "still stopping the running step (SIGKILL would leave it half-done)"

    async def plan(self, site: "SiteConnection") -> None:
        return None

    def preview(self, plan: None) -> Preview:
        return Preview(self.title)

    async def execute(self, site: "SiteConnection", plan: None, context: RunContext) -> SetupRan:
        return await run_setup(site, self.target, self.options, context, confirm=self.confirm,
                               ask_secrets=self.ask_secrets, ask_values=self.ask_values)


# -- planning each step ---------------------------------------------------------------------------


async def plan_step(site: "SiteConnection", facts: SetupFacts, checklist: SetupChecklist, step: SetupStep,
                    options: RunOptions, ask_secrets: AskSecrets, *, ask_values: AskValues | None = None,
                    site_values: Mapping[str, str] | None = None, preview_only: bool = False) -> StepPlan:
    """What doing `step` now means (its row's planner); `SetupStopped` when only the operator can do it."""
    needs_password = step.id is StepId.CORE_YAML and step.blocked_by == "the vault password"
    if (step.state is StepState.BLOCKED and not needs_password) or step.state is StepState.FAILED:
        raise stop(step)
    planner = BY_ID[step.id].plan
    if planner is None:
        raise stop(step)
    return await planner(PlanRequest(site, facts, options, ask_secrets, ask_values, site_values or {}, preview_only), step)
