"""Pilot test of the console's trial-run step: on the setup checklist, d on the optional step
previews the manager's calls (curl, no secret), runs the test trial network through the manager
and shows its progress (what it waits for) and the state the manager reports after it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.setup.driving import checklist_with_input
from tui.app import SiteToolkitApp
from tui.console import demo_settings
from tui.procedures.connection import SiteConnection
from tui.screenshots import frozen_clock, wait_for, wait_for_screen
from tui.settings import Settings
from tui.sim.manager_api import _admin, manager_vm
from widgets.confirm_modal import ConfirmModal

pytestmark = pytest.mark.timeout(300)


async def test_d_on_the_trial_run_step_activates_it_with_its_progress(trial_site, tmp_path: Path) -> None:
    server, inputs, _ = trial_site
    with server.site.lock:
        password = _admin(server.site, manager_vm(server.site))[1]
    data = json.loads(inputs.read_text())
    data["custom_attrs_values"]["app_manager_admin_password"] = password
    inputs.write_text(json.dumps(data))
    settings = demo_settings(server, Settings(state_dir=tmp_path / "console-state", audit_log=tmp_path / "audit.log"))
    assert settings.guest_proxy == server.market_url and not settings.manager_url  # the VM's address, proxied
    app = SiteToolkitApp(SiteConnection(dataclasses.replace(settings, refresh_interval=3600.0)), clock=frozen_clock)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = await checklist_with_input(pilot, inputs, "trial-run")
        screen.poll_interval = 0.02
        await pilot.press("d")
        modal = await wait_for_screen(pilot, ConfirmModal, timeout=60, what="the trial network's preview")
        assert " -X PUT " in modal.command and password not in modal.command
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmModal), what="the modal to close")
        await wait_for(pilot, lambda: not screen.running and not screen.reading, timeout=120, what="the step's end")
        log = "\n".join(screen.step_log)
        assert "waiting for the manager's deploy pipeline" in log, log
        assert "A test trial network activates (optional): done" in log, log
