"""Operation 2, what a download will create: the planned images, VM templates and service template,
the orphans of earlier downloads they replace, the names they take and the preview.

A `DownloadPlan` is made by `tui.procedures.market.download_planning.plan_download` and run by
`tui.procedures.market.download`. Names and structure are the platform's own
(`tui.domain.market_export`, from marketplaceapp_ext.rb): a role's VM template is
`<name>-<role>-<idx>`, each VM template exports its own images `<template>-<APP>-<disk>-<idx>`,
`<name>_<n>` when an image has the name already.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from tui.domain.attribute_file import ApplianceTag
from tui.domain.datastores import Datastore
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.domain.market_export import service_body
from tui.domain.marketapps import MarketApp
from tui.domain.object_names import MAX_NAME_BYTES, console_name_problem, fit_name
from tui.domain.one_states import DatastoreType
from tui.domain.printable import escape_controls
from tui.domain.template_text import TemplateSyntaxError, parse_template, quote, render_template
from tui.errors import SiteError
from tui.procedures.market.attributes import FILE_PLACEHOLDER
from tui.procedures.market.download_journal import Cleanup
from tui.procedures.preview import Change, Preview

if TYPE_CHECKING:  # pragma: no cover
    pass


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
        return template_with_name(self.base_text, self.name) + disks


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


def template_with_name(text: str, name: str) -> str:
    """Template text with its NAME replaced by `name` (appended as the CLI does when unparsable)."""
    try:
        attrs = [attr for attr in parse_template(text) if attr[0] != "NAME"]
    except TemplateSyntaxError:
        return (text.rstrip("\n") + "\n" if text.strip() else "") + f"NAME = {quote(name)}\n"
    return render_template(attrs + [("NAME", name)])


def image_datastores(datastores: Sequence[Datastore]) -> tuple[Datastore, ...]:
    """The datastores an appliance can be downloaded into (TYPE 0, IMAGE)."""
    return tuple(ds for ds in datastores if ds.type == DatastoreType.IMAGE_DS)
