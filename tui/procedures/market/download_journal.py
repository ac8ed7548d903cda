"""The download journal: the objects a download's rollback could not delete, for the next download to clean.

A download that fails (or is cancelled) deletes what it created; when that rollback cannot delete
an object (the session expired, the site stopped answering, the rollback was cut short) the object
is written here, before the command reports its failure: its kind, ID, name, the appliance it was
downloaded from and why it stayed. The next download (of any appliance, by any command: `market
download`, `setup run`, `site enable`, `market upgrades`; `download_planning.plan_download` reads the
journal, `download.download_appliance` cleans) deletes each recorded object that still
exists and that nothing uses, and forgets it (an object found gone is
forgotten silently, one now in use is forgotten with a note: it is the operator's now). So no
object a rollback left is left without a record that tells the operator, and removes it.

One file per object, `<state_dir>/downloads/<endpoint>-<hash>/<kind>-<id>.json` (the endpoint
named as the site record names it), written mode 0600 in a 0700 directory, atomically; read
within bounds (as `tui.procedures.hosts.move_journal`). It is not the audit log: the run's one audit
record names what was left too.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.domain.bounded import BoundedInputError, load_json, read_text_file
from tui.domain.documents import SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT
from tui.domain.error_codes import NO_EXISTS
from tui.domain.images import image_state_names
from tui.domain.one_states import ImageState
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.market.attributes import role_template_ids
from tui.procedures.site_record import site_record_path, write_private_atomically
from tui.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: an entry is a few hundred bytes; anything far larger is not one
MAX_ENTRY_BYTES = 64 * 1024
#: the kinds a download creates (`tui.procedures.market.download`), as file-name prefixes
KIND_FILES = {"image": "image", "VM template": "template", "service template": "service-template"}
#: the platform CLI command that deletes each kind
REMOVE_COMMANDS = {"image": "oneimage delete", "VM template": "onetemplate delete",
                   "service template": "oneflow-template delete"}


@dataclass(frozen=True)
class Leftover:
    """An object a download's rollback could not delete."""

    kind: str
    id: int
    name: str
    #: the appliance the download was of ("Traffic Generator v0.9.1-...")
    appliance: str
    why: str
    #: UTC time it was recorded
    recorded: str = ""

    @property
    def label(self) -> str:
        return f"{self.kind} {self.id} {self.name!r}"

    @property
    def delete_cli(self) -> str:
        return f"{REMOVE_COMMANDS[self.kind]} {self.id}"

    def as_json(self) -> dict[str, Any]:
        return asdict(self) | {"cli": self.delete_cli}


def _entry(value: Any) -> Leftover:
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    if value.get("kind") not in KIND_FILES or not isinstance(value.get("id"), int):
        raise ValueError("kind or id is not one a download creates")
    return Leftover(value["kind"], value["id"], str(value.get("name") or ""), str(value.get("appliance") or ""),
                    str(value.get("why") or ""), str(value.get("recorded") or ""))


