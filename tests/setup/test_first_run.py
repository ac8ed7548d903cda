"""The first run, with keys alone (issue 20 item 9): a fresh embedded site, from the console's first
screen to a finished setup, no file prepared beforehand, at 80x24 and at 160x48.

The operator only presses keys: `n` on the checklist (the download first; then the toolkit form,
prefilled from the site, which `n` opens because no input file exists yet), tab and typing in the
form, ctrl+s and the path to save the input file (mode 0600, secrets left out, as the dialog
proposes), the accelerator key of each confirmation, the secrets and the site's own values typed
into the dialogs that ask them. Then `sitetk setup status --input FILE` against the same site
exits 0, and the file the form saved is mode 0600 and holds no secret.
"""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest

from tests.setup.conftest import point_at, run
from tests.setup.driving import answer, fill_form, front_door, setup_app, type_into, where
from tests.ui.conftest import rendered_text
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.setup_steps import StepState
from tui.domain.toolkit_inputs import secret_names
from tui.screens.marketplace import MarketplaceScreen
from tui.screens.setup import SecretsModal
from tui.screens.toolkit import ToolkitScreen
from tui.screens.toolkit_files import InputFileModal
from tui.screenshots import wait_for, wait_for_screen
from tui.sim.server import SimServer
from widgets.confirm_modal import ConfirmModal

pytestmark = pytest.mark.timeout(600)


@pytest.mark.slow  # about 4 minutes each at load 4-8 (README: Tests)
# the whole setup through the console at every version at 80x24 (the form's values key and the file it
# saves, the CLI helper step optional below 7.0; tests/conftest.py), at 160x48 once
@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24", marks=pytest.mark.every_version),
                                  pytest.param((160, 48), id="160x48")])
async def test_first_run_with_keys_alone(sim_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str], size: tuple[int, int]) -> None:
    server: SimServer = sim_factory()
    saved = tmp_path / "my-inputs.json"
    app = setup_app(server, tmp_path)
    seen: list[str] = []
    async with app.run_test(size=size) as pilot:
        screen = await front_door(pilot)
        assert screen.checklist is not None and not screen.input_path
        # the first thing to do on a fresh site is the download, not an input file it cannot be written without
        nxt = screen.checklist.next_step
        assert nxt is not None and nxt.id.value == "download", nxt
        for _ in range(80):
            state = await wait_for(pilot, lambda: where(app, screen), timeout=240,
                                   what="a dialog, the form or the checklist at rest")
            seen.append(state)
            if state == "idle":
                assert not screen.last_message.startswith("✖"), screen.step_log
                if screen.checklist is not None and screen.checklist.complete:
                    break
                log = screen.step_log  # a run starts with a new log: seen even when it is over by the first look
                await pilot.press("n")
                try:
                    await wait_for(pilot, lambda log=log: app.screen is not screen or screen.running or screen.reading
                                   or screen.step_log is not log, timeout=30, what="n to start something")
                except AssertionError as error:
                    nxt = screen.checklist.next_step if screen.checklist is not None else None
                    raise AssertionError(f"{error}; focus {app.focused!r}, next step {nxt and nxt.id.value}, "
                                         f"last message {screen.last_message!r}, log {screen.step_log}") from None
            elif state == "form":
                form = app.screen
                assert isinstance(form, ToolkitScreen) and form.for_setup
                assert form.fields["app_automation_cloud_endpoint"].value.startswith("http://10.11.28.1"), \
                    "prefilled from the site: the address the VMs reach the frontend at"
                await fill_form(pilot, form)
                await pilot.press("ctrl+s")
                await wait_for_screen(pilot, InputFileModal, what="the save dialog")
            elif state == "save":
                await type_into(pilot, str(saved))
                await pilot.press("enter")
                await wait_for(pilot, lambda: app.screen is screen and screen.input_path == str(saved),
                               timeout=30, what="back on the checklist with the saved file")
            elif state == "ask":
                dialog = app.screen
                assert isinstance(dialog, SecretsModal)
                await answer(pilot, dialog)
                await wait_for(pilot, lambda dialog=dialog: app.screen is not dialog, what="the dialog to close")
            else:
                dialog = app.screen
                assert isinstance(dialog, ConfirmModal)
                confirm = dialog.query_one("#confirm")
                assert confirm.region.bottom <= size[1], "the buttons are in sight"
                key = dialog.accelerator_of(confirm)  # type: ignore[arg-type]
                assert key, "the action has an accelerator key"
                await pilot.press(key)
                await wait_for(pilot, lambda dialog=dialog: app.screen is not dialog, what="the confirmation to close")
        else:
            raise AssertionError(f"not set up after {len(seen)} rounds: {seen}")
        assert screen.checklist is not None and screen.checklist.complete, screen.step_log
        assert all(s.state is StepState.DONE for s in screen.checklist.steps if s.mandatory)
    assert "form" in seen and "save" in seen and "ask" in seen, seen
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    data = json.loads(saved.read_text())
    held = data.get("user_inputs_values") or data["custom_attrs_values"]  # 7.x or 6.x shape
    assert not any(held.get(name) for name in secret_names(DEFAULT_NAMING)), "secrets left out of the file"
    point_at(server, monkeypatch)
    code, out, err = await asyncio.to_thread(run, capsys, "setup", "status", "--input", str(saved))
    assert code == 0, (out, err)


async def test_screens_are_current_when_shown_again(sim_factory, tmp_path: Path) -> None:
    """`:toolkit` opened before the download says the template is not in the cloud; after a download
    made elsewhere, the checklist shown again has it done and the form shown again is built (no r)."""
    from tui.screenshots.scenes_toolkit import download_newest_toolkit

    server: SimServer = sim_factory()
    app = setup_app(server, tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await front_door(pilot)
        assert screen.checklist is not None and screen.checklist.step("download").state is StepState.TODO
        await pilot.press("colon", *"toolkit", "enter")
        form = await wait_for_screen(pilot, ToolkitScreen, what=":toolkit")
        await wait_for(pilot, lambda: form.load_error is not None, timeout=30, what="the form's failure")
        assert "not in the cloud" in form.load_error.title  # type: ignore[union-attr]
        # the form names the keys to the Marketplace screen, seen whole at 80x24; they lead there
        header = form.query_one("#tk-header")
        shown = await wait_for(pilot, lambda: (text := " ".join(rendered_text(header).split())) and "first" in text and text,
                               what="the header laid out with its detail")
        assert "on the Marketplace screen: press : and type market, enter; select Site Toolkit" in shown, shown
        assert "and press d." in shown, shown
        await pilot.press("colon", *"market", "enter")
        await wait_for_screen(pilot, MarketplaceScreen, what="the Marketplace screen the form names")
        await download_newest_toolkit(app.site)  # by another screen, the CLI or by hand
        await pilot.press("colon", *"setup", "enter")
        await wait_for(pilot, lambda: app.screen is screen, what=":setup")
        await wait_for(pilot, lambda: screen.checklist is not None and not screen.reading
                       and screen.checklist.step("download").state is StepState.DONE, timeout=60,
                       what="the checklist read again when shown")
        await pilot.press("colon", *"toolkit", "enter")
        await wait_for(pilot, lambda: app.screen is form, what=":toolkit again")
        await wait_for(pilot, lambda: form.ready and form.load_error is None, timeout=30,
                       what="the form read again when shown")
        assert form.form is not None and form.fields
