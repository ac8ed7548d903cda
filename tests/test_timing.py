"""The procedures' clock (tui.timing): a stopped clock moves only when advanced (a screenshot's
elapsed seconds), resumes from where it stands, and never goes back."""

from __future__ import annotations

import time

import pytest

from tui.timing import Clock


def test_a_stopped_clock_moves_only_when_advanced_and_resumes_without_going_back() -> None:
    clock = Clock()
    clock.stop()
    stopped = clock.monotonic()
    time.sleep(0.02)
    assert clock.monotonic() == stopped
    clock.advance(42)
    assert clock.monotonic() == stopped + 42
    clock.resume()
    resumed = clock.monotonic()
    assert resumed >= stopped + 42 and resumed - (stopped + 42) < 1  # from where it stood, not later, not back
    time.sleep(0.02)
    assert clock.monotonic() > resumed
    with pytest.raises(ValueError):
        clock.advance(-1)
