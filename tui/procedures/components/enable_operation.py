"""Offering a component (spec operation 9) as an operation (tui.procedures.operation).

`EnableComponent(path, password, definition, values)` plans an `EnableReview`: with the cloud
(`cloud=True` and the component has appliances) the provisioning plan (`plan_provision`:
downloads or reuse, ACL grants), the early check that every site variable the appliances do not
give is there (unless `allow_incomplete`), and the site-variable changes; without the cloud only
the site-variable changes (the appliances' IDs are given as site variables). The preview lists
the downloads with `onemarketapp export`, the rules with `oneacl create` and the core.yaml edits
with `ansible-vault edit`. It runs `offer_component(site, path, password, definition, context)`
(provision, list, re-encrypt; what it created is removed again when a later step fails), which
reports to the run's context and returns `ComponentEnabled` with the values learned from the
appliances, or `enable_component` without the cloud.

The run's one audit record (`site.enable_component`, written by `run_operation`) holds the values
written, the component's appliances and the ACL rules added; a run that fails holds the rules added
and what the rollback removed (or could not), and whether core.yaml was replaced, from the run's
`EnableLedger` (a `ProvisionLedger` and a `WriteLedger`; `context.keep`/`context.kept`), kept as the
run goes.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui.domain.components import ComponentDefinition
from tui.domain.site_fill import appliance_leaves
from tui.errors import SiteError
from tui.procedures.components.provision import (
    GRANT_POLICY,
    ComponentProvisioner,
    ProvisionLedger,
    ProvisionPlan,
    RuleGranted,
    plan_provision,
    undo_on_failure,
)
from tui.procedures.market.download import DEFAULT_POLL_INTERVAL, DEFAULT_STEP_TIMEOUT
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Preview
from tui.procedures.site.config import (
    ConfigWritten,
    VaultPassword,
    WriteLedger,
    check_enable_inputs,
    enable_component,
    enable_details,
    load_site_config,
    preview_enable_component,
    write_failure_details,
)

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


@dataclass(frozen=True)
class EnableReview:
    """The planned offer: the provisioning (None without it) and the whole preview."""

    component: str
    provision: ProvisionPlan | None
    preview: Preview

    @property
    def step_names(self) -> tuple[str, ...]:
        steps = [f"enable {self.component}"]
        for appliance in self.provision.appliances if self.provision else ():
            if appliance.download is not None:
                steps += [f"{appliance.record.name}: {s}" for s in appliance.download.step_names]
            else:
                steps.append(f"{appliance.record.name}: download")
        return tuple(steps)

    def as_json(self) -> dict[str, Any]:
        return self.provision.as_json() if self.provision is not None else {}


@dataclass(frozen=True)
class ComponentEnabled:
    """The offer's result: whether core.yaml changed and what the appliances gave."""

    component: str
    path: Path
    changed: bool
    learned: Mapping[str, Any] = field(default_factory=dict)
    #: the values written to core.yaml (for the audit record; not in `as_json`)
    written: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: the ACL rules added for the automation user (for the audit record)
    granted: tuple[RuleGranted, ...] = field(default=(), compare=False)

    def as_json(self) -> dict[str, Any]:
        return {"component": self.component, "path": str(self.path), "changed": self.changed, "values": dict(self.learned)}


@dataclass
class EnableLedger:
    """The run's typed record (`RunContext.keep`): what the provisioning created and undid, and
    whether core.yaml was replaced, kept as the run goes (its `audit_failure` reads it)."""

    provision: ProvisionLedger
    write: WriteLedger


