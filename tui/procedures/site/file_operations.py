"""Writing core.yaml and starting a site branch as operations (tui.procedures.operation).

- `EncryptSite(path, password)`: vault-encrypt a plain core.yaml in place (`encrypt_file`);
  preview `ansible-vault encrypt`; already encrypted changes nothing.
- `EditSite(path, password, changes)`: dotted-path changes in memory, re-encrypted (`edit_file`);
  preview each change (secrets masked) with `ansible-vault edit`.
- `SaveSite(path, password, text, expected)`: the console editor's text replaces the file
  (`save_text`), refused when the file changed since the editor loaded it.
- `CreateSite(repo, branch, site_dir, password, initial)`: branch from the default branch, the
  template directory renamed, core.yaml encrypted (`create_site`); preview `git checkout -b`,
  `git mv` and `ansible-vault encrypt`; an existing branch is opened instead.

All four are refused in read-only mode by the operation type, and each writes its one audit
record through the operation type (`audit_details`). `encrypt_file` and `save_text` record
nothing themselves; `edit_file` and `create_site` record only when handed the audit log, as the
guided setup still does outside an operation (see README "Audit log").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, Sequence

from tui.adapters.git_repo import DEFAULT_TEMPLATE_DIR, GitRepo
from tui.domain.components import ComponentDefinition
from tui.errors import SiteError
from tui.procedures.operation import Confirmation, Operation, OperationCancelled, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.site.config import (
    ConfigWritten,
    VaultPassword,
    WriteLedger,
    edit_file,
    encrypt_file,
    preview_edit,
    preview_encrypt,
    save_text,
    vault_cli,
    write_details,
)
from tui.procedures.site.repo import Created, CreateLedger, SiteRef, create_details, create_site, locate_site, preview_create_site

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


@dataclass(frozen=True)
class FilePlan:
    """The file a write changes and what it will change."""

    path: Path
    preview: Preview

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "pending": not self.preview.is_noop}


def _write_failure(plan: FilePlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
    """A write's failure record: whether the run's `WriteLedger` saw the file replaced."""
    return (context.kept(WriteLedger) or WriteLedger(plan.path)).failure_record(error)


@dataclass(frozen=True)
class EncryptSite(Operation[FilePlan, ConfigWritten]):
    """Vault-encrypt a plain core.yaml in place (see the module docstring)."""

    path: Path
    password: VaultPassword = field(repr=False)

    title: ClassVar[str] = "Encrypt core.yaml"
    refusal: ClassVar[str] = "encrypt rewrites core.yaml"
    action: ClassVar[str] = "site.encrypt"
    #: a stop signal cancels the run at its next await: before the one atomic write, never during it
    cancels_itself: ClassVar[bool] = False

    async def plan(self, site: "SiteConnection") -> FilePlan:
        return FilePlan(Path(self.path), await preview_encrypt(Path(self.path), self.password))

    def preview(self, plan: FilePlan) -> Preview:
        return plan.preview

    def confirmation(self, plan: FilePlan) -> Confirmation | None:
        return None  # the plain text is what is encrypted; nothing is lost

    async def execute(self, site: "SiteConnection", plan: FilePlan, context: RunContext) -> ConfigWritten:
        return await encrypt_file(plan.path, self.password, context, naming=site.naming, ledger=context.keep(WriteLedger(plan.path)))

    def audit_details(self, plan: FilePlan, result: ConfigWritten) -> Mapping[str, Any] | None:
        return {"cli": vault_cli("encrypt", plan.path, self.password)} if result.changed else None

    def audit_failure(self, plan: FilePlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        return _write_failure(plan, error, context)

    def audit_target(self, plan: FilePlan, result: ConfigWritten) -> str:
        return str(plan.path)


@dataclass(frozen=True)
class EditSite(Operation[FilePlan, ConfigWritten]):
    """Set dotted-path values in an encrypted core.yaml (see the module docstring)."""

    path: Path
    password: VaultPassword = field(repr=False)
    changes: Sequence[tuple[str, Any]]
    definitions: Mapping[str, ComponentDefinition] | None = field(default=None, compare=False)

    title: ClassVar[str] = "Edit core.yaml"
    refusal: ClassVar[str] = "edit writes core.yaml"
    action: ClassVar[str] = "site.edit"
    #: a stop signal cancels the run at its next await: before the one atomic write, never during it
    cancels_itself: ClassVar[bool] = False

    async def plan(self, site: "SiteConnection") -> FilePlan:
        return FilePlan(Path(self.path), await preview_edit(Path(self.path), self.password, self.changes, site.naming))

    def preview(self, plan: FilePlan) -> Preview:
        return plan.preview

    def confirmation(self, plan: FilePlan) -> Confirmation | None:
        return None  # the earlier values are in the preview and in the repository

    async def execute(self, site: "SiteConnection", plan: FilePlan, context: RunContext) -> ConfigWritten:
        return await edit_file(plan.path, self.password, self.changes, context, naming=site.naming,
                               definitions=self.definitions, ledger=context.keep(WriteLedger(plan.path)))

    def audit_details(self, plan: FilePlan, result: ConfigWritten) -> Mapping[str, Any] | None:
        if not result.changed:
            return None
        return write_details(plan.path, self.password, result.values)

    def audit_failure(self, plan: FilePlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        return _write_failure(plan, error, context)

    def audit_target(self, plan: FilePlan, result: ConfigWritten) -> str:
        return str(plan.path)


@dataclass(frozen=True)
class SaveSite(Operation[FilePlan, ConfigWritten]):
    """Replace core.yaml with the editor's text (see the module docstring)."""

    path: Path
    password: VaultPassword = field(repr=False)
    text: str = field(repr=False)
    #: the decrypted text the editor started from (None: do not compare)
    expected: str | None = field(default=None, repr=False)
    definitions: Mapping[str, ComponentDefinition] | None = field(default=None, compare=False)

    title: ClassVar[str] = "Save core.yaml"
    refusal: ClassVar[str] = "save writes core.yaml"
    action: ClassVar[str] = "site.save"
    #: a stop signal cancels the run at its next await: before the one atomic write, never during it
    cancels_itself: ClassVar[bool] = False

    async def plan(self, site: "SiteConnection") -> FilePlan:
        path = Path(self.path)
        change = Change(f"{path}: the editor's text, vault-encrypted (mode 0600)", vault_cli("edit", path, self.password))
        return FilePlan(path, Preview(f"Save {path}", (change,)))

    def preview(self, plan: FilePlan) -> Preview:
        return plan.preview

    def confirmation(self, plan: FilePlan) -> Confirmation | None:
        return None  # the operator asked to save what the editor shows

    async def execute(self, site: "SiteConnection", plan: FilePlan, context: RunContext) -> ConfigWritten:
        return await save_text(plan.path, self.password, self.text, context, naming=site.naming,
                               definitions=self.definitions, expected=self.expected, ledger=context.keep(WriteLedger(plan.path)))

    def audit_details(self, plan: FilePlan, result: ConfigWritten) -> Mapping[str, Any] | None:
        return write_details(plan.path, self.password, {}) if result.changed else None

    def audit_failure(self, plan: FilePlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        return _write_failure(plan, error, context)

    def audit_target(self, plan: FilePlan, result: ConfigWritten) -> str:
        return str(plan.path)


@dataclass(frozen=True)
class CreatePlan:
    """The site a create starts (or opens, when its branch exists) and the preview of it."""

    site: SiteRef
    preview: Preview

    def as_json(self) -> dict[str, Any]:
        return {**self.site.as_json(), "exists": self.preview.is_noop}


@dataclass(frozen=True)
class CreateSite(Operation[CreatePlan, Created]):
    """Start a site branch from the template (see the module docstring)."""

    repo: GitRepo = field(compare=False)
    branch: str
    site_dir: str
    password: VaultPassword = field(repr=False)
    initial: Mapping[str, Any] = field(default_factory=dict)

    title: ClassVar[str] = "Create a site"
    refusal: ClassVar[str] = "create starts a site branch and writes core.yaml"
    action: ClassVar[str] = "site.create"
    #: a stop signal cancels the fetch; the branch, the renamed template and its encryption are made as one
    cancels_itself: ClassVar[bool] = False

    async def plan(self, site: "SiteConnection") -> CreatePlan:
        preview = await preview_create_site(self.repo, self.branch, self.site_dir, self.password)
        return CreatePlan(locate_site(self.repo, self.branch, self.site_dir), preview)

    def preview(self, plan: CreatePlan) -> Preview:
        return plan.preview

    def confirmation(self, plan: CreatePlan) -> Confirmation | None:
        return None  # nothing reaches the remote until the site is submitted

    async def execute(self, site: "SiteConnection", plan: CreatePlan, context: RunContext) -> Created:
        return await create_site(self.repo, self.branch, self.site_dir, self.password, context, initial=self.initial,
                                 naming=site.naming, ledger=context.keep(CreateLedger()))

    def audit_details(self, plan: CreatePlan, result: Created) -> Mapping[str, Any] | None:
        return create_details(self.site_dir, DEFAULT_TEMPLATE_DIR, self.initial) if result.created else None

    def audit_failure(self, plan: CreatePlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        made = (context.kept(CreateLedger) or CreateLedger()).made
        if not (made or isinstance(error, OperationCancelled)):
            return None  # refused before the working clone changed (bad input, a wrong password)
        return {"site_dir": self.site_dir, "made": made,
                "left": f"the site is in the working clone on {self.branch} (encrypted); submit pushes it" if made
                else "nothing: the site is made whole or not at all (run the same command again)"}

    def audit_target(self, plan: CreatePlan, result: Created) -> str:
        return self.branch
