"""Operation 2: download an appliance by exporting the cloud's marketplace app.

The export does what the platform's own CLI does (`onemarketapp export`, cloud-api.md
"Exporting a marketplace app"), through XML-RPC:

- IMAGE app: an image from the app (`image.allocate` of the decoded APPTEMPLATE64 plus NAME and
  FROM_APP, in the chosen IMAGE datastore), then a VM template from VMTEMPLATE64 with
  `DISK=[IMAGE_ID=...]` when the app carries one;
- VMTEMPLATE app: each `DISK=[APP=...]` image app as above (without templates of their own), then
  the VM template from APPTEMPLATE64 with one DISK per image;
- SERVICE_TEMPLATE app: each role's VM-template app (its own images first), then the service
  template: the app's body as it is, each role given `vm_template` = the id of its new VM
  template, created through OneFlow (`POST /service_template`), whose validation is the one
  `onemarketapp export` runs (`ServiceTemplate#allocate`; on 7.x it converts the pre-7.0 body).

Names are the platform's (`tui.procedures.market.download_plan`, marketplaceapp_ext.rb). Each image is
then followed from LOCKED to READY; an image in ERROR is reported with the platform's reason
(TEMPLATE/ERROR), and a wait longer than the step timeout fails. On failure or cancellation
everything this run created is deleted again (service template, then VM templates, then images),
as the platform's CLI rolls back. Once every image is READY the marketplace attributes are
attached to each (operation 1).

Re-running is idempotent: objects that already exist under the planned names and come from the
same app are reused (and never rolled back); a name taken by something else stops the plan.

The planning (`DownloadPlan`, `plan_download`, the naming and datastore helpers) lives in
`tui.procedures.market.download_plan`; this module runs a plan and re-exports the planning names, so
callers import both from here.

Audit: the `DownloadAppliance` operation's run is recorded once, by the pipeline, as
`marketapp.export`, from what the run kept in its `DownloadLedger`: what was created, reused and
replaced and each image's attributes; for a failed, cancelled or timed-out run what the rollback
deleted and what is left with the command that removes it. Operations that download as a part
(upgrades, a component's provisioning) record the download in their own one record.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator, Awaitable, Callable, ClassVar, Mapping, Sequence

from tui.domain.attribute_file import ApplianceTag
from tui.domain.error_codes import NO_EXISTS
from tui.domain.images import ERROR, IMAGE_DELETE, READY, USED, ImageInfo, image_state_names
from tui.errors import OutcomeUnknown, SiteError
from tui.procedures.concurrent import gather
from tui.procedures.market.attributes import ImageResult, attach_attributes, plan_attach
from tui.procedures.market.download_journal import REMOVE_COMMANDS, Cleanup, DownloadJournal, Leftover
from tui.procedures.market.download_lock import DownloadLock
from tui.procedures.market.download_plan import (
    DownloadPlan,
    OrphanService,
    OrphanTemplate,
    PlannedImage,
    PlannedService,
    PlannedTemplate,
    check_name,
    default_download_name,
    find_market_app,
    image_datastores,
    list_image_datastores,
    plan_download,
)
from tui.procedures.operation import Confirmation, Operation, OperationCancelled, RunContext
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

__all__ = [
    "DEFAULT_POLL_INTERVAL", "DEFAULT_STEP_TIMEOUT", "DownloadAppliance", "DownloadCancelled", "DownloadLedger",
    "DownloadPlan", "DownloadResult",
    "PlannedImage", "PlannedService", "PlannedTemplate", "check_name", "default_download_name", "download_appliance",
    "error_reason", "find_market_app", "image_datastores", "list_image_datastores", "plan_download",
]

#: default time one image may stay LOCKED before the download counts as failed (seconds)
DEFAULT_STEP_TIMEOUT = 3600.0
DEFAULT_POLL_INTERVAL = 2.0


class DownloadCancelled(OperationCancelled):
    """The operator cancelled the download; what it had created was deleted."""


@dataclass(frozen=True)
class DownloadResult:
    """What a finished download left in the cloud."""

    name: str
    app_id: int
    #: (image id, image name) in plan order
    images: tuple[tuple[int, str], ...]
    template_ids: tuple[int, ...]
    service_template_id: int | None
    #: objects that existed before and were reused ("image 12", ...)
    reused: tuple[str, ...] = ()
    #: the other download of the same app this one waited for ("process 4711 (sitetk market download) ...")
    waited_for: str = ""
    #: each image's attributes (empty without them)
    attributes: tuple[ImageResult, ...] = ()
    #: orphans of an earlier download this run deleted and replaced: (kind, id)
    replaced: tuple[tuple[str, int], ...] = ()
    #: what earlier downloads' rollbacks left (the download journal) this run deleted first
    cleaned: tuple[dict[str, Any], ...] = ()

    @property
    def image_ids(self) -> tuple[int, ...]:
        return tuple(i for i, _ in self.images)

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "app_id": self.app_id, "image_ids": list(self.image_ids),
                "images": [{"id": i, "name": n} for i, n in self.images], "template_ids": list(self.template_ids),
                "service_template_id": self.service_template_id, "reused": list(self.reused),
                "waited_for": self.waited_for} | ({"cleaned": list(self.cleaned)} if self.cleaned else {})


# -- running it ----------------------------------------------------------------------------------
@dataclass
class _Created:
    """What this run created, in creation order: (kind, id, name), for the rollback."""

    objects: list[tuple[str, int, str]] = field(default_factory=list)

    def ids(self, kind: str) -> list[int]:
        return [object_id for k, object_id, _ in self.objects if k == kind]

    def as_json(self) -> dict[str, Any]:
        return {"images": self.ids(IMAGE), "templates": self.ids(VM_TEMPLATE),
                "service_templates": self.ids(SERVICE_TEMPLATE)}


IMAGE, VM_TEMPLATE, SERVICE_TEMPLATE = "image", "VM template", "service template"


@dataclass
class DownloadLedger:
    """What a run did so far, for its one audit record: kept as it goes, so a run stopped hard
    (its task cancelled, a time limit) still says what it created, deleted and left."""

    created: _Created = field(default_factory=_Created)
    undo: "_Undo" = field(default_factory=lambda: _Undo())
    #: orphans of an earlier download (VM templates, a service template) this run deleted and replaced
    replaced: list[dict[str, Any]] = field(default_factory=list)
    rolled_back: bool = False
    #: what earlier downloads left (the download journal) this run deleted first
    cleaned: list[dict[str, Any]] = field(default_factory=list)

    def details(self, plan: DownloadPlan) -> dict[str, Any]:
        """The audit record's details (what the export is, what this run made of it)."""
        out: dict[str, Any] = {"app": plan.app.name, "version": plan.app.version, "datastore_id": plan.datastore.id,
                               "created": self.created.as_json(), "cli": plan.export_cli}
        if self.replaced:
            out["replaced"] = list(self.replaced)
        if self.cleaned:
            out["cleaned"] = list(self.cleaned)
        return out

    def failure_details(self, plan: DownloadPlan) -> dict[str, Any]:
        """The details of a run that did not finish: what the rollback deleted, what is left
        (each with the command that removes it) and a sentence saying so."""
        return {**self.details(plan), "rolled_back": not self.undo.left, **self.undo.as_json(),
                "summary": self.undo.summary(self.created)}
