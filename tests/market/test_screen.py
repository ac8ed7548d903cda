"""Pilot tests of the marketplace screen and its flows, against the embedded site over loopback."""

from __future__ import annotations

from functools import partial
from typing import Any

from textual.widgets import Button, DataTable, Markdown

from tests.market.conftest import community_url, free_old_images, fresh_appliances, served_series
from tests.procedure_run import run_procedure
from tests.ui.conftest import SIZE, console_app, rendered_text, wait_for
from tui.app import SiteToolkitApp
from tui.screens.market_attributes import AttributesModal
from tui.screens.market_download import DownloadModal
from tui.screens.market_upgrades import UpgradePlanModal
from tui.screens.marketplace import MarketplaceScreen
from tui.screenshots import click_shown, wait_for_screen
from tui.sim.server import SimServer
from widgets.confirm_modal import ConfirmModal
from widgets.progress_panel import ProgressPanel


async def _market(pilot: Any, app: SiteToolkitApp) -> MarketplaceScreen:
    """The marketplace screen once its catalog is laid out (the apps of these tests start on it,
    `initial_screen="market"`, so no VM list is built and loaded first; opening it again is a no-op)."""
    await wait_for(pilot, lambda: app.info is not None, what="the connection")
    app.open_screen("market")
    return await wait_for(pilot, lambda: isinstance(s := app.screen, MarketplaceScreen) and s.catalog is not None
                          and not s.reloading and s.table.size.height > 0 and s, what="the marketplace catalog, laid out")


def _keys_for(screen: MarketplaceScreen, record_id: str, version: str = "") -> str:
    assert screen.catalog is not None
    return next(e.key for e in screen.catalog.entries
                if e.record.id == record_id and (not version or e.record.version == version))


async def _cursor_to(pilot: Any, screen: MarketplaceScreen, record_id: str, version: str = "") -> str:
    key = _keys_for(screen, record_id, version)
    screen.table.move_cursor_to_key(key)
    await wait_for(pilot, lambda: screen.shown_key == key, what="the detail")
    return key


async def test_list_shows_every_appliance_with_status_and_the_detail(sim: SimServer) -> None:
    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        count = fresh_appliances(sim)
        assert screen.table.row_count == count
        header = screen.table.render_line(0).text
        for label in ("NAME", "VERSION", "TYPE", "STATUS", "MARKETPLACE"):
            assert label in header
        assert "- not downloaded" in screen.table.render_line(1).text  # glyph and word
        status = rendered_text(screen.query_one("#mk-status"))
        assert f"{count} appliances" in status and "1 of 1 marketplaces" in status
        assert f"platform {sim.site.config.one_version}" in status
        # on a series no record lists (7.4) every record is kept and the status says which series they list
        other_series = not sim.site.config.one_version.startswith(served_series(sim) + ".")
        assert ("Site Toolkit Marketplace lists only 6.10, 7.0" in status) is other_series
        # the detail head is filled for the highlighted row, then laid out at its full height
        head = await wait_for(pilot, lambda: (text := rendered_text(screen.query_one("#mk-detail-head")))
                              and "platform versions" in text and text, what="the detail head")
        assert "software version" in head and "v0.5.0" in head and "20250403-1109" in head
        assert "roles" in head and "platform versions" in head and "download" in head


async def test_a_non_conforming_version_is_flagged_in_the_row_and_the_detail(sim: SimServer) -> None:
    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        await _cursor_to(pilot, screen, "service_ueransim")
        row = next(r for r in screen.table.visible_rows if r.key == screen.table.cursor_key)
        assert str(row.cells[1]).startswith("! v4.3.0.23")
        head = rendered_text(screen.query_one("#mk-detail-head"))
        assert "non-conforming version" in head and "v4.3.0.23" in head and "20250919-1159" in head
        description = screen.query_one("#mk-detail-description", Markdown)
        assert description.source.startswith("# UE and RAN Simulator")
        await wait_for(pilot, lambda: any("UE and RAN Simulator" in rendered_text(block)
                                          for block in description.query("MarkdownBlock")), what="the Markdown")


async def test_filter_narrows_keeps_the_cursor_and_escape_clears(sim: SimServer) -> None:
    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        count = fresh_appliances(sim)
        key = await _cursor_to(pilot, screen, "service_dns", "v1.1.0-20250520-0931")
        await pilot.press("slash", *"dns")
        await wait_for(pilot, lambda: screen.table.filter_text == "dns", what="the filter")
        assert screen.table.visible_count == 1
        assert screen.table.cursor_key == key
        assert f"1 of {count} appliances" in rendered_text(screen.query_one("#mk-status"))
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen.table.visible_count == count, what="the cleared filter")
        assert screen.table.visible_count == count
        await pilot.press("V")
        await wait_for(pilot, lambda: screen.table.sort_column == "version", what="the sort")
        assert screen.table.sort_column == "version"


