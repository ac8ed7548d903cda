"""Operation 2, planning: what exporting a marketplace app will create, decided before anything is.

`plan_download` resolves the app tree (an IMAGE app; a VMTEMPLATE app and its disk apps; a
SERVICE_TEMPLATE app, its role apps and their disk apps) into a `DownloadPlan`: the images, VM
templates and service template to create, the datastore and the preview with the equivalent
`onemarketapp export` command. Names and structure are the platform's own
(`tui.domain.market_export`, from marketplaceapp_ext.rb): a role's VM template is
`<name>-<role>-<idx>`, each VM template exports its own images `<template>-<APP>-<disk>-<idx>`,
`<name>_<n>` when an image has the name already. Objects a previous run (this console's or
`onemarketapp export`'s) created under those names from the same app are marked as reused; a
name taken by something else moves an image to the next `_n` name, and stops the plan for a VM
template or the service template. An orphan of ours under a planned name (a VM template whose disk
images are gone, a service template whose roles' VM templates are gone: what a rollback could not
delete, or what an operator half-deleted by hand), that nothing uses, is planned for deletion
(previewed with its CLI command) and created again. Running the plan is
`tui.procedures.market.download`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Sequence

from tui.domain.appliances import ApplianceRecord
from tui.domain.attribute_file import ApplianceTag, installed_version_from_image_template
from tui.domain.bounded import load_json
from tui.domain.datastores import Datastore
from tui.domain.documents import SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT, Document
from tui.domain.error_codes import NO_EXISTS
from tui.domain.images import ImageInfo
from tui.domain.market_export import exported_children, name_candidates, service_body
from tui.domain.marketapps import MarketApp, cloud_app_for, decode_apptemplate64
from tui.domain.naming import NamingProfile
from tui.domain.object_names import MAX_NAME_BYTES, console_name_problem, fit_name
from tui.domain.one_states import DatastoreType, ImageState, MarketPlaceAppType
from tui.domain.printable import escape_controls
from tui.domain.template_text import TemplateSyntaxError, parse_template, quote, render_template
from tui.domain.vmtemplates import VmTemplate
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.market.attributes import FILE_PLACEHOLDER, role_template_ids, role_templates, tag_for_app
from tui.procedures.market.download_journal import Cleanup, DownloadJournal, plan_cleanup
from tui.procedures.preview import Change, Preview

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection



# -- the plan -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlannedImage:
    """One image to create from an IMAGE app."""

    app: MarketApp
    name: str
    text: str
    #: an image of this name from the same app already exists: reused, never rolled back
    existing_id: int | None = None


@dataclass(frozen=True)
class PlannedTemplate:
    """One VM template to create, with one DISK per image (indexes into `DownloadPlan.images`)."""

    app: MarketApp
    name: str
    base_text: str
    disks: tuple[int, ...]
    #: the service roles this template serves ("" outside a service)
    roles: tuple[str, ...] = ()
    existing_id: int | None = None
    #: an orphan of ours under this name (an earlier download's VM template whose disk images are
    #: gone, used by no VM and no service template): deleted before this one is created
    replaces: "OrphanTemplate | None" = None

    def text(self, image_ids: Sequence[int]) -> str:
        disks = "".join(f"DISK = [ IMAGE_ID = {quote(str(image_ids[i]))} ]\n" for i in self.disks)
        return _with_name(self.base_text, self.name) + disks


@dataclass(frozen=True)
class OrphanTemplate:
    """A VM template an earlier download (this console's or `onemarketapp export`'s) left whose
    disk images are all gone: a rollback that could not delete it, or images deleted by hand."""

    id: int
    name: str
    missing_images: tuple[int, ...]

    @property
    def delete_cli(self) -> str:
        return f"onetemplate delete {self.id}"


@dataclass(frozen=True)
class OrphanService:
    """A service template an earlier download left whose roles' VM templates are all gone: a
    rollback that could not delete it (its delete's answer lost), or VM templates deleted by hand.
    Kept, it would deploy nothing (or VM template 0 on 7.x, whose old-format conversion reads a
    missing `vm_template` as 0)."""

    id: int
    name: str
    missing_templates: tuple[int, ...]

    @property
    def delete_cli(self) -> str:
        return f"oneflow-template delete {self.id}"


@dataclass(frozen=True)
class PlannedService:
    """The service template: the app's body as it is, created through OneFlow so that the
    platform's validation (and on 7.x its pre-7.0 conversion) applies, as `onemarketapp export`'s
    `ServiceTemplate#allocate` does."""

    app: MarketApp
    name: str
    body: dict[str, Any] = field(hash=False)
    #: role name -> index into `DownloadPlan.templates`
    role_templates: tuple[tuple[str, int], ...] = ()
    existing_id: int | None = None
    #: an orphan of ours under this name (`OrphanService`, used by no service): deleted before
    #: this one is created
    replaces: OrphanService | None = None

    def document_body(self, template_ids: Sequence[int]) -> dict[str, Any]:
        """The body sent: each role's `vm_template` is the id of the VM template exported for it."""
        return service_body(self.body, self.name,
                            {role: int(template_ids[index]) for role, index in self.role_templates})


@dataclass(frozen=True)
class DownloadPlan:
    """Everything the export will create, decided before anything is created."""

    app: MarketApp
    tag: ApplianceTag
    datastore: Datastore
    name: str
    images: tuple[PlannedImage, ...]
    templates: tuple[PlannedTemplate, ...] = ()
    service: PlannedService | None = None
    warnings: tuple[str, ...] = ()
    #: what earlier downloads' rollbacks left (the download journal) that this run deletes first
    cleanup: Cleanup = field(default_factory=Cleanup)

    @property
    def size_mb(self) -> int:
        return sum(image.app.size_mb for image in self.images if image.existing_id is None)

    @property
    def export_cli(self) -> str:
        return f"onemarketapp export {self.app.id} {shlex.quote(self.name)} --datastore {self.datastore.id}"

    @property
    def reused_objects(self) -> set[tuple[str, int]]:
        """(kind, id) of each object that exists and is reused."""
        found = {("image", i.existing_id) for i in self.images if i.existing_id is not None}
        found |= {("VM template", t.existing_id) for t in self.templates if t.existing_id is not None}
        if self.service is not None and self.service.existing_id is not None:
            found.add(("service template", self.service.existing_id))
        return found

    @property
    def complete(self) -> bool:
        """Every object already exists (a re-run has nothing to create)."""
        objects: list[int | None] = [i.existing_id for i in self.images] + [t.existing_id for t in self.templates]
        if self.service is not None:
            objects.append(self.service.existing_id)
        return all(o is not None for o in objects)

    def steps(self, attach: bool = True) -> tuple[str, ...]:
        """The steps the progress view lists, in order (without the attributes when not attached)."""
        steps = [f"delete service template {self.service.replaces.id}"] \
            if self.service is not None and self.service.replaces is not None else []
        steps += [f"delete VM template {t.replaces.id}" for t in self.templates if t.replaces is not None]
        steps += [f"create image {i.name}" for i in self.images]
        steps += [f"create VM template {t.name}" for t in self.templates]
        if self.service is not None:
            steps.append(f"create service template {self.service.name}")
        steps += [f"download {i.name}" for i in self.images]
        if attach:
            steps += [f"attributes on image {i.name}" for i in self.images]
        return tuple(steps)

    @property
    def step_names(self) -> tuple[str, ...]:
        return self.steps(attach=True)

    def preview(self) -> Preview:
        changes: list[Change] = [
            Change(f"delete {left.label}, left by a download of {left.appliance} whose rollback could not delete it "
                   f"({left.why}); nothing uses it", left.delete_cli, "delete") for left in self.cleanup.clean]
        changes += [Change(f"forget {left.label} (left by a download of {left.appliance}): {note}", "", "none")
                    for left, note in self.cleanup.in_use]
        changes += [Change(f"reuse {left.label}, left by an earlier run of this download; it is no longer recorded "
                           "as a leftover once this download completes", "", "none") for left in self.cleanup.adopted]
        changes += [Change(f"keep {left.label} (left by a download of {left.appliance}) recorded: {note}", "", "none")
                    for left, note in self.cleanup.kept]
        cli = self.export_cli
        ds = f"datastore {self.datastore.id} ({self.datastore.name})"
        if self.service is not None and self.service.replaces is not None:
            gone = self.service.replaces
            missing = ", ".join(map(str, gone.missing_templates))
            changes.append(Change(f"delete service template {gone.id} {gone.name!r}, left by an earlier download of "
                                  f"this app: the VM template(s) {missing} its roles point at are gone and no "
                                  "service uses it; it is created again pointing at the new VM templates",
                                  gone.delete_cli, "delete"))
        for orphan in (t.replaces for t in self.templates if t.replaces is not None):
            missing = ", ".join(map(str, orphan.missing_images))
            changes.append(Change(f"delete VM template {orphan.id} {orphan.name!r}, left by an earlier download of "
                                  f"this app: its disk image(s) {missing} are gone and no VM or service template "
                                  "uses it; it is created again with the new images", orphan.delete_cli, "delete"))
        for image in self.images:
            if image.existing_id is not None:
                changes.append(Change(f"image {image.name!r} exists (ID {image.existing_id}): reused", "", "none"))
            else:
                changes.append(Change(f"create image {image.name!r} from app {image.app.id} ({image.app.name}, "
                                      f"{image.app.size_mb} MB) in {ds}", cli, "create"))
                cli = ""
        for template in self.templates:
            if template.existing_id is not None:
                changes.append(Change(f"VM template {template.name!r} exists (ID {template.existing_id}): reused",
                                      "", "none"))
            else:
                roles = f" for role(s) {', '.join(template.roles)}" if template.roles else ""
                changes.append(Change(f"create VM template {template.name!r} with {len(template.disks)} disk(s){roles}",
                                      cli, "create"))
                cli = ""
        if self.service is not None:
            if self.service.existing_id is not None:
                changes.append(Change(f"service template {self.service.name!r} exists (ID {self.service.existing_id}): "
                                      "reused", "", "none"))
            else:
                changes.append(Change(f"create service template {self.service.name!r} through OneFlow "
                                      f"(document type {SERVICE_TEMPLATE_DOCUMENT}) with "
                                      f"{len(self.service.role_templates)} role(s), each role's vm_template its "
                                      "new VM template", cli, "create"))
        for image in self.images:
            target = image.existing_id if image.existing_id is not None else "<new image id>"
            changes.append(Change(f"attach {self.tag.name} {self.tag.version.label} attributes to image {image.name!r} "
                                  "once READY (skipped when already there)",
                                  f"oneimage update {target} {FILE_PLACEHOLDER} --append", "update"))
        return Preview(f"Download {self.app.name} {self.app.version} as {self.name!r} into {ds}", tuple(changes),
                       warnings=self.warnings)

    def as_json(self) -> dict[str, Any]:
        return {
            "app_id": self.app.id, "app": self.app.name, "type": self.app.type_name, "version": self.app.version,
            "name": self.name, "datastore_id": self.datastore.id, "size_mb": self.size_mb,
            "images": [{"name": i.name, "app_id": i.app.id, "existing_id": i.existing_id} for i in self.images],
            "templates": [{"name": t.name, "app_id": t.app.id, "roles": list(t.roles), "existing_id": t.existing_id,
                           "replaces": None if t.replaces is None else t.replaces.id}
                          for t in self.templates],
            "service_template": None if self.service is None else
            {"name": self.service.name, "existing_id": self.service.existing_id,
             "replaces": None if self.service.replaces is None else self.service.replaces.id},
            "warnings": list(self.warnings),
        } | ({"cleanup": self.cleanup.as_json()} if self.cleanup else {})



def default_download_name(app_name: str, version: str) -> str:
    """`Site Toolkit v0.5.0`: the appliance name and its software version, made a name the
    platform takes (a remote record's name may hold `:` or `/`: they become `-`)."""
    software = version.strip().split("-", 1)[0]
    return fit_name(f"{app_name} {software}".strip() if software else app_name.strip())


def check_name(name: str) -> str:
    """The final name, stripped; raises `SiteError` when it cannot name cloud objects."""
    value = name.strip()
    if not value:
        raise SiteError("The final name is empty", "Give the name the downloaded objects will carry.")
    if len(value.encode()) > MAX_NAME_BYTES:
        raise SiteError("The final name is too long", f"Keep it under {MAX_NAME_BYTES} bytes (the platform's limit).")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value) or "]]>" in value:
        raise SiteError("The final name has control characters", "Use letters, digits, spaces and punctuation.")
    problem = console_name_problem(value)
    if problem is not None:
        raise SiteError("The platform refuses the final name", f"{escape_controls(problem)}. The platform refuses "
                        "names holding any of & | : \\ \" ; / ' # { } $ < > (OpenNebula's name_is_valid).")
    return value


