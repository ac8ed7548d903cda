"""The site file of the site configuration screen: which site branch is open, and its vault password.

`SiteFileActions` holds the sites repository's working clone (`repo`), its listing, the open site
(`site_ref`) and the vault password, and does what gets a decrypted core.yaml into the editor:
list the site branches and choose one (`OpenSiteModal`), open (check out) a branch, create one from
the template (previewed, then the `CreateSite` operation through `run_change`), take the branch
another screen opened in the same clone, ask for the vault password (the configured file, else
the prompt; a wrong one is asked again with the reason) and decrypt. The screen that holds the
editor (`SiteConfigScreen`) shows the text when `Loaded` carries it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable

from textual import on, work
from textual.message import Message

from tui.errors import SiteError
from tui.procedures.operation_stream import stream_run
from tui.procedures.site.config import VaultPassword, load_site_config
from tui.procedures.site.file_operations import CreatePlan, CreateSite
from tui.procedures.site.repo import SiteListing, SiteRef, current_site, list_sites, open_site
from tui.procedures.site.workspace import prompted_password, sites_repo, vault_password
from tui.screens.base import SiteScreen
from tui.screens.site_dialogs import OpenSiteModal, PasswordModal, PreviewModal, localize

_WRONG_PASSWORD = "Wrong vault password"


class SiteFileActions(SiteScreen):
    """Open, create and decrypt the site file (see the module docstring); the screen holds the editor."""

    @dataclass
    class Listed(Message):
        listing: SiteListing
        choose: bool

    @dataclass
    class Loaded(Message):
        site_ref: SiteRef
        text: str

    @dataclass
    class PasswordRejected(Message):
        error: SiteError
        retry: Callable[[], None]

    def __init__(self) -> None:
        super().__init__()
        self.repo: Any = None
        self.listing: SiteListing | None = None
        self.site_ref: SiteRef | None = None
        self.password: VaultPassword | None = None
        #: what the screen is doing now ("saving", "opening <branch>"); "" when idle
        self.busy = ""

    @property
    def dirty(self) -> bool:
        """The editor holds unsaved changes (the screen that holds the editor answers)."""
        raise NotImplementedError

    def _show_site_status(self) -> None:
        """Paint the status line (the screen does)."""
        raise NotImplementedError

    @work(exclusive=True, group="site-find", exit_on_error=False)
    async def _find_open_site(self) -> None:
        try:
            site_ref = await current_site(self._repo())
        except SiteError:
            return  # the clone is on no site branch: "No site open" is the truth
        if self.site_ref is not None or not site_ref.path.is_file():
            return
        self.site_ref = site_ref
        self.busy = f"opening {site_ref.branch}"
        self._show_site_status()
        self.post_message(self.Loaded(site_ref, ""))

    def _site_label(self) -> str:
        if self.site_ref is None:
            return "no site open"
        return f"{self.site_ref.site_dir}/core.yaml on branch {self.site_ref.branch}"

    def _repo(self) -> Any:
        if self.repo is None:
            self.repo = sites_repo(self.site.settings)
        return self.repo

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _list_sites(self, choose: bool = False) -> None:
        await self.site.wait_for_repositories()
        self.post_message(self.Listed(await list_sites(self._repo()), choose))

    @on(Listed)
    def _listed(self, message: Listed) -> None:
        self.listing = message.listing
        self._show_site_status()
        if message.choose:
            self._choose_site(message.listing)

    def _choose_site(self, listing: SiteListing) -> None:
        def chosen(result: tuple[str, str] | None) -> None:
            if result is None:
                return
            verb, branch = result
            if verb == "create":
                self._with_password(lambda: self._create(branch), f"The new site {branch}")
            else:
                self._open(branch)

        name = Path(self.site.settings.sites_repo.rstrip("/")).name
        self.app.push_screen(OpenSiteModal(listing, name, read_only=self.read_only), chosen)

    def _with_password(self, then: Callable[[], None], what: str, error: str = "") -> None:
        """Run `then` once a password is known: the configured file, else the prompt."""
        if self.password is not None and not error:
            then()
            return
        if not error:
            try:
                configured = vault_password(self.site.settings)
            except SiteError as failure:
                self.shell.report_error(failure)
                configured = None
            if configured is not None:
                self.password = configured
                for warning in configured.warnings:
                    self.shell.toast(warning, title="Vault password file", severity="warning")
                then()
                return

        def typed(text: str | None) -> None:
            if text:
                self.password = prompted_password(text)
                then()

        self.app.push_screen(PasswordModal(what, error), typed)

    @on(PasswordRejected)
    def _password_rejected(self, message: PasswordRejected) -> None:
        from_file = self.password is not None and self.password.source != "prompt"
        self.password = None
        if from_file:
            self.shell.report_error(message.error)
        self._with_password(message.retry, self._site_label(), error=f"{message.error.title}: {message.error.detail}")

    def _open(self, branch: str) -> None:
        if self.dirty:
            self.shell.toast("Save or reload first: the editor has unsaved changes", severity="warning")
            return
        self.busy = f"opening {branch}"
        self._show_site_status()
        self._open_worker(branch)

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _open_worker(self, branch: str) -> None:
        opened: list[SiteRef] = []
        async for _ in stream_run(partial(open_site, self._repo(), branch, None), on_result=opened.append):
            pass  # the fetch and the checkout: the status line says "opening" until it is done
        site_ref = self.site_ref = opened[-1]
        self.post_message(self.Loaded(site_ref, ""))

    def _create(self, branch: str) -> None:
        self._create_preview(branch)

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _create_preview(self, branch: str) -> None:
        assert self.password is not None
        operation = CreateSite(self._repo(), branch, branch, self.password)
        plan = await operation.plan(self.site)

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.busy = f"creating {branch}"
                self._show_site_status()
                self._create_worker(operation, plan)

        preview = localize(operation.preview(plan), self._repo().workdir, self.password)
        self.app.push_screen(PreviewModal(preview, f"Create {branch}"), confirmed)

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _create_worker(self, operation: CreateSite, plan: CreatePlan) -> None:
        """The `CreateSite` operation: read-only refusal and the audit record are the operation type's."""
        site_ref = (await self.run_change(operation, plan)).site
        self.site_ref = site_ref
        self.post_message(self.Loaded(site_ref, ""))

    @on(Loaded)
    def _loaded_ref(self, message: Loaded) -> None:
        """A site is checked out: decrypt its core.yaml (asking for the password if needed)."""
        if message.text:
            return
        self._with_password(self._decrypt, f"{message.site_ref.site_dir}/core.yaml")

    def _decrypt(self) -> None:
        self._decrypt_worker()

    @work(exclusive=True, group="site-io", exit_on_error=False)
    async def _decrypt_worker(self) -> None:
        assert self.site_ref is not None
        try:
            loaded = await load_site_config(self.site_ref.path, self.password, self.site.naming)
        except SiteError as error:
            if error.title == _WRONG_PASSWORD:
                self.post_message(self.PasswordRejected(error, self._decrypt))
                return
            raise
        self.post_message(self.Loaded(self.site_ref, loaded.config.text))