#: the Progress data key naming the object each creation step made
_DATA_KEYS = {IMAGE: "image_id", VM_TEMPLATE: "template_id", SERVICE_TEMPLATE: "service_template_id"}


@dataclass
class _Ids:
    """The IDs of the export's objects as they become known (reused ones from the start)."""

    images: list[int]
    templates: list[int]
    service: int | None

    @classmethod
    def of(cls, plan: DownloadPlan) -> "_Ids":
        return cls([-1 if i.existing_id is None else i.existing_id for i in plan.images],
                   [-1 if t.existing_id is None else t.existing_id for t in plan.templates],
                   plan.service.existing_id if plan.service is not None else None)


@dataclass(frozen=True)
class _Creation:
    """One object to create (or reuse): allocate() is called only when its turn comes."""

    kind: str
    name: str
    existing_id: int | None
    allocate: Callable[[], Awaitable[int]]
    store: Callable[[int], None]


def _creations(site: "SiteConnection", plan: DownloadPlan, ids: _Ids) -> list[_Creation]:
    """Images, then VM templates (whose DISKs need the image IDs), then the service template."""
    out: list[_Creation] = []
    for n, image in enumerate(plan.images):
        out.append(_Creation(IMAGE, image.name, image.existing_id,
                             partial(site.cloud.image_allocate, image.text, plan.datastore.id),
                             partial(ids.images.__setitem__, n)))
    for n, template in enumerate(plan.templates):
        def allocate_template(template: PlannedTemplate = template) -> Awaitable[int]:
            return site.cloud.template_allocate(template.text(ids.images))  # the image IDs made above

        out.append(_Creation(VM_TEMPLATE, template.name, template.existing_id, allocate_template,
                             partial(ids.templates.__setitem__, n)))
    service = plan.service
    if service is not None:
        async def allocate_service(service: PlannedService = service) -> int:
            created = await site.flow.create_service_template(service.document_body(ids.templates))
            return created.id

        out.append(_Creation(SERVICE_TEMPLATE, service.name, service.existing_id, allocate_service,
                             lambda value: setattr(ids, "service", value)))
    return out


