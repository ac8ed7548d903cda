"""Defects of issue 12 item 8 and issue 14 item 3-4: no private attribute shadows a Textual one
(a `loading` flag blanked the hosts and marketplace screens on every reload), and a failing worker
in a modal reaches the one error path and leaves the modal closable."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.widget import Widget
from textual.widgets import LoadingIndicator

from tests.ui.conftest import SIZE, console_app, rendered_text, wait_for
from tui.app import SiteToolkitApp
from tui.procedures.market.download import DownloadAppliance
from tui.screens.hosts import HostsScreen
from tui.screens.market_download import DownloadModal
from tui.screens.marketplace import MarketplaceScreen
from tui.screenshots import click_shown, wait_for_screen
from tui.sim.server import SimServer
from widgets.error_modal import ErrorModal

ROOT = Path(__file__).resolve().parent.parent.parent

#: Textual attributes our classes set on purpose (documented settings, not private state)
INTENDED = {"theme", "NOTIFICATION_TIMEOUT", "virtual_size", "title", "sub_title", "display", "disabled",
            "can_focus", "tooltip", "border_title", "border_subtitle"}


def _shadowing() -> list[str]:
    found = []
    for path in [*ROOT.joinpath("tui", "screens").glob("*.py"), *ROOT.joinpath("widgets").glob("*.py"),
                 ROOT / "tui" / "app.py"]:
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            cls = getattr(module, node.name, None) if isinstance(node, ast.ClassDef) else None
            if not (inspect.isclass(cls) and issubclass(cls, (Widget, App))):
                continue
            textual = [base for base in cls.__mro__ if base.__module__.startswith("textual")]
            for sub in ast.walk(node):
                if (isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store)
                        and isinstance(sub.value, ast.Name) and sub.value.id == "self"
                        and sub.attr not in INTENDED and any(sub.attr in vars(base) for base in textual)):
                    found.append(f"{path.relative_to(ROOT)}: {node.name} sets self.{sub.attr}, a Textual attribute")
    return sorted(set(found))


def test_no_screen_or_widget_shadows_a_textual_attribute() -> None:
    assert not _shadowing()


async def _no_loading_cover(pilot: Any, screen: Any, data: str) -> None:
    """While the screen reloads, Textual's own `loading` stays off (no indicator over everything)."""
    await wait_for(pilot, lambda: getattr(screen, data) is not None and not screen.reloading,
                   what="the first load")
    screen.action_refresh()  # what `r` and the poll timer do
    assert screen.reloading  # the reload is under way
    assert not screen.loading and not list(screen.query(LoadingIndicator))
    await wait_for(pilot, lambda: not screen.reloading, what="the reload")


async def test_reloading_the_hosts_screen_never_blanks_it(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory(scenario="deployed")
    app = console_app(server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("hosts")
        screen = await wait_for(pilot, lambda: isinstance(s := app.screen, HostsScreen) and s, what="the hosts")
        await _no_loading_cover(pilot, screen, "inventory")


async def test_reloading_the_marketplace_never_blanks_it(sim: SimServer) -> None:
    app = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("market")
        screen = await wait_for(pilot, lambda: isinstance(s := app.screen, MarketplaceScreen) and s,
                                what="the marketplace")
        await _no_loading_cover(pilot, screen, "catalog")


async def test_an_unexpected_failure_in_a_modal_worker_is_reported_and_the_modal_closes(
        sim: SimServer, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(self, site, plan, context):  # type: ignore[no-untyped-def]
        raise NameError("replace")  # what the multi-VM move raised

    monkeypatch.setattr(DownloadAppliance, "execute", broken)
    app: SiteToolkitApp = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("market")
        screen = await wait_for(pilot, lambda: isinstance(s := app.screen, MarketplaceScreen) and s.catalog
                                and not s.reloading and s, what="the marketplace")
        key = next(e.key for e in screen.catalog.entries if e.record.id == "service_dns")
        screen.table.move_cursor_to_key(key)
        await wait_for(pilot, lambda: screen.shown_key == key, what="the detail")
        await pilot.press("d")
        modal = await wait_for_screen(pilot, DownloadModal, what="the download form")
        await wait_for(pilot, lambda: modal.market_app, what="the download form's appliance")
        modal.review()
        await wait_for(pilot, lambda: modal.plan is not None, what="the preview")
        modal.start()
        # the one error path: the error modal with the traceback, never silence
        error = await wait_for_screen(pilot, ErrorModal, what="the error modal")
        assert "NameError" in error.detail and "replace" in error.detail
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is modal, what="back to the download modal")
        assert not modal.running and "replace" in rendered_text(modal.query_one("#dl-result"))
        await click_shown(pilot, "#dl-close")
        await wait_for(pilot, lambda: app.screen is screen, what="the modal closed")


def test_every_console_modal_reports_its_worker_failures() -> None:
    """Every modal of tui/screens is a SiteModal, whose worker failures reach the one error path."""
    from textual.screen import ModalScreen

    from tui.screens.site_modal import SiteModal

    loose = []
    for path in ROOT.joinpath("tui", "screens").glob("*.py"):
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name, cls in vars(module).items():
            if (inspect.isclass(cls) and cls.__module__ == module.__name__ and issubclass(cls, ModalScreen)
                    and not issubclass(cls, SiteModal)):
                loose.append(f"{module.__name__}.{name}")
    assert not loose


def test_every_binding_has_an_id_in_one_scheme() -> None:
    """Binding ids are `<scope>.<action>` (a keymap names them that way), every binding has one."""
    import re

    from textual.binding import Binding

    scheme = re.compile(r"^[a-z][a-z-]*\.[a-z][a-z-]*$")
    wrong = []
    for path in [*ROOT.joinpath("tui", "screens").glob("*.py"), *ROOT.joinpath("widgets").glob("*.py"),
                 ROOT / "tui" / "app.py"]:
        module = importlib.import_module(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name, cls in vars(module).items():
            if not (inspect.isclass(cls) and cls.__module__ == module.__name__):
                continue
            for binding in vars(cls).get("BINDINGS", []):
                if isinstance(binding, Binding) and not scheme.match(binding.id or ""):
                    wrong.append(f"{module.__name__}.{name}: {binding.key} -> {binding.action} id={binding.id!r}")
    assert not wrong


def test_keys_come_from_the_config_file_by_binding_id(tmp_path: Path) -> None:
    from tui.errors import SiteError
    from tui.settings import Settings

    config = tmp_path / "home" / ".config" / "sitetk" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[keys]\n"app.help" = "h"\n')
    settings = Settings.load(env={}, home=tmp_path / "home", system_dir=tmp_path / "none")
    assert dict(settings.keys) == {"app.help": "h"}
    config.write_text("[keys]\n\"app.help\" = 3\n")
    with pytest.raises(SiteError) as info:
        Settings.load(env={}, home=tmp_path / "home", system_dir=tmp_path / "none")
    assert "[keys]" in info.value.detail


async def test_a_key_from_the_config_file_triggers_its_binding(sim: SimServer) -> None:
    import dataclasses

    from tui.procedures.connection import SiteConnection
    from tui.screenshots import frozen_clock
    from widgets.help_screen import HelpScreen

    base = console_app(sim).site.settings
    app = SiteToolkitApp(SiteConnection(dataclasses.replace(base, keys={"app.help": "h"})), clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        await pilot.press("h")
        await wait_for_screen(pilot, HelpScreen, what="the help, on the configured key")
