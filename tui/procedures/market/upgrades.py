"""Upgrading appliances: the plan (`Software | Previous | New`) and applying it in the spec's order.

The plan comes from `domain.upgrades.build_upgrade_plan` over the marketplace catalog. Applying it
follows the spec's upgrade rules, in order:

1. attributes before update: every installed image of an appliance must carry its marketplace
   attributes; when one does not (or an untagged look-alike exists), nothing is changed and the
   operator is told which images to tag first (`sitetk market attrs`);
2. download each new version (operation 2) into the chosen IMAGE datastore; the download attaches
   the new version's attributes to every new image;
3. remove the old version: its images, the VM templates whose disks use them and the service
   templates whose roles use those templates, each appliance only after the operator confirms,
   and only when no VM still uses the old images. Never an object the new version uses (one its
   download reused or created), and never the last copy of an appliance: without the new
   version's images in the cloud, the old version stays;
4. list the IDs core.yaml must change (old image / template / service template IDs and the new
   ones that replace them), and remind that new site variables may be needed.

The `ApplyUpgrades` operation writes the run's one audit record (`upgrade.apply`, by
`run_operation`): the downloads, every old object deleted (with its appliance and version) and the
IDs core.yaml must change; a run that fails says which deletions were done and which failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Collection, Mapping

from tui.domain.appliances import ApplianceRecord
from tui.domain.attribute_file import installed_version_from_image_template
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT, Document
from tui.domain.images import ImageInfo
from tui.domain.naming import NamingProfile
from tui.domain.object_names import fit_name
from tui.domain.upgrades import PlanStep, StepKind, UpgradePlan, build_upgrade_plan
from tui.domain.versions import ApplianceVersion
from tui.domain.vmtemplates import VmTemplate
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.market.attributes import role_template_ids, role_templates, tag_for_record
from tui.procedures.market.download import (
    DEFAULT_POLL_INTERVAL,
    DEFAULT_STEP_TIMEOUT,
    DownloadResult,
    default_download_name,
    download_appliance,
    find_market_app,
    plan_download,
)
from tui.procedures.market.marketplaces import MarketCatalog, load_catalog
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


@dataclass(frozen=True)
class Removal:
    """What removing the old version of one appliance deletes (shown in its confirmation)."""

    appliance: str
    version: str
    images: tuple[tuple[int, str], ...]
    template_ids: tuple[int, ...]
    service_template_ids: tuple[int, ...]
    #: old image id -> VM ids still using it (removal is refused while any)
    in_use: tuple[tuple[int, tuple[int, ...]], ...] = ()
    #: old objects kept because the new version uses them (its download reused them): "image 3", ...
    kept: tuple[str, ...] = ()

    @property
    def image_ids(self) -> tuple[int, ...]:
        return tuple(i for i, _ in self.images)

    @property
    def target(self) -> str:
        return f"{self.appliance} {self.version}"

    def describe(self) -> str:
        parts = [f"image(s) {', '.join(str(i) for i in self.image_ids) or 'none'}"]
        if self.template_ids:
            parts.append(f"VM template(s) {', '.join(map(str, self.template_ids))}")
        if self.service_template_ids:
            parts.append(f"service template(s) {', '.join(map(str, self.service_template_ids))}")
        if self.kept:
            parts.append(f"kept, the new version uses them: {', '.join(self.kept)}")
        return "; ".join(parts)

    def cli(self) -> str:
        lines = []
        for command, ids in (("oneflow-template delete", self.service_template_ids),
                             ("onetemplate delete", self.template_ids), ("oneimage delete", self.image_ids)):
            if ids:
                lines.append(f"{command} {','.join(map(str, ids))}")
        return "\n".join(lines)

    def as_json(self) -> dict[str, Any]:
        return {"appliance": self.appliance, "version": self.version, "image_ids": list(self.image_ids),
                "template_ids": list(self.template_ids), "service_template_ids": list(self.service_template_ids),
                "in_use": {str(i): list(vms) for i, vms in self.in_use}, "kept": list(self.kept)}


@dataclass(frozen=True)
class IdChange:
    """One ID core.yaml may hold that the upgrade replaces (`new` None: nothing replaces it)."""

    appliance: str
    kind: str  # "image", "VM template", "service template"
    old: int
    new: int | None
    label: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"appliance": self.appliance, "kind": self.kind, "old": self.old, "new": self.new, "label": self.label}


@dataclass(frozen=True)
class Deleted:
    """One old object the removal deleted, or failed to (`error`): the outcome of its event."""

    kind: str  # "service template", "VM template", "image"
    object_id: int
    appliance: str
    version: str
    error: str = ""

    @property
    def target(self) -> str:
        return f"{self.kind} {self.object_id}"

    def as_json(self) -> dict[str, Any]:
        found = {"object": self.target, "appliance": self.appliance, "version": self.version}
        return {**found, "error": self.error} if self.error else found


@dataclass(frozen=True)
class Upgraded:
    """What an applied upgrade plan leaves for core.yaml: the IDs it must change; and what it did."""

    core_yaml: tuple[IdChange, ...]
    #: the new versions downloaded, per appliance
    downloads: tuple[tuple[str, DownloadResult], ...] = ()
    #: the old objects deleted (or that failed to be)
    deleted: tuple[Deleted, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"core_yaml": [change.as_json() for change in self.core_yaml]}


#: asked once per appliance before its old version is removed; True removes it
ConfirmRemoval = Callable[[Removal], Awaitable[bool]]


async def load_upgrade_plan(site: "SiteConnection", catalog: MarketCatalog | None = None,
                            only: Collection[str] | None = None) -> UpgradePlan:
    """The plan for every installed appliance with a newer version (or those named in `only`)."""
    if catalog is None:
        catalog = await load_catalog(site)
    return build_upgrade_plan((entry.status for entry in catalog.entries), site.naming, only=only)


def upgrade_download_name(record: ApplianceRecord, previous: ApplianceVersion | None) -> str:
    """The name the new version is downloaded under: the default (`DNS Server v1.1.0`), unless the
    installed version has the same default name (a rebuild published under the same software
    version): then the whole version (`DNS Server v1.1.0-20250520-0931`), so that the download
    makes the new build's own objects instead of finding the installed ones under that name."""
    name = default_download_name(record.name, record.version)
    if previous is not None and default_download_name(record.name, previous.raw) == name:
        return fit_name(f"{record.name} {record.version.strip()}")
    return name


