"""Driving the console's setup screens in pilot tests as an operator would (keys, typed text): the
app on an embedded site, the checklist as front door or opened with an input file, the toolkit
form filled field by field, the dialogs that ask values answered, and what the operator looks at.
Shared by the setup tests and the trial network's console test."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from textual.widgets import Input, TextArea

from tests.setup.inputs import SITE_VALUES, input_values
from tui.app import SiteToolkitApp
from tui.console import demo_settings
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.toolkit_inputs import secret_names
from tui.procedures.connection import SiteConnection
from tui.screens.setup import SecretsModal, SetupScreen
from tui.screens.toolkit import ToolkitScreen
from tui.screens.toolkit_fields import MultilineField
from tui.screens.toolkit_files import InputFileModal
from tui.screenshots import frozen_clock, wait_for
from tui.settings import Settings
from tui.sim.repos import SIM_VAULT_PASSWORD
from tui.sim.server import SimServer
from widgets.confirm_modal import ConfirmModal

#: the terminal size of the setup screen's pilot tests
SIZE = (140, 40)


def setup_app(server: SimServer, tmp_path: Path, *, read_only: bool = False,
              call_timeout: float | None = None) -> SiteToolkitApp:
    """The console on `server`, opening on the setup checklist. `call_timeout`: the site's calls'
    deadline (a test that drives the clock past it would time out a call in flight)."""
    settings = demo_settings(server, Settings(state_dir=tmp_path / "console-state", audit_log=tmp_path / "audit.log"))
    settings = dataclasses.replace(settings, refresh_interval=3600.0, theme="textual-dark")
    if call_timeout is not None:
        settings = dataclasses.replace(settings, xmlrpc_timeout=call_timeout)
    return SiteToolkitApp(SiteConnection(settings), read_only=read_only, clock=frozen_clock, front_door=True)


async def front_door(pilot: Any) -> SetupScreen:
    app: SiteToolkitApp = pilot.app
    screen = await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen, timeout=30,
                            what="the setup checklist as the front door")
    await wait_for(pilot, lambda: screen.checklist is not None and not screen.reading, timeout=60, what="the checklist")
    screen.poll_interval = 0.05
    return screen


async def checklist_with_input(pilot: Any, inputs: Path, cursor: str) -> SetupScreen:
    """:setup opened (not the front door), the input file given, the cursor on `cursor`."""
    app: SiteToolkitApp = pilot.app
    await wait_for(pilot, lambda: app.info is not None, what="the connection")
    app.open_screen("setup")
    screen = await wait_for(pilot, lambda: isinstance(app.screen, SetupScreen) and app.screen, what="the setup")
    await wait_for(pilot, lambda: screen.checklist is not None and not screen.reading, timeout=60,
                   what="the checklist")
    screen.input_path = str(inputs)
    screen.reload()
    await wait_for(pilot, lambda: not screen.reading and screen.checklist is not None, timeout=60,
                   what="the checklist with the input file")
    screen.table.move_cursor_to_key(cursor)
    return screen


#: the operator's answers: the values a newcomer types where the form's prefill is not the site's
WANTED = {**input_values(), "app_automation_sites_token": SIM_VAULT_PASSWORD}


async def type_into(pilot: Any, value: str) -> None:
    """Replace the focused input's text, key by key (end, ctrl+u clears it, then the characters)."""
    await pilot.press("end", "ctrl+u", *value)


async def tab_to(pilot: Any, container: Any, limit: int = 400) -> Any:
    """Press tab until the focus is on a text field inside `container` (keys only)."""
    app = pilot.app
    for _ in range(limit):
        focused = app.focused
        if isinstance(focused, (Input, TextArea)) and container in focused.ancestors:
            return focused
        await pilot.press("tab")
    raise AssertionError(f"tab never reached {container!r} (focus on {app.focused!r})")


async def fill_form(pilot: Any, form: ToolkitScreen) -> list[str]:
    """Type every input whose prefilled value is not the operator's (tab from field to field); the
    names typed. Secrets are typed later, when the setup asks for them (the file leaves them out)."""
    secrets = secret_names(DEFAULT_NAMING)
    typed = []
    for name, widget in form.fields.items():
        wanted = WANTED.get(name)
        if wanted is None or name in secrets or widget.value == wanted or isinstance(widget, MultilineField):
            continue
        await tab_to(pilot, widget)
        await type_into(pilot, wanted)
        await wait_for(pilot, lambda widget=widget, wanted=wanted: widget.value == wanted, what=f"{name} typed")
        typed.append(name)
    return typed


async def answer(pilot: Any, dialog: SecretsModal) -> None:
    """Type each asked value; enter goes to the next field, and on the last one uses them."""
    for name in dialog.names:
        value = SITE_VALUES[name] if name in SITE_VALUES else WANTED[name]
        field = dialog.query_one(f"#secret-{name}", Input)
        await wait_for(pilot, lambda field=field: dialog.focused is field, what=f"the focus on {name}")
        await type_into(pilot, value)
        await pilot.press("enter")


def where(app: Any, checklist: SetupScreen) -> str:
    """What the operator is looking at, once it is shown whole ("" while something is under way)."""
    shown = app.screen
    if not shown.is_mounted or not shown.query("Button, Static"):
        return ""
    if isinstance(shown, ConfirmModal):
        return "confirm" if shown.query("#confirm") else ""
    if isinstance(shown, SecretsModal):
        return "ask" if shown.query(Input) else ""
    if isinstance(shown, InputFileModal):
        return "save" if shown.query(Input) else ""
    if isinstance(shown, ToolkitScreen):
        return "form" if shown.ready and not shown.load_pending else ""
    if shown is checklist and not checklist.running and not checklist.reading:
        return "idle"
    return ""