async def download_appliance(
    site: "SiteConnection",
    plan: DownloadPlan,
    *,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    cancel: asyncio.Event | None = None,
    attach: bool = True,
    ledger: DownloadLedger | None = None,
) -> AsyncIterator[Progress]:
    """Run the export, follow every image to READY, attach the attributes.

    Yields `Progress` events (step names as `plan.steps(attach)` lists them); the last one
    (state "done") carries the `DownloadResult` as its `outcome` (and as JSON in `data["download"]`). On failure, timeout
    or `cancel` being set, everything created by this run is deleted (the events say what) and
    `SiteError` (`DownloadCancelled` for a cancel) is raised. A hard task cancellation rolls back
    too, without events.

    Another download of the same app running meanwhile (this process or another) is waited for,
    then the plan is made again, so that what it created is reused (tui.procedures.market.download_lock).

    `ledger` keeps what the run did (the `DownloadAppliance` operation's audit record reads it).
    """
    ledger = ledger if ledger is not None else DownloadLedger()
    lock = DownloadLock(site, plan.app.id, f"{plan.app.name} {plan.app.version}")
    holder = await lock.try_acquire()
    try:
        waited_for = ""
        if holder is not None:
            total = len(plan.steps(attach))
            step = plan.steps(attach)[0]
            yield Progress(step, 0, total, f"waiting for {holder.describe()}, which is downloading the same appliance",
                           ProgressState.RUNNING, {"waiting_for": holder.describe()})
            await lock.acquire(step_timeout, cancel)  # failing, it created nothing: the run's record says why
            waited_for = f"{lock.describe_holder()}, {lock.waited:.0f} s"
            plan = await plan_download(site, plan.app.id, plan.datastore.id, plan.name, tag=plan.tag)
            found = sum(1 for o in (*plan.images, *plan.templates, *((plan.service,) if plan.service else ()))
                        if o.existing_id is not None)
            yield Progress(step, 0, total, f"{lock.describe_holder()} finished after {lock.waited:.0f} s; planned "
                           f"again: {found} object(s) it left are reused, none is created twice", ProgressState.RUNNING,
                           {"waited_for": waited_for, "reused": found})
        # what earlier downloads' rollbacks left (the download journal, read by `plan_download`) is
        # deleted first, under the lock, whichever command downloads (before anything is created)
        async for event in clean_leftovers(site, plan.cleanup, len(plan.steps(attach)), ledger.cleaned):
            yield event
        export = _export(site, plan, step_timeout=step_timeout, poll_interval=poll_interval, cancel=cancel,
                         attach=attach, waited_for=waited_for, ledger=ledger)
        try:
            async for event in export:
                yield event
        finally:
            await export.aclose()  # a closed or cancelled caller: the export rolls back before the lock goes
    finally:
        await lock.release()


