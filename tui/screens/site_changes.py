"""The changes the site configuration screen makes to the site file: save, fill, components, submit.

`SiteChangeActions` holds no state of its own: it reads the editor, the checks and the open site,
and runs each change one way. ctrl+s saves (the `SaveSite` operation through `run_change`:
vault-encrypted, atomic, its step on the status line, esc cancels); ctrl+f fills from the cloud
(planned, previewed in `PreviewModal`, then applied to the editor, not to the file); ctrl+n opens the
component flow (`ComponentFlowModal`, an operation modal); ctrl+t submits (the decrypted diff and
the check's verdict in `SubmitModal`, a reason when errors remain, then the `SubmitSite` operation
through `run_change`). Each refuses while another runs, before a site is open, while the YAML does
not parse, and (components, submit) while the editor holds unsaved changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on, work
from textual.message import Message
from textual.widgets import TextArea

from tui.domain.site_config import SiteConfig
from tui.errors import SiteError
from tui.procedures.site.config import load_site_config
from tui.procedures.site.file_operations import SaveSite
from tui.procedures.site.fill import FillPlan, fill_text, plan_fill
from tui.procedures.site.repo import SubmitPreview, preview_submit
from tui.procedures.site.submit_operation import SubmitPlan, SubmitSite
from tui.procedures.site.verdict import SiteVerdict, site_verdict, submit_gate
from tui.screens.site_components import ComponentFlowModal
from tui.screens.site_dialogs import PreviewModal, SubmitModal, localize
from tui.screens.site_file import SiteFileActions
from tui.screens.site_panel import SiteChecks


class SiteChangeActions(SiteFileActions):
    """Save, fill, components and submit (see the module docstring); the screen holds the editor."""

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

    #: the decrypted text as last loaded or saved, and the checks of the editor's text (the screen's)
    saved_text: str | None
    checks: SiteChecks

    @property
    def editor(self) -> TextArea:
        raise NotImplementedError

    def _reparse(self) -> None:
        raise NotImplementedError

    def _recheck(self) -> None:
        raise NotImplementedError

    def _render_panel(self) -> None:
        raise NotImplementedError

    def _gather_facts(self) -> object:
        raise NotImplementedError

    def _ready(self, *, saved: bool = False, parsed: bool = True) -> bool:
        if self.site_ref is None or self.password is None or self.saved_text is None:
            self.shell.toast("Open a site first (ctrl+o)", severity="warning")
            return False
        if self.busy:
            self.shell.toast(f"Busy: {self.busy}", severity="warning")
            return False
        if parsed:
            self._reparse()
            if self.checks.parse_error is not None:
                self.shell.toast(f"Fix the YAML first: {self.checks.parse_error}", severity="error")
                return False
        if saved and self.dirty:
            self.shell.toast("Save first (ctrl+s): the editor has unsaved changes", severity="warning")
            return False
        return True

    def action_save(self) -> None:
        if not self._ready():
            return
        self.busy = "saving"
        self._show_site_status()
        self._save_worker(self.editor.text)

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _save_worker(self, text: str) -> None:
        assert self.site_ref is not None and self.password is not None
        definitions = self.checks.definitions
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

    def action_fill(self) -> None:
        if not self._ready():
            return
        assert self.checks.config is not None
        self.busy = "reading the cloud"
        self._show_site_status()
        self._fill_worker(self.checks.config)

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _fill_worker(self, config: SiteConfig) -> None:
        assert self.site_ref is not None and self.password is not None
        definitions = self.checks.definitions
        plan = await plan_fill(self.site, self.site_ref.path, self.password, definitions, config=config)
        self.post_message(self.FillPlanned(plan, config))

    @on(FillPlanned)
    def _fill_planned(self, message: FillPlanned) -> None:
        self.busy = ""
        self._show_site_status()
        plan = message.plan
        self.checks.facts = plan.facts
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

    def action_components(self) -> None:
        if not self._ready(saved=True):
            return
        if self.checks.library is None:
            self.shell.toast("The component library is not loaded (library_repo in the [site] table)", severity="warning")
            return
        assert self.checks.config is not None and self.site_ref is not None and self.password is not None

        def done(changed: bool | None) -> None:
            if changed:
                self.saved_text = None
                self._decrypt()

        modal = ComponentFlowModal(self.checks.library, self.checks.config, self.site_ref.path, self.password, label=self._site_label(),
                                   clone=self._repo().workdir)
        self.app.push_screen(modal, done)

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
        definitions = self.checks.definitions
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
