"""A procedure, or an operation, run as a part of a larger run.

`stream_run(run)` runs a procedure of a `RunContext` (`run(context)` reports to the context: the
guided setup's run, the key's capture, a site's open) and yields each event as it comes, for a
caller that renders events as a stream (a screen's worker, the CLI's `follow`); the run's error is
raised after the events before it, and its typed result goes to `on_result`.
`run_part(site, operation, context)` runs an operation through
`run_operation` (the read-only refusal, the time limit, the cancel, the one audit record) as a part
of a larger run (a setup step that creates the site, then fills it), so an operation run there is
the same run as in the console or the CLI: with a context of its own (its events, its record and
its audit record's steps are its own) whose events go to `context`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, TypeVar

from tui.procedures.operation import Operation, RunContext, run_operation
from tui.procedures.progress import Progress

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

ResultT = TypeVar("ResultT")

_UNPLANNED: Any = object()


async def stream_run(run: Callable[[RunContext], Awaitable[ResultT]], *, cancel: asyncio.Event | None = None,
                     on_result: Callable[[ResultT], None] | None = None) -> AsyncIterator[Progress]:
    """Run `run(context)`, yielding the events it reports as they come; its error is raised after
    them, its result goes to `on_result`. Closing the stream cancels the run."""
    queue: asyncio.Queue[Progress | None] = asyncio.Queue()
    context = RunContext(queue.put_nowait, cancel if cancel is not None else asyncio.Event())

    async def go() -> None:
        try:
            result = await run(context)
            if on_result is not None:
                on_result(result)
        finally:
            queue.put_nowait(None)

    task = asyncio.ensure_future(go())
    try:
        while (event := await queue.get()) is not None:
            yield event
        await task  # its error, if any
    finally:
        if not task.done():
            task.cancel()


async def run_part(site: "SiteConnection", operation: Operation[Any, ResultT], context: RunContext, plan: Any = _UNPLANNED,
                   *, adapt: Callable[[Progress], Progress | None] | None = None, timeout: float | None = None) -> ResultT:
    """Run `operation` (planned first when no plan is given) through `run_operation` with a context
    of its own relayed to `context` (its events through `adapt`, relabelled), the same cancel."""
    if plan is _UNPLANNED:
        plan = await operation.plan(site)
    return await run_operation(site, operation, plan, context.relay(adapt or _same), timeout=timeout)


def _same(event: Progress) -> Progress:
    return event
