"""Installed versus available appliances, and the upgrade plan the spec's rules give.

Which appliance and version an image came from is read from its marketplace attributes (see
`attribute_file`). Per marketplace record, the status is:

- UP_TO_DATE: an image tagged with the record's name holds the record's build (the same
  release: `versions.ApplianceVersion.same_release`);
- UPDATE_AVAILABLE: images tagged with the record's name exist, and the newest of them is an
  older build than the record's version;
- OLDER_BUILD: tagged images exist, all of a newer build than the record's, and the record's own
  build was never downloaded (an older build another marketplace still lists): not "up to date";
- NEWER_ELSEWHERE: an image holds the record's build (it would be UP_TO_DATE) but another record
  of the same appliance (any marketplace) lists a newer build than every installed one; the label
  names that build and where it is listed ("up to date" only when nothing newer is listed anywhere);
- UNTAGGED: no image carries the record's name, but an image without any appliance attributes
  looks like the appliance: the words of the appliance name (letters and digits, case ignored)
  appear, consecutively, among the words of the image name (`Site Toolkit` matches
  `site_toolkit-automation-0`, not `mysite toolkit`);
- NOT_DOWNLOADED: neither.

Parts follow their whole: downloading a service appliance exports the VM-template and image
records its roles name (in the same marketplace) and tags every image with the service's name,
so a part that has no image of its own takes the status of the service (or VM template) it
belongs to, with `part_of` naming it. Parts are never planned on their own: their service is.

The plan follows the spec's upgrade rules in order: (1) the installed images carry their
attributes before anything is updated; (2) each new version is downloaded and tagged; (3) old
images are removed, each removal only after the operator confirms it; (4) core.yaml must then
point to the new image and template IDs (the old IDs are listed) and gain any new site variables.
Upgrading the toolkit appliance adds a note that the manager follows its own upgrade instructions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum
from typing import Collection, Iterable, Sequence

from tui.domain.appliances import ApplianceRecord, ApplianceType
from tui.domain.attribute_file import ApplianceTag, installed_version_from_image_template
from tui.domain.images import ImageInfo
from tui.domain.naming import NamingProfile
from tui.domain.versions import ApplianceVersion, newest

UPGRADE_TABLE_HEADER: tuple[str, str, str] = ("Software", "Previous", "New")

_WORD = re.compile(r"[^\W_]+")


class InstallState(str, Enum):
    NOT_DOWNLOADED = "not downloaded"
    UP_TO_DATE = "up to date"
    UPDATE_AVAILABLE = "update available"
    UNTAGGED = "untagged image found"
    OLDER_BUILD = "older build"
    NEWER_ELSEWHERE = "newer build listed"


@dataclass(frozen=True)
class TaggedImage:
    image: ImageInfo
    tag: ApplianceTag

    @property
    def version(self) -> ApplianceVersion:
        return self.tag.version


@dataclass(frozen=True)
class ApplianceStatus:
    record: ApplianceRecord
    state: InstallState
    #: the newest installed version (None unless some image is tagged with the record's name)
    installed: ApplianceVersion | None
    #: images tagged with the record's name
    images: tuple[TaggedImage, ...] = ()
    #: images without attributes that look like the appliance
    untagged: tuple[ImageInfo, ...] = ()
    note: str = ""
    #: the service (or VM template) record this part's status follows ("" for a whole appliance)
    part_of: str = ""

    @property
    def available(self) -> ApplianceVersion:
        return self.record.parsed_version

    @property
    def outdated(self) -> tuple[TaggedImage, ...]:
        """Tagged images older than the available version (the ones an upgrade replaces)."""
        return tuple(t for t in self.images if self.available.newer_than(t.version))

    @property
    def label(self) -> str:
        if self.state is InstallState.UPDATE_AVAILABLE and self.installed is not None:
            return f"{self.state.value} ({self.installed.label} -> {self.available.label})"
        if self.state is InstallState.OLDER_BUILD and self.installed is not None:
            return f"{self.state.value} ({self.installed.label} installed)"
        if self.state is InstallState.NEWER_ELSEWHERE and self.note:
            return self.note.split("; ")[0]
        return self.state.value


@dataclass(frozen=True)
class UpgradeRow:
    software: str
    previous: ApplianceVersion
    new: ApplianceVersion

    def cells(self) -> tuple[str, str, str]:
        """`Software | Previous | New`, as release announcements list them."""
        return (self.software, self.previous.label, self.new.label)


class StepKind(str, Enum):
    CHECK_ATTRIBUTES = "attributes on installed images"
    DOWNLOAD = "download new version"
    ATTACH_ATTRIBUTES = "attach attributes to new images"
    REMOVE_OLD = "remove old version"
    UPDATE_SITE_CONFIG = "update core.yaml"


@dataclass(frozen=True)
class PlanStep:
    kind: StepKind
    #: the appliance (record name) the step is about; "" for site-wide steps
    appliance: str
    summary: str
    image_ids: tuple[int, ...] = ()
    #: already satisfied (a check that passes): nothing to do
    done: bool = False
    #: ask the operator before doing it (removals)
    needs_confirmation: bool = False
    record: ApplianceRecord | None = None


@dataclass(frozen=True)
class UpgradePlan:
    rows: tuple[UpgradeRow, ...]
    steps: tuple[PlanStep, ...]
    #: appliances that cannot be planned yet, with what to do first
    blocked: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.rows

    @property
    def old_image_ids(self) -> tuple[int, ...]:
        """IDs that core.yaml may reference and that must change."""
        ids: list[int] = []
        for step in self.steps:
            if step.kind is StepKind.REMOVE_OLD:
                ids.extend(step.image_ids)
        return tuple(ids)

    @property
    def ready(self) -> bool:
        """Every attribute check passes and nothing is blocked."""
        return not self.blocked and all(s.done for s in self.steps if s.kind is StepKind.CHECK_ATTRIBUTES)


def name_words(name: str) -> tuple[str, ...]:
    return tuple(word.casefold() for word in _WORD.findall(name))


def looks_like(image_name: str, appliance_name: str) -> bool:
    """The appliance name's words appear consecutively among the image name's words."""
    needle, hay = name_words(appliance_name), name_words(image_name)
    if not needle:
        return False
    return any(hay[i : i + len(needle)] == needle for i in range(len(hay) - len(needle) + 1))


def appliance_statuses(
    records: Iterable[ApplianceRecord], images: Sequence[ImageInfo], naming: NamingProfile
) -> tuple[ApplianceStatus, ...]:
    """The install status of each record, from the images' attributes."""
    tagged: dict[str, list[TaggedImage]] = {}
    plain: list[ImageInfo] = []
    for image in images:
        tag = installed_version_from_image_template(image.attributes, naming)
        if tag is None:
            plain.append(image)
        else:
            tagged.setdefault(tag.name, []).append(TaggedImage(image, tag))
    chosen = list(records)
    statuses = [_status(record, tuple(tagged.get(record.name, ())), plain) for record in chosen]
    return tuple(_newer_elsewhere(chosen, _follow_wholes(chosen, statuses)))


