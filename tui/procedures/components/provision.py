"""Day-2 provisioning of a component (spec operation 9): its appliances downloaded and the
automation cloud user allowed to use their images, VM templates and service templates.

- `plan_provision(site, definition, cloud_user=None, datastore_id=None)`: decides, without
  changing anything, per appliance of the component whether it is downloaded already (the
  newest build carries the marketplace's version: reused) or must be downloaded (a
  `DownloadPlan` of the marketplace procedures, which itself reuses what an interrupted run left),
  and which grants the objects need. The cloud user is the one named in the automation's
  cloud-username input of the toolkit's input file, given by the caller; never guessed.
  `ProvisionPlan.preview()` lists every change with the equivalent platform commands
  (`onemarketapp export`, `oneimage update --append`, `oneacl create`).
- `provision_component(site, plan, context)`: runs it, reporting to the run's `RunContext`, and
  returns `Provisioned` (the component's learned site-variable values, the appliances, the grants).
  Downloads go through `download_appliance` with the same context (its steps named after the
  appliance; progress, rollback on failure, attributes attached); each grant is one ACL rule
  (`domain.object_grants` says why rules and not chgrp/chmod). An object the user can already use
  is left alone, and a rule the platform reports as existing counts as granted, so re-runs are
  idempotent. What it creates (downloaded objects, reused ones excluded, and new rules) goes to the
  run's `ProvisionLedger` as it is made; `undo_provision` removes it again (each deletion kept in the
  ledger too), which `EnableComponent`'s failure record reads.
- `ComponentProvisioner`: the `ApplianceProvisioner` of `site_config.enable_component`.
- `EnableComponent` and its procedure `offer_component` (decrypt, provision, list, re-encrypt) are
  in `components/enable_operation.py`. Submitting stays a separate, confirmed step.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping

from tui.domain.appliances import ApplianceRecord
from tui.domain.components import ComponentDefinition
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.domain.object_grants import KINDS, CloudObject, Grant, plan_grants
from tui.domain.site_fill import InstalledAppliance, appliance_leaves, appliance_values
from tui.domain.upgrades import InstallState
from tui.domain.users import User
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.market.attributes import tag_for_record
from tui.procedures.market.download import (
    DEFAULT_POLL_INTERVAL,
    DEFAULT_STEP_TIMEOUT,
    DownloadPlan,
    DownloadResult,
    default_download_name,
    download_appliance,
    find_market_app,
    list_image_datastores,
    plan_download,
)
from tui.procedures.market.marketplaces import AmbiguousAppliance, load_catalog
from tui.procedures.operation import RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site.fill import installed_from_catalog

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: how the grants are made, for previews and the README
GRANT_POLICY = (
    "Grants are per-object ACL rules giving the automation cloud user USE only; the objects keep their owner, "
    "group and permissions (no oneimage chgrp/chmod, which would open them to a whole group). "
    "List them with `oneacl list`, revoke one with `oneacl delete <id>`."
)
_DUPLICATE = "already exists"


@dataclass(frozen=True)
class ApplianceStep:
    """One appliance of the component: reused as downloaded, or downloaded by `download`."""

    record: ApplianceRecord
    installed: InstalledAppliance | None = None
    download: DownloadPlan | None = None
    note: str = ""

    @property
    def reused(self) -> bool:
        return self.download is None


@dataclass(frozen=True)
class ProvisionPlan:
    definition: ComponentDefinition
    user: User
    appliances: tuple[ApplianceStep, ...]
    #: grants on objects that exist already (reused appliances); downloads get theirs afterwards
    grants: tuple[Grant, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def is_noop(self) -> bool:
        return all(step.reused for step in self.appliances) and not any(g.needed for g in self.grants)

    def fills(self) -> frozenset[str]:
        """The site variables the planned appliances fill, versioned groups by the builds that are
        downloaded or will be (a version no marketplace offers is not among them)."""
        versions = {s.record.id: (s.installed.version if s.installed is not None else s.record.version) for s in self.appliances}
        return appliance_leaves(self.definition, versions)

    def preview(self) -> Preview:
        changes: list[Change] = []
        user = self.user.name
        for step in self.appliances:
            record = step.record
            if step.download is None:
                found = step.installed
                ids = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in (
                    ("image", found.image_id if found else None), ("VM template", found.template_id if found else None),
                    ("service template", found.service_template_id if found else None)) if v is not None)
                changes.append(Change(f"{record.name} {record.version}: downloaded already ({ids}); reused", "", "none"))
                continue
            changes.extend(step.download.preview().changes)
            for kind in ("image", "template", "service_template"):
                if kind == "template" and not step.download.templates or kind == "service_template" and step.download.service is None:
                    continue
                resource, words = KINDS[kind]
                changes.append(Change(
                    f"allow {user} to use each new {words} of {record.name} (skipped when it may already)",
                    f"oneacl create '#{self.user.id} {resource}/#<new {words} id> USE'", "create"))
        for grant in self.grants:
            if grant.needed:
                changes.append(Change(f"allow {user} to use {grant.object.label}", grant.cli, "create"))
            else:
                changes.append(Change(f"{user} may already use {grant.object.label}: {grant.already}", "", "none"))
        if not self.appliances:
            changes.append(Change(f"{self.definition.name} uses no appliance: nothing to download or grant", "", "none"))
        warnings = tuple(self.notes) + tuple(w for s in self.appliances if s.download for w in s.download.warnings)
        return Preview(f"Provision {self.definition.name} for cloud user {user} (ID {self.user.id})", tuple(changes), warnings=warnings)

    def as_json(self) -> dict[str, Any]:
        return {
            "component": self.definition.name,
            "user": {"id": self.user.id, "name": self.user.name},
            "appliances": [
                {"record": s.record.id, "name": s.record.name, "version": s.record.version, "reused": s.reused,
                 "download": s.download.as_json() if s.download else None, "note": s.note}
                for s in self.appliances
            ],
            "grants": [g.as_json() for g in self.grants],
            "notes": list(self.notes),
            "policy": GRANT_POLICY,
        }


@dataclass(frozen=True)
class RuleGranted:
    """A grant of the run (`ProvisionLedger.granted`): the rule added (None: the user could already,
    or the rule existed)."""

    grant: Grant
    rule_id: int | None

    def as_json(self) -> dict[str, Any]:
        """The audit record's view: the rule, its ID, who may use what, the platform command."""
        return {"rule": self.grant.rule, "rule_id": self.rule_id, "user": self.grant.user_name,
                "object": self.grant.object.label, "cli": self.grant.cli}


