"""Procedures on the sites repository: list sites, open one, create one, submit the configuration.

A site is a branch holding a directory (named after `app_manager_deployment_site`) with the
vault-encrypted `core.yaml`. Opening fetches and switches the working clone to the branch;
creating branches from the default branch and turns its hidden template directory into the site's
directory, then encrypts the template at once so no plain `core.yaml` stays in the site
directory. Submitting (the spec's last step) first shows the decrypted diff against the branch
(secret values masked unless revealed), then commits the encrypted file and pushes it; a plain
`core.yaml` is refused. Re-runs are idempotent: an existing site is opened, an unchanged one is
not committed again.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from tui.adapters.git_repo import DEFAULT_TEMPLATE_DIR, SITE_CONFIG_FILE, GitRepo
from tui.adapters.git_repo import check_name as check_name  # re-exported: screens check names through here
from tui.adapters.vault import VaultPassword, decrypt_text_async, encrypt_text_async, is_vault_text, read_text, write_atomic
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.site_config import SiteConfigError, config_diff
from tui.errors import SiteError
from tui.procedures.audit import REDACTOR, AuditLog
from tui.procedures.operation import OperationCancelled, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.reading_pass import branches as pass_branches
from tui.procedures.reading_pass import synced
from tui.procedures.site.config import invalid_yaml, parse_config, vault_cli
from tui.procedures.site.lock import clone_lock
from tui.procedures.site.verdict import SubmitGate
from tui.procedures.stop_signals import consume_cancel, uninterrupted


def default_workdir(url: str, kind: str = "sites", base: Path | None = None) -> Path:
    """Where the working clone of a repository lives: under `base` (default the state directory's
    `repos`), one per URL."""
    if base is None:
        state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        base = Path(state) / "sitetk" / "repos"
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")) or kind
    digest = hashlib.sha256(url.encode()).hexdigest()[:10]
    return Path(base) / f"{kind}-{stem}-{digest}"


@dataclass(frozen=True)
class SiteRef:
    branch: str
    site_dir: str
    #: absolute path of the site's core.yaml in the working clone
    path: Path

    def as_json(self) -> dict[str, str]:
        return {"branch": self.branch, "site_dir": self.site_dir, "path": str(self.path)}


@dataclass(frozen=True)
class SiteListing:
    default_branch: str
    sites: tuple[str, ...]


@dataclass(frozen=True)
class SubmitPreview:
    site: SiteRef
    #: unified diff of the decrypted configurations (secret values masked unless revealed)
    diff: str
    #: what the diff compares against: "origin/<branch>" or the template of a new site
    base: str
    new_branch: bool
    #: False when there is nothing to commit and nothing to push
    pending: bool

    def as_json(self) -> dict[str, Any]:
        return {**self.site.as_json(), "diff": self.diff, "base": self.base, "new_branch": self.new_branch, "pending": self.pending}

    def as_preview(self, message: str | None = None) -> Preview:
        """The repository changes of the submit, with the git commands that do the same."""
        if not self.pending:
            return Preview(f"Submit {self.site.branch}", (Change(f"{self.site.branch} is up to date on the remote", "", "none"),))
        text = message or default_message(self.site)
        branch = self.site.branch
        return Preview(
            f"Submit {self.site.site_dir}/{SITE_CONFIG_FILE} to {branch}",
            (
                Change(f"commit {self.site.site_dir}/{SITE_CONFIG_FILE} (vault-encrypted)", f"git add {shlex.quote(self.site.site_dir)} && git commit -m {shlex.quote(text)}", "update"),
                Change(f"push {'the new branch ' if self.new_branch else ''}{branch}", f"git push --set-upstream origin {shlex.quote(branch)}", "create" if self.new_branch else "update"),
            ),
        )


@dataclass
class SubmitLedger:
    """What a submit did so far, kept as it goes (`RunContext.keep`): the commit it made in the
    working clone (None before the commit, or when there was nothing new to commit). The
    `SubmitSite` operation's failure record reads it."""

    commit: str | None = None


@dataclass(frozen=True)
class Submitted:
    """A submit's result: the commit pushed (None: the branch was up to date)."""

    site: SiteRef
    commit: str | None
    pushed: bool

    def as_json(self) -> dict[str, Any]:
        return {**self.site.as_json(), "commit": self.commit, "pushed": self.pushed}