def check_child_names(plan: "DownloadPlan") -> None:
    """Refuse a plan whose objects the platform would refuse to name (a child's name adds the
    app's name and grows past 128 bytes, or an app's name holds a refused character): checked
    before anything is created, so nothing is left half-done."""
    named = [("image", i.name) for i in plan.images if i.existing_id is None]
    named += [("VM template", t.name) for t in plan.templates if t.existing_id is None]
    for kind, child in named:
        problem = console_name_problem(child)
        if problem is not None:
            raise SiteError(f"The platform would refuse the {kind} name {escape_controls(child)!r}",
                            f"{escape_controls(problem)}. Exported objects are named "
                            "<name>-<role>-<idx> and <template>-<APP>-<disk>-<idx> as `onemarketapp export` names "
                            "them; choose a shorter final name. Nothing was created.")


def _with_name(text: str, name: str) -> str:
    """Template text with its NAME replaced by `name` (appended as the CLI does when unparsable)."""
    try:
        attrs = [attr for attr in parse_template(text) if attr[0] != "NAME"]
    except TemplateSyntaxError:
        return (text.rstrip("\n") + "\n" if text.strip() else "") + f"NAME = {quote(name)}\n"
    return render_template(attrs + [("NAME", name)])


def image_datastores(datastores: Sequence[Datastore]) -> tuple[Datastore, ...]:
    """The datastores an appliance can be downloaded into (TYPE 0, IMAGE)."""
    return tuple(ds for ds in datastores if ds.type == DatastoreType.IMAGE_DS)


