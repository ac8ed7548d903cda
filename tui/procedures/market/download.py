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
as the platform's CLI rolls back (`tui.procedures.market.download_undo`, with the orphans it
replaces and the journal's leftovers it deletes first). Once every image is READY the marketplace attributes are
attached to each (operation 1).

Re-running is idempotent: objects that already exist under the planned names and come from the
same app are reused (and never rolled back); a name taken by something else stops the plan.

The planning (`DownloadPlan`, `plan_download`, the naming and datastore helpers) lives in
`tui.procedures.market.download_plan`; this module runs a plan (`download_appliance(site, plan,
context)` reports to the context and returns the `DownloadResult`; `DownloadAppliance` is the
operation) and re-exports the planning names, so callers import both from here.

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
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Mapping, Sequence

from tui import timing
from tui.adapters.file_lock import Holder
from tui.domain.attribute_file import ApplianceTag
from tui.domain.images import ImageInfo, image_state_names
from tui.domain.one_states import ImageState
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.market.attributes import ImageResult, attach_attributes, plan_attach
from tui.procedures.market.download_journal import REMOVE_COMMANDS, DownloadJournal
from tui.procedures.market.download_lock import DownloadLock
from tui.procedures.market.download_plan import (
    DownloadPlan,
    PlannedImage,
    PlannedService,
    PlannedTemplate,
    check_name,
    default_download_name,
    image_datastores,
)
from tui.procedures.market.download_planning import find_market_app, list_image_datastores, plan_download
from tui.procedures.market.download_undo import (
    IMAGE,
    ORPHAN_REASONS,
    SERVICE_TEMPLATE,
    VM_TEMPLATE,
    Created,
    DownloadCancelled,
    Undo,
    clean_leftovers,
    delete_orphan,
    delete_orphan_service,
    journal_left,
    rollback,
    rollback_quietly,
    rolled_back,
)
from tui.procedures.operation import Confirmation, Operation, RunContext
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
DEFAULT_STEP_TIMEOUT = timing.PROFILE.download_step_timeout
DEFAULT_POLL_INTERVAL = timing.PROFILE.poll_interval


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
class DownloadLedger:
    """What a run did so far, for its one audit record: kept as it goes, so a run stopped hard
    (its task cancelled, a time limit) still says what it created, deleted and left."""

    created: Created = field(default_factory=Created)
    undo: Undo = field(default_factory=Undo)
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
    context: RunContext,
    *,
    step_timeout: float = DEFAULT_STEP_TIMEOUT,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    attach: bool = True,
    ledger: DownloadLedger | None = None,
) -> DownloadResult:
    """Run the export, follow every image to READY, attach the attributes; the `DownloadResult`.

    Reports `Progress` to `context` (step names as `plan.steps(attach)` lists them; the last event
    carries the result as JSON in `data["download"]`). On failure, timeout or `context.cancel`,
    everything created by this run is deleted (the events say what) and `SiteError`
    (`DownloadCancelled` for a cancel) is raised. A hard task cancellation rolls back too, without
    events.

    Another download of the same app running meanwhile (this process or another) is waited for,
    then the plan is made again, so that what it created is reused (tui.procedures.market.download_lock).
    What earlier downloads' rollbacks left (the download journal, read by `plan_download`) is
    deleted first, under the lock, before anything is created.

    `ledger` keeps what the run did (the `DownloadAppliance` operation's audit record reads it).
    """
    ledger = ledger if ledger is not None else DownloadLedger()
    lock = DownloadLock(site, plan.app.id, f"{plan.app.name} {plan.app.version}")
    holder = await lock.try_acquire()
    try:
        waited_for = ""
        if holder is not None:
            plan, waited_for = await _wait_for(holder, lock, site, plan, context, step_timeout, attach)
        await clean_leftovers(site, plan.cleanup, context, len(plan.steps(attach)), ledger.cleaned)
        return await _export(site, plan, context, step_timeout=step_timeout, poll_interval=poll_interval,
                             attach=attach, waited_for=waited_for, ledger=ledger)
    finally:
        await lock.release()


async def _wait_for(holder: Holder, lock: DownloadLock, site: "SiteConnection", plan: DownloadPlan,
                    context: RunContext, step_timeout: float, attach: bool) -> tuple[DownloadPlan, str]:
    """Wait for the other download of the same app, then plan again: (the new plan, whom it waited for)."""
    total = len(plan.steps(attach))
    step = plan.steps(attach)[0]
    context.report(Progress(step, 0, total, f"waiting for {holder.describe()}, which is downloading the same appliance",
                            ProgressState.RUNNING, {"waiting_for": holder.describe()}))
    await lock.acquire(step_timeout, context.cancel)  # failing, it created nothing: the run's record says why
    waited_for = f"{lock.describe_holder()}, {lock.waited:.0f} s"
    plan = await plan_download(site, plan.app.id, plan.datastore.id, plan.name, tag=plan.tag)
    found = sum(1 for o in (*plan.images, *plan.templates, *((plan.service,) if plan.service else ()))
                if o.existing_id is not None)
    context.report(Progress(step, 0, total, f"{lock.describe_holder()} finished after {lock.waited:.0f} s; planned "
                            f"again: {found} object(s) it left are reused, none is created twice",
                            ProgressState.RUNNING, {"waited_for": waited_for, "reused": found}))
    return plan, waited_for