def default_message(site: SiteRef) -> str:
    return f"{site.site_dir}: update site configuration"


def _register(repo: GitRepo, password: VaultPassword | None = None) -> None:
    if repo.remote.token:
        REDACTOR.register(repo.remote.token)
    if password is not None:
        REDACTOR.register(password.text)


async def list_sites(repo: GitRepo) -> SiteListing:
    """Clone or fetch the repository; its default branch and the site branches."""
    _register(repo)
    async with clone_lock(repo.workdir):
        await synced(repo)
    branches = await pass_branches(repo)
    return SiteListing(branches.default, branches.sites)


def locate_site(repo: GitRepo, branch: str, site_dir: str | None = None) -> SiteRef:
    """The site directory of the checked-out branch: `site_dir`, else the branch name, else the only one.
    A working clone that does not exist yet is "No site open" (with the command that opens it),
    never a FileNotFoundError (issue 22 item 6: `site submit --branch B` before any open)."""
    if not repo.is_cloned():
        raise SiteError("No site open", f"{repo.workdir} is not a clone yet: open the site first "
                        f"(`sitetk site open {shlex.quote(branch)}`), then run this again.")
    if site_dir:
        check_name("site directory", site_dir)
        return SiteRef(branch, site_dir, repo.workdir / site_dir / SITE_CONFIG_FILE)
    if (repo.workdir / branch / SITE_CONFIG_FILE).is_file():
        return SiteRef(branch, branch, repo.workdir / branch / SITE_CONFIG_FILE)
    try:
        candidates = sorted(child.name for child in repo.workdir.iterdir()
                            if child.is_dir() and not child.name.startswith(".") and (child / SITE_CONFIG_FILE).is_file())
    except OSError as exc:
        raise SiteError("The working clone cannot be read", f"{repo.workdir}: {exc.strerror or exc}.") from None
    if len(candidates) == 1:
        return SiteRef(branch, candidates[0], repo.workdir / candidates[0] / SITE_CONFIG_FILE)
    found = ", ".join(candidates) or "none"
    raise SiteError("Site directory not found", f"Branch {branch} has no {branch}/{SITE_CONFIG_FILE} (site directories found: {found}); name the site directory.")


async def current_site(repo: GitRepo, site_dir: str | None = None) -> SiteRef:
    """The site the working clone is on (after open or create)."""
    if not repo.is_cloned():
        raise SiteError("No site open", f"{repo.workdir} is not a clone yet; open or create a site first.")
    branch = await repo.current_branch()
    default = await repo.default_branch()
    if branch is None or branch == default:
        raise SiteError("No site open", f"The working clone is on {branch or 'no branch'}; open or create a site first.")
    return locate_site(repo, branch, site_dir)


async def open_site(repo: GitRepo, branch: str, site_dir: str | None, context: RunContext) -> SiteRef:
    """Fetch and switch to an existing site branch, reporting to `context`; the site's core.yaml."""
    step, total = f"open {branch}", 3
    async with clone_lock(repo.workdir):
        _register(repo)
        await repo.sync()
        context.report(Progress(step, 1, total, "repository up to date"))
        await repo.checkout(branch)
        context.report(Progress(step, 2, total, f"on branch {branch}"))
        site = locate_site(repo, branch, site_dir)
        if not site.path.is_file():
            raise SiteError("Site configuration missing", f"{branch} has no {site.site_dir}/{SITE_CONFIG_FILE}.")
    context.report(Progress(step, total, total, f"site configuration at {site.path}", state=ProgressState.DONE, data=site.as_json()))
    return site


async def preview_create_site(
    repo: GitRepo, branch: str, site_dir: str, password: VaultPassword, *, template_dir: str = DEFAULT_TEMPLATE_DIR
) -> Preview:
    """What `create_site` would do, with the git and ansible-vault commands that do the same."""
    _register(repo, password)
    check_name("branch", branch)
    check_name("site directory", site_dir)
    async with clone_lock(repo.workdir):
        await repo.sync()
    title = f"Create site {site_dir} on branch {branch}"
    if branch in await repo.branches():
        return Preview(title, (Change(f"{branch} exists already: it is opened instead", f"git checkout {shlex.quote(branch)}", "none"),))
    default = await repo.default_branch()
    config = f"{site_dir}/{SITE_CONFIG_FILE}"
    return Preview(
        title,
        (
            Change(f"branch {branch} from {default}", f"git checkout -b {shlex.quote(branch)} origin/{shlex.quote(default)}", "create"),
            Change(f"{template_dir} becomes {site_dir}", f"git mv {shlex.quote(template_dir)} {shlex.quote(site_dir)}", "update"),
            Change(f"{config} vault-encrypted", vault_cli("encrypt", Path(config), password), "update"),
        ),
        warnings=("nothing reaches the remote until the site is submitted",),
    )


