"""The one way the console runs a change: `OperationRun`.

Every change a screen or a modal makes is a planned `Operation` (tui.procedures.operation) run
through an `OperationRun`: the operation modal runs its operation with one, and so do the views
that show a plan inline (the key view's grant, the toolkit's deployment view, the site file's
save, create and submit, the setup's step). A run gives each change the same three things:

- progress: every event the operation reports goes to the owner's `on_step` (the modal's
  progress panel, the deployment view, a status line), in order, as it happens;
- cancel: `cancel()` asks the operation to stop between two platform calls (an operation that
  does not watch the flag has its task cancelled at its next await, as `run_operation` does);
  the app's stop signal (SIGTERM, SIGHUP, SIGINT) cancels every run under way on its site
  (`runs_on(site)`), wherever the screen that started it is;
- the read-only refusal, the time limit and the one audit record are `run_operation`'s.

Screens get it through `SiteScreen.run_change` (a status line, `esc` cancels), modals through
`OperationModal`. tests/ui/test_one_path.py fails when a screen module calls `run_operation` or an
operation's `execute` anywhere else.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generic, TypeVar

from tui.procedures.operation import Confirmation, Operation, RunContext, run_operation
from tui.procedures.progress import Progress

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

PlanT = TypeVar("PlanT")
ResultT = TypeVar("ResultT")

#: the runs under way, whichever screen or modal started them (the stop signal cancels them)
_UNDER_WAY: dict["OperationRun[Any, Any]", None] = {}


async def _refuse(question: Confirmation) -> bool:
    """Nobody to ask: no (an owner that can ask passes its own `ask`)."""
    return False


class OperationRun(Generic[PlanT, ResultT]):
    """One run of a planned operation on a site (see the module docstring)."""

    def __init__(self, site: "SiteConnection", operation: Operation[PlanT, ResultT], plan: PlanT, *,
                 on_step: Callable[[Progress], None] | None = None,
                 ask: Callable[[Confirmation], Awaitable[bool]] | None = None) -> None:
        self.site = site
        self.operation = operation
        self.plan = plan
        self._on_step = on_step
        self.cancel_event = asyncio.Event()
        self.context = RunContext(emit=self._step, cancel=self.cancel_event, ask=ask or _refuse)
        self.running = False

    @property
    def events(self) -> list[Progress]:
        """Every event the run reported so far (a failure still says what happened before it)."""
        return self.context.events

    @property
    def cancelling(self) -> bool:
        return self.cancel_event.is_set()

    def _step(self, event: Progress) -> None:
        if self._on_step is not None:
            self._on_step(event)

    async def run(self) -> ResultT:
        """Run it: its typed result, or the `SiteError` that stopped it (`OperationCancelled` on a cancel)."""
        self.running = True
        _UNDER_WAY[self] = None
        try:
            return await run_operation(self.site, self.operation, self.plan, self.context)
        finally:
            self.running = False
            _UNDER_WAY.pop(self, None)

    def cancel(self) -> bool:
        """Ask the run to stop between two platform calls; False when it is not running or already asked."""
        if not self.running or self.cancel_event.is_set():
            return False
        self.cancel_event.set()
        return True


def runs_on(site: "SiteConnection") -> list[OperationRun[Any, Any]]:
    """The runs under way on `site` (one console's), oldest first."""
    return [run for run in _UNDER_WAY if run.site is site]
