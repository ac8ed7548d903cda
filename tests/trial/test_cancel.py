"""Cancelling the wait for an activation: the run stops waiting at once, says the manager goes on
with its pipeline (and how to follow or remove it), and its audit record says cancelled."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tui.console import demo_settings
from tui.procedures.connection import SiteConnection
from tui.procedures.operation import OperationCancelled, RunContext, run_operation
from tui.procedures.progress import Progress
from tui.procedures.trial_network import RunTrialNetwork, plan_trial
from tui.settings import Settings

pytestmark = pytest.mark.timeout(300)


async def test_a_cancel_stops_the_wait_and_says_the_manager_goes_on(trial_site, tmp_path: Path) -> None:
    server, _, audit = trial_site  # the audit log: the fixture's ($SITETK_AUDIT_LOG)
    server.site.faults.manager_activation_seconds = 500.0  # 10 s at the test's time scale: still activating
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
        await site.close()
