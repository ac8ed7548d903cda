"""The console's second deploy says what it does (issue 22 item 10): with a recorded deployment, the
question warned "this creates another service", then the run followed the first (a service made
from the same inputs is followed, `tui.procedures.toolkit.own_service`). It now plans as the run will and
says the service is followed; the header says the same; no second service appears."""

from __future__ import annotations

from typing import Any

import pytest

from tests.toolkit.conftest import ToolkitSite, toolkit_site  # noqa: F401 - the fixture
from tests.toolkit.test_screen import SIZE, open_form, start_deploy
from tests.ui.conftest import console_app
from tui.screenshots import click_shown, toolkit_values, wait_for, wait_for_screen
from widgets.confirm_modal import ConfirmModal


@pytest.mark.slow  # about 55 s in the whole run at load 4-8
async def test_a_second_deploy_from_the_same_inputs_says_it_follows_the_first(toolkit_site: ToolkitSite) -> None:  # noqa: F811
    server, site, _ = await toolkit_site()
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen: Any = await open_form(pilot)
        view = await start_deploy(pilot, screen)
        await wait_for(pilot, lambda: view.phase == "done", timeout=90, what="the first deployment")
        first = view.service_id
        await pilot.press("escape")
        await wait_for(pilot, lambda: not screen.showing_deployment and screen.record is not None, what="the form")
        header = str(screen.query_one("#tk-header").render())
        assert "creates another service" not in header and "follows it" in header
        for name, value in toolkit_values(screen).items():
            screen.fields[name].value = value
        await pilot.pause()
        await pilot.press("ctrl+g")
        modal: Any = await wait_for_screen(pilot, ConfirmModal, what="the second deploy's question")
        detail = str(modal.detail)
        assert "creates another service" not in detail, detail
        assert f"service {first} " in detail and "it is followed, no service is created" in detail, detail
        assert modal.command == f"oneflow show {first}"
        await click_shown(pilot, "#confirm")
        await wait_for(pilot, lambda: view.phase == "done", timeout=90, what="the second run")
        assert view.service_id == first
    assert [s.id for s in await site.flow.list_services() if s.state_name != "DONE"] == [first]


async def test_a_second_toolkit_under_another_name_is_previewed_beside_the_running_one(  # noqa: F811
        toolkit_site: ToolkitSite) -> None:  # noqa: F811
    """Issue 20 item 7: the same inputs under another name, on a site whose toolkit is RUNNING,
    were previewed without a word of it. The question now names the live toolkit, says this
    deploys a second one beside it (asked for by its name: the question, Cancel by default)."""
    server, site, _ = await toolkit_site()
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen: Any = await open_form(pilot)
        view = await start_deploy(pilot, screen)
        await wait_for(pilot, lambda: view.phase == "done", timeout=90, what="the first deployment")
        first = view.service_id
        await pilot.press("escape")
        await wait_for(pilot, lambda: not screen.showing_deployment and screen.record is not None, what="the form")
        for name, value in toolkit_values(screen).items():
            screen.fields[name].value = value
        screen.fields["name"].value = "Site Toolkit second"
        await pilot.pause()
        await pilot.press("ctrl+g")
        modal: Any = await wait_for_screen(pilot, ConfirmModal, what="the second toolkit's question")
        detail = str(modal.detail)
        assert modal.action_label == "Deploy a second toolkit"
        assert f"the site already has a toolkit RUNNING: service {first} " in detail, detail
        assert "second toolkit beside it" in detail and "'Site Toolkit second'" in detail
        assert modal.destructive  # Cancel has the focus
        await pilot.press("escape")
    assert [s.id for s in await site.flow.list_services() if s.state_name != "DONE"] == [first]
