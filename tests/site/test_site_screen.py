"""Pilot tests of the site configuration screen against the embedded deployed site: open, live
parse errors, save (encrypted), fill from the cloud, the component flow, submit, the password
prompt and read-only mode."""

from __future__ import annotations

import dataclasses
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import OptionList

from tests.site.conftest import settings_for
from tui.adapters.vault import VaultPassword, decrypt_text, is_vault_text, read_vault_file
from tui.app import SiteToolkitApp
from tui.domain.site_config import SiteConfig, SiteConfigError
from tui.procedures.connection import SiteConnection
from tui.screens.site_components import USER_FIELD, ComponentFlowModal
from tui.screens.site_config import SiteConfigScreen
from tui.screens.site_dialogs import OpenSiteModal, PasswordModal, PreviewModal, SubmitModal
from tui.screenshots import click_shown, frozen_clock, wait_for, wait_for_screen
from tui.settings import Settings
from tui.sim.acl import rule_of
from tui.sim.repos import SIM_VAULT_PASSWORD
from tui.sim.server import SimServer
from widgets.confirm_modal import ConfirmModal
from widgets.validated_field import ValidatedField

SIZE = (140, 40)
PASSWORD = VaultPassword.from_text(SIM_VAULT_PASSWORD)


def site_app(server: SimServer, tmp_path: Path, *, read_only: bool = False, **overrides: Any) -> SiteToolkitApp:
    settings: Settings = dataclasses.replace(settings_for(server, tmp_path), refresh_interval=3600.0, theme="textual-dark", **overrides)
    return SiteToolkitApp(SiteConnection(settings), read_only=read_only, clock=frozen_clock, initial_screen="site",
                          notification_timeout=3600)


async def choose(pilot: Any, branch: str = "demo-site") -> None:
    modal = await wait_for_screen(pilot, OpenSiteModal, what="the site chooser")
    branches = modal.query_one("#open-branches", OptionList)
    branches.highlighted = next(i for i in range(branches.option_count) if branches.get_option_at_index(i).id == branch)
    branches.focus()
    await pilot.press("enter")


def site_screen(app: SiteToolkitApp) -> SiteConfigScreen:
    screen = next(s for s in app.screen_stack if isinstance(s, SiteConfigScreen))
    return screen


async def opened(pilot: Any) -> SiteConfigScreen:
    await choose(pilot)
    await wait_for(pilot, lambda: any(isinstance(s, SiteConfigScreen) for s in pilot.app.screen_stack), what="the site screen")
    screen = site_screen(pilot.app)
    await wait_for(pilot, lambda: screen.saved_text is not None and screen.checks.library is not None and screen.checks.facts is not None
                   and screen.checks.facts.identity is not None and screen.checks.checked_text == screen.editor.text and not screen.busy,
                   what="the site loaded")
    return screen


async def edited(pilot: Any, screen: SiteConfigScreen, old: str, new: str) -> None:
    text = screen.editor.text
    assert old in text
    screen.editor.replace(text.replace(old, new, 1), (0, 0), screen.editor.document.end)
    await wait_for(pilot, lambda: screen.checks.checked_text == screen.editor.text, what="the debounced parse")


def panel_text(screen: SiteConfigScreen) -> str:
    """The side panel as plain text (what the operator reads)."""
    from rich.console import Console

    console = Console(width=200, record=True, file=open("/dev/null", "w"))
    panel = screen.query_one("#panel-components")
    console.print(panel.content)  # type: ignore[attr-defined]
    return console.export_text()


def remote_head(server: SimServer) -> str:
    return subprocess.run(["git", "--git-dir", str(server.site.sites_repo), "rev-parse", "demo-site"],
                          capture_output=True, text=True, check=True).stdout.strip()


