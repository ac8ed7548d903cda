"""Pilot tests of the app shell: start-up failures, read-only mode, errors, palette, `:` jumps, help, quit."""

from __future__ import annotations

import gc

from textual.command import CommandList, CommandPalette

from tests.ui.conftest import SIZE, console_app, rendered_text, vm_screen, wait_for, wait_vms_loaded
from tui.app import GC_THRESHOLDS, SiteToolkitApp
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.screens.connect_error import ConnectErrorScreen
from tui.screens.registry import SCREENS, ScreenSpec
from tui.screens.vms import VmListScreen
from tui.screenshots import click_shown, frozen_clock, wait_for_screen
from tui.settings import Settings
from widgets.error_modal import ErrorModal
from widgets.help_screen import HelpScreen
from widgets.jump_prompt import JumpPrompt

VMS = next(s for s in SCREENS if s.name == "vms")
#: a second screen for jump tests, and one that changes the cloud (hidden in read-only mode)
OTHER = ScreenSpec("vms-again", "Virtual machines (second view)", VMS.target, aliases=("again",))
MUTATING = ScreenSpec("mutator", "Changes things", VMS.target, mutates=True)


async def test_unreachable_site_at_start_shows_what_was_tried_and_retry_recovers(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=3)
    server.stop()
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(pilot, ConnectErrorScreen, what="the connection failure screen")
        await pilot.pause()
        text = rendered_text(screen.query_one("#connect-detail"))
        assert server.xmlrpc_url in rendered_text(screen.query_one("#connect-title"))
        assert "Tried:" in text and "ONE_XMLRPC" in text and "How to fix" in text
        tried = rendered_text(screen.query_one("#connect-tried"))
        assert "oneadmin:***" in tried and server.session.split(":", 1)[1] not in tried
        assert app.is_running

        await pilot.press("r")  # still down: the screen counts the attempt
        await wait_for(pilot, lambda: screen.attempts == 2, what="the second attempt")

        server.start()
        await pilot.press("r")
        vms = await wait_vms_loaded(pilot)
        assert vms.table.row_count == 3
        assert not any(isinstance(s, ConnectErrorScreen) for s in app.screen_stack)


async def test_bad_credentials_at_start_name_one_auth(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory()
    app = console_app(server, session="oneadmin:wrong-password")
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(pilot, ConnectErrorScreen, what="the connection failure screen")
        await pilot.pause()
        assert "Authentication failed" in rendered_text(screen.query_one("#connect-title"))
        detail = rendered_text(screen.query_one("#connect-detail"))
        assert "ONE_AUTH" in detail and "wrong-password" not in detail
        await pilot.press("q")
    assert app.return_code in (0, None)


async def test_read_only_hides_mutating_screens_and_shows_a_badge(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=2)
    app = console_app(server, read_only=True, screens=(VMS, MUTATING))
    async with app.run_test(size=SIZE) as pilot:
        await wait_vms_loaded(pilot)
        assert app.context_value("mode") == "READ-ONLY"
        assert [s.name for s in app.available_screens()] == ["vms"]
        await pilot.press("colon")
        prompt = await wait_for_screen(pilot, JumpPrompt, what="the jump prompt")
        assert isinstance(prompt, JumpPrompt)
        assert [c.name for c in prompt.choices] == ["vms"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: vm_screen(app) is not None, what="the prompt to close")
        app.open_screen("mutator")  # even by name it does not open
        await pilot.pause()
        assert isinstance(app.screen, VmListScreen) and app.screen.SCREEN_NAME == "vms"

    app = console_app(server, read_only=False, screens=(VMS, MUTATING))
    async with app.run_test(size=SIZE) as pilot:
        await wait_vms_loaded(pilot)
        assert app.context_value("mode") == ""
        assert [s.name for s in app.available_screens()] == ["vms", "mutator"]


async def test_errors_become_a_toast_or_a_copyable_modal_and_never_quit(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=2)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_vms_loaded(pilot)

        app.report_error(SiteError("Short failure", "one line"))
        await pilot.pause()
        assert not isinstance(app.screen, ErrorModal)
        assert any("one line" in str(n.message) for n in app._notifications)

        long_detail = "\n".join(f"line {n} of a long server message [with] brackets" for n in range(60))
        app.report_error(SiteError("Long failure", long_detail))
        modal = await wait_for_screen(pilot, ErrorModal, what="the modal")
        await pilot.pause()
        assert modal.query_one("#error-detail").text == long_detail
        await click_shown(pilot, "#error-copy")
        await wait_for(pilot, lambda: app.clipboard, what="the copy")
        assert app.clipboard == f"Long failure\n\n{long_detail}"
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="the modal to close")
        assert app.screen is screen

        await pilot.press("e")  # the last error, in full, again
        again = await wait_for_screen(pilot, ErrorModal, what="the last error")
        assert isinstance(app.screen, ErrorModal) and again is app.screen
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="the modal to close")

        async def explode() -> None:
            raise RuntimeError("bug in a worker")

        screen.run_worker(explode(), group="test", exit_on_error=False)
        modal = await wait_for_screen(pilot, ErrorModal, what="the modal")
        await pilot.pause()
        assert "RuntimeError: bug in a worker" in modal.error_title
        assert "Traceback" in modal.detail
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, what="the modal to close")
        assert app.is_running and app.screen is screen