def _previous(plan: UpgradePlan) -> dict[str, ApplianceVersion]:
    return {row.software: row.previous for row in plan.rows}


def upgrade_preview(plan: UpgradePlan, datastore_id: int | None = None,
                    names: Mapping[str, str] | None = None) -> Preview:
    """What applying the plan changes, step by step, with the platform CLI for each."""
    changes: list[Change] = []
    previous = _previous(plan)
    ds = f"--datastore {datastore_id}" if datastore_id is not None else "--datastore <IMAGE datastore id>"
    for step in plan.steps:
        if step.kind is StepKind.CHECK_ATTRIBUTES:
            changes.append(Change(step.summary, "", "none" if step.done else "update"))
        elif step.kind is StepKind.DOWNLOAD and step.record is not None:
            name = (names or {}).get(step.appliance) or upgrade_download_name(step.record,
                                                                              previous.get(step.appliance))
            changes.append(Change(f"{step.summary} as {name!r}",
                                  f"onemarketapp export <app id of {step.record.name}> '{name}' {ds}", "create"))
        elif step.kind is StepKind.ATTACH_ATTRIBUTES:
            changes.append(Change(step.summary, "oneimage update <new image id> <attribute file> --append", "update"))
        elif step.kind is StepKind.REMOVE_OLD:
            changes.append(Change(f"{step.summary} (after confirmation; with the VM templates and service templates "
                                  "that use them)", f"oneimage delete {','.join(map(str, step.image_ids))}",
                                  "delete"))
        else:
            changes.append(Change(step.summary, "", "action"))
    warnings = tuple(plan.blocked) + tuple(plan.notes)
    return Preview("Upgrade appliances: " + (", ".join(f"{r.software} {r.previous.label} -> {r.new.label}"
                                                        for r in plan.rows) or "nothing to upgrade"),
                   tuple(changes), destructive=any(s.kind is StepKind.REMOVE_OLD for s in plan.steps),
                   target=", ".join(r.software for r in plan.rows), warnings=warnings)


