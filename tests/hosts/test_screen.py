"""Pilot tests of the hosts screen and its move modal, against the embedded site over loopback."""

from __future__ import annotations

import threading
from typing import Any

from textual.widgets import Button, Static

from tests.ui.conftest import console_app
from tui.app import SiteToolkitApp
from tui.domain.one_states import HostState
from tui.screens.hosts import HostsScreen
from tui.screens.hosts_move import MoveModal
from tui.screenshots import click_shown, wait_for, wait_for_screen
from tui.sim.server import SimServer
from widgets.confirm_modal import ConfirmModal

SIZE = (140, 40)
WESTMERE, CASCADELAKE = 2, 0


async def open_hosts(pilot: Any) -> HostsScreen:
    """The hosts screen once loaded (the apps of these tests start on it, `initial_screen="hosts"`,
    so no VM list is built and loaded first; opening it again is a no-op)."""
    app: SiteToolkitApp = pilot.app
    await wait_for(pilot, lambda: app.info is not None, what="the connection")
    app.open_screen("hosts")
    return await wait_for(pilot, lambda: isinstance(app.screen, HostsScreen) and app.screen.inventory is not None
                          and not app.screen.reloading and app.screen, what="the hosts screen")


def cell(table: Any, key: Any, column: str) -> str:
    index = [c.key for c in table.columns].index(column)
    row = next(r for r in table.visible_rows if r.key == key)
    value = row.cells[index]
    return value if isinstance(value, str) else value.plain


async def open_move(pilot: Any) -> MoveModal:
    await pilot.press("m")
    modal = await wait_for_screen(pilot, MoveModal, what="the move modal")
    await wait_for(pilot, lambda: not modal.query_one("#mv-start", Button).disabled, what="the move preview")
    return modal


async def confirm_move(pilot: Any, modal: MoveModal) -> None:
    await click_shown(pilot, "#mv-start")
    confirm = await wait_for_screen(pilot, ConfirmModal, what="the confirmation")
    assert confirm.focused is not None and confirm.focused.id == "cancel"  # Cancel is the default
    await click_shown(pilot, "#confirm")
    # `changed` stays True once a run has started (`running` may already be over when polled)
    await wait_for(pilot, lambda: pilot.app.screen is modal and modal.changed, what="the move to start")


async def fail_a_move(pilot: Any, server: SimServer) -> MoveModal:
    """Open the hosts, plan the move of the manager and run it with the next deploy failing."""
    await open_hosts(pilot)
    modal = await open_move(pilot)
    server.site.faults.fail_next_deploys = 1
    await confirm_move(pilot, modal)
    await wait_for(pilot, lambda: not modal.running, timeout=30, what="the failure")
    return modal


def result_text(modal: MoveModal) -> str:
    return str(modal.query_one("#mv-result", Static).render())


