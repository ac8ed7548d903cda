"""The embedded site's event clock held by a test: nothing time-driven happens until the test
advances it or lets it run again (a known point, instead of a site slowed down)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tui.sim.state import SimConfig, SimSite


def test_a_held_clock_runs_events_only_when_advanced_or_released(tmp_path: Path) -> None:
    site = SimSite(SimConfig(time_scale=0.001), tmp_path)
    ran: list[str] = []
    site.hold_clock()
    site.after(10, lambda: ran.append("ten"))  # 10 ms of real time at this scale
    site.after(30, lambda: ran.append("thirty"))
    time.sleep(0.05)  # the held clock does not move with real time (a check, not a synchronisation)
    site.advance()
    assert ran == []
    site.advance_clock(10)
    assert ran == ["ten"]
    site.release_clock()  # from where it stood: "thirty" is 20 simulated seconds away (20 ms)
    site.advance()
    assert ran == ["ten"]
    deadline = time.monotonic() + 5
    while ran == ["ten"] and time.monotonic() < deadline:
        site.advance()
    assert ran == ["ten", "thirty"]
    with pytest.raises(ValueError):
        site.advance_clock(-1)


def test_run_next_event_on_a_held_clock_jumps_to_the_event(tmp_path: Path) -> None:
    site = SimSite(SimConfig(time_scale=1.0), tmp_path)
    ran: list[int] = []
    site.hold_clock()
    site.after(3600, lambda: (ran.append(1), site.after(1, lambda: ran.append(2))))
    assert site.run_next_event() and ran == [1]
    site.advance()
    assert ran == [1]  # the next one is a simulated second later
    site.advance_clock(1)
    assert ran == [1, 2]
