"""The one retry policy of the adapters: reads are retried, writes are reconciled.

A read (an XML-RPC `*.info` or pool read, a OneFlow GET, a marketplace GET) that failed in a way
that can succeed on a second try (`SiteError.retryable`: a dropped or refused connection, an HTTP
5xx or the platform's INTERNAL error that is not one of the "never succeeds" refusals of
`cloud_errors`/`flow_errors`) is sent again after a pause that doubles each time, with jitter,
for at most `RetryPolicy.attempts` tries and never past the call's deadline: one deadline covers
every attempt and every pause, so a retried call still answers within the client's timeout.
Authentication and authorization refusals, a missing object, a bad request are never retried.

A write is never sent again blindly: when it fails with an outcome that may be unknown (the
connection dropped after the request went out, an internal error half-way), `reconciled_write`
first reads back (`read_back`: e.g. for an allocate, is there now an object of that name that
was not there before?). Found: that is the answer. Not found: the write did not happen and
sending it again is safe. Writes that are idempotent by nature (an update with the same text,
chmod, chown) go through `retry_read`, as a second send leaves the same state.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Awaitable, Callable, TypeVar

from tui import timing
from tui.errors import OutcomeUnknown, SiteError

T = TypeVar("T")

#: an attempt is not started with less time than this left before the deadline
MIN_ATTEMPT_S = 0.05


@dataclass(frozen=True)
class RetryPolicy:
    """How many tries and how long to pause between them (exponential, with jitter)."""

    #: tries in total (1: no retry)
    attempts: int = 6
    #: the pause after the first failure, in seconds
    first_pause: float = timing.PROFILE.retry_first_pause
    #: no pause is longer than this
    max_pause: float = timing.PROFILE.retry_max_pause
    #: part of each pause chosen at random (0: none; 0.5: between half and all of it)
    jitter: float = 0.5

    def pause(self, failures: int, rng: random.Random) -> float:
        """The pause after the `failures`-th failure (1 for the first)."""
        base = min(self.max_pause, self.first_pause * 2.0 ** (failures - 1))
        return base * (1 - self.jitter * rng.random())


DEFAULT_POLICY = RetryPolicy()
#: one try only (for tests and callers that handle failures themselves)
NO_RETRY = RetryPolicy(attempts=1)
#: the tries of DEFAULT_POLICY without its pauses: a test of a site that fails every try sees each
#: retry made without waiting the back-off out (about a second a call)
NO_PAUSE = RetryPolicy(first_pause=0.0, max_pause=0.0, jitter=0.0)

_rng = random.Random()


def deadline_after(timeout: float) -> float:
    """The deadline `timeout` seconds from now, on the clock of `tui.timing`."""
    return timing.deadline_after(timeout)


def _may_retry(error: SiteError, failures: int, pause: float, deadline: float, policy: RetryPolicy) -> bool:
    if not error.retryable or failures >= policy.attempts:
        return False
    return timing.monotonic() + pause + MIN_ATTEMPT_S < deadline


async def retry_read(attempt: Callable[[float], Awaitable[T]], *, timeout: float,
                     policy: RetryPolicy = DEFAULT_POLICY, rng: random.Random | None = None) -> T:
    """`attempt(deadline)` until it succeeds, fails for good, or the tries or the time run out.

    `attempt` must bound itself by the `tui.timing.monotonic()` deadline it is given (the same for
    every try); the last failure is raised as it is.
    """
    deadline = deadline_after(timeout)
    failures = 0
    while True:
        try:
            return await attempt(deadline)
        except SiteError as error:
            failures += 1
            pause = policy.pause(failures, rng or _rng)
            if not _may_retry(error, failures, pause, deadline, policy):
                raise
        await timing.sleep(pause)


async def reconciled_write(write: Callable[[float], Awaitable[T]], read_back: Callable[[], Awaitable[T | None]], *,
                           timeout: float, what: str, policy: RetryPolicy = DEFAULT_POLICY,
                           rng: random.Random | None = None) -> T:
    """`write(deadline)`, never repeated blindly: after a retryable failure `read_back()` tells
    whether it happened (its result, e.g. the new object's id) or not (None: sent again).

    When the read back fails too, the write's own error is raised with a note that its outcome is
    unknown (`what` says what to look for).
    """
    deadline = deadline_after(timeout)
    failures = 0
    while True:
        try:
            return await write(deadline)
        except SiteError as error:
            if not error.retryable:
                raise
            failures += 1
            try:
                found = await read_back()
            except SiteError as check:
                raise OutcomeUnknown(error.title, f"{error.detail}\nWhether it was done is unknown (reading back failed: "
                                f"{check.title}); look for {what} before trying again.".strip(),
                                retryable=False, code=error.code) from None
            if found is not None:
                return found
            pause = policy.pause(failures, rng or _rng)
            if not _may_retry(error, failures, pause, deadline, policy):
                raise
        await timing.sleep(pause)
