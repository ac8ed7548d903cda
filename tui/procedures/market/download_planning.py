"""Operation 2, planning: what exporting a marketplace app will create, decided before anything is.

`plan_download` resolves the app tree (an IMAGE app; a VMTEMPLATE app and its disk apps; a
SERVICE_TEMPLATE app, its role apps and their disk apps) into a `DownloadPlan`: the images, VM
templates and service template to create, the datastore and the preview with the equivalent
`onemarketapp export` command. Names and structure are the platform's own
(`tui.domain.market_export`, from marketplaceapp_ext.rb): a role's VM template is
`<name>-<role>-<idx>`, each VM template exports its own images `<template>-<APP>-<disk>-<idx>`,
`<name>_<n>` when an image has the name already. What earlier runs left
under those names is `tui.procedures.market.download_leftovers`'s: reused, or planned for deletion
as an orphan; a name taken by something else moves an image to the next `_n` name, and stops the
plan for a VM template or the service template. The plan's values are
`tui.procedures.market.download_plan`'s. Running the plan is
`tui.procedures.market.download`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

from tui.domain.appliances import ApplianceRecord
from tui.domain.attribute_file import ApplianceTag, installed_version_from_image_template
from tui.domain.bounded import load_json
from tui.domain.datastores import Datastore
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.domain.images import ImageInfo
from tui.domain.market_export import exported_children, name_candidates
from tui.domain.marketapps import MarketApp, cloud_app_for, decode_apptemplate64
from tui.domain.naming import NamingProfile
from tui.domain.object_names import fit_name
from tui.domain.one_states import DatastoreType, ImageState, MarketPlaceAppType
from tui.domain.template_text import quote
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.market.attributes import tag_for_app
from tui.procedures.market.download_journal import Cleanup, DownloadJournal, plan_cleanup
from tui.procedures.market.download_leftovers import check_orphans_unused, reuse_existing
from tui.procedures.market.download_plan import (
    DownloadPlan,
    PlannedImage,
    PlannedService,
    PlannedTemplate,
    check_child_names,
    check_name,
    image_datastores,
    template_with_name,
)

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


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
    plan = reuse_existing(plan, templates, documents, site.cloud.user, {i.id for i in images},
                           {t.id for t in templates})
    check_child_names(plan)
    plan = await check_orphans_unused(site, plan)
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
            text = template_with_name(app.app_template, name) + f"FROM_APP = {quote(str(app.id))}\n"
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