async def _export(site: "SiteConnection", plan: DownloadPlan, context: RunContext, *, step_timeout: float,
                  poll_interval: float, attach: bool, waited_for: str, ledger: DownloadLedger) -> DownloadResult:
    """The export under the lock (see `download_appliance`): create, follow, roll back on failure, attach."""
    steps = plan.steps(attach)
    total = len(steps)
    created, undo = ledger.created, ledger.undo
    ids = _Ids.of(plan)
    reused: list[str] = []
    done = 0
    try:
        try:
            done = await _replace_orphans(site, plan, context, steps, ledger.replaced)
            done = await _create(site, plan, context, ids, steps, done, reused, created)
            await _follow_images(site, plan, context, ids.images, steps, done, total, step_timeout, poll_interval)
            done += len(plan.images)
        except SiteError as error:
            await rollback(site, created, undo, context, done, total)
            journal_left(site, plan, undo)
            raise rolled_back(error, created, undo) from None
    except asyncio.CancelledError:
        # hard cancel (task cancelled, maybe mid-rollback): finish the rollback without events
        try:
            await rollback_quietly(site, created, undo)
        finally:
            journal_left(site, plan, undo)
        raise
    finally:
        if created.objects or ledger.replaced:
            site.note_change()
    attributes = await _attach(site, plan, context, ids.images, done, total) if attach and plan.images else ()
    journal = DownloadJournal.of(site.settings)
    for left in plan.cleanup.adopted:  # part of a complete download now
        journal.forget(left.kind, left.id)
    result = DownloadResult(plan.name, plan.app.id, tuple(zip(ids.images, (i.name for i in plan.images), strict=True)),
                            tuple(ids.templates), ids.service, tuple(reused), waited_for, attributes,
                            tuple((r["kind"], r["id"]) for r in ledger.replaced), tuple(ledger.cleaned))
    context.report(Progress("attributes" if attach else "download", total, total,
                            f"{plan.name}: {len(result.image_ids)} image(s) READY"
                            + (", attributes in place" if attach else ""),
                            ProgressState.DONE, {"download": result.as_json()}, result))
    return result


async def _replace_orphans(site: "SiteConnection", plan: DownloadPlan, context: RunContext, steps: Sequence[str],
                           replaced: list[dict[str, Any]]) -> int:
    """Delete the orphans of an earlier download the plan replaces; the steps done."""
    done, total = 0, len(steps)
    if plan.service is not None and plan.service.replaces is not None:
        gone = plan.service.replaces
        step = steps[done]
        context.report(Progress(step, done, total, f"deleting service template {gone.id}, an orphan an earlier "
                                "download left (the VM templates its roles point at are gone)"))
        await delete_orphan_service(site, gone, step, replaced)
        done += 1
        context.report(Progress(step, done, total, f"service template {gone.id} deleted", ProgressState.DONE,
                                {"service_template_id": gone.id}))
    for template in plan.templates:
        if template.replaces is not None:
            step = steps[done]
            context.report(Progress(step, done, total, f"deleting VM template {template.replaces.id}, an orphan "
                                    "an earlier download left (its disk images are gone)"))
            await delete_orphan(site, template.replaces, step, replaced)
            done += 1
            context.report(Progress(step, done, total, f"VM template {template.replaces.id} deleted",
                                    ProgressState.DONE, {"template_id": template.replaces.id}))
    return done


async def _create(site: "SiteConnection", plan: DownloadPlan, context: RunContext, ids: "_Ids", steps: Sequence[str],
                  done: int, reused: list[str], created: Created) -> int:
    """Create (or reuse) each object in turn, keeping what was created; the steps done."""
    total = len(steps)
    for creation in _creations(site, plan, ids):
        step = steps[done]
        key = _DATA_KEYS[creation.kind]
        if creation.existing_id is not None:
            reused.append(f"{creation.kind} {creation.existing_id}")
            done += 1
            context.report(Progress(step, done, total, f"exists ({creation.kind} {creation.existing_id}), reused",
                                    ProgressState.SKIPPED, {key: creation.existing_id}))
            continue
        _check_cancel(context)
        context.report(Progress(step, done, total, f"creating the {creation.kind}"))
        new_id = await _allocate(creation.allocate(), step)
        creation.store(new_id)
        created.objects.append((creation.kind, new_id, creation.name))
        done += 1
        context.report(Progress(step, done, total, f"{creation.kind} {new_id} created", ProgressState.DONE,
                                {key: new_id}))
    return done


