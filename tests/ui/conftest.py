"""Fixtures of the Pilot and snapshot tests: the console app against the in-process embedded site.

`console_app(server, ...)` builds a `SiteToolkitApp` whose settings point at a running
`SimServer` (frozen clock, long refresh interval unless a test asks for another one).
`wait_for(pilot, predicate)` polls a real state of the app with a deadline.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from textual.geometry import Region
from textual.widget import Widget

from tui.app import SiteToolkitApp
from tui.procedures.connection import SiteConnection
from tui.screens.registry import ScreenSpec
from tui.screens.vms import VmListScreen
from tui.screenshots import frozen_clock, wait_for
from tui.settings import Settings
from tui.sim.server import SimServer

__all__ = ["console_app", "rendered_text", "vm_screen", "wait_for", "wait_vms_loaded"]

SIZE = (140, 40)


def console_app(server: SimServer, *, read_only: bool = False, refresh_interval: float = 3600.0,
                screens: tuple[ScreenSpec, ...] | None = None, session: str | None = None,
                xmlrpc_timeout: float = 10.0, warm_up: Callable[[], None] | None = None,
                marketplace_urls: tuple[str, ...] | None = None, initial_screen: str | None = None) -> SiteToolkitApp:
    urls = marketplace_urls if marketplace_urls is not None else (server.market_url,)
    settings = Settings.for_site(server.xmlrpc_url, session or server.session, server.flow_url, urls)
    settings = dataclasses.replace(settings, refresh_interval=refresh_interval, xmlrpc_timeout=xmlrpc_timeout, theme="textual-dark")
    return SiteToolkitApp(SiteConnection(settings, warm_up=warm_up), read_only=read_only, clock=frozen_clock,
                          screens=screens, initial_screen=initial_screen)


def vm_screen(app: SiteToolkitApp) -> VmListScreen | None:
    screen = app.screen
    return screen if isinstance(screen, VmListScreen) else None


async def wait_vms_loaded(pilot: Any, predicate: Callable[[VmListScreen], Any] | None = None,
                          timeout: float = 15.0) -> VmListScreen:
    """Wait until the VM list has data (and `predicate(screen)` holds, when given)."""
    app = pilot.app

    def ready() -> Any:
        screen = vm_screen(app)
        if screen is None or not screen.loaded_once or screen.refreshing:
            return None
        return screen if predicate is None or predicate(screen) else None

    return await wait_for(pilot, ready, timeout, what="the VM list")


def rendered_text(widget: Widget) -> str:
    """The text a widget paints (every line of it, styles dropped)."""
    return "\n".join(strip.text for strip in widget.render_lines(Region(0, 0, *widget.outer_size)))
