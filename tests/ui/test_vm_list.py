"""Pilot tests of the VM list against the in-process embedded site over real loopback XML-RPC."""

from __future__ import annotations

import pytest
from textual.worker import WorkerState

from tests.ui.conftest import SIZE, console_app, rendered_text, wait_for, wait_vms_loaded
from tui.screens.vms import VmListScreen


def _keys(screen: VmListScreen) -> list[object]:
    return [row.key for row in screen.table.visible_rows]


async def _instantiate(app, name: str) -> int:  # type: ignore[no-untyped-def]
    """A new VM through the real API (template 0 of the fresh site)."""
    return await app.site.cloud.template_instantiate(0, name=name)


async def _refresh(pilot, screen: VmListScreen) -> None:  # type: ignore[no-untyped-def]
    count = screen.refresh_count
    await pilot.press("r")
    await wait_for(pilot, lambda: screen.refresh_count > count and not screen.refreshing, what="a refresh")


@pytest.mark.every_version  # the header names the platform version the site answers
async def test_list_shows_every_vm_with_state_word_and_glyph(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=25)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        assert screen.table.row_count == 25
        assert sorted(_keys(screen)) == list(range(25))
        header = screen.table.render_line(0).text
        for label in ("ID", "NAME", "OWNER", "STATE", "HOST", "IPS", "CPU", "MEM", "SERVICE", "ROLE"):
            assert label in header
        first = screen.table.render_line(1).text
        assert "● runn" in first  # word and glyph, not colour alone
        assert app.context_value("user") == "oneadmin"
        assert app.context_value("version") == server.site.config.one_version
        assert app.context_value("refresh") == "09:26:53"  # the frozen clock
        assert "connected" in app.context_value("health")


async def test_filter_live_over_name_ip_host_state_and_escape_clears(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=40)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        await pilot.press("down", "down")
        chosen = screen.table.cursor_key
        vm = screen.vms[chosen]  # type: ignore[index]

        await pilot.press("slash", *vm.host)
        assert screen.table.filter_text == vm.host
        assert all(screen.vms[k].host == vm.host for k in _keys(screen))  # type: ignore[index]
        assert screen.table.cursor_key == chosen  # still visible: the cursor stays on it
        assert "filter" in rendered_text(screen.query_one("#vm-status"))

        await pilot.press("escape")
        assert screen.table.filter_text == "" and screen.table.visible_count == 40
        assert screen.table.cursor_key == chosen

        await pilot.press("slash", *vm.ips[0], "enter")  # by IP, then back to the table
        assert _keys(screen) == [chosen]
        assert screen.table.has_focus
        await pilot.press("escape")

        await pilot.press("slash", *"runn")  # by state word
        assert screen.table.visible_count == 40
        await pilot.press("backspace", "backspace", "backspace", "backspace", *"zzz-nothing")
        assert screen.table.visible_count == 0
        assert "No VM matches" in screen.table.render_line(2).text
        await pilot.press("escape")
        assert screen.table.visible_count == 40 and screen.table.cursor_key == chosen


async def test_sort_by_keys_and_header_click(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=12)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        await pilot.press("down")
        chosen = screen.table.cursor_key
        await pilot.press("I")
        assert _keys(screen) == list(range(12))
        assert screen.table.cursor_key == chosen
        await pilot.press("I")
        assert _keys(screen) == list(reversed(range(12)))
        await pilot.press("H")
        hosts = [screen.vms[k].host for k in _keys(screen)]  # type: ignore[index]
        assert hosts == sorted(hosts)
        assert "sorted by host ▲" in rendered_text(screen.query_one("#vm-status"))
        # the table has been laid out since the first load: the click lands (or the test says it did not)
        assert await pilot.click("#vm-table", offset=(10, 0)), "the click on the NAME header missed"
        await wait_for(pilot, lambda: screen.table.sort_column == "name", what="the sort by name")
        names = [screen.vms[k].name for k in _keys(screen)]  # type: ignore[index]
        assert names == sorted(names)
        assert screen.table.cursor_key == chosen


async def test_detail_panel_follows_the_cursor(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=5)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        vm_id = await _instantiate(app, "web-frontend")
        screen = await wait_vms_loaded(pilot)
        await wait_for(pilot, lambda: screen.detail_vm_id == screen.table.cursor_key, what="the first detail")
        await _refresh(pilot, screen)
        screen.table.move_cursor_to_key(vm_id)
        await wait_for(pilot, lambda: screen.detail_vm_id == vm_id, what="the detail of the new VM")
        body = rendered_text(screen.query_one("#vm-detail-body"))
        for heading in ("CPU model", "NICs (1)", "Disks (1)", "Context", "User template", "History"):
            assert heading in body
        assert "web-frontend" in body

        await pilot.press("d")  # hide the panel: moving the cursor loads nothing
        await wait_for(pilot, lambda: not screen.query_one("#vm-detail").display, what="the hidden panel")
        assert not screen.query_one("#vm-detail").display
        await pilot.press("down")
        await pilot.press("d")  # shown again: it loads the VM under the cursor
        await wait_for(pilot, lambda: screen.detail_vm_id == screen.table.cursor_key, what="the detail after d")


async def test_refresh_keeps_the_cursor_on_the_same_vm(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=20)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        await pilot.press("down", "down", "down")
        chosen, row_before = screen.table.cursor_key, screen.table.cursor_row
        await _instantiate(app, "newcomer")  # a new VM sorts before the cursor's VM
        await _refresh(pilot, screen)
        assert screen.table.row_count == 21
        assert screen.table.cursor_key == chosen
        assert screen.table.cursor_row == row_before + 1

        # a refresh while one runs does not start another (refreshes never overlap)
        screen.refresh_vms()
        screen.refresh_vms()
        running = [w for w in app.workers if w.group == "vm-list" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)]
        assert len(running) <= 1
        await wait_for(pilot, lambda: not screen.refreshing, what="the refresh")
        assert screen.table.cursor_key == chosen