@dataclass(frozen=True)
class SiteObjects:
    """The images, VM templates and service templates, read once before anything changes."""

    images: tuple[ImageInfo, ...]
    templates: tuple[VmTemplate, ...]
    documents: tuple[Document, ...]


async def read_objects(site: "SiteConnection") -> SiteObjects:
    images, templates, documents = await gather(
        site.cloud.list_images(), site.cloud.list_templates(), site.cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT))
    return SiteObjects(tuple(images), tuple(templates), tuple(documents))


def removal_for(step: PlanStep, objects: SiteObjects, naming: NamingProfile,
                new: DownloadResult | None = None) -> Removal:
    """The old objects of one REMOVE_OLD step: its images, the VM templates whose disks are all
    among them, and the service templates whose roles all use those templates; never an object
    the new version (`new`, its download) uses: those are listed as `kept`."""
    uses = _used_by(new)
    by_id = {image.id: image for image in objects.images}
    present = [i for i in step.image_ids if i in by_id]
    old_ids = [i for i in present if ("image", i) not in uses]
    old = set(present)
    templates = [t.id for t in objects.templates if t.image_ids and set(t.image_ids) <= old]
    template_ids = tuple(t for t in templates if ("VM template", t) not in uses)
    services = [d.id for d in objects.documents
                if (ids := role_template_ids(d.body or {})) and set(ids) <= set(templates)]
    service_ids = tuple(d for d in services if ("service template", d) not in uses)
    kept = tuple(f"{kind} {i}" for kind, found in (("service template", services), ("VM template", templates),
                                                   ("image", present)) for i in found if (kind, i) in uses)
    in_use = tuple((i, by_id[i].vm_ids) for i in old_ids if by_id[i].running_vms > 0 or by_id[i].vm_ids)
    tags = [installed_version_from_image_template(by_id[i].attributes, naming) for i in present]
    versions = sorted({t.version.label for t in tags if t is not None})
    return Removal(step.appliance, ", ".join(versions), tuple((i, by_id[i].name) for i in old_ids), template_ids,
                   service_ids, in_use, kept)


def _used_by(new: DownloadResult | None) -> set[tuple[str, int]]:
    """(kind, id) of every object the new version's download left in use: created or reused."""
    if new is None:
        return set()
    used = {("image", i) for i in new.image_ids} | {("VM template", t) for t in new.template_ids}
    if new.service_template_id is not None:
        used.add(("service template", new.service_template_id))
    return used


def last_copy(new: DownloadResult | None, objects: SiteObjects) -> str:
    """Why removing the old version would leave no copy of the appliance ("" when it would not):
    the new version was not downloaded, or none of its images is in the cloud."""
    if new is None or not new.image_ids:
        return "the new version was not downloaded"
    present = {image.id for image in objects.images}
    if not present & set(new.image_ids):
        return f"the new version's image(s) {', '.join(map(str, new.image_ids))} are not in the cloud"
    return ""