async def test_jump_prompt_opens_screens_by_name_and_alias(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=2)
    app = console_app(server, screens=(VMS, OTHER))
    async with app.run_test(size=SIZE) as pilot:
        first = await wait_vms_loaded(pilot)
        await pilot.press("colon", *"again", "enter")
        await wait_for(pilot, lambda: app.screen is app.get_screen("vms-again"), what="the jump")
        second = app.screen
        assert second is not first

        await pilot.press("colon")  # typed once the prompt is up: keys sent before would reach the list
        prompt = await wait_for_screen(pilot, JumpPrompt, what="the jump prompt")
        await pilot.press(*"nosuch", "enter")  # unknown: the prompt stays and says so
        await wait_for(pilot, lambda: "No screen named" in rendered_text(prompt.query_one("#jump-reason")),
                       what="the unknown name")
        assert isinstance(app.screen, JumpPrompt)
        assert "No screen named 'nosuch'" in rendered_text(app.screen.query_one("#jump-reason"))
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is second, what="the prompt to close")

        await pilot.press("colon")
        await wait_for_screen(pilot, JumpPrompt, what="the jump prompt")
        await pilot.press(*"vm", "enter")
        await wait_for(pilot, lambda: app.screen is first, what="the jump back")
        assert first.table.row_count == 2  # the installed screen kept its state


async def test_command_palette_lists_screens_and_actions(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=2)
    app = console_app(server, screens=(VMS, OTHER))
    async with app.run_test(size=SIZE) as pilot:
        await wait_vms_loaded(pilot)
        await pilot.press("ctrl+p")
        await wait_for_screen(pilot, CommandPalette, what="the palette")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"second view")

        def first_option() -> str:
            options = app.screen.query_one(CommandList)
            return str(options.get_option_at_index(0).prompt) if options.option_count else ""

        await wait_for(pilot, lambda: "second view" in first_option(), what="the palette hit")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is app.get_screen("vms-again"), what="the palette jump")

        await pilot.press("ctrl+p")
        await wait_for_screen(pilot, CommandPalette, what="the palette")
        await pilot.press(*"refresh vms")
        await wait_for(pilot, lambda: "Refresh VMs" in first_option(), what="the screen's own command")
        await pilot.press("escape")


async def test_help_is_generated_from_the_active_bindings(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=2)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_vms_loaded(pilot)
        await pilot.press("question_mark")
        help_screen = await wait_for_screen(pilot, HelpScreen, what="the help")
        assert isinstance(help_screen, HelpScreen)
        entries = {(e.key, e.description) for e in help_screen.entries}
        assert ("/", "Filter") in entries
        assert ("r", "Refresh") in entries
        assert ("H", "Sort by host") in entries
        assert (":", "Go to") in entries
        assert any(desc == "Quit" for _, desc in entries)
        await pilot.press("escape")
        await wait_for(pilot, lambda: vm_screen(app) is not None, what="the help to close")
        assert vm_screen(app) is not None


async def test_q_quits(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=1)
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_vms_loaded(pilot)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, what="the app to exit")
    assert app.return_code == 0


