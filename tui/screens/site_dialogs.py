"""Modals of the site configuration screen: open or create a site, the vault password prompt,
and the preview that comes before fill and submit.

- `OpenSiteModal(listing, read_only=...)`: the site branches of the sites repository to open, or
  a new branch name to create from the template (hidden in read-only mode). Returns
  `("open", branch)`, `("create", branch)` or None.
- `PasswordModal(source, error=...)`: the vault password, masked with a reveal toggle. Returns the
  text or None. The screen checks it by decrypting and asks again, saying why, when it is wrong.
- `PreviewModal(preview, action, diff=..., note=...)`: what will change with the equivalent
  commands. Cancel has the focus; True when confirmed.
- `SubmitModal(verdict, preview, action, diff=...)`: the check's verdict, the decrypted diff and
  the git steps; with errors, a reason is required to submit anyway. Returns the reason or None.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from tui.errors import SiteError
from tui.procedures.preview import Preview
from tui.procedures.site.config import VaultPassword
from tui.procedures.site.confirmations import check_reason
from tui.procedures.site.repo import SiteListing, check_name
from tui.procedures.site.verdict import SiteVerdict
from tui.screens.site_modal import SiteModal
from widgets.secret_input import SecretInput

_KIND_GLYPHS = {"create": ("+", "green"), "update": ("~", "yellow"), "delete": ("-", "red"), "action": ("▶", "cyan"), "none": ("=", "dim")}


def localize(preview: Preview, clone: Path | None, password: VaultPassword | None) -> Preview:
    """The preview as the screen shows it: core.yaml relative to the sites clone (as git names it)
    and the vault password file by role, not by path (the status line says where it comes from)."""
    def local(cli: str) -> str:
        cli = local_text(cli, clone)
        if password is not None and password.source not in ("", "prompt"):
            cli = cli.replace(shlex.quote(password.source), "<vault password file>")
        return cli

    return replace(
        preview,
        title=local_text(preview.title, clone),
        warnings=tuple(local_text(w, clone) for w in preview.warnings),
        changes=tuple(replace(c, description=local_text(c.description, clone), cli=local(c.cli)) for c in preview.changes),
    )


def local_text(text: str, clone: Path | None) -> str:
    """`text` with the sites clone's directory left out (paths as the repository names them)."""
    return text.replace(f"{clone}/", "") if clone is not None else text


def diff_text(diff: str) -> Text:
    """A unified diff with added lines green, removed red, hunks cyan (plain text, never markup)."""
    text = Text()
    for n, line in enumerate(diff.rstrip("\n").split("\n")):
        if n:
            text.append("\n")
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(line, style)
    return text


def preview_text(preview: Preview, note: str = "") -> Text:
    """A preview as plain Rich text: each change with a glyph for its kind and its command."""
    text = Text()
    text.append(preview.title, "bold")
    for warning in preview.warnings:
        text.append("\n! ", "bold yellow")
        text.append(warning, "yellow")
    for change in preview.changes:
        glyph, style = _KIND_GLYPHS.get(change.kind, ("·", ""))
        text.append(f"\n{glyph} ", style)
        text.append(change.description)
        if change.cli:
            text.append(f"\n    $ {change.cli}", "dim")
    if note:
        text.append(f"\n\n{note}", "italic dim")
    return text


def preview_body(preview: Preview, diff: str | None = None, diff_title: str = "", note: str = "") -> RenderableType:
    """The decrypted diff (when given) above the preview."""
    parts: list[RenderableType] = []
    if diff is not None:
        parts.append(Text(diff_title, "bold"))
        parts.append(diff_text(diff) if diff else Text("(no change to the configuration)", "dim"))
        parts.append(Text(""))
    parts.append(preview_text(preview, note))
    return Group(*parts)


def verdict_text(verdict: SiteVerdict) -> Text:
    """What the check says about the text being submitted: errors (which refuse it) and warnings."""
    text = Text()
    errors, warnings = verdict.errors, verdict.warnings
    if errors:
        text.append(f"✘ The check found {len(errors)} error(s): the submit is refused unless you give a reason", "bold red")
    else:
        text.append(f"✔ The check passed ({len(warnings)} warning(s))", "bold green")
    for finding in (*errors, *warnings):
        glyph, style = ("✘", "bold red") if finding in errors else ("!", "yellow")
        text.append(f"\n{glyph} ", style)
        text.append(finding.path, "bold")
        text.append(f": {finding.message}")
    for item in verdict.unchecked():
        text.append(f"\n? not checked: {item}", "magenta")
    return text