async def _attach(site: "SiteConnection", plan: DownloadPlan, context: RunContext, image_ids: Sequence[int],
                  done: int, total: int) -> tuple[ImageResult, ...]:
    """Attach the marketplace attributes to every image (operation 1), as steps of this download."""
    attach_plan = await plan_attach(site, plan.tag, image_ids)
    steps = context.relay(lambda event: None if event.step == "attributes" else event)  # the download sums up
    attached = await attach_attributes(site, attach_plan, steps, offset=done, total=total)
    return attached.images


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
        return await download_appliance(site, plan, context, step_timeout=self.step_timeout,
                                        poll_interval=self.poll_interval, attach=self.attach,
                                        ledger=context.keep(DownloadLedger()))

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
            out["replaced"] = [{"kind": kind, "id": i, "reason": ORPHAN_REASONS[kind],
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


def _check_cancel(context: RunContext) -> None:
    if context.cancel.is_set():
        raise DownloadCancelled("Download cancelled", "The operator cancelled the download.")


async def _allocate(call: Awaitable[int], step: str) -> int:
    try:
        return int(await call)
    except SiteError as error:
        raise SiteError(f"{step} failed: {error.title}", error.detail, retryable=error.retryable,
                        code=error.code) from None




async def _follow_images(site: "SiteConnection", plan: DownloadPlan, context: RunContext, image_ids: Sequence[int],
                         steps: Sequence[str], done: int, total: int, step_timeout: float, poll_interval: float,
                         heartbeat: float = timing.PROFILE.heartbeat) -> None:
    """Poll every image until READY; ERROR or a timeout stops the run. Every `heartbeat` seconds
    the first image still copying says so, with the time waited and the timeout (a large disk
    copies for minutes, and its last event was LOCKED)."""
    start = timing.monotonic()
    beat_at = heartbeat  # seconds into the wait
    first = done
    pending = {image_ids[n]: (steps[first + n], image.name) for n, image in enumerate(plan.images)}
    last_state: dict[int, int] = {}
    finished = 0
    while pending:
        _check_cancel(context)
        ids = list(pending)
        infos: tuple[ImageInfo, ...] = await gather(*(site.cloud.image_info(i) for i in ids))
        elapsed = timing.monotonic() - start
        for info in infos:
            step, name = pending[info.id]
            if info.state in (ImageState.READY, ImageState.USED):
                finished += 1
                del pending[info.id]
                context.report(Progress(step, first + finished, total, f"image {info.id} READY", ProgressState.DONE,
                               {"image_id": info.id, "state": "READY", "elapsed": round(elapsed, 1)}))
            elif info.state == ImageState.ERROR:
                reason = error_reason(info.error) or "the platform gave no reason (TEMPLATE/ERROR is empty)"
                context.report(Progress(step, first + finished, total, f"image {info.id} ERROR: {reason}", ProgressState.FAILED,
                               {"image_id": info.id, "state": "ERROR", "error": reason}))
                raise SiteError(f"Image {info.id} ({name}) ended in ERROR", reason)
            elif last_state.get(info.id) != info.state:
                last_state[info.id] = info.state
                word = image_state_names(info.state)[0]
                context.report(Progress(step, first + finished, total, f"image {info.id} {word}", ProgressState.RUNNING,
                               {"image_id": info.id, "state": word}))
        if pending and beat_at <= elapsed <= step_timeout:
            beat_at = elapsed + heartbeat
            image_id, (step, _) = next(iter(pending.items()))
            word = image_state_names(last_state.get(image_id, ImageState.LOCKED))[0]
            others = f"; {len(pending) - 1} more not READY" if len(pending) > 1 else ""
            context.report(Progress(step, first + finished, total,
                                    f"image {image_id} {word}: copying{others} "
                                    f"({elapsed:.0f} s of at most {step_timeout:g} s)", ProgressState.RUNNING,
                                    {"image_id": image_id, "state": word, "elapsed": round(elapsed, 1),
                                     "pending": len(pending)}))
        if pending and elapsed > step_timeout:
            stuck = ", ".join(f"image {i} ({name})" for i, (_, name) in pending.items())
            raise SiteError(f"Download timed out after {step_timeout:g} s",
                            f"{stuck} still not READY. The datastore may be slow or stuck: check `oneimage show`, "
                            "then retry with a longer timeout.", retryable=True)
        if pending:
            await context.pause(poll_interval)