def notifications(app: SiteToolkitApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_open_parse_error_and_save(deployed: SimServer, tmp_path: Path) -> None:
    app = site_app(deployed, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        path = screen.site_ref.path  # type: ignore[union-attr]
        before = path.read_bytes()
        assert screen.editor.text == read_vault_file(path, PASSWORD)
        assert screen.checks.parse_error is None and not screen.dirty
        # a YAML error: line and column, the file untouched, save refused
        await click_shown(pilot, "#site-editor")
        await wait_for(pilot, lambda: app.focused is screen.editor, what="the editor's focus")
        screen.editor.move_cursor((11, 0))
        await pilot.press(*"bad: [", "enter")
        await wait_for(pilot, lambda: screen.checks.parse_error is not None and screen.checks.checked_text == screen.editor.text, what="the parse error")
        with pytest.raises(SiteConfigError) as expected:
            SiteConfig.parse(screen.editor.text)
        error = screen.checks.parse_error
        assert error is not None and (error.line, error.column) == (expected.value.line, expected.value.column) and error.line >= 12
        assert f"line {error.line}, column {error.column}" in str(screen.editor.border_subtitle)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any(m.startswith("Fix the YAML first") for m in notifications(app)), what="the refusal")
        assert path.read_bytes() == before
        # fixed, saved: vault text on disk that decrypts to the editor's text
        await edited(pilot, screen, "bad: [\n", "")
        assert screen.checks.parse_error is None and not screen.dirty
        await edited(pilot, screen, 'site_domain: "trial.demo.internal"', 'site_domain: "trial.lab.internal"')
        assert screen.checks.parse_error is None and screen.dirty
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not screen.dirty and not screen.busy, what="the save")
        raw = path.read_text()
        assert is_vault_text(raw) and 'site_domain: "trial.lab.internal"' in read_vault_file(path, PASSWORD)
        assert oct(path.stat().st_mode & 0o777) == "0o600"
        assert [p.name for p in path.parent.iterdir()] == ["core.yaml"]  # no temporary or plain copy left
        assert "trial.lab.internal" not in raw


