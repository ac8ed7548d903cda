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
from tui.domain.site_checks import Finding
from tui.domain.site_config import SiteConfig, SiteConfigError
from tui.domain.site_fill import CloudFacts
from tui.errors import SiteError
from tui.procedures.progress import Progress
from tui.procedures.site.component_library import load_library
from tui.procedures.site.config import load_site_config
from tui.procedures.site.file_operations import SaveSite
from tui.procedures.site.fill import FillPlan, fill_text, gather_cloud_facts, plan_fill
from tui.procedures.site.repo import (
    SubmitPreview,
    preview_submit,
)
from tui.procedures.site.submit_operation import SubmitPlan, SubmitSite
from tui.procedures.site.verdict import SiteVerdict, site_verdict, submit_gate, verdict_of
from tui.procedures.site.workspace import library_repo
from tui.screens.base import CANCEL_CHANGE
from tui.screens.site_components import ComponentFlowModal
from tui.screens.site_dialogs import PreviewModal, SubmitModal, localize
from tui.screens.site_file import SiteFileActions
from tui.screens.site_panel import SitePanel, components_text, findings_text, parse_text
from widgets.confirm_modal import ConfirmModal

#: seconds of quiet typing before the text is parsed and checked again
PARSE_DEBOUNCE = 0.3


