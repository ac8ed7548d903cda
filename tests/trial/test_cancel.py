"""Waiting for an activation the manager keeps going (its pipeline held by the test): a cancel stops
the wait at once, says the manager goes on (and how to follow or remove it), audited cancelled; the
time limit, measured on the procedures' clock (tui.timing) which the test moves past it, stops the
wait the same way without waiting it out."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path

import pytest

from tui.console import demo_settings
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.operation import OperationCancelled, RunContext, run_operation
from tui.procedures.progress import Progress
from tui.procedures.trial.network import RunTrialNetwork, plan_trial
from tui.settings import Settings

pytestmark = pytest.mark.timeout(300)


async def test_a_cancel_stops_the_wait_and_says_the_manager_goes_on(trial_site, tmp_path: Path) -> None:
    server, _, audit = trial_site  # the audit log: the fixture's ($SITETK_AUDIT_LOG)
    held = server.site.faults.manager_hold = threading.Event()  # still activating until released
    site = SiteConnection(demo_settings(server, Settings(state_dir=tmp_path / "state")))
    await site.connect()
    try:
        plan = await plan_trial(site)
        context = RunContext(emit=lambda event: None)

        def emit(event: Progress) -> None:
            if "waiting for the manager's deploy pipeline" in event.message:
                context.cancel.set()  # the operator's Ctrl-C (or Escape in the console) while it waits

        context.emit = emit
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(OperationCancelled) as stopped:
            await run_operation(site, RunTrialNetwork(wait_timeout=600, poll_interval=0.05), plan, context)
        assert loop.time() - started < 8, "the cancel did not stop the wait at once"
        assert "the manager goes on with its pipeline" in stopped.value.detail
        assert "sitetk trial destroy --tn-id sitetktest" in stopped.value.detail
        assert '"outcome": "cancelled"' in audit.read_text()
    finally:
        held.set()
        await site.close()


async def test_the_time_limit_on_the_driven_clock_stops_the_wait(trial_site, tmp_path: Path, driven_clock) -> None:
    server, _, audit = trial_site
    held = server.site.faults.manager_hold = threading.Event()
    site = SiteConnection(demo_settings(server, Settings(state_dir=tmp_path / "state")))
    await site.connect()
    try:
        plan = await plan_trial(site)
        moved: list[str] = []

        def emit(event: Progress) -> None:
            if "waiting for the manager's deploy pipeline" in event.message and not moved:
                moved.append(event.message)
                driven_clock.advance(1801)  # past the default 1800 s: nobody waits it out

        with pytest.raises(SiteError) as stopped:
            await run_operation(site, RunTrialNetwork(poll_interval=0.05), plan, RunContext(emit=emit))
        assert re.search(r"Trial network sitetktest is still \w+ after 18\d\d s", stopped.value.title), stopped.value
        assert "The manager goes on with its pipeline" in stopped.value.detail
        assert moved and "of at most 1800 s" in moved[0]
        assert '"outcome": "failed"' in audit.read_text()
    finally:
        held.set()
        await site.close()
