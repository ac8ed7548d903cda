"""Install statuses that follow the truth, on the screen and in `market list`: a downloaded
service's parts follow it, an older build never downloaded is not "up to date", and the list
reads the statuses again when the cloud changed (no `r`)."""

from __future__ import annotations

from functools import partial
from typing import Any

from tests.market.conftest import POLL, community_url
from tests.procedure_run import collect
from tests.ui.conftest import SIZE, console_app, wait_for
from tui.procedures.market.download import download_appliance, find_market_app, plan_download
from tui.procedures.market.marketplaces import load_catalog
from tui.screens.marketplace import MarketplaceScreen
from tui.sim.catalog import TOOLKIT_OLD_VERSION, TOOLKIT_VERSION
from tui.sim.server import SimServer


def _states(catalog: Any, prefix: str) -> dict[tuple[str, str], str]:
    return {(e.record.name, e.record.version): e.state.value for e in catalog.entries if e.record.name.startswith(prefix)}


async def _download_toolkit(site: Any) -> None:
    catalog = await load_catalog(site)
    entry = next(e for e in catalog.entries if e.record.id == "service_toolkit" and e.record.version == TOOLKIT_VERSION)
    app = await find_market_app(site, entry.record)
    from tui.procedures.market.attributes import tag_for_record

    plan = await plan_download(site, app.id, 1, "Site Toolkit v0.5.0", tag=tag_for_record(entry.record))
    await collect(partial(download_appliance, site, plan, poll_interval=POLL))


async def test_after_a_service_download_its_parts_follow_and_the_older_build_is_not_up_to_date(
        sim: SimServer, connect: Any) -> None:
    # the community marketplace, read through the settings, still lists the older build
    site = await connect(sim, marketplace_urls=(community_url(sim),))
    await _download_toolkit(site)
    states = _states(await load_catalog(site), "Site Toolkit")
    new = {state for (name, version), state in states.items() if version == TOOLKIT_VERSION}
    old = {state for (name, version), state in states.items() if version == TOOLKIT_OLD_VERSION}
    assert len(states) == 18  # the service, 4 VM templates and 4 images, in two marketplaces
    assert new == {"up to date"}, states
    assert old == {"older build"}, states


async def test_the_list_reads_the_statuses_again_after_work_elsewhere(sim: SimServer) -> None:
    app = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("market")
        screen = await wait_for(pilot, lambda: isinstance(s := app.screen, MarketplaceScreen)
                                and s.catalog is not None and not s.reloading and s, what="the catalog")
        key = next(e.key for e in screen.catalog.entries  # type: ignore[union-attr]
                   if e.record.id == "service_toolkit_automation_image" and e.record.version == TOOLKIT_VERSION)
        assert screen.entries[key].state.value == "not downloaded"
        app.open_screen("vms")
        await wait_for(pilot, lambda: app.screen is not screen, what="another screen")
        await _download_toolkit(app.site)  # as the site screen's component offer does
        app.open_screen("market")
        await wait_for(pilot, lambda: app.screen is screen and screen.entries[key].state.value == "up to date",
                       timeout=30, what="the statuses read again without r")


def test_an_installed_build_is_not_up_to_date_when_another_marketplace_lists_a_newer_one() -> None:
    """Issue 20 item 11: the community record of the installed old build said "= up to date" while
    the default marketplace listed a newer build of the same appliance."""
    from dataclasses import replace

    from tests.domain.builders import record, tagged_image
    from tui.cli.market_verbs import STATE_MARKS
    from tui.domain.naming import DEFAULT_NAMING
    from tui.domain.upgrades import InstallState, appliance_statuses

    old_here = replace(record("Site Toolkit", TOOLKIT_OLD_VERSION), marketplace_url="http://127.0.0.1:9001")
    new_there = record("Site Toolkit", TOOLKIT_VERSION)
    installed = [tagged_image(1, old_here)]
    here, there = appliance_statuses([old_here, new_there], installed, DEFAULT_NAMING)
    assert there.state is InstallState.UPDATE_AVAILABLE
    assert here.state is not InstallState.UP_TO_DATE, here
    assert here.state is InstallState.NEWER_ELSEWHERE
    assert "current for this record" in here.label and TOOLKIT_VERSION in here.label, here.label
    assert new_there.marketplace_url in here.label, here.label
    assert STATE_MARKS[here.state.value] != STATE_MARKS["up to date"]
    # alone, or with nothing newer listed, the installed build stays up to date
    (alone,) = appliance_statuses([old_here], installed, DEFAULT_NAMING)
    assert alone.state is InstallState.UP_TO_DATE
    both = [tagged_image(1, old_here), tagged_image(2, new_there)]
    assert {s.state for s in appliance_statuses([old_here, new_there], both, DEFAULT_NAMING)} == {InstallState.UP_TO_DATE}
