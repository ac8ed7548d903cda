"""Filling core.yaml from the cloud as an operation (tui.procedures.operation).

`FillSite(path, password, definitions)` plans with `plan_fill` (the cloud's facts read, the
changes proposed; nothing written), previews each change with where its value came from and the
hand-run `ansible-vault edit`, and runs `fill_site_file` (decrypted in memory, comments kept,
re-encrypted, atomic). A plan with nothing to change runs as one skipped step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui.domain.components import ComponentDefinition
from tui.errors import SiteError
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Preview
from tui.procedures.site.config import VaultPassword, WriteLedger, write_details
from tui.procedures.site.fill import FillPlan, fill_site_file, plan_fill

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


@dataclass(frozen=True)
class Filled:
    """The fill's result: the file and whether it changed."""

    path: Path
    changed: bool
    #: the values written, by dotted path (for the audit record; not in `as_json`)
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "changed": self.changed}


@dataclass(frozen=True)
class FillSite(Operation[FillPlan, Filled]):
    """Fill the object store endpoint, gate, network and appliance IDs of `path` from the cloud."""

    path: Path
    password: VaultPassword = field(repr=False)
    definitions: Mapping[str, ComponentDefinition] | None = field(default=None, compare=False)

    title: ClassVar[str] = "Fill core.yaml from the cloud"
    refusal: ClassVar[str] = "fill writes core.yaml"
    action: ClassVar[str] = "site.edit"
    #: a stop signal cancels the run at its next await: before the one atomic write, never during it
    cancels_itself: ClassVar[bool] = False

    async def plan(self, site: "SiteConnection") -> FillPlan:
        return await plan_fill(site, self.path, self.password, self.definitions)

    def preview(self, plan: FillPlan) -> Preview:
        return plan.preview(self.password)

    def confirmation(self, plan: FillPlan) -> Confirmation | None:
        return None  # the file's earlier values are in the preview and in the repository

    async def execute(self, site: "SiteConnection", plan: FillPlan, context: RunContext) -> Filled:
        written = await fill_site_file(site, plan, self.password, context, self.definitions, record=False,
                                       ledger=context.keep(WriteLedger(plan.path)))
        return Filled(plan.path, written.changed, written.values)

    def audit_details(self, plan: FillPlan, result: Filled) -> Mapping[str, Any] | None:
        if not result.changed:
            return None
        return write_details(plan.path, self.password, result.written)

    def audit_failure(self, plan: FillPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        return (context.kept(WriteLedger) or WriteLedger(plan.path)).failure_record(error)

    def audit_target(self, plan: FillPlan, result: Filled) -> str:
        return str(plan.path)