@dataclass(frozen=True)
class Undone:
    """A deletion of an undo (`ProvisionLedger.undone`): an object a failed enable had created,
    deleted (or not: `error`)."""

    kind: str  # "ACL rule", "service template", "VM template", "image"
    object_id: int
    reason: str
    error: str = ""

    @property
    def target(self) -> str:
        return f"{self.kind} {self.object_id}"


@dataclass(frozen=True)
class Provisioned:
    """What `provision_component` returns: the component's site-variable values learned from its
    appliances, with notes, the appliances and the grants."""

    values: Mapping[str, Any]
    notes: tuple[str, ...] = ()
    appliances: Mapping[str, InstalledAppliance] = field(default_factory=dict)
    grants: tuple[Grant, ...] = ()


async def resolve_cloud_user(site: "SiteConnection", name: str | None = None) -> User:
    """The automation cloud user `name` (the input file's app_automation_cloud_username). Never
    guessed from the site record or a live service: either may belong to another deployment, whose
    user would get the grants while the automation's own gets "Not authorized to perform USE"."""
    wanted = (name or "").strip()
    input_name = site.naming.input_name("automation_cloud_username")
    if not wanted:
        raise SiteError(
            "Automation cloud user not named",
            f"The appliances are granted to the cloud user named in {input_name} of the toolkit's input file: give "
            f"the file (--input FILE) or the user (--cloud-user NAME). It is not taken from the site record or a "
            f"live service{await _deployed_users(site)}.",
        )
    users = await site.cloud.list_users()
    user = next((u for u in users if u.name == wanted), None)
    if user is None:
        raise SiteError(f"Cloud user {wanted!r} does not exist", f"{input_name} names {wanted!r}, which the cloud does not have: create it (oneuser create) or fix the name.")
    return user


async def _deployed_users(site: "SiteConnection") -> str:
    """What the live toolkit services were deployed with, as a hint (never used to grant)."""
    from tui.procedures.toolkit.own_service import live_toolkits

    try:
        services = live_toolkits(await site.flow.list_services(), site.naming)
    except SiteError:
        return ""
    name = site.naming.input_name("automation_cloud_username")
    said = [f"service {s.id} {s.name!r} was deployed with {name} {s.input_values.get(name, '')!r}" for s in services]
    return f" (the site shows: {'; '.join(said)})" if said else ""