async def test_fill_from_the_cloud_goes_into_the_editor(deployed: SimServer, tmp_path: Path) -> None:
    app = site_app(deployed, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        before = screen.site_ref.path.read_bytes()  # type: ignore[union-attr]
        await pilot.press("ctrl+f")
        modal = await wait_for_screen(pilot, PreviewModal, what="the fill preview")
        assert "site_s3_server.endpoint" in str(modal.preview.changes[0].description)
        assert all("<vault password file> demo-site/core.yaml" in c.cli for c in modal.preview.changes)
        await click_shown(pilot, "#preview-confirm")
        await wait_for(pilot, lambda: screen.dirty and screen.checks.checked_text == screen.editor.text, what="the filled editor")
        assert 'endpoint: "https://10.11.28.20:9000"' in screen.editor.text and 'site_onegate: "10.11.28.1"' in screen.editor.text
        assert screen.site_ref.path.read_bytes() == before  # nothing written until saved  # type: ignore[union-attr]


async def test_component_flow_and_submit(deployed: SimServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ComponentFlowModal, "POLL_INTERVAL", 0.02)
    app = site_app(deployed, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pilot.press("ctrl+n")
        modal = await wait_for_screen(pilot, ComponentFlowModal, what="the component flow")
        components = modal.query_one("#flow-components", OptionList)
        components.focus()
        components.highlighted = next(i for i in range(components.option_count) if components.get_option_at_index(i).id == "vm_kvm")
        await pilot.press("enter")
        await wait_for(pilot, lambda: modal.step == "-form", what="the form")
        labels = [f.label for f in modal.query("ValidatedField")]
        assert labels == [USER_FIELD, "template_id", "image_id"]
        # the cloud user the grants go to is named, never guessed: empty, the review is not planned
        await click_shown(pilot, "#flow-next")
        await pilot.pause()
        user = next(f for f in modal.query(ValidatedField) if f.label == USER_FIELD)
        assert modal.step == "-form" and user.reason and "required" in user.reason
        user.value = "tkauto"
        await pilot.pause()
        await click_shown(pilot, "#flow-next")
        await wait_for(pilot, lambda: modal.step == "-review" and not modal.query_one("#flow-enable").disabled, what="the review")
        await click_shown(pilot, "#flow-enable")
        await wait_for(pilot, lambda: modal.step == "-finished", timeout=30, what="the provisioning")
        learned = modal.learned
        assert set(learned) == {"template_id", "image_id"}
        await click_shown(pilot, "#flow-close")
        await wait_for(pilot, lambda: app.screen is screen and screen.saved_text and f"template_id: {learned['template_id']}" in screen.editor.text,
                       what="the reloaded configuration")
        rules = {rule_of(acl).to_str() for acl in deployed.site.acls.values()}
        assert f"#2 IMAGE/#{learned['image_id']} USE #0" in rules
        # the panel follows without a refresh: vm_kvm now holds its appliance, tn_bastion still the Ubuntu 0s
        await wait_for(pilot, lambda: screen.checks.facts is not None and screen.checks.checked_text == screen.editor.text
                       and not any(f.path.startswith("site_variables.vm_kvm") for f in screen.checks.findings)
                       and "✔ vm_kvm  complete" in panel_text(screen), what="the refreshed panel")
        assert "✘ tn_bastion  incomplete" in panel_text(screen) and "tn_bastion  complete" not in panel_text(screen)
        # submit: the check's errors refuse it until a reason is given; the decrypted diff, then commit and push
        remote = remote_head(deployed)
        await pilot.press("ctrl+t")
        preview = await wait_for_screen(pilot, SubmitModal, what="the submit preview")
        assert f"+    template_id: {learned['template_id']}" in (preview.diff or "")
        assert {f.path for f in preview.verdict.errors} >= {"site_variables.tn_bastion.image_id", "site_onegate"}
        assert app.focused is not None and app.focused.id == "submit-cancel"
        assert preview.query_one("#submit-confirm").disabled and remote_head(deployed) == remote
        preview.query_one("#submit-reason").focus()
        await pilot.press(*"bastion next week")
        await wait_for(pilot, lambda: not preview.query_one("#submit-confirm").disabled, what="the reason accepted")
        await click_shown(pilot, "#submit-confirm")
        await wait_for(pilot, lambda: any("submitted" in m for m in notifications(app)), what="the submit")
        pushed = subprocess.run(["git", "--git-dir", str(deployed.site.sites_repo), "show", "demo-site:demo-site/core.yaml"],
                                capture_output=True, text=True, check=True).stdout
        assert is_vault_text(pushed) and f"template_id: {learned['template_id']}" in decrypt_text(pushed, PASSWORD)
        message = subprocess.run(["git", "--git-dir", str(deployed.site.sites_repo), "log", "-1", "--format=%B", "demo-site"],
                                 capture_output=True, text=True, check=True).stdout
        assert "check error(s) overridden: bastion next week" in message
        entry = [e for e in app.site.audit.entries() if e["action"] == "site.submit"][-1]
        assert entry["details"]["override_reason"] == "bastion next week"


async def test_password_prompt_when_no_file(deployed: SimServer, tmp_path: Path) -> None:
    app = site_app(deployed, tmp_path, vault_password_file=None)
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot)
        modal = await wait_for_screen(pilot, PasswordModal, what="the password prompt")
        await pilot.press(*"wrong-password", "enter")
        again = await wait_for(pilot, lambda: isinstance(s := app.screen, PasswordModal) and s is not modal and s.is_mounted
                               and s.query("#password-error") and s, what="the second prompt")
        assert "Wrong vault password" in again.error
        await pilot.press(*SIM_VAULT_PASSWORD, "enter")
        screen = site_screen(app)
        await wait_for(pilot, lambda: screen.saved_text is not None, what="the decrypted site")
        assert screen.password is not None and screen.password.source == "prompt"


async def test_read_only_hides_changes(deployed: SimServer, tmp_path: Path) -> None:
    app = site_app(deployed, tmp_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        modal = await wait_for_screen(pilot, OpenSiteModal, what="the site chooser")
        assert not modal.query("#open-create")
        await choose(pilot)
        screen = site_screen(app)
        await wait_for(pilot, lambda: screen.saved_text is not None, what="the site")
        assert screen.editor.read_only
        shown = {active.binding.action for active in screen.active_bindings.values()}
        assert "open_site" in shown and not shown & {"save", "fill", "components", "submit"}
        path = screen.site_ref.path  # type: ignore[union-attr]
        before = path.read_bytes()
        await pilot.press("ctrl+s", "ctrl+n", "ctrl+t")
        await pilot.pause()
        assert app.screen is screen and path.read_bytes() == before
        assert not screen.check_action("save", ()) and not screen.check_action("submit", ())


async def test_create_a_site_from_the_template(deployed: SimServer, tmp_path: Path) -> None:
    app = site_app(deployed, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        modal = await wait_for_screen(pilot, OpenSiteModal, what="the site chooser")
        modal.query_one("#open-new").focus()
        await pilot.press(*"bad/name", "enter")
        await wait_for(pilot, lambda: "use letters, digits" in str(modal.query_one("#open-reason").render()), what="the refusal")
        assert app.screen is modal and "use letters, digits" in str(modal.query_one("#open-reason").render())
        modal.query_one("#open-new").value = ""  # type: ignore[attr-defined]
        await pilot.press(*"lab-new", "enter")
        preview = await wait_for_screen(pilot, PreviewModal, what="the create preview")
        assert [c.cli.split()[:2] for c in preview.preview.changes] == [["git", "checkout"], ["git", "mv"], ["ansible-vault", "encrypt"]]
        assert "<vault password file> lab-new/core.yaml" in preview.preview.changes[2].cli
        await click_shown(pilot, "#preview-confirm")
        await wait_for(pilot, lambda: any(isinstance(s, SiteConfigScreen) for s in app.screen_stack), what="the site screen")
        screen = site_screen(app)
        await wait_for(pilot, lambda: screen.saved_text is not None and screen.site_ref is not None, what="the new site")
        assert screen.site_ref.branch == "lab-new" and screen.site_ref.site_dir == "lab-new"  # type: ignore[union-attr]
        assert is_vault_text(screen.site_ref.path.read_text())  # type: ignore[union-attr]
        assert screen.editor.text.startswith("# Site configuration of one experimentation site")


async def test_quitting_with_unsaved_changes_asks_first(deployed: SimServer, tmp_path: Path) -> None:
    app = site_app(deployed, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await edited(pilot, screen, "bucket: \"trial-networks\"", "bucket: \"trial-networks-2\"")
        assert screen.dirty
        await pilot.press("ctrl+q")
        modal = await wait_for_screen(pilot, ConfirmModal, what="the question before quitting")
        assert modal.action_label == "Quit without saving" and "unsaved changes to demo-site/core.yaml" in modal.object_name
        assert app.focused is not None and app.focused.id == "cancel"  # the default keeps the work
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is screen, what="back to the editor")
        assert app.is_running and screen.dirty

        await pilot.press("ctrl+q")
        await wait_for_screen(pilot, ConfirmModal, what="the question again")
        await pilot.press("ctrl+q")  # the same key once more: quit anyway
        await wait_for(pilot, lambda: not app.is_running, what="the exit")


async def test_the_site_screen_finds_the_branch_the_setup_opened_when_shown(deployed: SimServer, tmp_path: Path) -> None:
    """Issue 20 item 11: "No site open" right after the setup opened the site branch. The setup opens
    the branch in the same working clone (`setup_components.plan_components` -> `open_site`); the
    site screen, shown again, takes it without ctrl+o."""
    from tests.procedure_run import run_procedure
    from tui.procedures.site.repo import open_site
    from tui.procedures.site.workspace import sites_repo

    app = site_app(deployed, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, OpenSiteModal, what="the site chooser")
        await pilot.press("escape")
        screen = site_screen(app)
        await wait_for(pilot, lambda: app.screen is screen and "No site open" in str(screen.query_one("#site-status").render()),
                       what="no site open")
        app.open_screen("vms")
        await wait_for(pilot, lambda: app.screen is not screen, what="another screen")
        await run_procedure(partial(open_site, sites_repo(app.site.settings), "demo-site", None))  # what the setup does
        app.open_screen("site")
        await wait_for(pilot, lambda: screen.site_ref is not None and screen.saved_text is not None and not screen.busy,
                       what="the branch the setup opened")
        assert screen.site_ref.branch == "demo-site"
        assert not any(isinstance(s, OpenSiteModal) for s in app.screen_stack)
        assert "No site open" not in str(screen.query_one("#site-status").render())