async def list_image_datastores(site: "SiteConnection") -> tuple[Datastore, ...]:
    return image_datastores(await site.cloud.list_datastores())


async def find_market_app(site: "SiteConnection", record: ApplianceRecord) -> MarketApp:
    """The cloud's marketplace app whose content is `record` (`domain.marketapps.cloud_app_for`):
    the cloud keeps one app per name across its marketplaces, so a record another registered
    marketplace also lists may not be exportable; `SiteError` says why and what to do."""
    marketplaces, apps = await gather(site.cloud.list_marketplaces(), site.cloud.list_marketapps())
    found = cloud_app_for(record.marketplace_url, record.id, record.name, record.version, marketplaces, apps,
                          site.marketplace.platform_version)
    if found.app is None:
        raise SiteError(found.title, found.detail)
    return found.app


async def plan_download(site: "SiteConnection", app_id: int, datastore_id: int, name: str,
                        *, tag: ApplianceTag | None = None) -> DownloadPlan:
    """Resolve the app tree and check the datastore and names; nothing is created.

    `tag` is what the images will carry (default: the app's own name and version, which mirror
    the marketplace record's). Every download is planned here, whoever runs it (`market download`,
    `setup run`, `site enable`, `market upgrades`), so here the download journal is read: what
    earlier rollbacks left is planned as gone (`download_appliance` deletes it first), except what
    this download reuses (an earlier run of it left it in a good state: adopted, not deleted).
    """
    cleanup = await plan_cleanup(site, DownloadJournal.of(site.settings))
    if cleanup.clean:
        # what an earlier run of this same download left in a good state is reused, not deleted
        # (the next run completes with it: tests/faults/test_rollback.py)
        try:
            seen = await _plan_download(site, app_id, datastore_id, name, tag=tag)
        except SiteError:
            seen = None  # e.g. a name a leftover in ERROR holds: planned below as deleted
        if seen is not None:
            cleanup = cleanup.adopting(seen.reused_objects)
    return await _plan_download(site, app_id, datastore_id, name, tag=tag, cleanup=cleanup)