async def _objects(site: "SiteConnection", found: InstalledAppliance) -> list[CloudObject]:
    objects: list[CloudObject] = []
    if found.image_id is not None:
        image = await site.cloud.image_info(found.image_id)
        objects.append(CloudObject("image", image.id, image.name, image.uid, image.gid, image.permissions))
    if found.template_id is not None:
        template = await site.cloud.template_info(found.template_id)
        objects.append(CloudObject("template", template.id, template.name, template.uid, template.gid, template.permissions))
    if found.service_template_id is not None:
        document = await site.cloud.document_info(found.service_template_id)
        objects.append(CloudObject("service_template", document.id, document.name, document.uid, document.gid, document.permissions))
    return objects


async def _result_objects(site: "SiteConnection", result: DownloadResult) -> list[CloudObject]:
    """Every object a download left: all its images, VM templates and its service template."""
    objects: list[CloudObject] = []
    images = await gather(*(site.cloud.image_info(i) for i in result.image_ids))
    objects += [CloudObject("image", i.id, i.name, i.uid, i.gid, i.permissions) for i in images]
    templates = await gather(*(site.cloud.template_info(t) for t in result.template_ids if t >= 0))
    objects += [CloudObject("template", t.id, t.name, t.uid, t.gid, t.permissions) for t in templates]
    if result.service_template_id is not None:
        d = await site.cloud.document_info(result.service_template_id)
        objects.append(CloudObject("service_template", d.id, d.name, d.uid, d.gid, d.permissions))
    return objects


async def plan_provision(
    site: "SiteConnection",
    definition: ComponentDefinition,
    *,
    cloud_user: str | None = None,
    datastore_id: int | None = None,
) -> ProvisionPlan:
    """What provisioning `definition` would do; nothing is changed."""
    user = await resolve_cloud_user(site, cloud_user)
    record_ids = definition.appliance_record_ids()
    if not record_ids:
        return ProvisionPlan(definition, user, ())
    catalog, templates, documents, rules = await gather(
        load_catalog(site), site.cloud.list_templates(), site.cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT), site.cloud.acl_list()
    )
    steps: list[ApplianceStep] = []
    objects: list[CloudObject] = []
    notes: list[str] = []
    datastore: int | None = datastore_id
    for record_id in record_ids:
        try:
            entry = catalog.newest(record_id)
        except AmbiguousAppliance as error:
            raise SiteError(f"{definition.name}: appliance {record_id}: {error.title}", error.detail,
                            retryable=error.retryable) from None
        except SiteError as error:
            failures = "; ".join(f"{f.source.name}: {f.title}" for f in catalog.failures)
            raise SiteError(
                f"{definition.name}: appliance {record_id} not found",
                f"{error.detail} {definition.name}'s public.yaml names {record_id}." + (f" Unreadable marketplaces: {failures}." if failures else ""),
            ) from None
        record = entry.record
        installed = installed_from_catalog(record_id, catalog, templates, documents)
        if entry.status.state is InstallState.UP_TO_DATE and installed is not None:
            steps.append(ApplianceStep(record, installed))
            objects += await _objects(site, installed)
            continue
        if datastore is None:
            stores = await list_image_datastores(site)
            if not stores:
                raise SiteError("No IMAGE datastore", "Appliances are downloaded into an IMAGE datastore; the cloud has none.")
            datastore = stores[0].id
        app = await find_market_app(site, record)
        plan = await plan_download(site, app.id, datastore, default_download_name(record.name, record.version), tag=tag_for_record(record))
        note = ""
        if entry.status.state is InstallState.UPDATE_AVAILABLE and entry.status.installed is not None:
            note = f"{record.name}: {entry.status.installed.label} is installed; {record.version} is downloaded beside it"
        elif entry.status.state is InstallState.UNTAGGED:
            note = f"{record.name}: {entry.status.note}"
        if note:
            notes.append(note)
        steps.append(ApplianceStep(record, None, plan, note))
    return ProvisionPlan(definition, user, tuple(steps), plan_grants(objects, user, rules), tuple(notes))