@dataclass(frozen=True)
class SiteCreation:
    """What a new site is made from: its branch and directory, the template directory it starts
    from, the values set before encryption and the naming profile that reads the template."""

    branch: str
    site_dir: str
    template_dir: str = DEFAULT_TEMPLATE_DIR
    initial: Mapping[str, Any] | None = None
    naming: NamingProfile = DEFAULT_NAMING


@dataclass(frozen=True)
class Created:
    """A create's result: the site in the working clone and whether this run started it (False:
    its branch existed and was opened, or its core.yaml was already encrypted)."""

    site: SiteRef
    created: bool

    def as_json(self) -> dict[str, Any]:
        return {**self.site.as_json(), "created": self.created}


@dataclass
class CreateLedger:
    """What a create did so far, kept as it goes (`RunContext.keep`): whether the site was made
    (its branch, the renamed template and its encryption, made as one). The `CreateSite`
    operation's failure record reads it."""

    made: bool = False


async def create_site(
    repo: GitRepo,
    branch: str,
    site_dir: str,
    password: VaultPassword,
    context: RunContext,
    *,
    template_dir: str = DEFAULT_TEMPLATE_DIR,
    initial: Mapping[str, Any] | None = None,
    naming: NamingProfile = DEFAULT_NAMING,
    audit: AuditLog | None = None,
    ledger: CreateLedger | None = None,
) -> Created:
    """Start a site from the template: new branch, template directory renamed, core.yaml encrypted.

    `initial` sets dotted paths in the template before it is encrypted (values already known from
    the cloud). The branch reaches the remote on submit. An existing remote branch is opened.
    Reports to `context`; `ledger` keeps whether the site was made.
    """
    creation = SiteCreation(branch, site_dir, template_dir, initial, naming)
    step, total = f"create {branch}", 4
    async with clone_lock(repo.workdir):
        _register(repo, password)
        check_name("branch", branch)
        check_name("site directory", site_dir)
        await repo.sync()
        context.report(Progress(step, 1, total, "repository up to date"))
        # from here the working clone changes: a stop signal waits for the branch, the renamed template
        # and its encryption (no plain core.yaml stays in the site directory, no git is stopped half-way
        # through a checkout); the site is then made, which the run reports
        (events, created), _ = await uninterrupted(_make_site(repo, creation, password, step, total))
        if ledger is not None:
            ledger.made = True
        for event in events:
            context.report(event)
        if audit is not None and created.created:  # a direct caller (the guided setup); the `CreateSite` operation records the run itself
            audit.record("site.create", branch, details=create_details(site_dir, template_dir, initial))
    return created


async def _make_site(repo: GitRepo, creation: SiteCreation, password: VaultPassword, step: str, total: int
                     ) -> tuple[list[Progress], Created]:
    """The changing part of a create, as one: its events and the site."""
    branch, site_dir, template_dir, initial = creation.branch, creation.site_dir, creation.template_dir, creation.initial
    if branch in await repo.branches():
        await repo.checkout(branch)
        site = locate_site(repo, branch, site_dir)
        return [Progress(step, total, total, f"{branch} exists already: opened it", state=ProgressState.SKIPPED, data=site.as_json())], \
            Created(site, False)
    await _check_template(repo, creation)
    path = await repo.start_site(branch, site_dir, template_dir)
    site = SiteRef(branch, site_dir, path)
    events = [Progress(step, 2, total, f"branch {branch}: {template_dir} became {site_dir}")]
    raw = read_text(path)
    if is_vault_text(raw):
        await decrypt_text_async(raw, password, str(path))
        return [*events, Progress(step, total, total, f"{site_dir}/{SITE_CONFIG_FILE} already encrypted", state=ProgressState.SKIPPED,
                                  data=site.as_json())], Created(site, False)
    config = parse_config(raw, path, creation.naming)
    if initial:
        try:
            config = config.edit(list(initial.items()))
        except SiteConfigError as error:
            raise invalid_yaml(error, path) from None
    events.append(Progress(step, 3, total, f"template read ({len(config.components())} components listed)"))
    write_atomic(path, await encrypt_text_async(config.text, password))
    return [*events, Progress(step, total, total, f"{site_dir}/{SITE_CONFIG_FILE} encrypted; submit to push the branch", state=ProgressState.DONE,
                              data=site.as_json())], Created(site, True)