async def _plan_download(site: "SiteConnection", app_id: int, datastore_id: int, name: str,
                         *, tag: ApplianceTag | None = None, cleanup: Cleanup | None = None) -> DownloadPlan:
    """`plan_download` with `cleanup`'s objects planned as gone."""
    final = check_name(name)
    app, apps, datastores, images, templates, documents = await gather(
        site.cloud.marketapp_info(app_id), site.cloud.list_marketapps(), site.cloud.list_datastores(),
        site.cloud.list_images(), site.cloud.list_templates(), site.cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT),
    )
    if cleanup:
        dropped = {(left.kind, left.id) for left in cleanup.clean}
        images = tuple(i for i in images if ("image", i.id) not in dropped)
        templates = tuple(t for t in templates if ("VM template", t.id) not in dropped)
        documents = tuple(d for d in documents if ("service template", d.id) not in dropped)
    if app.state_name != "READY":
        raise SiteError(f"App {app.id} ({app.name}) is {app.state_name}", "Only READY apps can be exported; "
                        "wait for the marketplace to finish importing it.")
    datastore = next((ds for ds in datastores if ds.id == datastore_id), None)
    if datastore is None:
        choices = ", ".join(f"{ds.id} {ds.name}" for ds in image_datastores(datastores)) or "none"
        raise SiteError(f"No datastore {datastore_id}", f"Choose an IMAGE datastore: {choices}.")
    if datastore.type != DatastoreType.IMAGE_DS:
        raise SiteError(f"Datastore {datastore.id} ({datastore.name}) is a {datastore.type_name} datastore",
                        "Appliances are downloaded into an IMAGE datastore.")
    if app.type == MarketPlaceAppType.SERVICE_TEMPLATE:
        await _check_oneflow(site)
    plan = _PlanBuilder(app, apps, final, datastore, images, site.cloud.user).build()
    plan = _reuse_existing(plan, templates, documents, site.cloud.user, {i.id for i in images},
                           {t.id for t in templates})
    check_child_names(plan)
    plan = await _check_orphans_unused(site, plan)
    if tag is not None:
        plan = replace(plan, tag=tag)
    if cleanup:
        plan = replace(plan, cleanup=cleanup)
    _check_reused_builds(plan, images, site.naming)
    if datastore.state_name != "READY":
        plan = replace(plan, warnings=plan.warnings + (f"datastore {datastore.name} is {datastore.state_name}",))
    if plan.size_mb and datastore.free_mb and plan.size_mb > datastore.free_mb:
        raise SiteError(f"Datastore {datastore.name} has too little space",
                        f"The appliance needs {plan.size_mb} MB; datastore {datastore.id} has {datastore.free_mb} MB "
                        "free. Choose another datastore or free some space.")
    return plan


