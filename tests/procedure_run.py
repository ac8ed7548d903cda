"""Running a procedure in a test: procedures report to a `RunContext` and return their result."""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, TypeVar

from tui.procedures.operation import RunContext
from tui.procedures.progress import Progress

ResultT = TypeVar("ResultT")


async def run_procedure(run: Callable[[RunContext], Awaitable[ResultT]], *, cancel: asyncio.Event | None = None,
                        on_event: Callable[[Progress], None] | None = None) -> tuple[list[Progress], ResultT]:
    """`run(context)` with a context of its own: the events it reported and its result. `on_event`
    sees each event as it comes (a test sets `cancel` there, or keeps the events of a failing run)."""
    events: list[Progress] = []

    def emit(event: Progress) -> None:
        events.append(event)
        if on_event is not None:
            on_event(event)

    result = await run(RunContext(emit, cancel if cancel is not None else asyncio.Event()))
    return events, result


async def collect(run: Callable[[RunContext], Awaitable[object]], *, cancel: asyncio.Event | None = None,
                  on_event: Callable[[Progress], None] | None = None) -> list[Progress]:
    """The events of `run(context)` (`run_procedure` without the result)."""
    return (await run_procedure(run, cancel=cancel, on_event=on_event))[0]