async def _export(site: "SiteConnection", plan: DownloadPlan, *, step_timeout: float, poll_interval: float,
                  cancel: asyncio.Event | None, attach: bool, waited_for: str,
                  ledger: DownloadLedger) -> AsyncGenerator[Progress, None]:
    """The export under the lock (see `download_appliance`)."""
    steps = plan.steps(attach)
    total = len(steps)
    created, undo = ledger.created, ledger.undo
    ids = _Ids.of(plan)
    reused: list[str] = []
    done = 0
    try:
        try:
            if plan.service is not None and plan.service.replaces is not None:
                gone = plan.service.replaces
                step = steps[done]
                yield Progress(step, done, total, f"deleting service template {gone.id}, an orphan an earlier "
                               "download left (the VM templates its roles point at are gone)")
                await _delete_orphan_service(site, gone, step, ledger)
                done += 1
                yield Progress(step, done, total, f"service template {gone.id} deleted", ProgressState.DONE,
                               {"service_template_id": gone.id})
            for template in plan.templates:
                if template.replaces is not None:
                    step = steps[done]
                    yield Progress(step, done, total, f"deleting VM template {template.replaces.id}, an orphan "
                                   "an earlier download left (its disk images are gone)")
                    await _delete_orphan(site, template.replaces, step, ledger)
                    done += 1
                    yield Progress(step, done, total, f"VM template {template.replaces.id} deleted", ProgressState.DONE,
                                   {"template_id": template.replaces.id})
            for creation in _creations(site, plan, ids):
                step = steps[done]
                key = _DATA_KEYS[creation.kind]
                if creation.existing_id is not None:
                    reused.append(f"{creation.kind} {creation.existing_id}")
                    done += 1
                    yield Progress(step, done, total, f"exists ({creation.kind} {creation.existing_id}), reused",
                                   ProgressState.SKIPPED, {key: creation.existing_id})
                    continue
                _check_cancel(cancel)
                yield Progress(step, done, total, f"creating the {creation.kind}")
                new_id = await _allocate(creation.allocate(), step)
                creation.store(new_id)
                created.objects.append((creation.kind, new_id, creation.name))
                done += 1
                yield Progress(step, done, total, f"{creation.kind} {new_id} created", ProgressState.DONE, {key: new_id})
            async for event in _follow_images(site, plan, ids.images, steps, done, total, step_timeout,
                                              poll_interval, cancel):
                yield event
            done += len(plan.images)
        except SiteError as error:
            async for event in _rollback(site, created, undo, done, total):
                yield event
            _journal_left(site, plan, undo)
            raise _rolled_back(error, created, undo) from None
    except (asyncio.CancelledError, GeneratorExit):
        # hard cancel (task cancelled, generator closed, maybe mid-rollback): finish the rollback without events
        try:
            await _rollback_quietly(site, created, undo)
        finally:
            _journal_left(site, plan, undo)
        raise
    finally:
        if created.objects or ledger.replaced:
            site.note_change()
    attributes: list[ImageResult] = []
    if attach and plan.images:
        attach_plan = await plan_attach(site, plan.tag, ids.images)
        async for event in attach_attributes(site, attach_plan, offset=done, total=total):
            if isinstance(event.outcome, ImageResult):
                attributes.append(event.outcome)
            if event.step == "attributes":
                continue
            yield event
    journal = DownloadJournal.of(site.settings)
    for left in plan.cleanup.adopted:  # part of a complete download now
        journal.forget(left.kind, left.id)
    result = DownloadResult(plan.name, plan.app.id, tuple(zip(ids.images, (i.name for i in plan.images), strict=True)),
                            tuple(ids.templates), ids.service, tuple(reused), waited_for, tuple(attributes),
                            tuple((r["kind"], r["id"]) for r in ledger.replaced), tuple(ledger.cleaned))
    yield Progress("attributes" if attach else "download", total, total,
                   f"{plan.name}: {len(result.image_ids)} image(s) READY" + (", attributes in place" if attach else ""),
                   ProgressState.DONE, {"download": result.as_json()}, result)


