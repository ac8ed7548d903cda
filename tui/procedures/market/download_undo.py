"""What a download undoes and cleans: its rollback, the orphans it replaces, the journal's leftovers.

A download that fails, is cancelled or stopped deletes what it created (service template, then VM
templates, then images), as the platform's CLI rolls back (`rollback`; without events when its
task is cancelled: `rollback_quietly`). A delete whose outcome is unknown (the site down, the
answer lost) is settled by reading the object back (`delete_settled`). What the rollback could not
delete is named with the command that removes it and recorded in the download journal
(`journal_left`), and the next download deletes it first (`clean_leftovers`). The orphans an
earlier download left (a VM template whose images are gone, a service template whose VM
templates are gone) are deleted and replaced (`delete_orphan`, `delete_orphan_service`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from tui import timing
from tui.domain.error_codes import NO_EXISTS
from tui.domain.one_states import ImageState
from tui.errors import OutcomeUnknown, SiteError
from tui.procedures.market.download_journal import REMOVE_COMMANDS, Cleanup, DownloadJournal, Leftover
from tui.procedures.market.download_plan import DownloadPlan, OrphanService, OrphanTemplate
from tui.procedures.operation import OperationCancelled, RunContext
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

IMAGE, VM_TEMPLATE, SERVICE_TEMPLATE = "image", "VM template", "service template"


class DownloadCancelled(OperationCancelled):
    """The operator cancelled the download; what it had created was deleted."""


@dataclass
class Created:
    """What this run created, in creation order: (kind, id, name), for the rollback."""

    objects: list[tuple[str, int, str]] = field(default_factory=list)

    def ids(self, kind: str) -> list[int]:
        return [object_id for k, object_id, _ in self.objects if k == kind]

    def as_json(self) -> dict[str, Any]:
        return {"images": self.ids(IMAGE), "templates": self.ids(VM_TEMPLATE),
                "service_templates": self.ids(SERVICE_TEMPLATE)}


IMAGE, VM_TEMPLATE, SERVICE_TEMPLATE = "image", "VM template", "service template"


async def delete_orphan(site: "SiteConnection", orphan: OrphanTemplate, step: str,
                        replaced: list[dict[str, Any]]) -> None:
    """Delete the orphan a VM template of the plan replaces (gone already counts as done), and
    add it to `replaced`."""
    try:
        await delete_settled(site.cloud.template_delete, partial(is_gone, site, VM_TEMPLATE), orphan.id)
    except SiteError as error:
        raise SiteError(f"{step} failed: {error.title}", error.detail, retryable=error.retryable,
                        code=error.code) from None
    details = {"kind": VM_TEMPLATE, "id": orphan.id, "name": orphan.name,
               "missing_images": list(orphan.missing_images), "reason": ORPHAN_REASONS[VM_TEMPLATE],
               "cli": orphan.delete_cli}
    replaced.append(details)


async def delete_orphan_service(site: "SiteConnection", orphan: OrphanService, step: str,
                                replaced: list[dict[str, Any]]) -> None:
    """Delete the orphan the plan's service template replaces, as `oneflow-template delete` does
    (`DELETE /service_template/<id>` with no `delete_type`: the document only, oneflow-server.rb
    release-7.4.0 641-659, service_template.rb `delete` 336-364); gone already counts as done."""
    try:
        await delete_settled(partial(flow_template_delete, site), partial(is_gone, site, SERVICE_TEMPLATE), orphan.id)
    except SiteError as error:
        raise SiteError(f"{step} failed: {error.title}", error.detail, retryable=error.retryable,
                        code=error.code) from None
    replaced.append({"kind": SERVICE_TEMPLATE, "id": orphan.id, "name": orphan.name,
                            "missing_templates": list(orphan.missing_templates),
                            "reason": ORPHAN_REASONS[SERVICE_TEMPLATE], "cli": orphan.delete_cli})


async def flow_template_delete(site: "SiteConnection", document_id: int) -> None:
    """OneFlow's delete of a service template; not found (404) is gone."""
    try:
        await site.flow.delete_service_template(document_id)
    except SiteError as error:
        if error.code != HTTP_NOT_FOUND:
            raise



