"""Reads run at once, and what happens when one of them fails: the one way procedures do it.

`gather(a, b, c)` runs the awaitables as tasks of one `asyncio.TaskGroup`: when one fails, the
others are cancelled and awaited before anything is raised, so no read is left running (or
finishing with an error nobody reads) when the command ends. `asyncio.gather` left them running:
the CLI printed its message, then `asyncio.run()` found them at shutdown and printed "unhandled
exception during asyncio.run() shutdown" with a traceback (issue 22 item 1: a session expiring
during `hosts list`, `setup status`, `market list` or `market upgrades`).

The first failure is raised as itself (a `SiteError` stays a `SiteError`, with its one message),
not as an exception group; failures of the other reads after it are dropped, since they are
either the same cause (an expired session fails every read) or cut short by the cancel.
KeyboardInterrupt, SystemExit and the caller's own cancellation pass through as TaskGroup
passes them.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, TypeVar, overload

T = TypeVar("T")
T1 = TypeVar("T1")
T2 = TypeVar("T2")
T3 = TypeVar("T3")
T4 = TypeVar("T4")
T5 = TypeVar("T5")
T6 = TypeVar("T6")
T7 = TypeVar("T7")


@overload
async def gather(a1: Awaitable[T1], a2: Awaitable[T2], /) -> tuple[T1, T2]: ...
@overload
async def gather(a1: Awaitable[T1], a2: Awaitable[T2], a3: Awaitable[T3], /) -> tuple[T1, T2, T3]: ...
@overload
async def gather(a1: Awaitable[T1], a2: Awaitable[T2], a3: Awaitable[T3], a4: Awaitable[T4], /
                 ) -> tuple[T1, T2, T3, T4]: ...
@overload
async def gather(a1: Awaitable[T1], a2: Awaitable[T2], a3: Awaitable[T3], a4: Awaitable[T4], a5: Awaitable[T5], /
                 ) -> tuple[T1, T2, T3, T4, T5]: ...
@overload
async def gather(a1: Awaitable[T1], a2: Awaitable[T2], a3: Awaitable[T3], a4: Awaitable[T4], a5: Awaitable[T5],
                 a6: Awaitable[T6], /) -> tuple[T1, T2, T3, T4, T5, T6]: ...
@overload
async def gather(a1: Awaitable[T1], a2: Awaitable[T2], a3: Awaitable[T3], a4: Awaitable[T4], a5: Awaitable[T5],
                 a6: Awaitable[T6], a7: Awaitable[T7], /) -> tuple[T1, T2, T3, T4, T5, T6, T7]: ...
@overload
async def gather(*aws: Awaitable[T]) -> tuple[T, ...]: ...


async def gather(*aws: Awaitable[Any]) -> Any:
    """The results of `aws` in order; on the first failure the others are cancelled and awaited,
    then that failure is raised (see the module docstring)."""
    tasks: list[asyncio.Task[Any]] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_awaited(aw)) for aw in aws]
    except BaseExceptionGroup as failures:
        raise first_failure(failures) from None
    return tuple(task.result() for task in tasks)


async def _awaited(aw: Awaitable[T]) -> T:
    return await aw


def first_failure(failures: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first failure of a task group (nested groups opened: a read that gathers too)."""
    first = failures.exceptions[0]
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first
