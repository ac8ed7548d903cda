"""One wait for the procedures that poll the site until something is ready: an appliance VM that
RUNs and has published its token (setup.optional), a trial network that leaves its transition
while the manager's activation call is open (trial.network).

`wait_ready(look, ...)` calls `look()` every `poll_interval`: it returns the ready value, or
`Waiting(text)` saying what it waits for now, or raises the SiteError of a state that will not
become ready by itself. Every poll reports the text with the elapsed seconds (`report`); the
deadline and the pause between polls are measured on the procedures' clock (tui.timing, which a
test drives instead of waiting a timeout out); the pause ends early when `cancel` is set (an
OperationCancelled from `cancelled()`) or when `until` (an open call whose answer ends the wait)
completes (then None is returned).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tui import timing
from tui.errors import SiteError
from tui.procedures.operation import OperationCancelled

T = TypeVar("T")


@dataclass(frozen=True)
class Waiting:
    """Not ready yet: what the wait waits for now (shown with the elapsed seconds)."""

    text: str


async def wait_ready(look: Callable[[], Awaitable[T | Waiting]], *, timeout: float, poll_interval: float,
                     timed_out: Callable[[str, float], SiteError],
                     report: Callable[[str, float], None] | None = None,
                     cancel: asyncio.Event | None = None,
                     cancelled: Callable[[], OperationCancelled] | None = None,
                     until: asyncio.Future[Any] | None = None) -> T | None:
    """Poll `look()` until it is ready (its value), `until` completes (None), the deadline passes
    (`timed_out(waiting, elapsed)` raised), or `cancel` is set (`cancelled()` raised)."""
    started = timing.monotonic()
    while True:
        if until is not None and until.done():
            return None
        seen = await look()
        if not isinstance(seen, Waiting):
            return seen
        elapsed = timing.monotonic() - started
        if report is not None:
            report(seen.text, elapsed)
        if elapsed >= timeout:
            raise timed_out(seen.text, elapsed)
        await timing.sleep(poll_interval, cancel=cancel, until=until)
        if cancel is not None and cancel.is_set():
            raise (cancelled() if cancelled is not None else OperationCancelled("Cancelled", "stopped waiting"))