class SubmitModal(SiteModal["str | None"]):
    """Submit: the check's verdict, the decrypted diff and the git steps. With errors, a reason is
    required (it goes into the commit message and the audit log). Returns the reason ("" when the
    check passed) or None when cancelled. Cancel has the focus."""

    AUTO_FOCUS = "#submit-cancel"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="submit.cancel")]
    DEFAULT_CSS = """
    SubmitModal { align: center middle; }
    SubmitModal > Vertical { width: 120; max-width: 96%; height: 94%;
        border: thick $warning; background: $surface; padding: 1 2; }
    SubmitModal #submit-body { height: 1fr; }
    SubmitModal .submit-label { margin: 1 0 0 0; text-style: bold; }
    SubmitModal #submit-why { color: $text-error; height: auto; }
    SubmitModal #submit-buttons { height: auto; margin: 1 0 0 0; align: right middle; }
    SubmitModal #submit-buttons Button { margin: 0 0 0 2; }
    """

    def __init__(self, verdict: SiteVerdict, preview: Preview, action: str, *, diff: str | None = None, diff_title: str = "") -> None:
        super().__init__()
        self.verdict = verdict
        self.preview = preview
        self.action_label = action
        self.diff = diff
        self.diff_title = diff_title

    def compose(self) -> ComposeResult:
        blocked = bool(self.verdict.errors)
        with Vertical():
            with VerticalScroll(id="submit-body"):
                yield Static(Group(verdict_text(self.verdict), Text(""), preview_body(self.preview, self.diff, self.diff_title)),
                             id="submit-text")
            if blocked:
                yield Label("Reason to submit anyway (goes into the commit message and the audit log)", classes="submit-label")
                yield Input(placeholder="why these errors may go to the site branch", id="submit-reason")
                yield Label("", id="submit-why")
            with Horizontal(id="submit-buttons"):
                yield Button("Cancel", id="submit-cancel")
                yield Button(Content("Submit anyway" if blocked else self.action_label), id="submit-confirm",
                             variant="error" if blocked else "primary", disabled=blocked)

    @on(Input.Changed, "#submit-reason")
    def _reason_changed(self, event: Input.Changed) -> None:
        why = ""
        if event.value.strip():
            try:
                check_reason(event.value)
            except SiteError as error:
                why = error.detail
        self.query_one("#submit-why", Label).update(Content(why))
        self.query_one("#submit-confirm", Button).disabled = not event.value.strip() or bool(why)

    @on(Button.Pressed, "#submit-confirm")
    def _confirm(self) -> None:
        if not self.verdict.errors:
            self.dismiss("")
            return
        reason = self.query_one("#submit-reason", Input).value.strip()
        if reason:
            self.dismiss(reason)

    @on(Button.Pressed, "#submit-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class OpenSiteModal(SiteModal["tuple[str, str] | None"]):
    """Pick a site branch to open, or name a new one to create from the template."""

    AUTO_FOCUS = "#open-branches"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="open-site.cancel")]
    DEFAULT_CSS = """
    OpenSiteModal { align: center middle; }
    OpenSiteModal > Vertical { width: 76; max-width: 95%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 1 2; }
    OpenSiteModal #open-title { text-style: bold; }
    OpenSiteModal #open-info { color: $text-muted; margin: 0 0 1 0; }
    OpenSiteModal #open-branches { height: auto; max-height: 12; }
    OpenSiteModal .open-label { margin: 1 0 0 0; text-style: bold; }
    OpenSiteModal #open-new-row { height: auto; }
    OpenSiteModal #open-new { width: 1fr; }
    OpenSiteModal #open-reason { color: $text-error; height: auto; }
    OpenSiteModal #open-buttons { height: auto; margin: 1 0 0 0; align: right middle; }
    OpenSiteModal #open-buttons Button { margin: 0 0 0 2; }
    """

    def __init__(self, listing: SiteListing, repository: str, *, read_only: bool = False) -> None:
        super().__init__()
        self.listing = listing
        self.repository = repository
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Open a site", id="open-title")
            yield Label(Content(f"Sites repository {self.repository}, default branch {self.listing.default_branch}"), id="open-info")
            options = [Option(Text(branch), id=branch) for branch in self.listing.sites]
            yield OptionList(*options, id="open-branches")
            if not self.listing.sites:
                yield Label("No site branch yet.", classes="open-label")
            if not self.read_only:
                yield Label("New site (branch and site directory, app_manager_deployment_site)", classes="open-label")
                with Horizontal(id="open-new-row"):
                    yield Input(placeholder="new-site-name", id="open-new")
                    yield Button("Create", id="open-create", variant="primary")
                yield Label("", id="open-reason")
            with Horizontal(id="open-buttons"):
                yield Button("Cancel", id="open-cancel")
                yield Button("Open", id="open-open", variant="primary", disabled=not self.listing.sites)

    @on(OptionList.OptionSelected, "#open-branches")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(("open", str(event.option.id)))

    @on(Button.Pressed, "#open-open")
    def _open(self) -> None:
        branches = self.query_one("#open-branches", OptionList)
        if branches.highlighted is None:
            return
        self.dismiss(("open", str(branches.get_option_at_index(branches.highlighted).id)))

    def _new_name(self) -> str | None:
        name = self.query_one("#open-new", Input).value.strip()
        reason = self.query_one("#open-reason", Label)
        try:
            check_name("branch", name)
        except SiteError as error:
            reason.update(Content(error.detail))
            return None
        if name in self.listing.sites or name == self.listing.default_branch:
            reason.update(Content(f"{name} exists already: open it from the list"))
            return None
        reason.update("")
        return name

    @on(Button.Pressed, "#open-create")
    @on(Input.Submitted, "#open-new")
    def _create(self) -> None:
        name = self._new_name()
        if name is not None:
            self.dismiss(("create", name))

    @on(Button.Pressed, "#open-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class PasswordModal(SiteModal["str | None"]):
    """Ask for the vault password (masked); `error` says why it is asked again."""

    AUTO_FOCUS = "#password-value Input"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="password.cancel")]
    DEFAULT_CSS = """
    PasswordModal { align: center middle; }
    PasswordModal > Vertical { width: 72; max-width: 95%; height: auto; border: thick $primary;
        background: $surface; padding: 1 2; }
    PasswordModal #password-title { text-style: bold; }
    PasswordModal #password-info { color: $text-muted; margin: 0 0 1 0; }
    PasswordModal #password-error { color: $text-error; height: auto; }
    PasswordModal #password-buttons { height: auto; margin: 1 0 0 0; align: right middle; }
    PasswordModal #password-buttons Button { margin: 0 0 0 2; }
    """

    def __init__(self, what: str, error: str = "") -> None:
        super().__init__()
        self.what = what
        self.error = error

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Vault password", id="password-title")
            yield Label(Content(f"{self.what} is vault-encrypted. The password (app_automation_sites_token) stays in memory only; "
                                "set vault_password_file in the config file to skip this prompt."), id="password-info")
            yield SecretInput(placeholder="vault password", id="password-value")
            yield Label(Content(self.error), id="password-error")
            with Horizontal(id="password-buttons"):
                yield Button("Cancel", id="password-cancel")
                yield Button("Unlock", id="password-ok", variant="primary")

    @on(Button.Pressed, "#password-ok")
    @on(Input.Submitted)
    def _ok(self, event: Button.Pressed | Input.Submitted) -> None:
        event.stop()
        value = self.query_one("#password-value", SecretInput).value
        if not value:
            self.query_one("#password-error", Label).update("Type the vault password.")
            return
        self.dismiss(value)

    @on(Button.Pressed, "#password-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class PreviewModal(SiteModal[bool]):
    """A preview (and optional diff) with Cancel focused and the action on the other button."""

    AUTO_FOCUS = "#preview-cancel"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="preview.cancel")]
    DEFAULT_CSS = """
    PreviewModal { align: center middle; }
    PreviewModal > Vertical { width: 120; max-width: 96%; height: auto; max-height: 94%;
        border: thick $warning; background: $surface; padding: 1 2; }
    PreviewModal #preview-body { height: auto; max-height: 30; }
    PreviewModal #preview-buttons { height: auto; margin: 1 0 0 0; align: right middle; }
    PreviewModal #preview-buttons Button { margin: 0 0 0 2; }
    """

    def __init__(self, preview: Preview, action: str, *, diff: str | None = None, diff_title: str = "", note: str = "",
                 allow: bool = True) -> None:
        super().__init__()
        self.preview = preview
        self.action_label = action
        self.diff = diff
        self.diff_title = diff_title
        self.note = note
        self.allow = allow

    def body(self) -> RenderableType:
        return preview_body(self.preview, self.diff, self.diff_title, self.note)

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll(id="preview-body"):
                yield Static(self.body(), id="preview-text")
            with Horizontal(id="preview-buttons"):
                yield Button("Cancel", id="preview-cancel")
                yield Button(Content(self.action_label), id="preview-confirm", variant="primary", disabled=not self.allow)

    @on(Button.Pressed, "#preview-confirm")
    def _confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#preview-cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)
