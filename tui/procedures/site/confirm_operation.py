"""Confirming an appliance ID as an operation: plan (the identity check's finding), record, audit.

The confirmations themselves (where they live, how they are read) are `site.confirmations`; this
module writes one, after reading the cloud facts the identity check needs (`site.fill`).
"""

from __future__ import annotations

import getpass
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui.domain.appliance_identity import (
    Confirmation,
    ImageFacts,
    ServiceTemplateFacts,
    TemplateFacts,
    appliance_id_leaves,
    check_appliance_ids,
)
from tui.domain.components import ComponentDefinition
from tui.domain.endpoints import without_credentials
from tui.domain.site_config import SiteConfig
from tui.errors import SiteError
from tui.procedures.operation import Confirmation as OperationQuestion
from tui.procedures.operation import Operation, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site.confirmations import FORMAT_VERSION, check_reason, confirmations_path, load_confirmations
from tui.procedures.site.fill import gather_cloud_facts
from tui.procedures.site_record import write_private_atomically

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

@dataclass(frozen=True)
class ConfirmPlan:
    confirmation: Confirmation
    #: what the identity check says today (the error this confirmation answers)
    finding: str

    def preview(self) -> Preview:
        c = self.confirmation
        return Preview(f"Confirm {c.kind} {c.object_id} for {c.path}", (
            Change(f"record that {c.kind} {c.object_id} {c.object_name!r} is right for {c.path}: {c.reason}", "", "create"),
        ), warnings=(self.finding,))


async def plan_confirmation(
    site: "SiteConnection",
    config: SiteConfig,
    path: str,
    reason: str | None,
    definitions: Mapping[str, ComponentDefinition],
) -> ConfirmPlan:
    """What confirming `path` records; refuses a path that is no appliance ID, or one already right."""
    text = check_reason(reason)
    leaves = {p: (definition, kind, object_id) for definition, _leaf, p, kind, object_id in appliance_id_leaves(config, definitions)}
    if path not in leaves:
        known = ", ".join(sorted(leaves)) or "none"
        raise SiteError(f"{path} is not a set appliance ID", f"Appliance IDs of the listed components: {known}.")
    definition, kind, object_id = leaves[path]
    facts = await gather_cloud_facts(site, config, definitions)
    if facts.identity is None:
        raise SiteError("The cloud could not be read", "; ".join(facts.notes) or "Images and templates are unknown; nothing was recorded.")
    names: dict[str, Mapping[int, ImageFacts | TemplateFacts | ServiceTemplateFacts]] = {
        "image": facts.identity.images, "VM template": facts.identity.templates, "service template": facts.identity.service_templates}
    found = names[kind].get(object_id)
    if found is None:
        raise SiteError(f"{kind} {object_id} does not exist", f"{path} points at nothing; fix the ID (sitetk site fill) instead.")
    errors = [f for f in check_appliance_ids(config, {definition.name: definition}, facts.identity) if f.path == path]
    if not errors or errors[0].severity.value != "error":
        raise SiteError(f"Nothing to confirm for {path}", f"{kind} {object_id} {found.name!r} is not in doubt: " +
                        (errors[0].message if errors else f"it is {definition.name}'s appliance."))
    user = f"{_local_user()} (cloud user {site.settings.one_user})" if site.settings.one_user else _local_user()
    now = datetime.now(timezone.utc).replace(microsecond=0).isoformat()
    return ConfirmPlan(Confirmation(path, kind, object_id, found.name, text, now, user), errors[0].message)


def _local_user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def confirm_appliance_id(site: "SiteConnection", plan: ConfirmPlan) -> str:
    """Record the confirmation (0600 file beside the site record); returns the path. The
    `ConfirmApplianceId` operation that runs it writes the audit record (`confirmation_details`)."""
    path = confirmations_path(site.settings)
    existing = tuple(c for c in load_confirmations(site.settings) if c.path != plan.confirmation.path)
    data = {"format": FORMAT_VERSION, "endpoint": without_credentials(site.settings.xmlrpc_url),
            "confirmations": [c.as_json() for c in (*existing, plan.confirmation)]}
    try:
        write_private_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise SiteError("The confirmation cannot be written", f"{path}: {exc.strerror or exc}") from None
    return str(path)


@dataclass(frozen=True)
class ConfirmationRecorded:
    """The result of recording a confirmation: what was recorded and where."""

    confirmation: Confirmation
    file: str

    def as_json(self) -> dict[str, Any]:
        return {"confirmation": self.confirmation.as_json(), "file": self.file}


@dataclass(frozen=True)
class ConfirmApplianceId(Operation[ConfirmPlan, ConfirmationRecorded]):
    """Record that the object `path` (a dotted appliance ID of `config`) names is right although
    it is not marked as the component's appliance (`plan_confirmation`, `confirm_appliance_id`)."""

    config: SiteConfig = field(compare=False)
    path: str
    reason: str | None
    definitions: Mapping[str, ComponentDefinition] = field(compare=False)

    title: ClassVar[str] = "Confirm an appliance ID"
    refusal: ClassVar[str] = "a confirmation is recorded in the state directory"
    action: ClassVar[str] = "site.confirm_appliance_id"
    #: it writes a file beside the site record, nothing on the site itself; still refused in read-only mode
    mutating: ClassVar[bool] = True

    async def plan(self, site: "SiteConnection") -> ConfirmPlan:
        return await plan_confirmation(site, self.config, self.path, self.reason, self.definitions)

    def preview(self, plan: ConfirmPlan) -> Preview:
        return plan.preview()

    def confirmation(self, plan: ConfirmPlan) -> OperationQuestion | None:
        c = plan.confirmation
        return OperationQuestion("Record", f"that {c.kind} {c.object_id} is right for {c.path}", plan.finding)

    async def execute(self, site: "SiteConnection", plan: ConfirmPlan, context: RunContext) -> ConfirmationRecorded:
        written = confirm_appliance_id(site, plan)
        context.report(Progress("confirm", 1, 1, f"recorded in {written} (audit-logged)", ProgressState.DONE))
        return ConfirmationRecorded(plan.confirmation, written)

    def audit_details(self, plan: ConfirmPlan, result: ConfirmationRecorded) -> Mapping[str, Any] | None:
        c = result.confirmation
        return {"kind": c.kind, "object_id": c.object_id, "object_name": c.object_name, "reason": c.reason,
                "finding": plan.finding, "file": result.file}

    def audit_target(self, plan: ConfirmPlan, result: ConfirmationRecorded) -> str:
        return result.confirmation.path
