"""Pilot tests of the toolkit screen (form, files, deployment view) and the key view, against the
embedded site over loopback."""

from __future__ import annotations

import json
import os
import stat
from functools import partial
from pathlib import Path
from typing import Any

from textual.widgets import Input, Label, Select

from tests.procedure_run import collect
from tests.toolkit.conftest import FAST, ToolkitSite, filled
from tests.ui.conftest import console_app
from tui.adapters.cloud import json_document_template
from tui.app import SiteToolkitApp
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.procedures.site_record import load_site_record
from tui.procedures.toolkit.instantiate import deploy_toolkit, plan_deploy
from tui.procedures.toolkit.service import load_form
from tui.screens.toolkit import ToolkitScreen
from tui.screens.toolkit_files import InputFileModal
from tui.screens.toolkit_key import KeyScreen
from tui.screenshots import click_shown, toolkit_values, wait_for, wait_for_screen
from widgets.confirm_modal import ConfirmModal
from widgets.secret_input import SecretInput

SIZE = (140, 40)


async def open_form(pilot: Any) -> ToolkitScreen:
    app: SiteToolkitApp = pilot.app
    await wait_for(pilot, lambda: app.info is not None, what="the connection")
    app.open_screen("toolkit")
    screen = await wait_for(pilot, lambda: isinstance(app.screen, ToolkitScreen) and app.screen.ready and app.screen,
                            timeout=30, what="the toolkit form")
    screen.poll_interval = 0.05
    return screen


async def start_deploy(pilot: Any, screen: ToolkitScreen) -> Any:
    """Fill the form with valid values, deploy and confirm; returns the deployment view."""
    for name, value in toolkit_values(screen).items():
        screen.fields[name].value = value
    await pilot.pause()
    await pilot.press("ctrl+g")
    await wait_for_screen(pilot, ConfirmModal, what="the preview")
    await click_shown(pilot, "#confirm")
    return screen.deploy_view


def reason(screen: ToolkitScreen, name: str) -> str:
    return str(screen.fields[name].query_one(".field-reason", Label).render())


async def test_the_form_has_every_input_grouped_prefilled_and_an_extra_one(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    body = json.loads(json.dumps(dict(template.body)))
    body["name"] = "Site Toolkit v0.6.0"
    body["user_inputs"]["site_region"] = "O|text|Region label"
    await site.cloud.document_allocate(json_document_template(body, body["name"]), SERVICE_TEMPLATE_DOCUMENT)
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        assert screen.form.template.name == "Site Toolkit v0.6.0"  # the newest toolkit template
        assert len(screen.fields) == 1 + 24  # the instance name, the 23 inputs, the extra one
        groups = [str(label.render()) for label in screen.query(".tk-group")]
        assert groups == ["Service instance", "Object store", "Automation server", "Trial-network manager",
                          "Time-series database", "Other"]
        assert screen.fields["name"].value == "Site Toolkit v0.6.0"
        port = server.xmlrpc_url.rsplit(":", 1)[1].split("/")[0]  # the platform's port, the VMs' address
        assert screen.fields["app_automation_cloud_endpoint"].value == f"http://10.11.28.1:{port}/RPC2"
        assert screen.fields["app_automation_cloud_username"].value == ""  # not the console's oneadmin
        assert screen.query_one("#in-network_3a_Public", Select).value == "0"
        secret = screen.fields["app_automation_password"].query_one(SecretInput)
        assert secret.input.password is True
        assert "Region label" in str(screen.fields["site_region"].query_one(".field-label", Label).render())
        # two toolkit templates: a Select offers both
        assert len(screen.query_one("#tk-template", Select)._options) == 2  # noqa: SLF001


async def test_inline_validation_blocks_deploy_and_focuses_the_first_invalid_field(toolkit_site: ToolkitSite) -> None:
    server, site, _ = await toolkit_site()
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        endpoint = screen.fields["app_automation_cloud_flow_endpoint"]
        endpoint.value = ""
        endpoint.focus()
        await pilot.press(*"http://10.0.0.1/flow")
        await wait_for(pilot, lambda: "no port" in reason(screen, "app_automation_cloud_flow_endpoint"),
                       what="the inline reason")
        assert reason(screen, "app_objectstore_hostname") == ""  # untouched fields stay quiet

        await pilot.press("ctrl+g")
        await pilot.pause()
        await wait_for(pilot, lambda: reason(screen, "app_objectstore_hostname") == "required", what="the blocked deploy")
        assert not isinstance(pilot.app.screen, ConfirmModal)
        assert reason(screen, "app_objectstore_hostname") == "required"
        hostname_input = screen.fields["app_objectstore_hostname"].query_one(Input)
        assert pilot.app.focused is hostname_input  # the first invalid field

        values = toolkit_values(screen)
        for name, value in values.items():
            screen.fields[name].value = value
        await pilot.pause()
        await pilot.press("ctrl+g")
        modal = await wait_for_screen(pilot, ConfirmModal, what="the deployment preview")
        assert modal.command == "oneflow-template instantiate 0 <input file>"
        assert pilot.app.focused is not None and pilot.app.focused.id == "cancel"
        await pilot.press("escape")
        await wait_for(pilot, lambda: pilot.app.screen is screen, what="back to the form")
        assert await site.flow.list_services() == ()  # cancelled: nothing created


async def test_secrets_are_masked_until_revealed(toolkit_site: ToolkitSite) -> None:
    server, _, _ = await toolkit_site()
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        field = screen.fields["app_timeseries_token"]
        field.focus()
        await pilot.press(*"tok-123456")
        secret = field.query_one(SecretInput)
        assert secret.input.password is True
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: secret.revealed, what="the reveal")
        assert secret.input.password is False and secret.revealed
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: not secret.revealed, what="the mask")
        assert secret.input.password is True
        tls_key = screen.fields["app_objectstore_tls_key"]
        assert not tls_key.query_one("TextArea").display  # the multi-line secret is masked too


