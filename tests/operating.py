"""Running an operation in a test the way the console and the CLI do: through `run_operation`,
so the read-only refusal, the cancel and the one audit record are the pipeline's."""

from __future__ import annotations

from typing import Any, TypeVar

from tui.procedures.connection import SiteConnection
from tui.procedures.operation import Operation, RunContext, run_operation
from tui.procedures.progress import Progress

PlanT = TypeVar("PlanT")
ResultT = TypeVar("ResultT")

_PLAN: Any = object()


async def operate(site: SiteConnection, operation: Operation[PlanT, ResultT], plan: PlanT = _PLAN, *,
                  events: list[Progress] | None = None, context: RunContext | None = None) -> ResultT:
    """Plan (unless `plan` is given) and run `operation`; its events go to `events` when given."""
    if plan is _PLAN:
        plan = await operation.plan(site)
    seen = events if events is not None else []
    return await run_operation(site, operation, plan, context or RunContext(emit=seen.append))