async def remove_old(site: "SiteConnection", removal: Removal, context: RunContext,
                     deleted: list[Deleted] | None = None) -> tuple[Deleted, ...]:
    """Delete the old version (service templates, then VM templates, then images); each deletion
    (done or failed) is an event and a `Deleted`, added to `deleted` as it happens (the operation's
    failure record) and returned.

    Refuses (raises `SiteError`, nothing deleted) while a VM still uses an old image.
    """
    if removal.in_use:
        users = "; ".join(f"image {i} by VM(s) {', '.join(map(str, vms)) or '(unknown)'}" for i, vms in removal.in_use)
        raise SiteError(f"The old {removal.target} is still in use",
                        f"{users}. Terminate or move those VMs to the new version first, then remove it.")
    deleted = deleted if deleted is not None else []
    deletions: list[tuple[str, int, Callable[[int], Awaitable[int]]]] = []
    deletions += [("service template", i, site.cloud.document_delete) for i in removal.service_template_ids]
    deletions += [("VM template", i, site.cloud.template_delete) for i in removal.template_ids]
    deletions += [("image", i, site.cloud.image_delete) for i in removal.image_ids]
    failed: list[str] = []
    for n, (kind, object_id, call) in enumerate(deletions, start=1):
        step = f"remove {kind} {object_id}"
        try:
            await call(object_id)
        except SiteError as error:
            failed.append(f"{kind} {object_id}: {error.title}")
            deleted.append(Deleted(kind, object_id, removal.appliance, removal.version, error.title))
            context.report(Progress(step, n, len(deletions), error.title, ProgressState.FAILED,
                                    {"kind": kind, "id": object_id}, deleted[-1]))
            continue
        deleted.append(Deleted(kind, object_id, removal.appliance, removal.version))
        context.report(Progress(step, n, len(deletions), f"deleted {kind} {object_id}", ProgressState.DONE,
                                {"kind": kind, "id": object_id}, deleted[-1]))
    if failed:
        raise SiteError(f"Removing the old {removal.target} failed for {len(failed)} object(s)", "; ".join(failed))
    return tuple(deleted)


async def id_changes(site: "SiteConnection", appliance: str, removal: Removal, result: DownloadResult | None,
                     before: SiteObjects) -> tuple[IdChange, ...]:
    """Pair each old ID with the new one that replaces it.

    Images pair by the marketplace app they came from (FROM_APP, by app name, since each version
    of an appliance has its own app), VM templates by their paired disks, service templates
    one to one.
    """
    new_images = await gather(*(site.cloud.image_info(i) for i in result.image_ids)) if result else []
    new_templates = await gather(*(site.cloud.template_info(t) for t in result.template_ids)) if result else []
    apps = {app.id: app.name for app in await site.cloud.list_marketapps()}

    def origin(image: ImageInfo) -> str:
        from_app = image.attributes.get("FROM_APP")
        if from_app.isdigit() and int(from_app) in apps:
            return apps[int(from_app)]
        return image.attributes.get("FROM_APP_NAME")

    old_by_id = {image.id: image for image in before.images}
    # one app can give several images (each VM template of a service exports its own, as
    # `onemarketapp export` does): pair them in export order, each new image once
    new_by_origin: dict[str, list[int]] = {}
    for new_image in new_images:
        if origin(new_image):
            new_by_origin.setdefault(origin(new_image), []).append(new_image.id)
    image_pairs: dict[int, int | None] = {}
    for old_id, _ in sorted(removal.images):
        old_image = old_by_id.get(old_id)
        candidates = new_by_origin.get(origin(old_image), []) if old_image is not None and origin(old_image) else []
        image_pairs[old_id] = candidates.pop(0) if candidates else None
    changes = [IdChange(appliance, "image", old, image_pairs[old], name) for old, name in removal.images]
    # templates: by the service role they serve, else by their (paired) disks
    old_roles = {tid: role for d in before.documents if d.id in removal.service_template_ids
                 for role, tid in role_templates(d.body or {})}
    new_roles: dict[str, int] = {}
    if result is not None and result.service_template_id is not None:
        document = await site.cloud.document_info(result.service_template_id)
        new_roles = {role: tid for role, tid in role_templates(document.body or {})}
    old_templates = {t.id: t for t in before.templates}
    unused = [t.id for t in new_templates]
    for old_id in removal.template_ids:
        old_template = old_templates.get(old_id)
        new = new_roles.get(old_roles.get(old_id, ""))
        if new is None and old_template is not None:
            wanted = tuple(image_pairs.get(i) for i in old_template.image_ids)
            new = next((t.id for t in new_templates if t.id in unused and tuple(t.image_ids) == wanted), None)
        if new in unused:
            unused.remove(new)
        changes.append(IdChange(appliance, "VM template", old_id, new, old_template.name if old_template else ""))
    new_service = result.service_template_id if result else None
    changes += [IdChange(appliance, "service template", old, new_service) for old in removal.service_template_ids]
    return tuple(changes)