async def test_tables_show_host_and_vm_verdicts(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        screen = await open_hosts(pilot)
        hosts = screen.hosts_table
        assert cell(hosts, CASCADELAKE, "verdict") == "✔ compatible"
        assert cell(hosts, CASCADELAKE, "kvm_model") == "★ Cascadelake-Server-noTSX"
        assert cell(hosts, WESTMERE, "verdict") == "✘ incompatible"
        assert (cell(hosts, WESTMERE, "sse"), cell(hosts, WESTMERE, "avx")) == ("✔ yes", "✘ no")
        assert cell(hosts, 3, "verdict") == "? unknown" and cell(hosts, 3, "avx") == "? ?"
        assert cell(hosts, 4, "arch") == "aarch64"

        vms = screen.vms_table
        [vm_id] = [row.key for row in vms.visible_rows]
        assert cell(vms, vm_id, "verdict") == "✘ lacks AVX/SSE4.2"
        assert cell(vms, vm_id, "app") == "◐ not ready"
        detail = str(screen.query_one("#hosts-detail", Static).render())
        assert "its host is incompatible: no AVX" in detail and "m moves it to host 0" in detail

        hosts.focus()
        hosts.move_cursor_to_key(WESTMERE)
        await pilot.pause()
        assert "Not a target: incompatible: no AVX" in str(screen.query_one("#hosts-detail", Static).render())


async def test_move_from_the_screen_after_confirmation(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        screen = await open_hosts(pilot)
        modal = await open_move(pilot)
        preview = str(modal.query_one("#mv-preview", Static).render())
        assert "onevm undeploy 3" in preview and "onevm deploy 3 0" in preview and "--append" in preview

        # the confirmation names the VM and a stray enter cancels
        await click_shown(pilot, "#mv-start")
        confirm = await wait_for_screen(pilot, ConfirmModal, what="the confirmation")
        assert confirm.object_name == "VM 3 manager_0_(service_1)"
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.screen is modal, what="back to the modal")
        assert not modal.running and not modal.changed

        await confirm_move(pilot, modal)
        await wait_for(pilot, lambda: not modal.running, timeout=30, what="the move to finish")
        assert "✔ Done." in result_text(modal) and "The application reports ready" in result_text(modal)
        await click_shown(pilot, "#mv-close")
        await wait_for(pilot, lambda: pilot.app.screen is screen and not screen.reloading
                       and screen.inventory is not None and not screen.inventory.flagged, what="the reload")
        assert cell(screen.vms_table, 3, "verdict") == "✔ fine"
        assert cell(screen.vms_table, 3, "app") == "● ready"


async def test_a_failed_move_offers_resume(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        modal = await fail_a_move(pilot, server)
        text = result_text(modal)
        assert "Stopped at step “deploy”" in text and "is now UNDEPLOYED" in text
        assert modal.query_one("#mv-resume", Button).display
        back = modal.query_one("#mv-back", Button)
        assert back.display and str(back.label) == f"Put back on host {WESTMERE}"

        await click_shown(pilot, "#mv-resume")
        await wait_for(pilot, lambda: "✔ Done." in result_text(modal), timeout=30, what="the resumed move")
        vm = await pilot.app.site.cloud.vm_info(3)
        assert vm.ready and vm.summary.host_id == CASCADELAKE


async def test_put_back_where_it_was(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        modal = await fail_a_move(pilot, server)
        await click_shown(pilot, "#mv-back")
        confirm = await wait_for_screen(pilot, ConfirmModal, what="the put-back confirmation")
        assert confirm.action_label == "Redeploy"
        await click_shown(pilot, "#confirm")
        await wait_for(pilot, lambda: "✔ Done." in result_text(modal), timeout=30, what="the put-back")
        vm = await pilot.app.site.cloud.vm_info(3)
        assert vm.summary.running and vm.summary.host_id == WESTMERE and vm.cpu_model == ""


async def test_cancel_mid_move_then_resume(sim_factory) -> None:  # type: ignore[no-untyped-def]
    # no event of the site runs unless stepped (time_scale 1000): the undeploy stays in its first
    # state until the cancel below has landed in the step that waits for it, however loaded the machine
    server: SimServer = sim_factory(scenario="deployed", time_scale=1000.0)
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        await open_hosts(pilot)
        modal = await open_move(pilot)
        await confirm_move(pilot, modal)
        await wait_for(pilot, lambda: any(e.step == "wait undeployed" for e in modal.events), what="the undeploy")
        await click_shown(pilot, "#mv-cancel")
        await wait_for(pilot, lambda: not modal.running and "is now" in result_text(modal), timeout=30,
                       what="the cancel and the state read")
        assert "Cancelled during step “wait undeployed”" in result_text(modal)
        stepping = threading.Event()
        events = threading.Thread(target=_run_events, args=(server, stepping), daemon=True)
        events.start()  # the site runs again, event by event, for the resumed move
        try:
            await click_shown(pilot, "#mv-resume")
            await wait_for(pilot, lambda: "✔ Done." in result_text(modal), timeout=30, what="the resumed move")
        finally:
            stepping.set()
            events.join(5)


def _run_events(server: SimServer, stop: threading.Event) -> None:
    """Run the site's events one after the other (simulated time jumps to each) until `stop`."""
    while not stop.wait(0.005):
        server.site.run_next_event()


async def test_read_only_mode_offers_no_move(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, read_only=True, initial_screen="hosts").run_test(size=SIZE) as pilot:
        screen = await open_hosts(pilot)
        assert screen.check_action("move", ()) is False
        assert screen.check_action("move_all", ()) is False
        await pilot.press("m")
        await pilot.press("M")
        await pilot.pause()
        assert pilot.app.screen is screen
        # the footer offers no move: its bindings are disabled (hidden) in read-only mode
        for key in ("m", "M"):
            active = screen.active_bindings.get(key)
            assert active is None or not active.enabled
        assert "read-only: moves hidden" in str(screen.query_one("#hosts-status").render())
        assert "Read-only mode: moves are hidden" in str(screen.query_one("#hosts-detail", Static).render())
        titles = [command.title for command in screen.palette_commands()]
        assert not any("Move" in title for title in titles)


async def test_passthrough_is_offered_only_without_a_compatible_host(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        await open_hosts(pilot)
        await pilot.press("m")
        modal = await wait_for_screen(pilot, MoveModal, what="the move modal")
        assert not modal.query("#mv-passthrough")  # compatible hosts exist: no passthrough box
        await pilot.press("escape")

    with server.site.lock:  # every compatible host goes out of service
        for host_id in (0, 1):
            server.site.hosts[host_id].state = HostState.DISABLED
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        await open_hosts(pilot)
        await pilot.press("m")
        modal = await wait_for_screen(pilot, MoveModal, what="the move modal")
        warning = str(modal.query_one("#mv-passthrough-warning", Static).render())
        assert "host-passthrough is discouraged" in warning
        assert "tick host-passthrough" in str(modal.query_one("#mv-preview", Static).render())
        assert modal.query_one("#mv-start", Button).disabled
        await click_shown(pilot, "#mv-passthrough")
        await wait_for(pilot, lambda: not modal.query_one("#mv-start", Button).disabled, what="the passthrough plan")
        assert modal.plans[0].cpu_model == "host-passthrough" and modal.plans[0].target_host_id == 3
        assert "host-passthrough is discouraged" in str(modal.query_one("#mv-preview", Static).render())


async def test_move_every_flagged_vm(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        screen = await open_hosts(pilot)
        await pilot.press("M")
        modal = await wait_for_screen(pilot, MoveModal, what="the move modal")
        await wait_for(pilot, lambda: not modal.query_one("#mv-start", Button).disabled, what="the plans")
        assert [p.vm_id for p in modal.plans] == [3]
        await confirm_move(pilot, modal)
        await wait_for(pilot, lambda: not modal.running, timeout=30, what="the moves")
        assert "✔ Done." in result_text(modal)
        await click_shown(pilot, "#mv-close")
        await wait_for(pilot, lambda: pilot.app.screen is screen and not screen.reloading and screen.inventory
                       is not None and not screen.inventory.flagged, what="the reload")


async def test_m_on_a_host_preselects_it_as_target(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, initial_screen="hosts").run_test(size=SIZE) as pilot:
        screen = await open_hosts(pilot)
        screen.hosts_table.focus()
        screen.hosts_table.move_cursor_to_key(1)
        await pilot.pause()
        modal = await open_move(pilot)
        assert modal.plans[0].target_host_id == 1 and modal.plans[0].cpu_model == "Broadwell-noTSX"
        await pilot.press("escape")
        await wait_for(pilot, lambda: pilot.app.screen is screen, what="back to the hosts")

        screen.hosts_table.focus()
        screen.hosts_table.move_cursor_to_key(WESTMERE)  # not a target: the best one is proposed instead
        await pilot.pause()
        modal = await open_move(pilot)
        assert modal.plans[0].target_host_id == CASCADELAKE


async def test_the_move_modal_keeps_its_buttons_on_an_80x24_terminal(sim_factory) -> None:  # type: ignore[no-untyped-def]
    """At 80x24 the preview is longer than the modal: it scrolls, and Move… and Close stay on screen
    (they were cut off below the preview, so a keyboard-less operator could not start the move)."""
    server: SimServer = sim_factory(scenario="deployed")
    async with console_app(server, initial_screen="hosts").run_test(size=(80, 24)) as pilot:
        await open_hosts(pilot)
        modal = await open_move(pilot)
        for button in ("#mv-close", "#mv-start"):
            region = modal.query_one(button, Button).region
            assert region.area and pilot.app.screen.region.contains_region(region), button
        await click_shown(pilot, "#mv-start")
        confirm = await wait_for_screen(pilot, ConfirmModal, what="the confirmation")
        assert confirm.object_name == "VM 3 manager_0_(service_1)"