async def test_download_flow_reviews_then_follows_every_image_to_ready(sim: SimServer) -> None:
    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        await _cursor_to(pilot, screen, "service_toolkit_automation", "v0.5.0-20250403-1109")
        await pilot.press("d")
        modal = await wait_for_screen(pilot, DownloadModal, what="the download form")
        await wait_for(pilot, lambda: modal.market_app, what="the download form's appliance")
        review = modal.query_one("#dl-review", Button)
        start = modal.query_one("#dl-start", Button)
        await wait_for(pilot, lambda: not review.disabled, what="a complete form")
        assert start.disabled  # no download before a review
        await click_shown(pilot, "#dl-review")
        await wait_for(pilot, lambda: modal.plan is not None, what="the preview")
        preview = rendered_text(modal.query_one("#dl-preview"))
        assert "onemarketapp export" in preview and "create image" in preview
        await click_shown(pilot, "#dl-start")
        await wait_for(pilot, lambda: modal.has_class("-finished"), timeout=30, what="the end of the download")
        panel = modal.query_one("#dl-progress", ProgressPanel)
        assert all(panel.step_state(step) == "done" for step in modal.plan.step_names)  # type: ignore[union-attr]
        assert "Downloaded" in rendered_text(modal.query_one("#dl-result"))
        await click_shown(pilot, "#dl-close")
        await wait_for(pilot, lambda: app.screen is screen and not screen.reloading
                       and screen.current is not None and screen.current.state.value == "up to date",
                       what="the reloaded list")


async def test_cancelling_a_download_deletes_what_it_created(sim_factory) -> None:  # type: ignore[no-untyped-def]
    sim: SimServer = sim_factory()
    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        images_before = set(sim.site.images)
        await _cursor_to(pilot, screen, "service_toolkit", "v0.5.0-20250403-1109")
        await pilot.press("d")
        modal = await wait_for_screen(pilot, DownloadModal, what="the download form")
        await wait_for(pilot, lambda: modal.market_app, what="the download form's appliance")
        modal.review()
        await wait_for(pilot, lambda: modal.plan is not None, what="the preview")
        # the site's time stands still from here: its images stay LOCKED until the cancel, however
        # slowly the download's polls come (under load they could otherwise see them only READY)
        sim.site.hold_clock()
        modal.start()
        await wait_for(pilot, lambda: any(e.data.get("state") == "LOCKED" for e in modal.events), what="a LOCKED image")
        await pilot.press("escape")  # escape while running cancels
        await wait_for(pilot, lambda: modal.has_class("-finished"), timeout=30, what="the rollback")
        assert "Cancelled" in rendered_text(modal.query_one("#dl-result"))
        assert set(sim.site.images) == images_before


async def test_read_only_hides_the_download_and_the_mutating_buttons(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(scenario="deployed")
    # the community marketplace (read through the settings) still lists the deployed v0.4.0
    app = console_app(server, read_only=True, marketplace_urls=(server.market_url, community_url(server)),
                      initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        assert screen.check_action("download", ()) is False
        await pilot.press("d")
        await pilot.pause()
        assert app.screen is screen
        await _cursor_to(pilot, screen, "service_toolkit", "v0.4.0-20250219-2235")
        await pilot.press("a")
        modal = await wait_for_screen(pilot, AttributesModal, what="the attributes modal")
        await wait_for(pilot, lambda: modal.plan, what="the attributes preview")
        assert not modal.query_one("#at-apply", Button).display
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="the attributes modal to close")
        await pilot.press("u")
        plan_modal = await wait_for_screen(pilot, UpgradePlanModal, what="the upgrade plan modal")
        await wait_for(pilot, lambda: plan_modal.plan, what="the plan")
        assert not plan_modal.query_one("#up-apply-bar").display


async def test_attributes_flow_tags_an_untagged_image(sim: SimServer) -> None:
    from tui.procedures.market.download import download_appliance, plan_download

    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        app_id = next(a.id for a in await app.site.cloud.list_marketapps() if a.name == "Bastion")
        plan = await plan_download(app.site, app_id, 1, "bastion image")
        await run_procedure(partial(download_appliance, app.site, plan, poll_interval=0.02, attach=False))
        screen.reload()
        await wait_for(pilot, lambda: not screen.reloading, what="the reload")
        await _cursor_to(pilot, screen, "service_bastion")
        assert screen.current is not None and screen.current.state.value == "untagged image found"
        await pilot.press("a")
        modal = await wait_for_screen(pilot, AttributesModal, what="the attributes modal")
        await wait_for(pilot, lambda: modal.plan, what="the attributes preview")
        assert 'PLATFORM_MARKETPLACE_APPLIANCE_NAME="Bastion"' in rendered_text(modal.query_one("#at-file"))
        assert "oneimage update" in rendered_text(modal.query_one("#at-preview"))
        modal.apply()
        await wait_for(pilot, lambda: "updated" in rendered_text(modal.query_one("#at-results")), what="the results")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen and not screen.reloading and screen.current is not None
                       and screen.current.state.value == "up to date", what="the reloaded list")