class SiteConfigScreen(SiteFileActions):
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

    @dataclass
    class Saved(Message):
        text: str
        changed: bool

    @dataclass
    class FillPlanned(Message):
        plan: FillPlan
        config: SiteConfig

    @dataclass
    class SubmitPlanned(Message):
        preview: SubmitPreview
        verdict: SiteVerdict

    @dataclass
    class Submitted(Message):
        message: str

    # ------------------------------------------------------------------ state

    def __init__(self) -> None:
        super().__init__()
        self.library: ComponentLibrary | None = None
        self.facts: CloudFacts | None = None
        #: the decrypted text as last loaded or saved (what "unsaved changes" compares with)
        self.saved_text: str | None = None
        #: the text the panel was last computed from, and what it found
        self.checked_text: str | None = None
        self.config: SiteConfig | None = None
        self.parse_error: SiteConfigError | None = None
        self.findings: tuple[Finding, ...] = ()
        self.verdict: SiteVerdict | None = None
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
        self.library = message.library
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
        text = self.editor.text
        try:
            self.config = SiteConfig.parse(text, self.site.naming)
            self.parse_error = None
        except SiteConfigError as error:
            self.parse_error = error
        self.checked_text = text
        self._recheck()

    def _recheck(self) -> None:
        if self.config is not None and self.parse_error is None:
            self.verdict = verdict_of(self.config, naming=self.site.naming,
                                      definitions=self.library.as_mapping() if self.library is not None else None, facts=self.facts)
            self.findings = self.verdict.findings
        self._render_panel()

    def _cloud_note(self) -> str:
        if self.facts is None:
            return "cloud: not consulted yet (IDs and MTU are checked once it answers)"
        facts = self.facts
        parts = ["cloud: IDs checked against the cloud"]
        if facts.nic_mtu is not None:
            parts.append(f"NIC MTU {facts.nic_mtu}")
        text = ", ".join(parts)
        for note in facts.notes:
            text += f"\n  note: {note}"
        return text

    def _render_panel(self) -> None:
        panel = self.query_one("#site-panel", SitePanel)
        if self.saved_text is None:
            panel.show(Text("No site open.", "dim"), Text(""), Text(""))
            return
        dirty = self.dirty
        error = self.parse_error
        self.editor.border_subtitle = f"✘ line {error.line}, column {error.column}" if error is not None and error.line else (
            "● unsaved" if dirty else "")
        findings = findings_text(self.findings, self._cloud_note())
        if error is not None:
            findings = Text.assemble(("(as of the last text that parsed)\n", "dim"), findings)
        verified = self.facts is not None and self.facts.identity is not None
        panel.show(parse_text(error, dirty=dirty), components_text(self.config, self.library, self.findings, verified=verified), findings)

    def action_goto_error(self) -> None:
        error = self.parse_error
        if error is None or not error.line:
            self.shell.toast("The text parses: no error to go to")
            return
        self.editor.move_cursor((error.line - 1, max(0, error.column - 1)))
        self.editor.focus()

    # ------------------------------------------------------------------ cloud facts

    @work(exclusive=True, group="site-facts", exit_on_error=False)
    async def _gather_facts(self) -> None:
        definitions = self.library.as_mapping() if self.library is not None else None
        facts = await gather_cloud_facts(self.site, self.config, definitions)
        self.post_message(self.FactsLoaded(facts))

    @on(FactsLoaded)
    def _facts_loaded(self, message: FactsLoaded) -> None:
        self.facts = message.facts
        self._recheck()

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = super().check_action(action, parameters)
        if not allowed:
            return allowed
        if action in ("save", "fill", "components", "submit", "reload") and self.site_ref is None:
            return None  # shown disabled until a site is open
        return True

    def _ready(self, *, saved: bool = False, parsed: bool = True) -> bool:
        if self.site_ref is None or self.password is None or self.saved_text is None:
            self.shell.toast("Open a site first (ctrl+o)", severity="warning")
            return False
        if self.busy:
            self.shell.toast(f"Busy: {self.busy}", severity="warning")
            return False
        if parsed:
            self._reparse()
            if self.parse_error is not None:
                self.shell.toast(f"Fix the YAML first: {self.parse_error}", severity="error")
                return False
        if saved and self.dirty:
            self.shell.toast("Save first (ctrl+s): the editor has unsaved changes", severity="warning")
            return False
        return True

    def action_open_site(self) -> None:
        if not self.site.settings.sites_repo:
            self.shell.toast("No sites repository configured (sites_repo in the [site] table)", severity="warning")
            return
        if self.dirty:
            self.shell.toast("Save or reload first: the editor has unsaved changes", severity="warning")
            return
        self._list_sites(choose=True)

    def action_save(self) -> None:
        if not self._ready():
            return
        self.busy = "saving"
        self._show_site_status()
        self._save_worker(self.editor.text)

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _save_worker(self, text: str) -> None:
        assert self.site_ref is not None and self.password is not None
        definitions = self.library.as_mapping() if self.library is not None else None
        operation = SaveSite(self.site_ref.path, self.password, text, self.saved_text, definitions)
        plan = await operation.plan(self.site)
        written = await self.run_change(operation, plan)
        self.post_message(self.Saved(text, written.changed))

    @on(Saved)
    def _saved(self, message: Saved) -> None:
        self.busy = ""
        self.saved_text = message.text
        self._show_site_status()
        self._render_panel()
        self.shell.toast("Saved: vault-encrypted, mode 0600" if message.changed else "No change to save")

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

    def action_fill(self) -> None:
        if not self._ready():
            return
        assert self.config is not None
        self.busy = "reading the cloud"
        self._show_site_status()
        self._fill_worker(self.config)

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _fill_worker(self, config: SiteConfig) -> None:
        assert self.site_ref is not None and self.password is not None
        definitions = self.library.as_mapping() if self.library is not None else None
        plan = await plan_fill(self.site, self.site_ref.path, self.password, definitions, config=config)
        self.post_message(self.FillPlanned(plan, config))

    @on(FillPlanned)
    def _fill_planned(self, message: FillPlanned) -> None:
        self.busy = ""
        self._show_site_status()
        plan = message.plan
        self.facts = plan.facts
        self._recheck()
        if not plan.changes:
            notes = f" ({'; '.join(plan.notes)})" if plan.notes else ""
            self.shell.toast(f"Already in line with the cloud{notes}")
            return
        assert self.password is not None

        def confirmed(ok: bool | None) -> None:
            if not ok:
                return
            if self.editor.text != message.config.text:
                self.shell.toast("The editor changed meanwhile: fill again", severity="warning")
                return
            filled = fill_text(message.config, plan.changes)
            self.editor.replace(filled.text, (0, 0), self.editor.document.end)
            self._reparse()
            self.shell.toast(f"{len(plan.changes)} value(s) filled in the editor: save (ctrl+s) to write them")

        preview = localize(plan.preview(self.password), self._repo().workdir, self.password)
        self.app.push_screen(PreviewModal(preview, "Apply to the editor",
                                          note="The values go into the editor; ctrl+s saves them vault-encrypted."), confirmed)

    # components -----------------------------------------------------------------------------------

    def action_components(self) -> None:
        if not self._ready(saved=True):
            return
        if self.library is None:
            self.shell.toast("The component library is not loaded (library_repo in the [site] table)", severity="warning")
            return
        assert self.config is not None and self.site_ref is not None and self.password is not None

        def done(changed: bool | None) -> None:
            if changed:
                self.saved_text = None
                self._decrypt()

        modal = ComponentFlowModal(self.library, self.config, self.site_ref.path, self.password, label=self._site_label(),
                                   clone=self._repo().workdir)
        self.app.push_screen(modal, done)

    # submit ---------------------------------------------------------------------------------------

    def action_submit(self) -> None:
        if not self._ready(saved=True):
            return
        self.busy = "comparing with the branch"
        self._show_site_status()
        self._submit_preview_worker()

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _submit_preview_worker(self) -> None:
        assert self.site_ref is not None and self.password is not None
        preview = await preview_submit(self._repo(), self.site_ref, self.password)
        config = (await load_site_config(self.site_ref.path, self.password, self.site.naming)).config
        definitions = self.library.as_mapping() if self.library is not None else None
        verdict = await site_verdict(config, site=self.site, definitions=definitions)
        self.post_message(self.SubmitPlanned(preview, verdict))

    @on(SubmitPlanned)
    def _submit_planned(self, message: SubmitPlanned) -> None:
        self.busy = ""
        self._show_site_status()
        preview = message.preview
        if not preview.pending:
            self.shell.toast(f"{preview.site.branch} is up to date on the remote: nothing to submit")
            return

        def confirmed(reason: str | None) -> None:
            if reason is None:
                return
            try:
                gate = submit_gate(message.verdict, reason)
            except SiteError as error:
                self.shell.report_error(error)
                return
            self.busy = "submitting"
            self._show_site_status()
            self._submit_worker(SubmitPlan(preview, message.verdict, gate))

        self.app.push_screen(SubmitModal(
            message.verdict, preview.as_preview(), f"Commit and push to {preview.site.branch}", diff=preview.diff,
            diff_title=f"Decrypted diff against {preview.base} (secret values masked)",
        ), confirmed)

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _submit_worker(self, plan: SubmitPlan) -> None:
        """The `SubmitSite` operation on the plan the operator confirmed (diff, check, gate)."""
        assert self.site_ref is not None and self.password is not None
        operation = SubmitSite(self._repo(), self.site_ref, self.password)
        await self.run_change(operation, plan)
        events = self.change.events if self.change is not None else []
        self.post_message(self.Submitted(events[-1].message if events else ""))

    @on(Submitted)
    def _submitted(self, message: Submitted) -> None:
        self.busy = ""
        self._show_site_status()
        self.shell.toast(message.message or "Submitted")
        self._gather_facts()  # the panel follows the cloud after day-2 work, without a manual refresh

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