async def test_save_without_secrets_then_load_and_a_malformed_file(toolkit_site: ToolkitSite, tmp_path: Path) -> None:
    server, _, _ = await toolkit_site()
    target = tmp_path / "inputs.json"
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        values = toolkit_values(screen)
        for name, value in values.items():
            screen.fields[name].value = value
        await pilot.press("ctrl+s")
        modal = await wait_for_screen(pilot, InputFileModal, what="the save dialog")
        modal.query_one("#file-path", Input).value = str(target)
        await click_shown(pilot, "#file-ok")
        await wait_for(pilot, lambda: target.exists(), what="the saved file")
        assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
        text = target.read_text()
        assert not any(values[f.name] in text for f in screen.form.fields if f.secret and f.mandatory)
        assert json.loads(text)["user_inputs_values"]["app_manager_sites_branch"] == "demo-site"  # 7.x key

        for widget in screen.fields.values():
            widget.value = ""
        screen.load_file(str(target))
        await pilot.pause()
        assert screen.fields["app_manager_sites_branch"].value == "demo-site"
        assert screen.fields["app_automation_password"].value == ""  # left out: to type here
        assert screen.fields["name"].value == "Site Toolkit v0.5.0"
        await wait_for(pilot, lambda: reason(screen, "app_automation_password") == "required", what="the reason")

        broken = tmp_path / "broken.json"
        broken.write_text('{\n  "name": "x",\n  "custom_attrs_values": {"a": 1\n}\n')
        screen.load_file(str(broken))
        await pilot.pause()
        assert pilot.app.last_error is not None and "line 5, column 1" in pilot.app.last_error[1]


async def test_deploy_is_followed_live_and_a_failure_shows_the_log(toolkit_site: ToolkitSite) -> None:
    server, site, _ = await toolkit_site()
    server.site.faults.fail_role = "automation"
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        view = await start_deploy(pilot, screen)
        await wait_for(pilot, lambda: view.phase == "failed", timeout=60, what="the failed deployment")
        assert any("Role automation" in line for line in view.log_lines)
        assert view.query_one("#dv-log").has_class("-shown")
        assert "FAILED_DEPLOYING" in str(view.query_one("#dv-title").render())
        await pilot.press("escape")
        assert not screen.showing_deployment


