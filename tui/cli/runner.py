"""The one headless runner of operations (tui.procedures.operation): every mutating CLI verb.

    plan -> preview (printed; `--dry-run` stops here, read-only mode included) -> read-only
    refusal -> confirmation (`--yes`, or y/N on a terminal) -> run (one line per progress event
    on stderr) -> the result (text, or one JSON answer with `--json`)

Exit codes (tui.cli.exit_codes): 0 done (or a dry run), 1 the operation failed, 2 refused (bad
usage, read-only mode, not confirmed), 128+N stopped by signal N (130 SIGINT, 143 SIGTERM, 129
SIGHUP: each the same cancel, the operation undoes what it created first). A verb builds its operation from its arguments and calls
`run_cli(args, site, operation)`; `describe` turns the typed result into the text-mode summary
and `extra` adds members to the JSON answers (the plan is always there).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, TypeVar

from tui.cli.common import confirm, emit_json, print_error, print_event, show_preview, stderr_line, usage
from tui.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from tui.errors import SiteError
from tui.procedures.operation import (
    Confirmation,
    JsonShaped,
    Operation,
    ReadOnlyRefused,
    RunContext,
    StopsEarly,
    json_of,
    refuse_if_read_only,
    run_operation,
)
from tui.procedures.preview import Preview
from tui.procedures.stop_signals import StopRequests, exit_code_for, on_stop_signals, signal_name

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

PlanT = TypeVar("PlanT")
ResultT = TypeVar("ResultT")


def result_json(result: Any) -> Any:
    """A typed result in a JSON answer: its `as_json()`, else the value itself."""
    return json_of(result)


_NO_PLAN: Any = object()


async def run_cli(args: argparse.Namespace, site: "SiteConnection", operation: Operation[PlanT, ResultT], *,
                  plan: PlanT = _NO_PLAN, extra: Mapping[str, Any] | Callable[[PlanT], Mapping[str, Any]] | None = None,
                  before: str | Callable[[PlanT], None] = "",
                  describe: Callable[[ResultT], str] | None = None,
                  nothing_to_do: Callable[[PlanT], str | None] | None = None,
                  prepare: Callable[[PlanT], Awaitable[PlanT]] | None = None,
                  answer_to: Callable[[dict[str, Any]], None] = emit_json,
                  on_result: Callable[[ResultT], None] | None = None,
                  timeout: float | None = None) -> int:
    """Run one operation headless (see the module docstring); returns the exit code.

    `plan` is the operation's plan when the verb has already made it (to answer an empty plan its
    own way); the JSON answers carry the plan (`plan_json`), then `extra` (or `extra(plan)`).
    `before` is text (or a function of the plan that prints) shown before the preview in text
    mode; `nothing_to_do(plan)` is the message when the plan changes nothing (then no question
    and no run). `prepare(plan)` completes the plan once the run is allowed (not a dry run, not
    read-only) and before the question: what is asked only then, such as secrets on the terminal.
    A successful `--json` answer (a dry run's too) goes to `answer_to`: a verb that runs a second
    operation after this one, or nests this one's answer, makes one answer of them; the typed
    result of a run goes to `on_result` first (the second operation starts from it)."""
    as_json = bool(getattr(args, "json", False))
    if plan is _NO_PLAN:
        plan = await operation.plan(site)
    ready = await _ready_to_run(args, site, operation, plan, as_json, extra=extra, before=before,
                                nothing_to_do=nothing_to_do, prepare=prepare, answer_to=answer_to)
    if isinstance(ready, int):
        return ready
    plan, preview, answer = ready
    context = RunContext(emit=(lambda event: None) if as_json else print_event,
                         ask=_asker(as_json, bool(getattr(args, "yes", False))))
    stops = StopRequests()
    try:
        with on_stop_signals(_stopper(stops, context, operation)):
            result = await run_operation(site, operation, plan, context, timeout=timeout)
    except SiteError as error:
        signalled = {"signal": signal_name(stops.first)} if stops.first is not None else {}
        print_error(error, as_json, **answer, **({"failure": error.as_json()} if isinstance(error, JsonShaped) else {}),
                    events=[e.as_json() for e in context.events], **signalled)
        return exit_code_for(stops.first) if stops.first is not None else EXIT_FAILED
    except asyncio.CancelledError:  # ctrl+c: say where it stopped and how to go on
        if operation.resumable:
            last = context.events[-1] if context.events else None
            where = f" during step “{last.step}”" if last else ""
            print(f"interrupted{where}: run the same command again to resume", file=sys.stderr)
        raise
    code = _stopped_code(stops, result)
    if on_result is not None:
        on_result(result)
    if as_json:
        answer_to({"ok": True, **answer, "preview": preview.as_json(), "events": [e.as_json() for e in context.events],
                   "result": result_json(result)})
    elif describe is not None:
        print(describe(result))
    return code


async def _ready_to_run(args: argparse.Namespace, site: "SiteConnection", operation: Operation[PlanT, ResultT],
                        plan: PlanT, as_json: bool, *,
                        extra: Mapping[str, Any] | Callable[[PlanT], Mapping[str, Any]] | None,
                        before: str | Callable[[PlanT], None],
                        nothing_to_do: Callable[[PlanT], str | None] | None,
                        prepare: Callable[[PlanT], Awaitable[PlanT]] | None,
                        answer_to: Callable[[dict[str, Any]], None]) -> tuple[PlanT, Preview, dict[str, Any]] | int:
    """`run_cli`'s steps before the run: the preview (a dry run stops there), the read-only
    refusal, `prepare`, an empty plan, the confirmation. The plan, its preview and the JSON answer
    so far when the run may go on, else the exit code."""
    preview = operation.preview(plan)
    more = extra(plan) if callable(extra) else (extra or {})
    answer: dict[str, Any] = {"plan": operation.plan_json(plan), **more}
    if callable(before):
        if not as_json:
            before(plan)
        before = ""
    if as_json and getattr(args, "dry_run", False):
        answer_to({"ok": True, "dry_run": True, "preview": preview.as_json(), **answer})
        return EXIT_OK
    if show_preview(preview, args, answer, before=before):
        return EXIT_OK
    try:
        refuse_if_read_only(site, operation, plan)
    except ReadOnlyRefused as error:
        return usage(error.detail, as_json)
    if prepare is not None:
        plan = await prepare(plan)
        answer["plan"] = operation.plan_json(plan)
    idle = nothing_to_do(plan) if nothing_to_do is not None else None
    if idle is not None:
        if as_json:
            answer_to({"ok": True, **answer, "events": []})
        else:
            print(idle)
        return EXIT_OK
    question = operation.confirmation(plan)
    if question is not None and not confirm(question.prompt, bool(getattr(args, "yes", False))):
        return EXIT_USAGE
    return plan, preview, answer


def _asker(as_json: bool, assume_yes: bool) -> Callable[[Confirmation], Awaitable[bool]]:
    """The run's questions (a confirmation asked during the run) on the terminal, or `--yes`."""

    async def ask(question: Confirmation) -> bool:
        if question.command and not as_json:
            print(question.command, file=sys.stderr)
        detail = f": {question.detail}" if question.detail else ""
        return await asyncio.to_thread(confirm, f"{question.prompt}{detail}", assume_yes)

    return ask


def _stopper(stops: StopRequests, context: RunContext, operation: Operation[Any, Any]) -> Callable[[int], None]:
    """The handler of INT, TERM and HUP: the same cancel (tui.procedures.stop_signals)."""

    def stop(signum: int) -> None:
        if stops.note(signum):
            context.cancel.set()
            note = f"{signal_name(signum)}: {operation.on_stop}"
        else:
            note = f"{signal_name(signum)}: {operation.still_stopping}"
        stderr_line(note)

    return stop


def _stopped_code(stops: StopRequests, result: Any) -> int:
    """The exit code of a run that returned: a stop signal's when it stopped the operation (a deploy
    stops following its service and says so in its result), else 0; says what the signal did."""
    if stops.first is None:
        return EXIT_OK
    stopped = isinstance(result, StopsEarly) and result.cancelled
    stderr_line(f"{signal_name(stops.first)}: stopped; what was made is left as the result says; run the same command "
         "again to continue with it" if stopped else
         f"{signal_name(stops.first)} came too late to stop it: the operation had finished")
    return exit_code_for(stops.first) if stopped else EXIT_OK