def _check_reused_builds(plan: DownloadPlan, images: Sequence[ImageInfo], naming: NamingProfile) -> None:
    """An image of the planned name from the same app that holds another build of this appliance
    (its attributes say so) is not this download's: reused, it would be tagged as the new build
    while holding the old one, and an upgrade would then remove it as the old version. A rebuild
    published under the same software version has the same default name: refuse, naming it."""
    by_id = {image.id: image for image in images}
    for planned in plan.images:
        found = by_id.get(planned.existing_id) if planned.existing_id is not None else None
        held = installed_version_from_image_template(found.attributes, naming) if found is not None else None
        if found is None or held is None or held.name != plan.tag.name or held.version.same_release(plan.tag.version):
            continue
        raise SiteError(f"Image {found.id} {found.name!r} holds {held.name} {held.version.label}",
                        f"It has the name this download of {plan.tag.version.label} would give its image, and comes "
                        f"from the same marketplace app: the download would take it for its own. Choose another final "
                        f"name (such as {fit_name(f'{plan.tag.name} {plan.tag.version.raw}')!r}). Nothing was changed.")


async def _check_oneflow(site: "SiteConnection") -> None:
    """A service appliance's template is created through OneFlow: check it answers before any
    image is created."""
    try:
        await site.flow.list_service_templates()
    except SiteError as error:
        raise SiteError(f"OneFlow is needed to create the service template: {error.title}",
                        f"{error.detail}\nThe service template is created through OneFlow (POST /service_template), "
                        "which validates it as `onemarketapp export` does. Point ONEFLOW_URL at the site's OneFlow, "
                        "then retry.", retryable=error.retryable, code=error.code) from None