async def test_a_failed_attach_lists_every_image_it_reached_then_the_error(sim: SimServer) -> None:
    """One image of two is gone when the run reaches it: the results list the one tagged and the
    one that failed, read from the run's typed record (`AttachLedger`: a failure returns no
    `Attached`), then the error."""
    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        spare = await app.site.cloud.image_allocate('NAME = "spare"\nTYPE = "DATABLOCK"\nSIZE = "1"\n', 1)
        await _cursor_to(pilot, screen, "service_bastion")
        await pilot.press("a")
        modal = await wait_for_screen(pilot, AttributesModal, what="the attributes modal")
        await pilot.press("end", "ctrl+u", *f"0, {spare}", "enter")  # the image IDs, then review
        await wait_for(pilot, lambda: modal.plan is not None and [t.image_id for t in modal.plan.targets] == [0, spare],
                       what="the plan of both images")
        await app.site.cloud.image_delete(spare)
        modal.apply()

        def results() -> tuple[str, dict[str, str]] | None:
            # the modal's phase can turn "finished" a frame before its results are painted (seen
            # once at load 6): wait for a row of each image
            if modal.phase != "finished":
                return None
            text = rendered_text(modal.query_one("#at-results"))
            rows = {line.split()[0]: line for line in text.splitlines() if line.strip()[:1].isdigit()}
            return (text, rows) if {"0", str(spare)} <= rows.keys() else None

        shown, rows = await wait_for(pilot, results, what="the results with a row for each image")
        assert "✔ updated" in rows["0"] and "✘ failed" in rows[str(spare)], shown
        assert "Attributes failed on 1 of 2 image(s)" in shown


async def test_attributes_modal_validates_image_ids(sim: SimServer) -> None:
    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        await _cursor_to(pilot, screen, "service_dns", "v1.1.0-20250520-0931")
        await pilot.press("a")
        modal = await wait_for_screen(pilot, AttributesModal, what="the modal")
        await click_shown(pilot, "#at-images")
        await wait_for(pilot, lambda: app.focused is modal.query_one("#at-images"), what="the focus on the image IDs")
        await pilot.press(*"12, x")
        await wait_for(pilot, lambda: "numbers" in rendered_text(modal.query_one("#at-images-error")), what="the reason")
        assert "numbers" in rendered_text(modal.query_one("#at-images-error"))
        assert modal.query_one("#at-apply", Button).disabled


async def test_upgrade_plan_table_and_apply_with_a_confirmed_removal(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(scenario="deployed")
    free_old_images(server)
    app = console_app(server, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        await _market(pilot, app)
        await pilot.press("u")
        modal = await wait_for_screen(pilot, UpgradePlanModal, what="the upgrade plan modal")
        await wait_for(pilot, lambda: modal.plan, what="the plan")
        table = modal.query_one("#up-table", DataTable)
        assert [str(c.label) for c in table.columns.values()] == ["Software", "Previous", "New"]
        assert [str(cell) for cell in table.get_row_at(0)] == ["Site Toolkit", "v0.4.0-20250219-2235",
                                                               "v0.5.0-20250403-1109"]
        steps = await wait_for(pilot, lambda: (text := rendered_text(modal.query_one("#up-steps"))) and
                               "4. remove old" in text and text, what="the plan's steps drawn")
        assert steps.index("1. attributes") < steps.index("2. download") < steps.index("4. remove old")
        await wait_for(pilot, lambda: not modal.query_one("#up-apply", Button).disabled, what="the datastore")
        await click_shown(pilot, "#up-apply")
        confirm = await wait_for_screen(pilot, ConfirmModal, timeout=30, what="the removal confirmation")
        assert confirm.object_name == "Site Toolkit v0.4.0-20250219-2235"
        # Cancel is the default
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "cancel", what="the focus")
        await click_shown(pilot, "#confirm")
        await wait_for(pilot, lambda: modal.has_class("-finished"), timeout=30, what="the end of the upgrade")
        result = rendered_text(modal.query_one("#up-result"))
        assert "IDs core.yaml must change" in result
        assert {1, 2, 3, 4}.isdisjoint(server.site.images)


async def test_an_unreadable_marketplace_is_named_in_the_status_line(sim: SimServer) -> None:
    sim.site.faults.market_faults[""] = "error"
    app = console_app(sim, initial_screen="market")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _market(pilot, app)
        status = rendered_text(screen.query_one("#mk-status"))
        assert "0 of 1 marketplaces" in status and "Marketplace error" in status
        assert screen.table.row_count == 0
        sim.site.faults.market_faults.clear()
        await pilot.press("r")
        await wait_for(pilot, lambda: not screen.reloading and screen.table.row_count == fresh_appliances(sim),
                       what="the reload")