#: why a run deleted an orphan of an earlier download, by kind
ORPHAN_REASONS = {VM_TEMPLATE: "orphan of an earlier download (its disk images are gone), replaced",
                   SERVICE_TEMPLATE: "orphan of an earlier download (its roles' VM templates are gone), replaced"}
HTTP_NOT_FOUND = 404


@dataclass
class Undo:
    """What a rollback actually did: the objects it deleted, and those left with why."""

    deleted: list[tuple[str, int, str]] = field(default_factory=list)
    left: list[tuple[str, int, str, str]] = field(default_factory=list)
    #: whether what is left is in the download journal (`journal_left`)
    journalled: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"deleted": [{"kind": k, "id": i, "name": n} for k, i, n in self.deleted],
                "left": [{"kind": k, "id": i, "name": n, "reason": r, "command": f"{REMOVE_COMMANDS[k]} {i}"}
                         for k, i, n, r in self.left]}

    def summary(self, created: Created) -> str:
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




async def delete_settled(call: Callable[[int], Awaitable[Any]], gone: Callable[[int], Awaitable[bool]],
                          object_id: int) -> None:
    """`call(object_id)`, and when its outcome is unknown (the site down, the answer lost) the
    object read back (`gone`) once the site answers: gone means deleted, still there means the
    delete is sent again. A refusal that will not change is raised at once; an outcome still
    unknown after `timing.PROFILE.settle_timeout` (its pauses `settle_pauses`) is raised as it is (the object is then named as left)."""
    deadline = timing.deadline_after(timing.PROFILE.settle_timeout)
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
            pauses = timing.PROFILE.settle_pauses
            pause = pauses[min(tries, len(pauses) - 1)]
            tries += 1
            if timing.monotonic() + pause > deadline:
                raise last
            await timing.sleep(pause)
            try:
                if await gone(object_id):
                    return
                break  # still there: the delete did not happen, send it again
            except SiteError as error:
                if not error.retryable:
                    raise last from None


async def _delete_one(site: "SiteConnection", undo: Undo, kind: str, object_id: int, name: str,
                      call: Callable[[int], Awaitable[Any]]) -> str | None:
    """Delete one object this run created; returns why it is left (None: deleted, or found gone)."""
    try:
        await delete_settled(call, partial(is_gone, site, kind), object_id)
    except SiteError as error:
        reason = f"{error.title}: {error.detail}" if error.detail else error.title
        undo.left.append((kind, object_id, name, reason))
        return reason
    undo.deleted.append((kind, object_id, name))
    return None


async def rollback(site: "SiteConnection", created: Created, undo: Undo, context: RunContext, done: int,
                   total: int) -> None:
    """Delete what this run created, newest kind first; each deletion is an event."""
    for kind, object_id, name, call in _deletions(site, created):
        reason = await _delete_one(site, undo, kind, object_id, name, call)
        step = f"rollback: delete {kind} {object_id}"
        if reason is not None:
            context.report(Progress(step, done, total, f"could not delete {name!r}: {reason}; "
                           f"remove it with `{REMOVE_COMMANDS[kind]} {object_id}`", ProgressState.FAILED,
                           {"kind": kind, "id": object_id}))
        else:
            context.report(Progress(step, done, total, f"deleted {name!r}", ProgressState.DONE, {"kind": kind, "id": object_id}))


async def rollback_quietly(site: "SiteConnection", created: Created, undo: Undo) -> None:
    for kind, object_id, name, call in _deletions(site, created):
        if (kind, object_id, name) in undo.deleted:
            continue
        undo.left = [entry for entry in undo.left if entry[:2] != (kind, object_id)]
        try:
            await _delete_one(site, undo, kind, object_id, name, call)
        except asyncio.CancelledError:
            undo.left.append((kind, object_id, name, "the rollback was cut short"))