class _PlanBuilder:
    """Walks an app and the apps it names (DISK/ROLE vectors) into planned objects, named as
    `onemarketapp export` names them (`tui.domain.market_export`)."""

    def __init__(self, app: MarketApp, apps: Sequence[MarketApp], name: str, datastore: Datastore,
                 images: Sequence[ImageInfo], user: str) -> None:
        self.app = app
        self.apps = apps
        self.name = name
        self.datastore = datastore
        self.existing_images = images
        self.user = user
        #: image names taken, including the ones this plan creates (the export reads the pool each time)
        self.image_names = {i.name for i in images}
        self.images: list[PlannedImage] = []
        self.templates: list[PlannedTemplate] = []
        self.warnings: list[str] = []

    def _child(self, app_name: str, parent: MarketApp) -> MarketApp:
        """An app named in a DISK/ROLE vector: the first app of that name in the pool, as the
        platform's export finds it (`pool.find {|p| p['NAME'] == app }`, marketplaceapp_ext.rb line
        422 at release-7.0.2). The cloud keeps one app per name, its content from the marketplace
        monitored last: a child whose content came from another marketplace than its parent's is
        named in the plan's warnings (the parts would mix builds)."""
        found = [a for a in self.apps if a.name == app_name]
        if not found:
            raise SiteError(f"App {app_name!r} not found",
                            f"{parent.name} (app {parent.id}) names {app_name!r}, which the cloud has not imported.")
        child = found[0]
        if child.state_name != "READY":
            raise SiteError(f"App {child.id} ({child.name}) is {child.state_name}", "Only READY apps can be exported.")
        if parent.origin_url and child.origin_url != parent.origin_url:
            warning = (f"{child.name} (app {child.id}) holds {child.version or '(no version)'} from "
                       f"{child.origin_url or 'an unknown origin'}, not from {parent.origin_url} as {parent.name} "
                       f"(app {parent.id}, {parent.version or 'no version'}) does: the cloud's next marketplace "
                       "monitoring may set them right")
            if warning not in self.warnings:
                self.warnings.append(warning)
        return child

    def _reusable(self, image: ImageInfo, app: MarketApp) -> bool:
        """An image a previous export of `app` left: mine, FROM_APP, this datastore, not in ERROR."""
        return (image.uname == self.user and image.attributes.get("FROM_APP") == str(app.id)
                and image.datastore_id == self.datastore.id and image.state != ImageState.ERROR)

    def _image(self, app: MarketApp, candidates: Sequence[str]) -> int:
        """Plan the image of `app` under the first candidate name that is free or that a previous
        export of the same app holds; an IMAGE app exported alone has one candidate only."""
        if app.type != MarketPlaceAppType.IMAGE:
            raise SiteError(f"App {app.id} ({app.name}) is a {app.type_name} app, not an image",
                            "A VM template's disks must be IMAGE apps.")
        for name in candidates:
            mine = next((i for i in self.existing_images if i.name == name and self._reusable(i, app)), None)
            if mine is None and name in self.image_names:
                continue
            text = _with_name(app.app_template, name) + f"FROM_APP = {quote(str(app.id))}\n"
            self.image_names.add(name)
            self.images.append(PlannedImage(app, name, text, None if mine is None else mine.id))
            return len(self.images) - 1
        taken = next((i for i in self.existing_images if i.name == candidates[0]), None)
        why = "is in ERROR" if taken is not None and taken.state == ImageState.ERROR and \
            taken.attributes.get("FROM_APP") == str(app.id) else "comes from elsewhere"
        raise SiteError(f"Image name {candidates[0]!r} is taken",
                        f"Image {taken.id if taken else '?'} has that name and {why}. Choose another final name, "
                        "or delete that image first.")

    def _vm_template(self, app: MarketApp, name: str, roles: tuple[str, ...] = ()) -> int:
        """The VM template of a VMTEMPLATE app and its own images (`export_vm_template`)."""
        if app.type != MarketPlaceAppType.VMTEMPLATE:
            raise SiteError(f"App {app.id} ({app.name}) is a {app.type_name} app, not a VM template",
                            "A service's roles must be VMTEMPLATE apps.")
        if not app.disks:
            self.warnings.append(f"{app.name} names no disk")
        disks = tuple(self._image(self._child(disk_app, app), name_candidates(name, disk_app, names[0], idx))
                      for disk_app, names, idx in exported_children(app.disks))
        self.templates.append(PlannedTemplate(app, name, app.app_template, disks, roles))
        return len(self.templates) - 1

    def build(self) -> DownloadPlan:
        app = self.app
        service: PlannedService | None = None
        if app.type == MarketPlaceAppType.IMAGE:
            index = self._image(app, [self.name])
            if app.vmtemplate64:
                self.templates.append(PlannedTemplate(app, self.name, decode_apptemplate64(app.vmtemplate64), (index,)))
        elif app.type == MarketPlaceAppType.VMTEMPLATE:
            self._vm_template(app, self.name)
        elif app.type == MarketPlaceAppType.SERVICE_TEMPLATE:
            service = self._service()
        else:
            raise SiteError(f"App {app.id} ({app.name}) is of type {app.type_name}", "It cannot be exported.")
        return DownloadPlan(app, tag_for_app(app), self.datastore, self.name, tuple(self.images),
                            tuple(self.templates), service, tuple(self.warnings))

    def _service(self) -> PlannedService:
        app = self.app
        try:
            body = load_json(app.app_template, "its service template", scan=False)
        except ValueError as exc:
            raise SiteError(f"App {app.id} ({app.name}) carries no usable service template",
                            f"Its APPTEMPLATE64 is not JSON ({exc}).") from None
        if not isinstance(body, dict) or not isinstance(body.get("roles"), list):
            raise SiteError(f"App {app.id} ({app.name}) carries no usable service template",
                            "Its APPTEMPLATE64 has no roles list.")
        role_templates: list[tuple[str, int]] = []
        for role_app, roles, idx in exported_children(app.roles):
            candidates = name_candidates(self.name, None, roles[0], idx)
            name = next(c for c in candidates if c not in self.image_names)  # checked against images, sic
            index = self._vm_template(self._child(role_app, app), name, roles)
            role_templates += [(role, index) for role in roles]
        mapped = {role for role, _ in role_templates}
        names = [r.get("name") for r in body["roles"] if isinstance(r, dict)]
        for missing in [n for n in names if n not in mapped]:
            self.warnings.append(f"role {missing} has no VM-template app; the platform leaves it without "
                                 "vm_template (7.x then reads VM template 0, 6.10 refuses the body)")
        return PlannedService(app, self.name, body, tuple(role_templates))