@dataclass
class UpgradeLedger:
    """What an upgrade run did so far: the new versions downloaded, the removals decided, every
    old object deleted (or not): its audit record, also when the run stops hard."""

    downloads: dict[str, DownloadResult] = field(default_factory=dict)
    removals: dict[str, Removal] = field(default_factory=dict)
    deleted: list[Deleted] = field(default_factory=list)


@dataclass(frozen=True)
class _Run:
    """One application of a plan: where it reports and what it keeps."""

    site: "SiteConnection"
    plan: UpgradePlan
    context: RunContext
    ledger: UpgradeLedger
    datastore_id: int
    confirm_removal: "ConfirmRemoval"
    names: Mapping[str, str]
    step_timeout: float
    poll_interval: float

    def report(self, label: str, index: int, message: str, state: ProgressState,
               data: dict[str, Any] | None = None) -> None:
        self.context.report(Progress(label, index, len(self.plan.steps), message, state, data or {}))


async def apply_upgrade_plan(
    site: "SiteConnection",
    plan: UpgradePlan,
    context: RunContext,
    *,
    datastore_id: int,
    confirm_removal: ConfirmRemoval,
    names: Mapping[str, str] | None = None,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    ledger: UpgradeLedger | None = None,
) -> Upgraded:
    """Apply `plan` in the spec's order (see the module docstring), reporting to `context`.

    Returns the `Upgraded` result: the `IdChange`s core.yaml must follow, the downloads and the
    deletions. A plan that is not ready (attributes missing, untagged images) raises before
    anything changes. `ledger` keeps what was done as it goes.
    """
    if plan.empty:
        context.report(Progress("upgrade", 1, 1, "every installed appliance is up to date", ProgressState.SKIPPED,
                                {"core_yaml": []}))
        return Upgraded(())
    if plan.blocked:
        raise SiteError("The upgrade is blocked: attach the attributes first",
                        " ".join(plan.blocked) + " Nothing was changed.")
    run = _Run(site, plan, context, ledger if ledger is not None else UpgradeLedger(), datastore_id,
               confirm_removal, names or {}, step_timeout, poll_interval)
    before = await read_objects(site)
    changes: tuple[IdChange, ...] = ()
    for index, step in enumerate(plan.steps, start=1):
        label = f"{step.kind.value}" + (f": {step.appliance}" if step.appliance else "")
        if step.kind is StepKind.CHECK_ATTRIBUTES:
            _check_attributes(run, step, label, index)
        elif step.kind is StepKind.DOWNLOAD:
            await _download_new(run, step, label, index)
        elif step.kind is StepKind.ATTACH_ATTRIBUTES:
            result = run.ledger.downloads.get(step.appliance)
            ids = ", ".join(map(str, result.image_ids)) if result else "none"
            run.report(label, index, f"attached during the download to image(s) {ids}", ProgressState.DONE)
        elif step.kind is StepKind.REMOVE_OLD:
            await _remove_old_version(run, step, label, index)
        elif step.kind is StepKind.UPDATE_SITE_CONFIG:
            changes = await _core_yaml_changes(run, before, label, index)
    return Upgraded(changes, tuple(run.ledger.downloads.items()), tuple(run.ledger.deleted))


