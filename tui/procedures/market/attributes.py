"""Operation 1: attach the marketplace attributes to images.

The attribute file (`domain.attribute_file`: three `KEY="value"` lines, no extension) is applied
with the image update call in merge mode (`append=1`), which replaces only the three attributes
and keeps every other attribute of the image. For a service appliance it is applied to every
image of the service (four for the toolkit), for an image appliance once.

Idempotent: an image that already carries exactly these attributes is skipped and the progress
says so. Each image gets its own result (updated, unchanged or failed, read back after the
update); one failing image does not stop the others, and the procedure raises at the end when
any failed. The equivalent platform CLI is `oneimage update <id> <file> --append`.

The `AttachAttributes` operation's run is audit-logged once, by the pipeline (each image's result
among its details; a failure names the images left without the attributes and the command that
tags them).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Iterable, Mapping, Sequence

from tui.adapters.output_file import OutputFileExists, write_output_file
from tui.domain.appliances import ApplianceRecord
from tui.domain.attribute_file import (
    ApplianceTag,
    installed_version_from_image_template,
    render_attribute_file,
    tag_for,
    tag_from_version,
)
from tui.domain.images import ImageInfo
from tui.domain.marketapps import MarketApp
from tui.domain.naming import NamingProfile
from tui.domain.upgrades import ApplianceStatus
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: how the preview names the attribute file when it is not written to disk
FILE_PLACEHOLDER = "<attribute file>"

UPDATED, UNCHANGED, FAILED = "updated", "unchanged", "failed"


def tag_for_app(app: MarketApp) -> ApplianceTag:
    """The attributes of an app the cloud registered (its NAME and VERSION mirror the record's)."""
    return tag_from_version(app.name, app.version)


def tag_for_record(record: ApplianceRecord) -> ApplianceTag:
    return tag_for(record)


def attribute_text(tag: ApplianceTag, naming: NamingProfile) -> str:
    """The attribute file, byte for byte as the spec shows it."""
    return render_attribute_file(tag.pairs(naming))


def default_file_name(tag: ApplianceTag) -> str:
    """A file name without extension for the appliance: `site_toolkit_attributes`."""
    slug = re.sub(r"[^a-z0-9]+", "_", tag.name.casefold()).strip("_") or "appliance"
    return f"{slug}_attributes"


__all__ = ["OutputFileExists"]  # raised by write_attribute_file; screens catch it from here


def write_attribute_file(text: str, path: Path | str, *, force: bool = False) -> Path:
    """Write the attribute file at `path` (the file itself, not a directory).

    The spec's file has no extension, so a path with one is refused. Written with Unix newlines,
    byte for byte as `attribute_text` renders it, by the safe writer: an existing file or a
    symlink at `path` is refused (`OutputFileExists`) unless `force`, which replaces it atomically.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise SiteError(f"{target} is a directory", "Give the path of the attribute file to write.")
    if target.suffix:
        raise SiteError(f"Attribute file {target.name!r} has an extension",
                        f"The spec's attribute file has no file extension: use {target.with_suffix('').name!r}.")
    return write_output_file(target, text, force=force)


@dataclass(frozen=True)
class ImageTarget:
    """One image the attributes go to, and what it carries now."""

    image_id: int
    name: str
    current: ApplianceTag | None
    #: the image already carries exactly these attributes (nothing to do)
    up_to_date: bool

    def as_json(self) -> dict[str, object]:
        current = None
        if self.current is not None:
            current = {"name": self.current.name, "stamp": self.current.stamp,
                       "software_version": self.current.software_version}
        return {"image_id": self.image_id, "name": self.name, "current": current, "up_to_date": self.up_to_date}


@dataclass(frozen=True)
class AttachPlan:
    """What attaching `tag` to `targets` changes, before anything is changed."""

    tag: ApplianceTag
    #: the attribute file's text
    text: str
    targets: tuple[ImageTarget, ...]

    @property
    def to_update(self) -> tuple[ImageTarget, ...]:
        return tuple(t for t in self.targets if not t.up_to_date)

    def cli(self, image_id: int | str, file_path: str = FILE_PLACEHOLDER) -> str:
        return f"oneimage update {image_id} {shlex.quote(file_path) if file_path != FILE_PLACEHOLDER else file_path} --append"

    def preview(self, file_path: str = FILE_PLACEHOLDER) -> Preview:
        changes: list[Change] = []
        for target in self.targets:
            label = f"image {target.image_id} {target.name!r}"
            if target.up_to_date:
                changes.append(Change(f"{label} already carries these attributes", "", "none"))
                continue
            was = ""
            if target.current is not None:
                was = f" (now {target.current.name} {target.current.version.label})"
            changes.append(Change(f"attach {self.tag.name} {self.tag.version.label} attributes to {label}{was}",
                                  self.cli(target.image_id, file_path), "update"))
        warnings: list[str] = []
        for target in self.targets:
            if target.current is not None and not target.up_to_date and target.current.complete:
                warnings.append(f"image {target.image_id} now says {target.current.name} "
                                f"{target.current.version.label}: re-tag it only if it really holds "
                                f"{self.tag.name} {self.tag.version.label}")
        if not self.tag.version.conforming:
            warnings.append(f"version {self.tag.version.label} does not follow vX.X.X-YYYYMMDD-HHMM "
                            f"({self.tag.version.reason}); it is split at its first '-'")
        return Preview(f"Attach marketplace attributes of {self.tag.name} to {len(self.targets)} image(s)",
                       tuple(changes), warnings=tuple(warnings))

    def audit_details(self) -> dict[str, object]:
        """What an audit record of the attach says about it (the attributes, never a secret)."""
        return {"appliance": self.tag.name, "version": self.tag.version.raw, "append": 1}

    def as_json(self) -> dict[str, object]:
        return {"tag": {"name": self.tag.name, "stamp": self.tag.stamp,
                        "software_version": self.tag.software_version},
                "file": self.text, "targets": [t.as_json() for t in self.targets]}


def _target(image: ImageInfo, tag: ApplianceTag, naming: NamingProfile) -> ImageTarget:
    current = installed_version_from_image_template(image.attributes, naming)
    return ImageTarget(image.id, image.name, current, current == tag)


def default_targets(status: ApplianceStatus) -> tuple[int, ...]:
    """The images to tag when none are named: those that look like the appliance and carry no
    attributes, and those already tagged with exactly this version (a re-run reports them
    unchanged). Images tagged with another version are never picked: that would mislabel them."""
    tag = tag_for(status.record)
    same = [t.image.id for t in status.images if t.tag.same_version(tag)]
    return tuple(dict.fromkeys(same + [image.id for image in status.untagged]))


async def plan_attach(site: "SiteConnection", tag: ApplianceTag, image_ids: Iterable[int]) -> AttachPlan:
    """Read each image and compare its attributes with `tag` (raises when an image is missing)."""
    ids = list(dict.fromkeys(int(i) for i in image_ids))
    if not ids:
        raise SiteError(f"No image to tag with {tag.name}",
                        "Name the images (their IDs), or a VM template or service template that uses them.")
    text = attribute_text(tag, site.naming)
    images = await gather(*(site.cloud.image_info(i) for i in ids))
    return AttachPlan(tag, text, tuple(_target(image, tag, site.naming) for image in images))


async def images_of_templates(site: "SiteConnection", template_ids: Sequence[int]) -> tuple[int, ...]:
    """The images the DISKs of these VM templates use, in order, without repeats."""
    templates = await gather(*(site.cloud.template_info(t) for t in template_ids))
    return tuple(dict.fromkeys(i for template in templates for i in template.image_ids))


def role_templates(body: Mapping[str, object]) -> tuple[tuple[str, int], ...]:
    """(role name, VM template id) of each role of a service template body.

    7.x bodies name the template in `template_id`, 6.x ones in `vm_template`.
    """
    out: list[tuple[str, int]] = []
    roles = body.get("roles")
    for role in roles if isinstance(roles, list) else []:
        if not isinstance(role, dict):
            continue
        value = role.get("template_id", role.get("vm_template"))
        if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
            out.append((str(role.get("name", "")), int(value)))
    return tuple(out)


def role_template_ids(body: Mapping[str, object]) -> tuple[int, ...]:
    """The VM template id each role of a service template body points at."""
    return tuple(template_id for _, template_id in role_templates(body))


async def images_of_service_template(site: "SiteConnection", document_id: int) -> tuple[int, ...]:
    """Every image of a service template: its roles' VM templates' disks."""
    document = await site.cloud.document_info(document_id)
    if document.body is None:
        raise SiteError(f"Document {document_id} is not a service template",
                        "Its body is not JSON; give the ID of a service template (`oneflow-template list`).")
    return await images_of_templates(site, list(dict.fromkeys(role_template_ids(document.body))))


@dataclass(frozen=True)
class ImageResult:
    """What attaching did to one image: `result` is "updated", "unchanged" or "failed"."""

    image_id: int
    name: str
    result: str
    error: str = ""
    detail: str = ""

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"image_id": self.image_id, "name": self.name, "result": self.result}
        if self.error:
            out.update(error=self.error, detail=self.detail)
        return out


@dataclass(frozen=True)
class Attached:
    """The result of every image of an attach."""

    images: tuple[ImageResult, ...]

    def as_json(self) -> dict[str, object]:
        return {"results": [r.as_json() for r in self.images]}


async def attach_attributes(site: "SiteConnection", plan: AttachPlan, context: RunContext, *, offset: int = 0,
                            total: int | None = None, results: list[ImageResult] | None = None) -> Attached:
    """Apply the plan: one `image update --append` per image that needs it, each read back.

    Reports to `context`; `offset` and `total` place these events inside a longer procedure (a
    download). Each image's `ImageResult` is added to `results` as it is known (the operation's
    `AttachLedger`, its failure record), and the `Attached` result is returned. Raises `SiteError` at the end when any
    image failed; the others are updated regardless.
    """
    count = total if total is not None else len(plan.targets)
    results = results if results is not None else []
    failed: list[str] = []
    for index, target in enumerate(plan.targets, start=1):
        step = f"attributes on image {target.name}"
        done = offset + index
        if target.up_to_date:
            results.append(ImageResult(target.image_id, target.name, UNCHANGED))
            context.report(Progress(step, done, count, f"image {target.image_id} already carries {plan.tag.name} "
                           f"{plan.tag.version.label}: unchanged", ProgressState.SKIPPED,
                           {"image_id": target.image_id, "result": UNCHANGED}))
            continue
        context.report(Progress(step, done - 1, count, f"oneimage update {target.image_id} <file> --append"))
        try:
            await site.cloud.image_update(target.image_id, plan.text, 1)
            after = await site.cloud.image_info(target.image_id)
            carried = installed_version_from_image_template(after.attributes, site.naming)
            if carried != plan.tag:
                raise SiteError(f"Image {target.image_id} does not carry the attributes after the update",
                                "The cloud accepted the update but reads back other values; check the image.")
        except SiteError as error:
            failed.append(f"image {target.image_id}: {error.title}")
            results.append(ImageResult(target.image_id, target.name, FAILED, error.title, error.detail))
            context.report(Progress(step, done, count, f"image {target.image_id}: {error.title}", ProgressState.FAILED,
                           {"image_id": target.image_id, "result": FAILED, "error": error.title}))
            continue
        results.append(ImageResult(target.image_id, target.name, UPDATED))
        site.note_change()
        context.report(Progress(step, done, count, f"image {target.image_id}: attributes attached", ProgressState.DONE,
                       {"image_id": target.image_id, "result": UPDATED}))
    if failed:
        raise SiteError(f"Attributes failed on {len(failed)} of {len(plan.targets)} image(s)",
                        "; ".join(failed) + ". The other images were updated; re-run to retry the failed ones.")
    attached = Attached(tuple(results))
    context.report(Progress("attributes", offset + len(plan.targets), count,
                            _summary(results), ProgressState.DONE, attached.as_json()))
    return attached


def _summary(results: list[ImageResult]) -> str:
    updated = sum(1 for r in results if r.result == UPDATED)
    unchanged = sum(1 for r in results if r.result == UNCHANGED)
    return f"{updated} image(s) updated, {unchanged} already up to date"


@dataclass
class AttachLedger:
    """The run's typed record: each image's result as it is known (`context.keep`), so a run that
    failed still says what it did to every image it reached: the audit record's `images` and
    `left`, the console's results table."""

    images: list[ImageResult] = field(default_factory=list)


