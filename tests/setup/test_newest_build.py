"""The setup offers the newest toolkit build the marketplaces list, and names an older one already
downloaded as older, with the upgrade (issue 20 item 4): in `setup status`, `setup run` and the
checklist screen. The deployed scenario holds the community marketplace's v0.4.0 while the site's
marketplace lists v0.5.0."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import write_inputs
from tui.sim.catalog import TOOLKIT_OLD_VERSION, TOOLKIT_VERSION
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)


def test_a_fresh_site_is_offered_the_newest_build(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch)
    _, data, _ = run(capsys, "setup", "status", "--json")
    download = steps(data)["download"]
    said = "\n".join(download["evidence"])
    assert download["state"] == "to do" and TOOLKIT_VERSION in download["action"]
    assert f"holds {TOOLKIT_VERSION}" in said and "older build" not in said


def test_an_older_build_downloaded_is_named_with_the_upgrade(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys,
                                                             tmp_path: Path) -> None:
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch)
    code, data, _ = run(capsys, "setup", "status", "--json")
    download = steps(data)["download"]
    said = "\n".join(download["evidence"])
    assert "older build" in download["title"], download
    assert f"older build: {TOOLKIT_OLD_VERSION} is downloaded; {TOOLKIT_VERSION} is available" in said
    assert "sitetk market upgrades --only 'Site Toolkit'" in said
    assert download["data"]["older"] is True and download["data"]["installed"] == TOOLKIT_OLD_VERSION
    code, text, _ = run(capsys, "setup", "status")
    assert "Toolkit appliance downloaded (an older build)" in text and "sitetk market upgrades" in text

    # the run says it too (its dry run: nothing changes)
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs)
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--dry-run")
    assert f"older build: {TOOLKIT_OLD_VERSION} is downloaded" in err, err
    assert "sitetk market upgrades" in err


def test_the_checklist_screen_shows_the_older_build(sim_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from tui.console import demo_settings
    from tui.procedures.connection import SiteConnection
    from tui.procedures.setup.status import setup_status
    from tui.screens.setup import step_detail, step_row
    from tui.settings import Settings

    server: SimServer = sim_factory(scenario="deployed")

    async def read() -> object:
        state = server.site.state_dir / "console"
        site = SiteConnection(demo_settings(server, Settings(state_dir=state, audit_log=state / "audit.log")))
        try:
            checklist, _ = await setup_status(site)
            return checklist
        finally:
            await site.close()

    checklist = asyncio.run(read())
    step = checklist.step("download")  # type: ignore[attr-defined]
    row = step_row(step)
    assert "Toolkit appliance downloaded (an older build)" in [str(cell) for cell in row.cells]
    detail = str(step_detail(step, read_only=False))
    assert f"{TOOLKIT_VERSION} is available" in detail and "sitetk market upgrades" in detail