async def _grant(site: "SiteConnection", grant: Grant) -> tuple[ProgressState, str, int | None]:
    """Add one rule; (state, message, the new rule's ID). An existing rule counts as granted."""
    if not grant.needed:
        return ProgressState.SKIPPED, f"{grant.user_name} may already use {grant.object.label}: {grant.already}", None
    try:
        rule_id = await site.cloud.acl_add(grant.rule)
    except SiteError as error:
        if _DUPLICATE in error.detail or _DUPLICATE in error.title:
            return ProgressState.SKIPPED, f"rule {grant.rule} exists already", None
        raise
    return ProgressState.DONE, f"rule {rule_id}: {grant.rule}", rule_id


@dataclass
class ProvisionLedger:
    """The typed record of a provisioning run (kept on the `RunContext` by `EnableComponent`): the
    rules it added, what it created and has not undone yet (downloaded objects, reused ones
    excluded; the IDs of new ACL rules), and each deletion of an undo, kept as the run goes so a
    failed or stopped run still names them."""

    #: every rule the run added (an undone one stays here; `undone` says it went)
    granted: list[RuleGranted] = field(default_factory=list)
    #: (kind, id) of downloaded objects not undone
    created: list[tuple[str, int]] = field(default_factory=list)
    #: IDs of the added ACL rules not undone
    rules: list[int] = field(default_factory=list)
    undone: list[Undone] = field(default_factory=list)

    def note_download(self, result: DownloadResult) -> None:
        reused = set(result.reused)
        found: list[tuple[str, int | None]] = [("service template", result.service_template_id)]
        found += [("VM template", t) for t in result.template_ids]
        found += [("image", i) for i in result.image_ids]
        for kind, object_id in found:
            if object_id is not None and object_id >= 0 and f"{kind} {object_id}" not in reused:
                self.created.append((kind, object_id))

    def note_grant(self, granted: RuleGranted) -> None:
        if granted.rule_id is not None:
            self.granted.append(granted)
            self.rules.append(granted.rule_id)

    def failure_details(self) -> dict[str, Any]:
        """A failed run's audit details: the rules added, what the rollback removed (and why), and
        what it could not remove."""
        details: dict[str, Any] = {"grants": [g.as_json() for g in self.granted],
                                   "undone": [u.target for u in self.undone if not u.error]}
        if self.undone:
            details["undo_reason"] = self.undone[0].reason
        if any(u.error for u in self.undone):
            details["not_undone"] = [f"{u.target}: {u.error}" for u in self.undone if u.error]
        return details


async def provision_component(
    site: "SiteConnection",
    plan: ProvisionPlan,
    context: RunContext,
    *,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    ledger: ProvisionLedger | None = None,
) -> Provisioned:
    """Download what is missing, grant what is needed, reporting to `context` (a download's steps
    named after its appliance; the last event's data["values"] holds the learned values, as the
    `--json` log shows them); what it creates goes to `ledger` as it is made. Returns `Provisioned`."""
    ledger = ledger if ledger is not None else ProvisionLedger()
    name = plan.definition.name
    installed: dict[str, InstalledAppliance] = {}
    grants: list[Grant] = list(plan.grants)
    for step in plan.appliances:
        record = step.record
        if step.download is None:
            assert step.installed is not None
            installed[record.id] = step.installed
            context.report(Progress(f"{record.name}: download", 1, 1, f"{record.version} downloaded already: reused",
                                    ProgressState.SKIPPED))
            continue
        named = context.relay(partial(_named, record.name))
        result = await download_appliance(site, step.download, named, step_timeout=step_timeout, poll_interval=poll_interval)
        ledger.note_download(result)
        template_ids = [t for t in result.template_ids if t >= 0]
        installed[record.id] = InstalledAppliance(
            record.id, record.name, record.version,
            result.image_ids[0] if result.image_ids else None,
            template_ids[0] if template_ids else None,
            result.service_template_id,
        )
        new_objects = await _result_objects(site, result)
        grants += plan_grants(new_objects, plan.user, await site.cloud.acl_list())
    total = max(1, len(grants))
    for n, grant in enumerate(grants, start=1):
        state, message, rule_id = await _grant(site, grant)
        ledger.note_grant(RuleGranted(grant, rule_id))
        context.report(Progress(f"grant {grant.object.label}", n, total, message, state,
                                {**grant.as_json(), **({"rule_id": rule_id} if rule_id is not None else {})}))
    values, notes = appliance_values(plan.definition, installed)
    context.report(Progress(
        f"provision {name}", 1, 1,
        f"{name}: {len(installed)} appliance(s) ready for {plan.user.name}" + (f" ({'; '.join(notes)})" if notes else ""),
        ProgressState.DONE,
        {"values": values, "notes": list(notes), "appliances": {k: vars(v) for k, v in installed.items()},
         "grants": [g.as_json() for g in grants]},
    ))
    return Provisioned(values, tuple(notes), dict(installed), tuple(grants))