class DownloadJournal:
    """The journal of one cloud endpoint (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def of(cls, settings: Settings) -> "DownloadJournal":
        return cls(Path(settings.state_dir) / "downloads" / site_record_path(settings).stem)

    def path(self, kind: str, object_id: int) -> Path:
        return self.directory / f"{KIND_FILES[kind]}-{int(object_id)}.json"

    def record(self, leftover: Leftover) -> None:
        """Write one object left by a rollback (raises `OSError` when the state dir refuses it)."""
        stamped = asdict(leftover) | {"recorded": leftover.recorded
                                      or datetime.now(timezone.utc).isoformat(timespec="seconds")}
        write_private_atomically(self.path(leftover.kind, leftover.id), json.dumps(stamped, indent=2) + "\n")

    def forget(self, kind: str, object_id: int) -> None:
        path = self.path(kind, object_id)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise SiteError(f"The download journal keeps {kind} {object_id}",
                            f"{path}: {exc.strerror or exc}. Remove the file: the next download would try to "
                            f"clean {kind} {object_id} again.") from None

    def entries(self) -> tuple[Leftover, ...]:
        """Every recorded object, in file-name order; an unreadable entry is an error naming the file."""
        try:
            paths = sorted(p for p in self.directory.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
        except FileNotFoundError:
            return ()
        except OSError as exc:
            raise SiteError("The download journal cannot be read",
                            f"{self.directory}: {exc.strerror or exc}.") from None
        out = []
        for path in paths:
            try:
                out.append(_entry(load_json(read_text_file(path, "a download journal entry", MAX_ENTRY_BYTES),
                                            "a download journal entry")))
            except FileNotFoundError:
                continue  # forgotten meanwhile (another download cleaned it)
            except (BoundedInputError, OSError, ValueError) as exc:
                why = exc.message if isinstance(exc, BoundedInputError) else (
                    exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
                raise SiteError("The download journal cannot be read",
                                f"{path}: {why}. It names an object a failed download left in the cloud; look at "
                                "the object it names, remove it if it is a leftover, then move the file away.") from None
        return tuple(out)


@dataclass(frozen=True)
class Cleanup:
    """What the next download does with the journal: the objects it deletes first (service
    templates, then VM templates, then images), those it forgets because they are gone, those it
    forgets because something now uses them (with what), and those it keeps for a later download."""

    clean: tuple[Leftover, ...] = ()
    gone: tuple[Leftover, ...] = ()
    in_use: tuple[tuple[Leftover, str], ...] = ()
    kept: tuple[tuple[Leftover, str], ...] = ()
    #: objects this download reuses (an earlier run of it left them in a good state): forgotten once it completes
    adopted: tuple[Leftover, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.clean or self.gone or self.in_use or self.kept or self.adopted)

    def adopting(self, reused: set[tuple[str, int]]) -> "Cleanup":
        """The same, with the objects a download reuses moved from `clean` to `adopted`."""
        adopted = tuple(e for e in self.clean if (e.kind, e.id) in reused)
        return replace(self, clean=tuple(e for e in self.clean if e not in adopted), adopted=self.adopted + adopted)

    def as_json(self) -> dict[str, Any]:
        return {"clean": [e.as_json() for e in self.clean], "adopted": [e.as_json() for e in self.adopted],
                "gone": [e.as_json() for e in self.gone],
                "in_use": [e.as_json() | {"note": n} for e, n in self.in_use],
                "kept": [e.as_json() | {"note": n} for e, n in self.kept]}


_ORDER = ("service template", "VM template", "image")


async def plan_cleanup(site: "SiteConnection", journal: DownloadJournal) -> Cleanup:
    """Read each recorded object back and decide (nothing is changed). An empty journal reads
    nothing from the cloud. An object is in use when a VM or service was instantiated from it, or
    an object not being cleaned points at it (a service template's role at a VM template, a VM
    template's DISK at an image); an image is cleaned in READY or ERROR only (LOCKED: it is kept
    for a later download, once the datastore is done with it)."""
    entries = sorted(journal.entries(), key=lambda e: (_ORDER.index(e.kind), e.id))
    if not entries:
        return Cleanup()
    templates, documents, services, vms = await gather(
        site.cloud.list_templates(), site.cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT),
        site.cloud.list_documents(SERVICE_DOCUMENT), site.cloud.list_vms_detail())
    present = {"VM template": {t.id for t in templates}, "service template": {d.id for d in documents}}
    clean: list[Leftover] = []
    gone: list[Leftover] = []
    in_use: list[tuple[Leftover, str]] = []
    kept: list[tuple[Leftover, str]] = []

    def cleaned(kind: str) -> set[int]:
        return {e.id for e in clean if e.kind == kind}

    for entry in entries:
        note = ""
        if entry.kind == "service template":
            if entry.id not in present[entry.kind]:
                gone.append(entry)
                continue
            # OneFlow's instantiate copies the template's name and roles into the service (as
            # download_plan's `_check_service_orphan_unused` reads it)
            doc = next(d for d in documents if d.id == entry.id)
            roles = set(role_template_ids(doc.body or {}))
            note = next((f"service {s.id} {s.name!r} may have been instantiated from it" for s in services
                         if s.name == doc.name or roles & set(role_template_ids(s.body or {}))), "")
        elif entry.kind == "VM template":
            if entry.id not in present[entry.kind]:
                gone.append(entry)
                continue
            note = next((f"service template {d.id} {d.name!r} uses it" for d in documents
                         if entry.id in role_template_ids(d.body or {}) and d.id not in cleaned("service template")),
                        "") or next((f"VM {vm.summary.id} was instantiated from it" for vm in vms
                                     if vm.template.get("TEMPLATE_ID") == str(entry.id)), "")
        else:
            try:
                image = await site.cloud.image_info(entry.id)
            except SiteError as error:
                if error.code != NO_EXISTS:
                    raise
                gone.append(entry)
                continue
            note = next((f"VM template {t.id} {t.name!r} uses it" for t in templates
                         if entry.id in t.image_ids and t.id not in cleaned("VM template")), "") \
                or (f"VM(s) {', '.join(map(str, image.vm_ids))} use it" if image.running_vms else "")
            if not note and image.state not in (ImageState.READY, ImageState.ERROR):
                kept.append((entry, f"it is {image_state_names(image.state)[0]}; a later download cleans it once "
                                    "it is READY or ERROR"))
                continue
        if note:
            in_use.append((entry, f"{note}: it is left as it is and no longer recorded as a leftover"))
        else:
            clean.append(entry)
    return Cleanup(tuple(clean), tuple(gone), tuple(in_use), tuple(kept))