@dataclass(frozen=True)
class AttachAttributes(Operation[AttachPlan, Attached]):
    """Operation 1: tag the images `image_ids` with `tag` (merge mode); `file_name` is what the
    preview calls the attribute file."""

    tag: ApplianceTag
    image_ids: tuple[int, ...]
    file_name: str = "<attribute file>"

    title: ClassVar[str] = "Attach the marketplace attributes"
    refusal: ClassVar[str] = "attaching attributes changes the cloud"
    action: ClassVar[str] = "image.attributes"

    async def plan(self, site: "SiteConnection") -> AttachPlan:
        return await plan_attach(site, self.tag, self.image_ids)

    def preview(self, plan: AttachPlan) -> Preview:
        return plan.preview(self.file_name)

    def confirmation(self, plan: AttachPlan) -> Confirmation | None:
        return Confirmation("Attach the attributes to", f"{len(plan.to_update)} image(s)") if plan.to_update else None

    async def execute(self, site: "SiteConnection", plan: AttachPlan, context: RunContext) -> Attached:
        return await attach_attributes(site, plan, context, results=context.keep(AttachLedger()).images)

    def audit_object(self, plan: AttachPlan) -> str:
        ids = [str(target.image_id) for target in plan.targets]
        return f"image {ids[0]}" if len(ids) == 1 else f"images {', '.join(ids)}"

    def audit_details(self, plan: AttachPlan, result: Attached) -> Mapping[str, object] | None:
        if not any(image.result == UPDATED for image in result.images):
            return None  # every image already carried the attributes: nothing was sent
        return {**plan.audit_details(), "images": [image.as_json() for image in result.images]}

    def audit_failure(self, plan: AttachPlan, error: SiteError, context: RunContext) -> Mapping[str, object] | None:
        ledger = context.kept(AttachLedger) or AttachLedger()
        done = {image.image_id: image for image in ledger.images}
        left = [target for target in plan.to_update if done.get(target.image_id) is None
                or done[target.image_id].result == FAILED]
        return {**plan.audit_details(), "images": [image.as_json() for image in done.values()],
                "left": [{"image_id": target.image_id, "name": target.name,
                          "error": done[target.image_id].error if target.image_id in done else "not reached",
                          "command": plan.cli(target.image_id, self.file_name)} for target in left],
                "undone": "nothing: the images updated keep their attributes (merge mode); run it again for the others"}