async def test_auto_refresh_runs_and_pauses_under_a_modal(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=3)
    app = console_app(server, refresh_interval=0.3)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        count = screen.refresh_count
        await wait_for(pilot, lambda: screen.refresh_count > count, what="an automatic refresh")
        await wait_for(pilot, lambda: not screen.refreshing, what="the refresh to end")

        await pilot.press("question_mark")  # a modal on top: polling pauses
        assert screen.paused
        count = screen.refresh_count
        screen._tick()  # what the interval timer calls
        assert not screen.refreshing and screen.refresh_count == count
        await pilot.press("escape")
        assert not screen.paused


async def test_site_goes_away_and_comes_back(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=8)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        await pilot.press("down")
        chosen = screen.table.cursor_key

        server.stop()
        await pilot.press("r")
        await wait_for(pilot, lambda: screen.last_error is not None and not screen.refreshing, what="the failure")
        # the banner is laid out (given its size) in the refresh after the failure is handled
        banner = await wait_for(pilot, lambda: rendered_text(screen.query_one("#vm-banner")), what="the banner")
        assert "Nothing listening" in banner and "r: retry now" in banner
        assert screen.query_one("#vm-banner").display
        assert "Nothing listening" in app.context_value("health")
        assert screen.table.row_count == 8  # the last data stays on screen
        assert app.is_running

        server.start()
        await _refresh(pilot, screen)
        assert screen.last_error is None
        assert not screen.query_one("#vm-banner").display
        assert "connected" in app.context_value("health")
        assert screen.table.cursor_key == chosen


async def test_empty_site_says_so(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory()
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        assert screen.table.row_count == 0
        assert "No virtual machines" in rendered_text(screen.query_one("#vm-message-title"))
        assert not any(button.display for button in screen.query("#vm-retry"))  # nothing failed: no retry button


async def test_vm_named_with_markup_is_shown_as_is(sim_factory) -> None:  # type: ignore[no-untyped-def]
    # the platform refuses "/" in names (src/pool/PoolObjectSQL.cc INVALID_NAME_CHARS): markup that
    # can reach it opens tags and never closes them
    server = sim_factory()
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        vm_id = await _instantiate(app, "a[red]b")
        await _instantiate(app, "[bold]x")
        await _refresh(pilot, screen)
        assert screen.table.row_count == 2
        lines = [screen.table.render_line(y).text for y in range(1, 3)]
        assert any("a[red]b" in line for line in lines)
        assert any("[bold]x" in line for line in lines)
        screen.table.move_cursor_to_key(vm_id)
        await wait_for(pilot, lambda: screen.detail_vm_id == vm_id, what="the detail")
        assert "a[red]b" in rendered_text(screen.query_one("#vm-detail-body"))
        await pilot.press("slash", *"a[red]")
        assert _keys(screen) == [vm_id]


async def test_the_first_page_shows_while_the_rest_of_the_pool_is_read(sim_factory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Pages of 5 over 25 VMs: the first 5 rows (the newest) are on screen, saying the rest is
    being read, while the second page is held back; then all 25."""
    import threading

    monkeypatch.setattr("tui.adapters.cloud.VM_LIST_PAGE_SIZE", 5)
    server = sim_factory(vms=25)
    app = console_app(server)
    release = threading.Event()
    async with app.run_test(size=SIZE) as pilot:
        cloud = app.site.cloud
        original = cloud._fetch_pool

        def fetch_pool(method: str, *args):  # type: ignore[no-untyped-def]
            # (filter, start, end, state): an end of -1 or more is an id range, a page after the first
            # (the VM list fetches every page, then parses it in a parsing thread)
            if method == "one.vmpool.info" and args[2] >= -1:
                assert release.wait(60), "the test never released the second page"
            return original(method, *args)

        cloud._fetch_pool = fetch_pool  # type: ignore[method-assign]
        screen = app.screen
        assert isinstance(screen, VmListScreen)
        await wait_for(pilot, lambda: screen.table.row_count == 5, what="the first page")
        assert not screen.loaded_once and screen.refreshing
        assert sorted(_keys(screen)) == list(range(20, 25))
        assert "the first 5 VMs; reading the rest" in rendered_text(screen.query_one("#vm-status"))
        release.set()
        await wait_for(pilot, lambda: screen.loaded_once and not screen.refreshing, what="the whole pool")
        assert sorted(_keys(screen)) == list(range(25))
        assert "25 VMs" in rendered_text(screen.query_one("#vm-status"))


async def test_a_refresh_puts_off_young_collections_and_gives_the_threshold_back(sim_factory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import gc

    from tui.screens import vms as vms_screen

    seen: list[int] = []
    real = vms_screen.list_vms

    async def list_vms(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.get_threshold()[0])
        return await real(*args, **kwargs)

    monkeypatch.setattr(vms_screen, "list_vms", list_vms)
    server = sim_factory(vms=3)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)
        before = gc.get_threshold()
        await _refresh(pilot, screen)
        assert seen[-1] == vms_screen.REFRESH_GC_YOUNG and gc.get_threshold() == before
        server.stop()  # a failed refresh gives it back too
        await pilot.press("r")
        await wait_for(pilot, lambda: screen.last_error is not None and not screen.refreshing, what="the failure")
        assert seen[-1] == vms_screen.REFRESH_GC_YOUNG and gc.get_threshold() == before