def _reuse_existing(plan: DownloadPlan, templates: Sequence[VmTemplate], documents: Sequence[Document],
                    user: str, image_ids_present: set[int], template_ids_present: set[int]) -> DownloadPlan:
    """Mark VM templates and the service template a previous export created as reused, and an
    orphan of ours (`_orphan`, `_orphan_service`) as replaced; refuse names taken by other objects
    (the platform refuses a second VM template of one name)."""
    image_ids = [i.existing_id for i in plan.images]
    mine_templates = {t.name: t for t in templates if t.uname == user}
    planned_templates: list[PlannedTemplate] = []
    for template in plan.templates:
        found_template = mine_templates.get(template.name)
        if found_template is None:
            planned_templates.append(template)
            continue
        wanted = tuple(image_ids[i] for i in template.disks)
        if None not in wanted and tuple(found_template.image_ids) == wanted:
            planned_templates.append(replace(template, existing_id=found_template.id))
            continue
        orphan = _orphan(found_template, template, image_ids_present, documents)
        if orphan is None:
            missing = [i for i in found_template.image_ids if i not in image_ids_present]
            why = (f"its disk image(s) {', '.join(map(str, missing))} are gone but it does not look like this app's "
                   "export (other attributes, other disks, or a service template uses it)") if missing else \
                "other disks"
            raise SiteError(f"VM template name {template.name!r} is taken",
                            f"VM template {found_template.id} has that name and {why}; it is left alone. Look at "
                            f"it with `onetemplate show {found_template.id}`; choose another final name, or delete "
                            "that template first.")
        planned_templates.append(replace(template, replaces=orphan))
    service = plan.service
    if service is not None:
        found_doc = next((d for d in documents if d.name == service.name and d.uname == user), None)
        if found_doc is not None:
            template_ids = [t.existing_id for t in planned_templates]
            wanted_ids = sorted({template_ids[i] for _, i in service.role_templates}, key=lambda v: (v is None, v))
            have = sorted(set(role_template_ids(found_doc.body or {})))
            if None not in wanted_ids and have == wanted_ids:
                service = replace(service, existing_id=found_doc.id)
            else:
                orphan_doc = _orphan_service(found_doc, service, template_ids_present)
                if orphan_doc is None:
                    gone = ", ".join(str(i) for i in have if i not in template_ids_present)
                    present = ", ".join(str(i) for i in have if i in template_ids_present)
                    why = "other roles" if not gone else \
                        f"roles pointing at VM template(s) {gone}, which are gone, and {present}, which are " \
                        "still there" if present else \
                        f"roles pointing at VM template(s) {gone}, which are gone, but it does not look like " \
                        "this app's export (other roles, or values changed since)"
                    raise SiteError(f"Service template name {service.name!r} is taken",
                                    f"Service template {found_doc.id} has that name and {why}; it is left alone. "
                                    f"Look at it with `oneflow-template show {found_doc.id}`; choose another final "
                                    "name, or delete it first.")
                service = replace(service, replaces=orphan_doc)
    return replace(plan, templates=tuple(planned_templates), service=service)


def _orphan(found: VmTemplate, template: PlannedTemplate, image_ids_present: set[int],
            documents: Sequence[Document]) -> OrphanTemplate | None:
    """`found` (ours, of the planned name) as an orphan an earlier export of this app left, or None.

    Ours means what the export gives (marketplaceapp_ext.rb `export_vm_template`: the app's
    template, NAME, one DISK per image): every scalar attribute of the app's template there with
    its value, as many DISKs as planned. An orphan: every DISK's image is gone (so no live VM
    holds them either: the platform refuses to delete an image in use) and no service template
    names it as a role's template. VMs instantiated from it are checked by `_check_orphans_unused`.
    """
    disks = found.image_ids
    if not disks or len(disks) != len(template.disks) or any(i in image_ids_present for i in disks):
        return None
    if len(found.template.vectors("DISK")) != len(disks):
        return None  # a DISK without IMAGE_ID (a volatile disk, an image by name): not the export's
    try:
        wanted = [(k, v) for k, v in parse_template(template.base_text) if isinstance(v, str) and k != "NAME"]
    except TemplateSyntaxError:
        return None
    have = found.template.scalars()
    if any(have.get(key) != value for key, value in wanted):
        return None
    if any(found.id in role_template_ids(d.body or {}) for d in documents):
        return None
    return OrphanTemplate(found.id, found.name, tuple(disks))


#: role keys the export sets or 7.x's old-format conversion rewrites (service_template.rb
#: release-7.4.0 `convert_template`: `vm_template` to `template_id`, `type` added,
#: `vm_template_contents` to `template_contents`, `custom_attrs` to `user_inputs`)
_ROLE_TEMPLATE_KEYS = frozenset({"vm_template", "template_id", "type", "vm_template_contents", "template_contents",
                                 "custom_attrs", "custom_attrs_values", "user_inputs", "user_inputs_values"})


def _scalars(mapping: Any, skip: frozenset[str]) -> dict[str, Any]:
    """The plain values (text, numbers, booleans) of a JSON object, without the `skip` keys."""
    if not isinstance(mapping, dict):
        return {}
    return {k: v for k, v in mapping.items() if k not in skip and isinstance(v, (str, int, float, bool))}


