"""Progress events that procedures report (`RunContext.report`), screens render and the headless CLI prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ProgressState(StrEnum):
    """Where a step is. A `StrEnum`: the `--json` event log writes its value ("done")."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    #: already in the wanted state: re-runs are idempotent and say so
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Progress:
    """One step of a procedure: `done` of `total` units finished, with a human message.

    `state` is a `ProgressState` (running, done, failed, or skipped: already in the wanted state).
    `data` is the step's detail in the `--json` event log (ids created, values read) and nothing
    else: no layer reads it back (tests/test_progress_outcomes.py keeps it so). `outcome` is the
    step's typed detail for a view (a deployment's `DeployStep`: what a role waits for); a run's result is what its procedure returns, not read back out of its events.
    """

    step: str
    done: int
    total: int
    message: str = ""
    state: ProgressState = ProgressState.RUNNING
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    outcome: object = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "state", ProgressState(self.state))  # "done" given as text is checked here

    @property
    def fraction(self) -> float:
        return 1.0 if self.total <= 0 else min(1.0, self.done / self.total)

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "done": self.done,
            "total": self.total,
            "message": self.message,
            "state": self.state.value,
            "data": self.data,
        }