@dataclass(frozen=True)
class EnableComponent(Operation[EnableReview, ComponentEnabled]):
    """List `definition` in core.yaml with its site variables, its appliances provisioned first."""

    path: Path
    password: VaultPassword = field(repr=False)
    definition: ComponentDefinition
    values: Mapping[str, Any] = field(default_factory=dict)
    #: download the appliances and grant the automation cloud user (False: only list the component)
    cloud: bool = True
    allow_incomplete: bool = False
    cloud_user: str | None = None
    datastore_id: int | None = None
    poll_interval: float = DEFAULT_POLL_INTERVAL
    step_timeout: float = DEFAULT_STEP_TIMEOUT

    title: ClassVar[str] = "Offer a component"
    refusal: ClassVar[str] = "enabling a component downloads appliances, adds ACL rules and writes core.yaml"
    action: ClassVar[str] = "site.enable_component"

    @property
    def provisions(self) -> bool:
        return self.cloud and bool(self.definition.appliances)

    @property
    def cancels_itself(self) -> bool:  # type: ignore[override]
        """With the cloud, `offer_component` watches the cancel (a download is rolled back); without
        it, a stop signal cancels the run at its next wait, before the one atomic write of core.yaml."""
        return self.provisions

    async def plan(self, site: "SiteConnection") -> EnableReview:
        name = self.definition.name
        if not self.provisions:
            variables = await preview_enable_component(self.path, self.password, self.definition, self.values, site.naming)
            if self.cloud:  # a component without appliances: nothing to download or grant
                variables = Preview(f"Enable {name}", variables.changes, warnings=variables.warnings)
            return EnableReview(name, None, variables)
        provision = await plan_provision(site, self.definition, cloud_user=self.cloud_user, datastore_id=self.datastore_id)
        if not self.allow_incomplete:  # every variable the appliance does not give, before anything is asked or created
            await check_enable_inputs(self.path, self.password, self.definition, self.values, provision.fills(), site.naming)
        variables = await preview_enable_component(self.path, self.password, self.definition, self.values, site.naming,
                                                   from_appliance=provision.fills())
        planned = provision.preview()
        preview = Preview(f"Enable {name} for cloud user {provision.user.name}",
                          planned.changes + tuple(c for c in variables.changes if not c.description.startswith("appliance ")),
                          warnings=planned.warnings + variables.warnings)
        return EnableReview(name, provision, preview)

    def preview(self, plan: EnableReview) -> Preview:
        return plan.preview

    def confirmation(self, plan: EnableReview) -> Confirmation | None:
        if plan.provision is None or plan.preview.is_noop:
            return None
        return Confirmation(f"Enable {self.definition.name}", f"(download, grant {plan.provision.user.name}, write core.yaml)",
                            GRANT_POLICY)

    async def execute(self, site: "SiteConnection", plan: EnableReview, context: RunContext) -> ComponentEnabled:
        ledger = context.keep(EnableLedger(ProvisionLedger(), WriteLedger(self.path)))
        if plan.provision is not None:
            return await offer_component(site, self.path, self.password, self.definition, context, self.values,
                                         plan=plan.provision, allow_incomplete=self.allow_incomplete,
                                         poll_interval=max(0.01, self.poll_interval), step_timeout=self.step_timeout,
                                         ledger=ledger)
        written = await enable_component(self.path, self.password, self.definition, context, self.values,
                                         naming=site.naming, allow_incomplete=self.allow_incomplete, ledger=ledger.write)
        return _enabled(self.definition, self.path, written, {}, ledger.provision)

    def audit_details(self, plan: EnableReview, result: ComponentEnabled) -> Mapping[str, Any] | None:
        if not (result.changed or result.granted):
            return None
        details = enable_details(self.definition, result.path, result.written)
        return {**details, "grants": [g.as_json() for g in result.granted]} if result.granted else details

    def audit_failure(self, plan: EnableReview, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        ledger = context.kept(EnableLedger) or EnableLedger(ProvisionLedger(), WriteLedger(self.path))
        return {**write_failure_details(ledger.write), "component": self.definition.name,
                **ledger.provision.failure_details()}

    def audit_target(self, plan: EnableReview, result: ComponentEnabled) -> str:
        return self.definition.name


async def offer_component(
    site: "SiteConnection",
    path: Path,
    password: VaultPassword,
    definition: ComponentDefinition,
    context: RunContext,
    values: Mapping[str, Any] | None = None,
    *,
    plan: ProvisionPlan | None = None,
    cloud_user: str | None = None,
    datastore_id: int | None = None,
    allow_incomplete: bool = False,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    ledger: "EnableLedger | None" = None,
) -> ComponentEnabled:
    """Provision the component and list it in core.yaml with its site variables, reporting to
    `context`; what it creates is kept in `ledger` (and whether core.yaml was replaced) and removed
    again when a later step fails (or the run is stopped), the error then saying what was removed.

    It records nothing: the `EnableComponent` operation writes the run's one audit record
    (`site.enable_component`, with the grants; a failed run's record lists what was undone).

    Operator-given `values` win over what the appliances say. core.yaml is decrypted first, so a
    wrong password or an unreadable file stops everything before the cloud changes.
    """
    await load_site_config(Path(path), password, site.naming)
    ledger = ledger if ledger is not None else EnableLedger(ProvisionLedger(), WriteLedger(Path(path)))
    created = ledger.provision
    provisioner = ComponentProvisioner(site, context, cloud_user, datastore_id, plan, step_timeout, poll_interval, created)
    try:
        written = await enable_component(
            Path(path), password, definition, context, values, naming=site.naming,
            provision_appliances=provisioner if definition.appliances else None,
            from_appliance=plan.fills() if plan is not None else appliance_leaves(definition),
            allow_incomplete=allow_incomplete, ledger=ledger.write,
        )
    except SiteError as error:
        raise await undo_on_failure(site, created, definition, error, context) from None
    except BaseException:  # a stopped run (its task cancelled) removes what it created too
        with contextlib.suppress(BaseException):
            await undo_on_failure(site, created, definition, SiteError("Enable interrupted"), context)
        raise
    return _enabled(definition, Path(path), written, provisioner.learned, created)


def _enabled(definition: ComponentDefinition, path: Path, written: ConfigWritten, learned: Mapping[str, Any],
             ledger: ProvisionLedger) -> ComponentEnabled:
    return ComponentEnabled(definition.name, path, written.changed, dict(learned), written.values, tuple(ledger.granted))