async def _check_template(repo: GitRepo, creation: SiteCreation) -> None:
    """Read the template as the new branch will hold it and apply the initial values, changing
    nothing: a template that does not parse or a value it cannot take fails here, before the
    working clone has a new branch and a plain-text core.yaml in the site directory."""
    source = f"{creation.template_dir}/{SITE_CONFIG_FILE}"
    text = await repo.read_file(f"origin/{await repo.default_branch()}", source)
    if text is None or is_vault_text(text):
        return  # start_site names a missing template; an encrypted one is opened as it is
    config = parse_config(text, source, creation.naming)
    if creation.initial:
        try:
            config.edit(list(creation.initial.items()))
        except SiteConfigError as error:
            raise invalid_yaml(error, source) from None


def submit_details(repo: GitRepo, site: SiteRef, commit: str | None, gate: SubmitGate) -> dict[str, Any]:
    """The audit details of a pushed submit: the commit, the remote and the gate's overrides."""
    return {"site_dir": site.site_dir, "commit": commit, "remote": repo.remote.url, **gate.audit_details()}


def create_details(site_dir: str, template_dir: str, initial: Mapping[str, Any] | None) -> dict[str, Any]:
    """The audit details of a created site (the audit log redacts secret initial values)."""
    return {"site_dir": site_dir, "template_dir": template_dir, "initial": dict(initial or {})}


async def _decrypted(text: str | None, password: VaultPassword, source: str) -> str:
    if text is None:
        return ""
    if is_vault_text(text):
        return await decrypt_text_async(text, password, source)
    return text


async def preview_submit(repo: GitRepo, site: SiteRef, password: VaultPassword, *, template_dir: str = DEFAULT_TEMPLATE_DIR, reveal: bool = False) -> SubmitPreview:
    """The decrypted diff of the site's core.yaml against its branch (or the template, for a new site)."""
    _register(repo, password)
    raw = read_text(site.path)
    if not is_vault_text(raw):
        raise SiteError("Refusing to submit plain text", f"{site.path} is not vault-encrypted; encrypt it first. Nothing was committed.")
    new_text = await decrypt_text_async(raw, password, str(site.path))
    relative = f"{site.site_dir}/{SITE_CONFIG_FILE}"
    new_branch = site.branch not in await repo.branches()
    if new_branch:
        default = await repo.default_branch()
        base = f"origin/{default}:{template_dir}/{SITE_CONFIG_FILE}"
        old_raw = await repo.read_file(f"origin/{default}", f"{template_dir}/{SITE_CONFIG_FILE}")
    else:
        base = f"origin/{site.branch}:{relative}"
        old_raw = await repo.read_file(f"origin/{site.branch}", relative)
    old_text = await _decrypted(old_raw, password, base)
    diff = config_diff(old_text, new_text, f"a/{relative}", f"b/{relative}", reveal=reveal)
    pending = bool(diff) or new_branch or bool(await repo.changed_paths()) or await repo.unpushed(site.branch)
    return SubmitPreview(site, diff, base, new_branch, pending)


async def submit_site(
    repo: GitRepo,
    site: SiteRef,
    password: VaultPassword,
    context: RunContext,
    *,
    gate: SubmitGate,
    message: str | None = None,
    naming: NamingProfile = DEFAULT_NAMING,
    audit: AuditLog | None = None,
    ledger: SubmitLedger | None = None,
) -> Submitted:
    """Commit the encrypted core.yaml to the site branch and push it (after `preview_submit`).

    `gate` (`site_verdict.submit_gate`) is the check of this very text: errors refuse the submit
    unless overridden with a reason, which goes into the commit message and the audit entry.
    Reports to `context`; `ledger` keeps the commit made.
    """
    async with clone_lock(repo.workdir):
        return await _submit_site(repo, site, password, context, gate=gate, message=message, naming=naming, audit=audit,
                                  ledger=ledger if ledger is not None else SubmitLedger())


