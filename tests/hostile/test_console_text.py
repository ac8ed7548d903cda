"""Remote text in the console is text: a marketplace record whose name, publisher, version and
description hold terminal escapes and Rich markup is shown with its escapes visible, never sent to
the terminal, and its markup shown literally (table cells, the detail, the Markdown description)."""

from __future__ import annotations

from typing import Any

from textual.widget import Widget

from tests.hostile.records import HOSTILE_ID, add_hostile_record
from tests.ui.conftest import SIZE, console_app, rendered_text, wait_for, wait_vms_loaded
from tui.domain.printable import has_controls
from tui.screens.marketplace import MarketplaceScreen
from tui.sim.server import SimServer


def _painted(widget: Widget) -> str:
    blocks = list(widget.query("MarkdownBlock"))
    return "\n".join(rendered_text(block) for block in blocks) if blocks else rendered_text(widget)


async def _hostile_record_shown(pilot: Any, app: Any) -> Any:
    """The marketplace screen with the cursor on the hostile record and its detail shown."""
    await wait_for(pilot, lambda: app.info is not None, what="the connection")
    app.open_screen("market")
    screen: Any = await wait_for(pilot, lambda: isinstance(s := app.screen, MarketplaceScreen)
                                 and s.catalog is not None and not s.loading and s, what="the catalog")
    key = next(e.key for e in screen.catalog.entries if e.record.id == HOSTILE_ID)
    screen.table.move_cursor_to_key(key)
    await wait_for(pilot, lambda: screen.shown_key == key, what="the hostile record's detail")
    return screen


async def test_a_hostile_record_is_shown_as_text(sim: SimServer) -> None:
    add_hostile_record(sim)
    app = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _hostile_record_shown(pilot, app)
        description = screen.query_one("#mk-detail-description")
        await wait_for(pilot, lambda: "Title" in _painted(description), what="the Markdown description")
        await pilot.pause()
        painted = {name: _painted(screen.query_one(name)) for name in ("#mk-table", "#mk-detail-head",
                                                                       "#mk-detail-description")}
        for name, text in painted.items():
            assert not has_controls(text), (name, repr(text[:400]))
        assert "Evil \\x1b]0;pwned" in painted["#mk-table"]
        head = painted["#mk-detail-head"]
        assert "[bold red]not markup[/]" in head.replace("\n", "") or "[bold red]not" in head
        assert "\\x1b[2J" in head
        assert "[red]x[/red]" in painted["#mk-detail-description"]


async def test_a_hostile_vm_name_is_shown_as_text(sim_factory: Any) -> None:
    from tests.hostile.records import MARKUP

    sim = sim_factory(vms=2)
    vm = next(iter(sim.site.vms.values()))
    with sim.site.lock:
        # XML 1.0 cannot carry C0 controls, but it carries C1 (0x9b is an 8-bit CSI), DEL and
        # bidirectional overrides
        vm.name = f"vm \x9b2J\x7f\u202e{MARKUP}"
    app = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        screen: Any = await wait_vms_loaded(pilot, timeout=60)
        await pilot.pause()
        painted = _painted(screen.table)
        assert not has_controls(painted), repr(painted[:300])
        assert "vm \\x9b2J\\x7f\\u202e[bold red]" in painted


async def test_the_dialogs_of_a_hostile_record_show_its_name_as_text(sim: SimServer) -> None:
    """The download and attributes dialogs title the record with its escapes visible."""
    from tui.screens.market_attributes import AttributesModal
    from tui.screens.market_download import DownloadModal

    add_hostile_record(sim)
    app = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _hostile_record_shown(pilot, app)
        for press, modal_type, title in (("d", DownloadModal, "#dl-title"), ("a", AttributesModal, "#at-title")):
            await pilot.press(press)
            modal: Any = await wait_for(pilot, lambda t=modal_type: isinstance(app.screen, t) and app.screen,
                                        what=f"the {modal_type.__name__}")
            await pilot.pause()
            painted = rendered_text(modal.query_one(title))
            assert not has_controls(painted), repr(painted)
            assert "Evil \\x1b]0;pwned" in painted
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is screen, what="the list again")


async def test_a_vm_name_xml_cannot_carry_is_reported_not_shown(sim_factory: Any) -> None:
    """The platform stores ESC in a name (src/pool/PoolObjectSQL.cc INVALID_NAME_CHARS leaves it
    out) and then answers XML no parser reads: the VM list says which answer, which character
    and where (escaped), and what to do; no traceback, no raw escape, no markup applied."""
    from tui.screens.vms import VmListScreen

    sim = sim_factory(vms=2)
    vm = next(iter(sim.site.vms.values()))
    with sim.site.lock:
        vm.name = "vm \x1b[2J[bold red]x[/]"
    app = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        screen: Any = await wait_for(pilot, lambda: isinstance(s := app.screen, VmListScreen) and s.last_error and s,
                                     timeout=60, what="the VM list's error")
        await pilot.pause()
        assert screen.last_error.title.startswith("Unreadable answer from")
        painted = "\n".join(rendered_text(screen.query_one(part)) for part in ("#vm-message-title", "#vm-message-detail"))
        assert not has_controls(painted), repr(painted)
        flat = " ".join(painted.split())
        assert "control character U+001B" in flat and "vm \\x1b[2J[bold red]x[/]" in flat
        assert "Rename the object" in flat