def _orphan_service(found: Document, service: PlannedService, template_ids_present: set[int]) -> OrphanService | None:
    """`found` (ours, of the planned name) as an orphan an earlier export of this app left, or None.

    Ours means what the export gives (marketplaceapp_ext.rb `create_service_template`: the app's
    body, `name`, each role's `vm_template` the id of its exported VM template; on 7.x OneFlow's
    old-format conversion, service_template.rb `convert_template`, turns it into `template_id` and
    adds `type`): the app's roles by name in its order, each with a VM template id, roles sharing
    a planned VM template sharing one id and no other, and every plain value of the body and of
    each role as the app has it. An orphan: none of those VM templates is in the pool any more
    (each is asked for again, and services checked, by `_check_orphans_unused`).
    """
    body = found.body
    app_roles = service.body.get("roles")
    if body is None or not isinstance(app_roles, list) or not isinstance(body.get("roles"), list):
        return None
    pointed = role_templates(body)
    doc_roles = [r for r in body["roles"] if isinstance(r, dict)]
    if len(pointed) != len(body["roles"]) or len(doc_roles) != len(app_roles):
        return None  # a role without a VM template id (or not an object): not what the export made
    planned = dict(service.role_templates)
    if [name for name, _ in pointed] != [r.get("name") if isinstance(r, dict) else None for r in app_roles] or \
            set(planned) != {name for name, _ in pointed}:
        return None
    ids = dict(pointed)
    if any((planned[a] == planned[b]) != (ids[a] == ids[b]) for a in planned for b in planned):
        return None  # the roles share VM templates otherwise than the export shares them
    skip_top = frozenset({"name", "roles", "registration_time"})
    if any(body.get(k) != v for k, v in _scalars(service.body, skip_top).items()):
        return None
    for app_role, doc_role in zip(app_roles, doc_roles, strict=True):
        if any(doc_role.get(k) != v for k, v in _scalars(app_role, _ROLE_TEMPLATE_KEYS).items()):
            return None
    missing = tuple(sorted(set(ids.values())))
    if any(i in template_ids_present for i in missing):
        return None
    return OrphanService(found.id, found.name, missing)


async def _check_orphans_unused(site: "SiteConnection", plan: DownloadPlan) -> DownloadPlan:
    """Refuse to replace an orphan a live VM was instantiated from (its TEMPLATE_ID), or an orphan
    service template whose VM templates are not surely gone or that a service may come from."""
    if plan.service is not None and plan.service.replaces is not None:
        await _check_service_orphan_unused(site, plan.service.replaces)
    orphans = {t.replaces.id: t.replaces for t in plan.templates if t.replaces is not None}
    if not orphans:
        return plan
    for vm in await site.cloud.list_vms_detail():
        source = vm.template.get("TEMPLATE_ID")
        if source.isdigit() and int(source) in orphans:
            orphan = orphans[int(source)]
            raise SiteError(f"VM template name {orphan.name!r} is taken",
                            f"VM template {orphan.id} has that name; its disk images are gone but VM "
                            f"{vm.summary.id} was instantiated from it, so it is left alone. Look at them with "
                            f"`onetemplate show {orphan.id}` and `onevm show {vm.summary.id}`; choose another final "
                            "name, or delete that template yourself once the VM no longer needs it.")
    return plan


async def _check_service_orphan_unused(site: "SiteConnection", orphan: OrphanService) -> None:
    """Each VM template the orphan's roles point at is asked for by id (the pool listing shows only
    what the user may see): not found is gone, anything else stops the plan; and no service
    (`oneflow list`) may point at one of them or carry the orphan's name (OneFlow's instantiate
    copies the template's body, its name and roles, into the service: oneflow-server.rb
    release-7.4.0 714-870, service_template.rb `instantiate` 572-599)."""
    taken = f"Service template name {orphan.name!r} is taken"
    show = f"Look at it with `oneflow-template show {orphan.id}`"
    for template_id in orphan.missing_templates:
        try:
            await site.cloud.template_info(template_id)
        except SiteError as error:
            if error.code == NO_EXISTS:
                continue
            raise SiteError(taken, f"Service template {orphan.id} has that name and its roles point at VM template "
                            f"{template_id}, which could not be read ({error.title}); whether it is gone is not "
                            f"known, so the service template is left alone. {show}.",
                            retryable=error.retryable, code=error.code) from None
        raise SiteError(taken, f"Service template {orphan.id} has that name and its roles point at VM template "
                        f"{template_id}, which exists; it is left alone. {show}.")
    for doc in await site.cloud.list_documents(SERVICE_DOCUMENT):
        used = sorted(set(role_template_ids(doc.body or {})) & set(orphan.missing_templates))
        if used or doc.name == orphan.name:
            why = f"its roles point at VM template(s) {', '.join(map(str, used))}" if used else "it has that name"
            raise SiteError(taken, f"Service template {orphan.id} has that name; the VM templates its roles point at "
                            f"are gone, but service {doc.id} {doc.name!r} may have been instantiated from it ({why}), "
                            f"so it is left alone. {show} and `oneflow show {doc.id}`; choose another final name, or "
                            "delete the service template yourself once the service no longer needs it.")