def _check_attributes(run: _Run, step: PlanStep, label: str, index: int) -> None:
    if not step.done:
        raise SiteError(f"{step.appliance}: attributes missing on installed images",
                        f"{step.summary}. The spec requires the attributes before the update: tag image(s) "
                        f"{', '.join(map(str, step.image_ids))} with the version they hold (`sitetk market "
                        "attrs <appliance of that version> --image ID`). Nothing was changed.")
    run.report(label, index, step.summary, ProgressState.DONE)


async def _download_new(run: _Run, step: PlanStep, label: str, index: int) -> None:
    """Download the new version; the download's events become this step's."""
    assert step.record is not None
    name = run.names.get(step.appliance) or upgrade_download_name(step.record, _previous(run.plan).get(step.appliance))
    total = len(run.plan.steps)

    def as_step(event: Progress) -> Progress:
        failed = event.state is ProgressState.FAILED
        return replace(event, step=label, done=index if failed else index - 1, total=total,
                       message=f"{event.step}: {event.message}", state=event.state if failed else ProgressState.RUNNING)

    app = await find_market_app(run.site, step.record)
    download = await plan_download(run.site, app.id, run.datastore_id, name, tag=tag_for_record(step.record))
    result = await download_appliance(run.site, download, run.context.relay(as_step), step_timeout=run.step_timeout,
                                      poll_interval=run.poll_interval)
    run.ledger.downloads[step.appliance] = result
    run.report(label, index, f"{result.name}: image(s) {', '.join(map(str, result.image_ids))}", ProgressState.DONE,
               {"download": result.as_json()})


async def _remove_old_version(run: _Run, step: PlanStep, label: str, index: int) -> None:
    """Remove the old version once confirmed; never the last copy, never an object the new one uses."""
    # read again: what the download created or reused is never removed, and the VMs now
    new = run.ledger.downloads.get(step.appliance)
    now = await read_objects(run.site)
    removal = removal_for(step, now, run.site.naming, new)
    if why := last_copy(new, now):
        run.report(label, index, f"kept: {removal.describe()} is the last copy of {step.appliance} ({why})",
                   ProgressState.SKIPPED, {"removal": removal.as_json()})
        return
    run.ledger.removals[step.appliance] = removal
    if not removal.image_ids:
        message = "nothing left to remove" + (f" ({removal.describe()})" if removal.kept else "")
        run.report(label, index, message, ProgressState.SKIPPED, {"removal": removal.as_json()})
        return
    if removal.in_use:
        run.report(label, index, f"kept: {removal.describe()} still used by VMs; remove it once they run the new "
                   "version", ProgressState.SKIPPED, {"removal": removal.as_json()})
        return
    if not await run.confirm_removal(removal):
        run.report(label, index, f"kept (not confirmed): {removal.describe()}", ProgressState.SKIPPED,
                   {"removal": removal.as_json()})
        return
    total = len(run.plan.steps)

    def as_step(event: Progress) -> Progress:
        return replace(event, step=label, done=index - 1, total=total,
                       state=event.state if event.state is ProgressState.FAILED else ProgressState.RUNNING)

    await remove_old(run.site, removal, run.context.relay(as_step), run.ledger.deleted)
    run.report(label, index, f"removed {removal.describe()}", ProgressState.DONE, {"removal": removal.as_json()})


async def _core_yaml_changes(run: _Run, before: SiteObjects, label: str, index: int) -> tuple[IdChange, ...]:
    """The IDs core.yaml must change: each old one paired with the new one that replaces it."""
    changes: list[IdChange] = []
    downloads, removals = run.ledger.downloads, run.ledger.removals
    for appliance, removal in removals.items():
        changes += await id_changes(run.site, appliance, removal, downloads.get(appliance), before)
    for appliance, result in downloads.items():
        if appliance not in removals:
            changes += [IdChange(appliance, "image", -1, i, name) for i, name in result.images]
    message = "core.yaml: " + ("; ".join(f"{c.kind} {c.old} -> {c.new if c.new is not None else '(none)'}"
                                         for c in changes if c.old >= 0) or "no ID to change")
    message += ". Add any new site variables of the upgraded components."
    run.report(label, index, message, ProgressState.DONE, {"core_yaml": [c.as_json() for c in changes]})
    return tuple(changes)