async def _submit_site(
    repo: GitRepo,
    site: SiteRef,
    password: VaultPassword,
    context: RunContext,
    *,
    gate: SubmitGate,
    message: str | None,
    naming: NamingProfile,
    audit: AuditLog | None,
    ledger: SubmitLedger,
) -> Submitted:
    """`submit_site` without the lock of the working clone."""
    step, total = f"submit {site.branch}", 4
    _register(repo, password)
    raw = read_text(site.path)
    if not is_vault_text(raw):
        raise SiteError("Refusing to submit plain text", f"{site.path} is not vault-encrypted; encrypt it first. Nothing was committed.")
    text = await decrypt_text_async(raw, password, str(site.path))
    parse_config(text, site.path, naming)
    gate.check(text)
    checked = f"{len(gate.overridden)} check error(s) overridden: {gate.override_reason}" if gate.overridden else "the check passed"
    context.report(Progress(step, 1, total, f"encrypted, decrypts to valid YAML, {checked}"))
    current = await repo.current_branch()
    if current != site.branch:
        raise SiteError("Wrong branch checked out", f"The working clone is on {current}, not {site.branch}; open the site again.")
    # a commit is local and short: a stop signal waits for it (git is never stopped half-way
    # through writing the index), then the run stops before the push
    sha, stopped = await uninterrupted(repo.commit(gate.commit_message(message or default_message(site)), [site.site_dir]))
    if sha:
        ledger.commit = sha
    context.report(Progress(step, 2, total, f"committed {sha[:12]}" if sha else "nothing new to commit",
                            state=ProgressState.RUNNING if sha else ProgressState.SKIPPED, data={"commit": sha} if sha else {}))
    unpushed = await repo.unpushed(site.branch)
    if stopped and unpushed:
        raise SubmitStopped(site, await repo.head(), "before the push")
    if not unpushed:
        context.report(Progress(step, total, total, f"{site.branch} is up to date on the remote", state=ProgressState.SKIPPED,
                                data={**site.as_json(), "commit": None, "pushed": False}))
        return Submitted(site, None, False)
    head = await repo.head()
    await _push(repo, site, head)
    context.report(Progress(step, 3, total, f"pushed {site.branch}"))
    if audit is not None:  # a direct caller (the guided setup); the `SubmitSite` operation records the run itself
        audit.record("site.submit", site.branch, details=submit_details(repo, site, head, gate))
    context.report(Progress(step, total, total, f"{site.branch} submitted", state=ProgressState.DONE,
                            data={**site.as_json(), "commit": head, "pushed": True}))
    return Submitted(site, head, True)


class SubmitStopped(OperationCancelled):
    """A submit stopped on request after its commit and before the remote had it (the commit is
    in the working clone only; running the submit again pushes it)."""

    def __init__(self, site: SiteRef, commit: str, when: str, remote: str = "") -> None:
        self.site, self.commit = site, commit
        self.resume = f"sitetk site submit --branch {shlex.quote(site.branch)}"
        known = remote or f"the remote's {site.branch} does not have it"
        super().__init__(f"Submit of {site.branch} stopped {when}",
                         f"Commit {commit[:12]} is in the working clone, not pushed ({known}). "
                         f"Run `{self.resume}` to push it; nothing else is left to do.", retryable=True)


async def _push(repo: GitRepo, site: SiteRef, head: str) -> None:
    """Push `head`; a push that was stopped (a stop signal ends git, see `adapters.git_repo`) or
    failed is read back from the remote, which updates a branch whole or not at all: one that
    landed is a push done, one that did not says what is left."""
    try:
        await repo.push(site.branch)
        return
    except asyncio.CancelledError:
        consume_cancel()
        failure: SiteError | None = None
    except SiteError as error:
        failure = error
    try:
        remote, _ = await uninterrupted(repo.remote_head(site.branch))
    except SiteError as unread:
        remote, state = None, f"the remote could not be read to tell whether the push landed: {unread.detail}"
    else:
        if remote == head:
            await uninterrupted(repo.note_pushed(site.branch, head))
            return
        state = f"the remote's {site.branch} is at {remote[:12]}" if remote else f"the remote has no branch {site.branch}"
    if failure is None:
        raise SubmitStopped(site, head, "during the push", state) from None
    raise SiteError(failure.title, f"{failure.detail} Not pushed: commit {head[:12]} stays in the working clone ({state}).",
                    retryable=failure.retryable) from None