def _named(appliance: str, event: Progress) -> Progress:
    """A download's event, its step named after the appliance."""
    return replace(event, step=f"{appliance}: {event.step}")


async def undo_provision(site: "SiteConnection", ledger: ProvisionLedger, why: str, context: RunContext) -> list[Undone]:
    """Remove what a provisioning created (its ACL rules, then service templates, VM templates,
    images), each deletion reported and kept in `ledger.undone`; a deletion that fails is reported
    and kept with its error, not raised. Returns this undo's deletions."""
    calls = {"service template": site.cloud.document_delete, "VM template": site.cloud.template_delete, "image": site.cloud.image_delete}
    steps: list[tuple[str, int, Callable[[int], Any]]] = [("ACL rule", r, site.cloud.acl_delrule) for r in reversed(ledger.rules)]
    for kind in ("service template", "VM template", "image"):
        steps += [(k, i, calls[k]) for k, i in reversed(ledger.created) if k == kind]
    ledger.rules.clear()
    ledger.created.clear()
    done: list[Undone] = []
    total = len(steps)
    for n, (kind, object_id, call) in enumerate(steps, start=1):
        step = f"undo: delete {kind} {object_id}"
        try:
            await call(object_id)
        except SiteError as error:
            undone = Undone(kind, object_id, why, error.title)
            message, state = f"could not delete {kind} {object_id}: {error.title}", ProgressState.FAILED
        else:
            undone = Undone(kind, object_id, why)
            message, state = f"deleted {kind} {object_id}", ProgressState.DONE
        done.append(undone)
        ledger.undone.append(undone)
        context.report(Progress(step, n, total, message, state, {"kind": kind, "id": object_id}))
    return done


async def undo_on_failure(site: "SiteConnection", ledger: ProvisionLedger, definition: ComponentDefinition,
                          error: SiteError, context: RunContext) -> SiteError:
    """Undo what the failed enable created; the error with what was removed added to its detail."""
    if not (ledger.created or ledger.rules):
        return error
    removed = [f"{k} {i}" for k, i in ledger.created] + [f"ACL rule {r}" for r in ledger.rules]
    done = await undo_provision(site, ledger, f"enabling {definition.name} failed: {error.title}", context)
    failed = [f"could not delete {u.target}: {u.error}" for u in done if u.error]
    note = f"Removed what it had created: {', '.join(removed)}."
    if failed:
        note += f" Not removed: {'; '.join(failed)} (delete by hand)."
    return SiteError(error.title, f"{error.detail} {note}".strip(), retryable=error.retryable, code=error.code)


@dataclass
class ComponentProvisioner:
    """`site_config.ApplianceProvisioner`: plans (unless given a plan) and provisions a component,
    reporting to `context` and keeping what it creates in `ledger`; returns the learned
    site-variable values (also kept in `learned`)."""

    site: "SiteConnection"
    context: RunContext
    cloud_user: str | None = None
    datastore_id: int | None = None
    plan: ProvisionPlan | None = None
    step_timeout: float = DEFAULT_STEP_TIMEOUT
    poll_interval: float = DEFAULT_POLL_INTERVAL
    ledger: ProvisionLedger = field(default_factory=ProvisionLedger)
    learned: dict[str, Any] = field(default_factory=dict)

    async def __call__(self, definition: ComponentDefinition) -> Mapping[str, Any]:
        plan = self.plan if self.plan is not None and self.plan.definition.name == definition.name else None
        if plan is None:
            plan = await plan_provision(self.site, definition, cloud_user=self.cloud_user, datastore_id=self.datastore_id)
        provisioned = await provision_component(self.site, plan, self.context, step_timeout=self.step_timeout,
                                                poll_interval=self.poll_interval, ledger=self.ledger)
        self.learned = dict(provisioned.values)
        return dict(self.learned)