@dataclass(frozen=True)
class ApplyUpgrades(Operation[UpgradePlan, Upgraded]):
    """The upgrade plan as an operation; `datastore_id` (the IMAGE datastore of the new versions)
    may be chosen after planning, but must be there to run. Each removal asks `context.ask`."""

    catalog: MarketCatalog | None = None
    only: tuple[str, ...] | None = None
    datastore_id: int | None = None
    step_timeout: float = DEFAULT_STEP_TIMEOUT
    poll_interval: float = DEFAULT_POLL_INTERVAL

    title: ClassVar[str] = "Apply the upgrade plan"
    refusal: ClassVar[str] = "an upgrade changes the cloud"
    action: ClassVar[str] = "upgrade.apply"

    async def plan(self, site: "SiteConnection") -> UpgradePlan:
        return await load_upgrade_plan(site, self.catalog, only=self.only)

    def preview(self, plan: UpgradePlan) -> Preview:
        return upgrade_preview(plan, self.datastore_id)

    def confirmation(self, plan: UpgradePlan) -> Confirmation | None:
        if plan.empty:
            return None
        return Confirmation("Apply the upgrade plan", "(downloads first; each removal is asked separately)")

    def plan_json(self, plan: UpgradePlan) -> dict[str, Any]:
        return upgrade_plan_json(plan)

    async def execute(self, site: "SiteConnection", plan: UpgradePlan, context: RunContext) -> Upgraded:
        if self.datastore_id is None:
            raise SiteError("No IMAGE datastore for the new versions", "Choose the datastore the downloads go to.")

        async def confirm_removal(removal: Removal) -> bool:
            return await context.ask(Confirmation(
                "Remove the old version", removal.target, destructive=True, command=removal.cli(),
                detail=f"Deletes {removal.describe()}. VMs already deployed from them are not touched."))

        return await apply_upgrade_plan(site, plan, context, datastore_id=self.datastore_id,
                                         confirm_removal=confirm_removal, step_timeout=self.step_timeout,
                                         poll_interval=self.poll_interval, ledger=context.keep(UpgradeLedger()))

    def audit_details(self, plan: UpgradePlan, result: Upgraded) -> Mapping[str, Any] | None:
        if plan.empty:
            return None
        return {**_done_details(result.downloads, result.deleted),
                "core_yaml": [change.as_json() for change in result.core_yaml]}

    def audit_failure(self, plan: UpgradePlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        ledger = context.kept(UpgradeLedger) or UpgradeLedger()
        return _done_details(tuple(ledger.downloads.items()), tuple(ledger.deleted))


def _done_details(downloads: tuple[tuple[str, DownloadResult], ...], deleted: tuple[Deleted, ...]) -> dict[str, Any]:
    """What an upgrade run did, for its audit record: downloads and deletions (failed ones apart)."""
    details: dict[str, Any] = {
        "downloaded": [{"appliance": appliance, **result.as_json()} for appliance, result in downloads],
        "deleted": [d.as_json() for d in deleted if not d.error], "reason": "upgrade"}
    failed = [d.as_json() for d in deleted if d.error]
    if failed:
        details["not_deleted"] = failed
    return details


def upgrade_plan_json(plan: UpgradePlan) -> dict[str, Any]:
    """The plan in JSON answers: the `Software | Previous | New` table, blocked appliances, notes, steps."""
    return {"table": {"columns": ["Software", "Previous", "New"], "rows": [list(r.cells()) for r in plan.rows]},
            "blocked": list(plan.blocked), "notes": list(plan.notes),
            "steps": [{"kind": s.kind.value, "appliance": s.appliance, "summary": s.summary, "done": s.done,
                       "image_ids": list(s.image_ids), "needs_confirmation": s.needs_confirmation}
                      for s in plan.steps]}
