"""The site configuration screen (spec operations 6 and 9): core.yaml of one site branch.

Left: a YAML editor (syntax highlighting) on the decrypted text, which lives in memory only.
Right: the side panel: whether the text parses (line and column of the first error, checked
while typing, debounced), the components listed in `site_variables` with each site variable's
value and description from the component library, and the findings of every check (minimal
component set, variables, IDs that exist in the cloud, guest MTU below the NIC MTU, object store
endpoint).

Keys (the editor keeps plain letters for typing, so the screen's keys are ctrl combinations):
ctrl+o open a site branch (or create one from the template), ctrl+s save (vault-encrypted,
atomic; plain text never touches the disk), ctrl+f fill from the cloud (object store endpoint,
gate, default network, appliance IDs: previewed, then applied to the editor), ctrl+n offer a
component (library, site variables, preview, download, grants), ctrl+t submit (the decrypted diff
against the branch, then commit and push after a confirmation), ctrl+r reload from disk, ctrl+g
go to the YAML error. `--read-only` hides and refuses save, fill, components and submit, and the
editor does not accept edits.

The vault password comes from the configured vault password file, else a masked prompt; a wrong
one is asked again with the reason. Repositories come from the settings (`[site]` table).

The screen is split by what each part holds: this module the layout, the editor and its status
line; `site_file` the open site and its password (`SiteFileActions`); `site_changes` save, fill,
components and submit (`SiteChangeActions`); `site_panel` the checks and the side panel
(`SiteChecks`, `SitePanel`); `site_dialogs` and `site_components` the modals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static, TextArea

from tui.domain.components import ComponentLibrary
from tui.domain.site_fill import CloudFacts
from tui.procedures.progress import Progress
from tui.procedures.site.component_library import load_library
from tui.procedures.site.fill import gather_cloud_facts
from tui.procedures.site.workspace import library_repo
from tui.screens.base import CANCEL_CHANGE
from tui.screens.site_changes import SiteChangeActions
from tui.screens.site_file import SiteFileActions
from tui.screens.site_panel import SiteChecks, SitePanel
from widgets.confirm_modal import ConfirmModal

#: seconds of quiet typing before the text is parsed and checked again
PARSE_DEBOUNCE = 0.3


class SiteConfigScreen(SiteChangeActions):
    """core.yaml of one site: editor, side panel, open, fill, save, components, submit."""

    SCREEN_NAME = "site"
    TITLE = "Site configuration"
    CSS_PATH = "site_config.tcss"
    AUTO_FOCUS = "#site-editor"
    MUTATING_ACTIONS: ClassVar[frozenset[str]] = frozenset({"save", "fill", "components", "submit"})
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+o", "open_site", "Open site", id="site.open"),
        Binding("ctrl+s", "save", "Save", id="site.save"),
        Binding("ctrl+f", "fill", "Fill from cloud", id="site.fill"),
        Binding("ctrl+n", "components", "Components", id="site.components"),
        Binding("ctrl+t", "submit", "Submit", id="site.submit"),
        Binding("ctrl+r", "reload", "Reload", id="site.reload"),
        Binding("ctrl+g", "goto_error", "Go to error", show=False, id="site.goto-error"),
        CANCEL_CHANGE,
    ]

    # ------------------------------------------------------------------ messages

    @dataclass
    class LibraryLoaded(Message):
        library: ComponentLibrary

    @dataclass
    class FactsLoaded(Message):
        facts: CloudFacts

    # ------------------------------------------------------------------ state

    def __init__(self) -> None:
        super().__init__()
        #: the decrypted text as last loaded or saved (what "unsaved changes" compares with)
        self.saved_text: str | None = None
        #: the parsed text, the library, the cloud facts and what the checks found (the side panel)
        self.checks = SiteChecks()
        self._parse_timer: Timer | None = None
        self._loading = False

    # ------------------------------------------------------------------ layout

    def compose_body(self) -> ComposeResult:
        with Vertical(id="site-body"):
            yield Static(Text("Loading the sites repository…", "dim"), id="site-status")
            with Horizontal(id="site-main"):
                editor = TextArea.code_editor("", language="yaml", theme="css", id="site-editor", read_only=True, soft_wrap=False)
                editor.border_title = "core.yaml"
                yield editor
                yield SitePanel(id="site-panel")

    @property
    def editor(self) -> TextArea:
        return self.query_one("#site-editor", TextArea)

    @property
    def dirty(self) -> bool:
        return self.saved_text is not None and self.editor.text != self.saved_text

    def unsaved_changes(self) -> str | None:
        return f"unsaved changes to {self._site_label()}" if self.dirty else None

    def on_mount(self) -> None:
        self.editor.cursor_blink = not self.app.is_headless  # a blinking cursor makes pictures differ
        self._render_panel()
        settings = self.site.settings
        if not settings.sites_repo:
            self._status(Text.assemble(("No sites repository configured. ", "bold yellow"),
                                       "Set sites_repo (and library_repo, vault_password_file) in the [site] table of the config file, "
                                       "or SITETK_SITES_REPO; then ctrl+o opens a site."))
            return
        if settings.library_repo:
            self._load_library()
        self._list_sites(choose=True)

    def on_screen_resume(self) -> None:
        """Shown again with no site open: take the site branch another screen opened meanwhile in
        the same working clone (the setup's `plan_components` -> `open_site`), instead of saying
        "No site open" (issue 20 item 11)."""
        super().on_screen_resume()
        # before the first listing, the mount's chooser is on its way
        if self.site_ref is None and not self.busy and self.listing is not None:
            self._find_open_site()

    def _status(self, text: Text | str) -> None:
        self.query_one("#site-status", Static).update(text if isinstance(text, Text) else Text(text))

    def _show_site_status(self) -> None:
        if self.site_ref is None:
            self._status(Text("No site open: ctrl+o opens a site branch or creates one.", "dim"))
            return
        text = Text.assemble(("Site ", ""), (self.site_ref.site_dir, "bold"), f" · branch {self.site_ref.branch} · vault-encrypted at rest")
        if self.password is not None:
            text.append(f" · password from {'the prompt' if self.password.source == 'prompt' else 'the vault password file'}", "dim")
        if self.read_only:
            text.append(" · read-only", "bold yellow")
        if self.busy:
            text.append(f" · {self.busy}…", "yellow")
            if self.changing and self.change is not None:
                step = self.change.events[-1].message if self.change.events else ""
                text.append(f" {step}" if step else "", "dim")
                text.append(" · cancelling" if self.change.cancelling else " · esc cancels", "dim")
        self._status(text)

    def change_step(self, event: Progress) -> None:
        """A save, create or submit reports a step: the status line follows it."""
        self._show_site_status()

    def change_cancelling(self) -> None:
        self._show_site_status()

    # ------------------------------------------------------------------ workers: repository and library

    @work(exclusive=True, group="site-library", exit_on_error=False)
    async def _load_library(self) -> None:
        await self.site.wait_for_repositories()
        repo = library_repo(self.site.settings)
        try:
            library = await load_library(repo, self.site.naming)
        finally:
            repo.close()
        self.post_message(self.LibraryLoaded(library))

    @on(LibraryLoaded)
    def _library_loaded(self, message: LibraryLoaded) -> None:
        self.checks.library = message.library
        for problem in message.library.problems:
            self.shell.toast(problem, title="Component library", severity="warning")
        self._recheck()
        if self.saved_text is not None:
            self._gather_facts()  # what the listed components' appliances are needs the library

    # ------------------------------------------------------------------ the vault password

    # ------------------------------------------------------------------ open, create, load

    @on(SiteFileActions.Loaded)
    def _loaded_text(self, message: SiteFileActions.Loaded) -> None:
        if not message.text:
            return
        self.busy = ""
        self.saved_text = message.text
        self._loading = True
        self.editor.load_text(message.text)
        self.editor.read_only = self.read_only
        self.editor.border_title = f"{message.site_ref.site_dir}/core.yaml"
        self._show_site_status()
        self.refresh_bindings()
        self._reparse()
        self._gather_facts()

    def worker_failed(self, worker: Any, error: BaseException) -> None:
        self.busy = ""
        self._show_site_status()
        super().worker_failed(worker, error)

    # ------------------------------------------------------------------ live parse and checks

    @on(TextArea.Changed, "#site-editor")
    def _edited(self) -> None:
        if self._loading:
            self._loading = False
            return
        if self._parse_timer is not None:
            self._parse_timer.stop()
        self._parse_timer = self.set_timer(PARSE_DEBOUNCE, self._reparse)

    def _reparse(self) -> None:
        self.checks.parse(self.editor.text, self.site.naming)
        self._render_panel()

    def _recheck(self) -> None:
        self.checks.recheck(self.site.naming)
        self._render_panel()

    def _render_panel(self) -> None:
        panel = self.query_one("#site-panel", SitePanel)
        if self.saved_text is None:
            panel.show(Text("No site open.", "dim"), Text(""), Text(""))
            return
        self.editor.border_subtitle = self.checks.subtitle(dirty=self.dirty)
        self.checks.show(panel, dirty=self.dirty)

    def action_goto_error(self) -> None:
        error = self.checks.parse_error
        if error is None or not error.line:
            self.shell.toast("The text parses: no error to go to")
            return
        self.editor.move_cursor((error.line - 1, max(0, error.column - 1)))
        self.editor.focus()

    # ------------------------------------------------------------------ cloud facts

    @work(exclusive=True, group="site-facts", exit_on_error=False)
    async def _gather_facts(self) -> None:
        definitions = self.checks.definitions
        facts = await gather_cloud_facts(self.site, self.checks.config, definitions)
        self.post_message(self.FactsLoaded(facts))

    @on(FactsLoaded)
    def _facts_loaded(self, message: FactsLoaded) -> None:
        self.checks.facts = message.facts
        self._recheck()

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = super().check_action(action, parameters)
        if not allowed:
            return allowed
        if action in ("save", "fill", "components", "submit", "reload") and self.site_ref is None:
            return None  # shown disabled until a site is open
        return True

    def action_open_site(self) -> None:
        if not self.site.settings.sites_repo:
            self.shell.toast("No sites repository configured (sites_repo in the [site] table)", severity="warning")
            return
        if self.dirty:
            self.shell.toast("Save or reload first: the editor has unsaved changes", severity="warning")
            return
        self._list_sites(choose=True)

    def action_reload(self) -> None:
        if self.site_ref is None:
            return

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.saved_text = None
                self._decrypt()

        if self.dirty:
            self.app.push_screen(ConfirmModal("Discard unsaved changes", self._site_label(),
                                              detail="The editor goes back to the file as saved."), confirmed)
        else:
            confirmed(True)

    # fill ---------------------------------------------------------------------------------------

    # components -----------------------------------------------------------------------------------

    # submit ---------------------------------------------------------------------------------------

    # ------------------------------------------------------------------ palette and teardown

    def palette_commands(self) -> Any:
        yield SystemCommand("Open site", "Open a site branch or create one (ctrl+o)", self.action_open_site)
        if not self.read_only:
            yield SystemCommand("Fill from the cloud", "Object store, gate, network and appliance IDs (ctrl+f)", self.action_fill)
            yield SystemCommand("Offer a component", "Library, site variables, appliance, permissions (ctrl+n)", self.action_components)
            yield SystemCommand("Submit the site", "Diff, then commit and push (ctrl+t)", self.action_submit)

    def on_unmount(self) -> None:
        if self.repo is not None:
            self.repo.close()