async def test_escape_stops_following_and_leaves_the_service(toolkit_site: ToolkitSite) -> None:
    server, site, _ = await toolkit_site()
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        view = await start_deploy(pilot, screen)
        await wait_for(pilot, lambda: view.service_id is not None, what="the service")
        await pilot.press("escape")
        await wait_for(pilot, lambda: view.phase == "cancelled", timeout=30, what="the follow to stop")
        service_id = view.service_id
        assert (await site.flow.get_service(service_id)).state_name != "DONE"  # left as it was

        # back to the form, then follow the recorded deployment again: it reaches RUNNING
        await pilot.press("escape")
        assert not screen.showing_deployment and screen.record.service_id == service_id
        await pilot.press("ctrl+f")
        await wait_for(pilot, lambda: view.phase == "done", timeout=60, what="the followed deployment")
        assert view.service_id == service_id and "Deployed" in str(view.query_one("#dv-title").render())
    assert (await site.flow.get_service(service_id)).state_name == "RUNNING"


async def test_key_view_grants_once_and_hides_the_grant_in_read_only(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    file, _ = filled(form)
    await collect(partial(deploy_toolkit, site, plan_deploy(form, file), **FAST))
    record = load_site_record(site.settings)

    async with console_app(server, read_only=True).run_test(size=SIZE) as pilot:
        app: SiteToolkitApp = pilot.app
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("toolkit")
        await pilot.pause()
        assert not isinstance(app.screen, ToolkitScreen)  # the form changes the cloud: hidden
        app.open_screen("key")
        screen = await wait_for_screen(pilot, KeyScreen, what="the key view")
        await wait_for(pilot, lambda: not screen.load_pending, what="the key view's load")
        assert screen.plan is not None and not screen.plan.already
        assert screen.check_action("grant", ()) is False
        await pilot.press("g")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmModal)

    async with console_app(server).run_test(size=SIZE) as pilot:
        app = pilot.app
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("key")
        screen = await wait_for_screen(pilot, KeyScreen, what="the key view")
        await wait_for(pilot, lambda: not screen.load_pending, what="the key view's load")
        assert screen.automation.key.line == record.automation_public_key
        await pilot.press("g")
        modal = await wait_for_screen(pilot, ConfirmModal, what="the preview")
        assert modal.command == "oneuser update tkauto <key file> --append"
        await click_shown(pilot, "#confirm")
        await wait_for(pilot, lambda: app.screen is screen and not screen.busy and screen.plan is not None
                       and screen.plan.already, timeout=30, what="the grant")
        assert screen.check_action("grant", ()) is None  # nothing left to grant
    tkauto = next(u for u in await site.cloud.list_users() if u.name == "tkauto")
    assert (await site.cloud.user_info(tkauto.id)).ssh_public_keys == (record.automation_public_key,)
    assert load_site_record(site.settings).key_granted_to == ("tkauto",)


async def test_read_only_key_view_without_a_deployment_names_what_can_be_opened(toolkit_site: ToolkitSite) -> None:
    """Issue 20 item 11: read-only, the key view pointed at `:toolkit`, a screen read-only mode hides."""
    server, _, _ = await toolkit_site()
    async with console_app(server, read_only=True).run_test(size=SIZE) as pilot:
        app: SiteToolkitApp = pilot.app
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("key")
        screen = await wait_for_screen(pilot, KeyScreen, what="the key view")
        await wait_for(pilot, lambda: not screen.load_pending, what="the key view's load")
        assert screen.record is None
        said = screen.render_content()
        text = said.plain if hasattr(said, "plain") else str(said)
        assert ":toolkit" not in text and "on the Toolkit screen" not in text, text
        assert "read-only" in text and "sitetk toolkit deploy" in text, text
        assert "toolkit" not in {spec.name for spec in app.available_screens()}
    async with console_app(server).run_test(size=SIZE) as pilot:
        app = pilot.app
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("key")
        screen = await wait_for_screen(pilot, KeyScreen, what="the key view")
        await wait_for(pilot, lambda: not screen.load_pending, what="the key view's load")
        said = screen.render_content()
        assert ":toolkit" in (said.plain if hasattr(said, "plain") else str(said))  # writable: the form opens