async def test_retry_reads_the_credentials_again_after_the_operator_fixes_them(sim_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=2)
    auth = tmp_path / "one_auth"
    env = {"ONE_AUTH": str(auth), "ONE_XMLRPC": server.xmlrpc_url, "XDG_CONFIG_HOME": str(tmp_path / "config")}

    def load() -> Settings:
        return Settings.load(env=env, home=tmp_path / "home", system_dir=tmp_path / "system")

    app = SiteToolkitApp(SiteConnection(load()), clock=frozen_clock, reload_settings=load)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(pilot, ConnectErrorScreen, what="the connection failure screen")
        await pilot.pause()
        assert "No credentials" in rendered_text(screen.query_one("#connect-title"))
        assert str(auth) in rendered_text(screen.query_one("#connect-detail"))

        auth.write_text(server.session + "\n")
        auth.chmod(0o600)
        await pilot.press("r")
        vms = await wait_vms_loaded(pilot)
        assert vms.table.row_count == 2


async def test_warm_up_starts_once_the_first_rows_are_painted(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(vms=3)
    calls: list[int] = []
    # the demo passes the child's request for its git repositories here (tui.console)
    app = console_app(server, warm_up=lambda: calls.append(app.screen.query_one("#vm-table").row_count))
    async with app.run_test(size=SIZE) as pilot:
        await wait_vms_loaded(pilot)
        await wait_for(pilot, lambda: app.first_rows_at is not None and calls, what="the warm-up")
        assert calls == [3]  # called once, and only when the rows were there
        app.site.warm_up()
        assert calls == [3]


async def test_first_rows_are_noted_once_painted_and_the_front_door_check_waits_for_them(sim_factory) -> None:  # type: ignore[no-untyped-def]
    """The first-rows mark (the start-up benchmark's) is taken in the frame that painted a row, not
    merely after the next refresh (which may come before the table asked for its repaint); the
    front door's check (its imports and OneFlow read) starts only then (issue 24)."""
    server = sim_factory(vms=3)
    app = console_app(server)
    app.front_door = True
    seen: list[tuple[bool, bool]] = []
    check = app._open_front_door

    def front_door_check() -> None:
        table = app.screen.query_one("#vm-table")
        seen.append((table.rows_painted, app.first_rows_at is not None))
        check()

    app._open_front_door = front_door_check  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        # not `wait_vms_loaded`: on this fresh site the check opens the setup checklist over the VM
        # list, which can happen before a poll sees the list loaded and idle
        await wait_for(pilot, lambda: app.first_rows_at is not None and seen, what="the first rows and the check")
        [screen] = [s for s in app.screen_stack if isinstance(s, VmListScreen)]
        assert screen.table.rows_painted
        assert seen == [(True, True)]  # once, after the rows were painted


async def test_a_console_started_without_the_collector_turns_it_on_once_its_first_rows_are_painted(sim_factory) -> None:  # type: ignore[no-untyped-def]
    """`sitetk` starts with the collector off (tui.console); the app keeps it off while it connects
    and reads its first page, and turns it on (the start-up objects frozen) in the frame that
    painted the first rows (issue 24)."""
    server = sim_factory(vms=3)
    app = console_app(server)
    seen: list[bool] = []
    painted = app._first_rows_painted

    def first_rows_painted() -> None:
        seen.append(gc.isenabled())
        painted()

    app._first_rows_painted = first_rows_painted  # type: ignore[method-assign]
    gc.disable()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.first_rows_at is not None, what="the first rows")
            assert seen[0] is False  # off until then
            assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


async def test_the_console_gives_the_process_its_collector_thresholds_back_when_it_exits(sim_factory) -> None:  # type: ignore[no-untyped-def]
    """The console's thresholds (rare full collections) hold while it runs; once it exits, the
    process collects as before: one that runs apps one after another (a pytest worker, hundreds of
    them) must not pile up the cyclic garbage of everything it runs later."""
    server = sim_factory(vms=3)
    app = console_app(server)
    found = gc.get_threshold()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.first_rows_at is not None, what="the first rows")
        assert gc.get_threshold()[1:] == GC_THRESHOLDS[1:]  # the first one moves while a refresh builds rows
    assert gc.get_threshold() == found != GC_THRESHOLDS


async def test_a_failed_start_turns_the_collector_on(sim_factory) -> None:  # type: ignore[no-untyped-def]
    """A console that cannot connect has no rows to wait for: the collector comes back at once."""
    server = sim_factory()
    server.stop()
    app = console_app(server)
    gc.disable()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for_screen(pilot, ConnectErrorScreen, what="the connection failure screen")
            assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
