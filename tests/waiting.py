"""Polling with a deadline: wait for a real state of the system under test, never for a duration."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from tui.screenshots.pilot_waits import scaled

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, what: str = "the condition", interval: float = 0.02) -> T:
    """Call `predicate` until it returns something truthy and return that value.

    Raises AssertionError naming `what` and the last value seen once `timeout` seconds have
    passed. The predicate must observe the system (e.g. ask the site for a VM's state); the
    interval only paces the polling.
    """
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last value: {last!r})")
        time.sleep(interval)