_DELETE_ORDER = (SERVICE_TEMPLATE, VM_TEMPLATE, IMAGE)


async def is_gone(site: "SiteConnection", kind: str, object_id: int) -> bool:
    """Whether a deleted object is gone: not found, or (an image) in DELETE while its file is removed."""
    info = {IMAGE: site.cloud.image_info, VM_TEMPLATE: site.cloud.template_info,
            SERVICE_TEMPLATE: site.cloud.document_info}[kind]
    try:
        found = await info(object_id)
    except SiteError as error:
        if error.code == NO_EXISTS:
            return True
        raise
    return kind == IMAGE and getattr(found, "state", None) == ImageState.DELETE


def _deletions(site: "SiteConnection", created: Created) -> list[tuple[str, int, str, Any]]:
    """What to delete, newest kind first (the service template, its VM templates, their images)."""
    calls = {SERVICE_TEMPLATE: site.cloud.document_delete, VM_TEMPLATE: site.cloud.template_delete,
             IMAGE: site.cloud.image_delete}
    return [(kind, object_id, name, calls[kind]) for order in _DELETE_ORDER
            for kind, object_id, name in reversed(created.objects) if kind == order]


def journal_left(site: "SiteConnection", plan: DownloadPlan, undo: Undo) -> None:
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


async def clean_leftovers(site: "SiteConnection", cleanup: Cleanup, context: RunContext, total: int,
                          cleaned: list[dict[str, Any]]) -> None:
    """Delete what the download journal names and `plan_cleanup` found unused (service templates,
    VM templates, images), forgetting each; forget the gone ones silently and the ones now in use
    with a note. A delete that fails stops the run before anything is created (the entry stays)."""
    journal = DownloadJournal.of(site.settings)
    for left in cleanup.gone:
        journal.forget(left.kind, left.id)
    for left, note in cleanup.in_use:
        journal.forget(left.kind, left.id)
        context.report(Progress(f"leftover {left.kind} {left.id}", 0, total, f"{left.label} no longer recorded as a "
                       f"leftover: {note}", ProgressState.SKIPPED, {"kind": left.kind, "id": left.id, "note": note}))
    calls: dict[str, Callable[[int], Awaitable[Any]]] = {SERVICE_TEMPLATE: partial(flow_template_delete, site), VM_TEMPLATE: site.cloud.template_delete,
             IMAGE: site.cloud.image_delete}
    for left in cleanup.clean:
        step = f"clean up {left.kind} {left.id}"
        context.report(Progress(step, 0, total, f"deleting {left.label}, left by a download of {left.appliance}"))
        try:
            await delete_settled(calls[left.kind], partial(is_gone, site, left.kind), left.id)
        except SiteError as error:
            raise SiteError(f"{left.label} cannot be deleted: {error.title}",
                            f"{error.detail} It is left by an earlier download of {left.appliance}, whose rollback "
                            f"could not delete it; nothing of this download was created. Remove it with "
                            f"`{left.delete_cli}`, or run the download again.".strip(),
                            retryable=error.retryable, code=error.code) from None
        journal.forget(left.kind, left.id)
        cleaned.append(left.as_json())
        site.note_change()
        context.report(Progress(step, 0, total, f"deleted {left.label}", ProgressState.DONE, {"kind": left.kind, "id": left.id,
                                                                         "cli": left.delete_cli}))


def rolled_back(error: SiteError, created: Created, undo: Undo) -> SiteError:
    detail = f"{error.detail} {undo.summary(created)}".strip()
    kind = DownloadCancelled if isinstance(error, DownloadCancelled) else SiteError
    return kind(error.title, detail, retryable=error.retryable, code=error.code)