def _newer_elsewhere(records: Sequence[ApplianceRecord], statuses: list[ApplianceStatus]) -> list[ApplianceStatus]:
    """An up-to-date status becomes NEWER_ELSEWHERE when any record of the same appliance (a part:
    of its whole), in any marketplace, lists a build newer than every installed one."""
    out = list(statuses)
    for index, status in enumerate(statuses):
        if status.state is not InstallState.UP_TO_DATE or status.installed is None:
            continue
        installed = status.installed
        name = status.part_of or status.record.name
        newer = [r for r in records if r.name == name and r.parsed_version.newer_than(installed)
                 and not r.parsed_version.same_release(installed)]
        if not newer:
            continue
        best = max(newer, key=lambda r: r.parsed_version)
        said = (f"current for this record ({installed.label} installed), but a newer build, {best.version}, is "
                f"listed at {best.marketplace_url} (record {best.id})")
        out[index] = replace(status, state=InstallState.NEWER_ELSEWHERE,
                             note="; ".join(part for part in (said, status.note) if part))
    return out


def _parents(records: Sequence[ApplianceRecord]) -> dict[int, int]:
    """Index of each part -> index of the record it belongs to, in the same marketplace: a
    service's role VM templates, a VM template's disk images."""
    by_name: dict[tuple[str, str], int] = {}
    for index, record in enumerate(records):
        by_name.setdefault((record.marketplace_url, record.name), index)
    parents: dict[int, int] = {}
    for index, record in enumerate(records):
        if record.type is ApplianceType.SERVICE_TEMPLATE:
            names: Iterable[str] = record.roles.values()
        elif record.type is ApplianceType.VMTEMPLATE:
            names = record.disks
        else:
            continue
        for name in names:
            part = by_name.get((record.marketplace_url, name))
            if part is not None and part != index:
                parents.setdefault(part, index)
    return parents


def _follow_wholes(records: Sequence[ApplianceRecord], statuses: list[ApplianceStatus]) -> list[ApplianceStatus]:
    """A part without an image of its own takes the status of the nearest whole that has one."""
    parents = _parents(records)
    out = list(statuses)
    for index, status in enumerate(statuses):
        if status.state is not InstallState.NOT_DOWNLOADED:
            continue
        seen = {index}
        parent = parents.get(index)
        while parent is not None and parent not in seen and statuses[parent].state is InstallState.NOT_DOWNLOADED:
            seen.add(parent)
            parent = parents.get(parent)
        if parent is None or parent in seen:
            continue
        whole = statuses[parent]
        note = f"part of {whole.record.name} {whole.available.label}: its images carry the attributes of that appliance"
        out[index] = replace(whole, record=status.record, untagged=(), note=note, part_of=whole.record.name)
    return out