@dataclass(frozen=True)
class DownloadAppliance(Operation[DownloadPlan, DownloadResult]):
    """Operation 2 as an operation: the cloud's marketplace app `app_id` into an IMAGE datastore."""

    app_id: int
    datastore_id: int
    name: str
    tag: ApplianceTag | None = None
    attach: bool = True
    step_timeout: float = DEFAULT_STEP_TIMEOUT
    poll_interval: float = DEFAULT_POLL_INTERVAL

    title: ClassVar[str] = "Download an appliance"
    refusal: ClassVar[str] = "a download changes the cloud"
    action: ClassVar[str] = "marketapp.export"

    async def plan(self, site: "SiteConnection") -> DownloadPlan:
        return await plan_download(site, self.app_id, self.datastore_id, self.name, tag=self.tag)

    def preview(self, plan: DownloadPlan) -> Preview:
        return plan.preview()

    def confirmation(self, plan: DownloadPlan) -> Confirmation:
        return Confirmation("Download", f"{plan.app.name} {plan.app.version} as {plan.name!r}")

    async def execute(self, site: "SiteConnection", plan: DownloadPlan, context: RunContext) -> DownloadResult:
        result: DownloadResult | None = None
        ledger = context.keep(DownloadLedger())
        async for event in download_appliance(site, plan, step_timeout=self.step_timeout,
                                              poll_interval=self.poll_interval, cancel=context.cancel,
                                              attach=self.attach, ledger=ledger):
            if isinstance(event.outcome, DownloadResult):
                result = event.outcome
            context.report(event)
        assert result is not None, "a finished download names what it created"
        return result

    def audit_object(self, plan: DownloadPlan) -> str:
        return f"app {plan.app.id} -> {plan.name!r}"

    def audit_details(self, plan: DownloadPlan, result: DownloadResult) -> Mapping[str, Any] | None:
        created = {"images": [i for i in result.image_ids if f"{IMAGE} {i}" not in result.reused],
                   "templates": [t for t in result.template_ids if f"{VM_TEMPLATE} {t}" not in result.reused],
                   "service_templates": [] if result.service_template_id is None
                   or f"{SERVICE_TEMPLATE} {result.service_template_id}" in result.reused
                   else [result.service_template_id]}
        out: dict[str, Any] = {"app": plan.app.name, "version": plan.app.version, "datastore_id": plan.datastore.id,
                               "created": created, "cli": plan.export_cli, "reused": list(result.reused)}
        if result.replaced:
            out["replaced"] = [{"kind": kind, "id": i, "reason": _ORPHAN_REASONS[kind],
                                "cli": f"{REMOVE_COMMANDS[kind]} {i}"} for kind, i in result.replaced]
        if result.waited_for:
            out["waited_for"] = result.waited_for
        if result.cleaned:
            out["cleaned"] = list(result.cleaned)
        if self.attach:
            out["attributes"] = [image.as_json() for image in result.attributes]
        return out

    def audit_failure(self, plan: DownloadPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        return (context.kept(DownloadLedger) or DownloadLedger()).failure_details(plan)


_ERROR_TIME = re.compile(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4} : ")


def error_reason(text: str) -> str:
    """TEMPLATE/ERROR without the platform's leading time (`Sun Nov 22 01:20:01 2026 : ...`)."""
    return _ERROR_TIME.sub("", text.strip())


def _check_cancel(cancel: asyncio.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise DownloadCancelled("Download cancelled", "The operator cancelled the download.")


async def _allocate(call: Awaitable[int], step: str) -> int:
    try:
        return int(await call)
    except SiteError as error:
        raise SiteError(f"{step} failed: {error.title}", error.detail, retryable=error.retryable,
                        code=error.code) from None


async def _delete_orphan(site: "SiteConnection", orphan: OrphanTemplate, step: str, ledger: DownloadLedger) -> None:
    """Delete the orphan a VM template of the plan replaces (gone already counts as done)."""
    try:
        await _delete_settled(site.cloud.template_delete, partial(_gone, site, VM_TEMPLATE), orphan.id)
    except SiteError as error:
        raise SiteError(f"{step} failed: {error.title}", error.detail, retryable=error.retryable,
                        code=error.code) from None
    details = {"kind": VM_TEMPLATE, "id": orphan.id, "name": orphan.name,
               "missing_images": list(orphan.missing_images), "reason": _ORPHAN_REASONS[VM_TEMPLATE],
               "cli": orphan.delete_cli}
    ledger.replaced.append(details)


async def _delete_orphan_service(site: "SiteConnection", orphan: OrphanService, step: str,
                                 ledger: DownloadLedger) -> None:
    """Delete the orphan the plan's service template replaces, as `oneflow-template delete` does
    (`DELETE /service_template/<id>` with no `delete_type`: the document only, oneflow-server.rb
    release-7.4.0 641-659, service_template.rb `delete` 336-364); gone already counts as done."""
    try:
        await _delete_settled(partial(_flow_template_delete, site), partial(_gone, site, SERVICE_TEMPLATE), orphan.id)
    except SiteError as error:
        raise SiteError(f"{step} failed: {error.title}", error.detail, retryable=error.retryable,
                        code=error.code) from None
    ledger.replaced.append({"kind": SERVICE_TEMPLATE, "id": orphan.id, "name": orphan.name,
                            "missing_templates": list(orphan.missing_templates),
                            "reason": _ORPHAN_REASONS[SERVICE_TEMPLATE], "cli": orphan.delete_cli})


async def _flow_template_delete(site: "SiteConnection", document_id: int) -> None:
    """OneFlow's delete of a service template; not found (404) is gone."""
    try:
        await site.flow.delete_service_template(document_id)
    except SiteError as error:
        if error.code != HTTP_NOT_FOUND:
            raise


async def _follow_images(site: "SiteConnection", plan: DownloadPlan, image_ids: Sequence[int], steps: Sequence[str],
                         done: int, total: int, step_timeout: float, poll_interval: float,
                         cancel: asyncio.Event | None) -> AsyncIterator[Progress]:
    """Poll every image until READY; ERROR or a timeout stops the run."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    first = done
    pending = {image_ids[n]: (steps[first + n], image.name) for n, image in enumerate(plan.images)}
    last_state: dict[int, int] = {}
    finished = 0
    while pending:
        _check_cancel(cancel)
        ids = list(pending)
        infos: tuple[ImageInfo, ...] = await gather(*(site.cloud.image_info(i) for i in ids))
        elapsed = loop.time() - start
        for info in infos:
            step, name = pending[info.id]
            if info.state in (READY, USED):
                finished += 1
                del pending[info.id]
                yield Progress(step, first + finished, total, f"image {info.id} READY", ProgressState.DONE,
                               {"image_id": info.id, "state": "READY", "elapsed": round(elapsed, 1)})
            elif info.state == ERROR:
                reason = error_reason(info.error) or "the platform gave no reason (TEMPLATE/ERROR is empty)"
                yield Progress(step, first + finished, total, f"image {info.id} ERROR: {reason}", ProgressState.FAILED,
                               {"image_id": info.id, "state": "ERROR", "error": reason})
                raise SiteError(f"Image {info.id} ({name}) ended in ERROR", reason)
            elif last_state.get(info.id) != info.state:
                last_state[info.id] = info.state
                word = image_state_names(info.state)[0]
                yield Progress(step, first + finished, total, f"image {info.id} {word}", ProgressState.RUNNING,
                               {"image_id": info.id, "state": word})
        if pending and elapsed > step_timeout:
            stuck = ", ".join(f"image {i} ({name})" for i, (_, name) in pending.items())
            raise SiteError(f"Download timed out after {step_timeout:g} s",
                            f"{stuck} still not READY. The datastore may be slow or stuck: check `oneimage show`, "
                            "then retry with a longer timeout.", retryable=True)
        if pending:
            await _pause(poll_interval, cancel)


async def _pause(seconds: float, cancel: asyncio.Event | None) -> None:
    """Sleep, waking early when `cancel` is set."""
    if cancel is None:
        await asyncio.sleep(seconds)
        return
    try:
        await asyncio.wait_for(cancel.wait(), seconds)
    except TimeoutError:
        pass


#: why a run deleted an orphan of an earlier download, by kind
_ORPHAN_REASONS = {VM_TEMPLATE: "orphan of an earlier download (its disk images are gone), replaced",
                   SERVICE_TEMPLATE: "orphan of an earlier download (its roles' VM templates are gone), replaced"}
HTTP_NOT_FOUND = 404


@dataclass
class _Undo:
    """What a rollback actually did: the objects it deleted, and those left with why."""

    deleted: list[tuple[str, int, str]] = field(default_factory=list)
    left: list[tuple[str, int, str, str]] = field(default_factory=list)
    #: whether what is left is in the download journal (`_journal_left`)
    journalled: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"deleted": [{"kind": k, "id": i, "name": n} for k, i, n in self.deleted],
                "left": [{"kind": k, "id": i, "name": n, "reason": r, "command": f"{REMOVE_COMMANDS[k]} {i}"}
                         for k, i, n, r in self.left]}

    def summary(self, created: _Created) -> str:
        """One sentence per outcome, naming each object (never a count of what was only created)."""
        if not created.objects:
            return "Nothing had been created."
        parts = []
        if self.deleted:
            parts.append("Rolled back: deleted " + ", ".join(f"{k} {i} {n!r}" for k, i, n in self.deleted) + ".")
        if self.left:
            parts.append("Left in the cloud (the rollback could not delete them): " + "; ".join(
                f"{k} {i} {n!r} ({r}): remove it with `{REMOVE_COMMANDS[k]} {i}`" for k, i, n, r in self.left) + ".")
            if self.journalled:
                parts.append(self.journalled)
        else:
            parts.append("Nothing is left of this run.")
        return " ".join(parts)


#: how long a rollback keeps asking about a delete whose outcome is unknown (the site down, the
#: answer lost) before it names the object as left
ROLLBACK_SETTLE_S = 30.0
_SETTLE_PAUSES = (0.5, 1.0, 2.0)


async def _delete_settled(call: Callable[[int], Awaitable[Any]], gone: Callable[[int], Awaitable[bool]],
                          object_id: int) -> None:
    """`call(object_id)`, and when its outcome is unknown (the site down, the answer lost) the
    object read back (`gone`) once the site answers: gone means deleted, still there means the
    delete is sent again. A refusal that will not change is raised at once; an outcome still
    unknown after `ROLLBACK_SETTLE_S` is raised as it is (the object is then named as left)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ROLLBACK_SETTLE_S
    tries = 0
    while True:
        try:
            await call(object_id)
            return
        except SiteError as error:
            if error.code == NO_EXISTS:
                return
            if not (error.retryable or isinstance(error, OutcomeUnknown)):
                raise
            last = error
        while True:
            pause = _SETTLE_PAUSES[min(tries, len(_SETTLE_PAUSES) - 1)]
            tries += 1
            if loop.time() + pause > deadline:
                raise last
            await asyncio.sleep(pause)
            try:
                if await gone(object_id):
                    return
                break  # still there: the delete did not happen, send it again
            except SiteError as error:
                if not error.retryable:
                    raise last from None


async def _delete_one(site: "SiteConnection", undo: _Undo, kind: str, object_id: int, name: str,
                      call: Callable[[int], Awaitable[Any]]) -> str | None:
    """Delete one object this run created; returns why it is left (None: deleted, or found gone)."""
    try:
        await _delete_settled(call, partial(_gone, site, kind), object_id)
    except SiteError as error:
        reason = f"{error.title}: {error.detail}" if error.detail else error.title
        undo.left.append((kind, object_id, name, reason))
        return reason
    undo.deleted.append((kind, object_id, name))
    return None


async def _rollback(site: "SiteConnection", created: _Created, undo: _Undo, done: int,
                    total: int) -> AsyncIterator[Progress]:
    """Delete what this run created, newest kind first; each deletion is an event."""
    for kind, object_id, name, call in _deletions(site, created):
        reason = await _delete_one(site, undo, kind, object_id, name, call)
        step = f"rollback: delete {kind} {object_id}"
        if reason is not None:
            yield Progress(step, done, total, f"could not delete {name!r}: {reason}; "
                           f"remove it with `{REMOVE_COMMANDS[kind]} {object_id}`", ProgressState.FAILED,
                           {"kind": kind, "id": object_id})
        else:
            yield Progress(step, done, total, f"deleted {name!r}", ProgressState.DONE, {"kind": kind, "id": object_id})


async def _rollback_quietly(site: "SiteConnection", created: _Created, undo: _Undo) -> None:
    for kind, object_id, name, call in _deletions(site, created):
        if (kind, object_id, name) in undo.deleted:
            continue
        undo.left = [entry for entry in undo.left if entry[:2] != (kind, object_id)]
        try:
            await _delete_one(site, undo, kind, object_id, name, call)
        except asyncio.CancelledError:
            undo.left.append((kind, object_id, name, "the rollback was cut short"))


_DELETE_ORDER = (SERVICE_TEMPLATE, VM_TEMPLATE, IMAGE)


async def _gone(site: "SiteConnection", kind: str, object_id: int) -> bool:
    """Whether a deleted object is gone: not found, or (an image) in DELETE while its file is removed."""
    info = {IMAGE: site.cloud.image_info, VM_TEMPLATE: site.cloud.template_info,
            SERVICE_TEMPLATE: site.cloud.document_info}[kind]
    try:
        found = await info(object_id)
    except SiteError as error:
        if error.code == NO_EXISTS:
            return True
        raise
    return kind == IMAGE and getattr(found, "state", None) == IMAGE_DELETE


def _deletions(site: "SiteConnection", created: _Created) -> list[tuple[str, int, str, Any]]:
    """What to delete, newest kind first (the service template, its VM templates, their images)."""
    calls = {SERVICE_TEMPLATE: site.cloud.document_delete, VM_TEMPLATE: site.cloud.template_delete,
             IMAGE: site.cloud.image_delete}
    return [(kind, object_id, name, calls[kind]) for order in _DELETE_ORDER
            for kind, object_id, name in reversed(created.objects) if kind == order]


def _journal_left(site: "SiteConnection", plan: DownloadPlan, undo: _Undo) -> None:
    """Record what the rollback left in the download journal, before the failure is reported, so
    that the next download deletes it (`undo.journalled` says so, or that it could not be recorded)."""
    if not undo.left:
        return
    journal = DownloadJournal.of(site.settings)
    try:
        for kind, object_id, name, why in undo.left:
            journal.record(Leftover(kind, object_id, name, f"{plan.app.name} {plan.app.version}", why))
    except OSError as exc:
        undo.journalled = (f"They could not be recorded for the next download to delete "
                           f"({journal.directory}: {exc.strerror or exc}): remove them with the commands above.")
        return
    undo.journalled = "The next `sitetk market download` deletes them first (they are in the download journal)."


async def clean_leftovers(site: "SiteConnection", cleanup: Cleanup, total: int,
                          cleaned: list[dict[str, Any]]) -> AsyncIterator[Progress]:
    """Delete what the download journal names and `plan_cleanup` found unused (service templates,
    VM templates, images), forgetting each; forget the gone ones silently and the ones now in use
    with a note. A delete that fails stops the run before anything is created (the entry stays)."""
    journal = DownloadJournal.of(site.settings)
    for left in cleanup.gone:
        journal.forget(left.kind, left.id)
    for left, note in cleanup.in_use:
        journal.forget(left.kind, left.id)
        yield Progress(f"leftover {left.kind} {left.id}", 0, total, f"{left.label} no longer recorded as a "
                       f"leftover: {note}", ProgressState.SKIPPED, {"kind": left.kind, "id": left.id, "note": note})
    calls: dict[str, Callable[[int], Awaitable[Any]]] = {SERVICE_TEMPLATE: partial(_flow_template_delete, site), VM_TEMPLATE: site.cloud.template_delete,
             IMAGE: site.cloud.image_delete}
    for left in cleanup.clean:
        step = f"clean up {left.kind} {left.id}"
        yield Progress(step, 0, total, f"deleting {left.label}, left by a download of {left.appliance}")
        try:
            await _delete_settled(calls[left.kind], partial(_gone, site, left.kind), left.id)
        except SiteError as error:
            raise SiteError(f"{left.label} cannot be deleted: {error.title}",
                            f"{error.detail} It is left by an earlier download of {left.appliance}, whose rollback "
                            f"could not delete it; nothing of this download was created. Remove it with "
                            f"`{left.delete_cli}`, or run the download again.".strip(),
                            retryable=error.retryable, code=error.code) from None
        journal.forget(left.kind, left.id)
        cleaned.append(left.as_json())
        site.note_change()
        yield Progress(step, 0, total, f"deleted {left.label}", ProgressState.DONE, {"kind": left.kind, "id": left.id,
                                                                         "cli": left.delete_cli})


def _rolled_back(error: SiteError, created: _Created, undo: _Undo) -> SiteError:
    detail = f"{error.detail} {undo.summary(created)}".strip()
    kind = DownloadCancelled if isinstance(error, DownloadCancelled) else SiteError
    return kind(error.title, detail, retryable=error.retryable, code=error.code)