def _status(record: ApplianceRecord, images: tuple[TaggedImage, ...], plain: list[ImageInfo]) -> ApplianceStatus:
    lookalikes = tuple(image for image in plain if looks_like(image.name, record.name))
    available = record.parsed_version
    notes: list[str] = []
    if not available.conforming:
        notes.append(f"version {available.label} does not follow vX.X.X-YYYYMMDD-HHMM; compared best-effort")
    if not images:
        state = InstallState.UNTAGGED if lookalikes else InstallState.NOT_DOWNLOADED
        if lookalikes:
            notes.append(
                f"image(s) {_ids(lookalikes)} look like this appliance but carry no marketplace attributes"
            )
        return ApplianceStatus(record, state, None, (), lookalikes, "; ".join(notes))
    installed = newest([t.version for t in images])
    assert installed is not None
    if any(t.version.same_release(available) for t in images):
        state = InstallState.UP_TO_DATE
        if installed.newer_than(available):
            notes.append(f"a newer build, {installed.label}, is installed too")
        else:
            stale = [t.image for t in images if installed.newer_than(t.version)]
            if stale:
                notes.append(f"image(s) {_ids(stale)} hold an older version and can be removed")
    elif available.newer_than(installed):
        state = InstallState.UPDATE_AVAILABLE
    else:
        state = InstallState.OLDER_BUILD
        notes.append(f"this build was never downloaded; the installed {installed.label} is newer")
    return ApplianceStatus(record, state, installed, images, lookalikes, "; ".join(notes))


def upgrade_rows(statuses: Iterable[ApplianceStatus]) -> tuple[UpgradeRow, ...]:
    """`Software | Previous | New` for every appliance with an update available."""
    return tuple(
        UpgradeRow(s.record.name, s.installed, s.available)
        for s in statuses
        if s.state is InstallState.UPDATE_AVAILABLE and s.installed is not None
    )


def build_upgrade_plan(
    statuses: Iterable[ApplianceStatus], naming: NamingProfile, *, only: Collection[str] | None = None
) -> UpgradePlan:
    """The ordered plan for the appliances with updates (restricted to the names in `only`)."""
    chosen = [s for s in statuses if not s.part_of and (only is None or s.record.name in only)]
    updates = [s for s in chosen if s.state is InstallState.UPDATE_AVAILABLE]
    blocked = tuple(
        f"{s.record.name}: image(s) {_ids(s.untagged)} carry no marketplace attributes; attach the attributes "
        "of the version they hold before upgrading (spec: attributes before update)"
        for s in chosen
        if s.state is InstallState.UNTAGGED
    )
    steps: list[PlanStep] = []
    for s in updates:
        steps.append(_check_step(s))
    for s in updates:
        steps.append(
            PlanStep(StepKind.DOWNLOAD, s.record.name, f"download {s.record.name} {s.available.label}", record=s.record)
        )
        steps.append(
            PlanStep(
                StepKind.ATTACH_ATTRIBUTES,
                s.record.name,
                f"attach the attributes of {s.available.label} to every image of the download",
                record=s.record,
            )
        )
    for s in updates:
        old = [t.image for t in s.outdated]
        in_use = [image for image in old if image.running_vms > 0]
        summary = f"remove {s.record.name} {s.installed.label if s.installed else ''}: image(s) {_ids(old)}"
        if in_use:
            summary += f" (image(s) {_ids(in_use)} still used by VMs: move those VMs first)"
        steps.append(
            PlanStep(
                StepKind.REMOVE_OLD,
                s.record.name,
                summary,
                image_ids=tuple(image.id for image in old),
                needs_confirmation=True,
                record=s.record,
            )
        )
    if updates:
        old_ids = tuple(t.image.id for s in updates for t in s.outdated)
        steps.append(
            PlanStep(
                StepKind.UPDATE_SITE_CONFIG,
                "",
                f"core.yaml: replace image ID(s) {', '.join(map(str, old_ids))} and the template IDs of "
                f"{', '.join(s.record.name for s in updates)} by the new ones, and add any new site variables",
                image_ids=old_ids,
            )
        )
    notes: tuple[str, ...] = ()
    if any(s.record.name == naming.toolkit_appliance_name for s in updates):
        notes = (f"Upgrading {naming.toolkit_appliance_name}: the manager follows its own upgrade instructions.",)
    return UpgradePlan(upgrade_rows(updates), tuple(steps), blocked, notes)


def _check_step(status: ApplianceStatus) -> PlanStep:
    missing = [t.image for t in status.images if not t.tag.complete] + list(status.untagged)
    if not missing:
        summary = f"every installed image of {status.record.name} carries its attributes"
    else:
        summary = (
            f"attach the attributes of the installed version to image(s) {_ids(missing)} of "
            f"{status.record.name} before updating"
        )
    return PlanStep(
        StepKind.CHECK_ATTRIBUTES,
        status.record.name,
        summary,
        image_ids=tuple(image.id for image in missing),
        done=not missing,
        record=status.record,
    )


def _ids(images: Iterable[ImageInfo]) -> str:
    return ", ".join(str(image.id) for image in images)
