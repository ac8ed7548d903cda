"""The move journal: where a VM was before a move that has not finished, for its put-back.

A move writes its VM's origin (host, CPU model) here before its first change and removes it when
the move ends cleanly (the VM runs where the move, or a put-back, sent it). Whatever stops a move
in between (a failure, a cancel, a dropped session, SIGKILL) leaves the entry, so the next plan of
that VM knows where it came from (`plan_move` keeps that origin; `plan_redeploy` puts the VM back
with that CPU model) and no VM is left undeployed without a record of where it belongs.

One file per VM, `<state_dir>/moves/<endpoint>-<hash>/vm-<id>.json` (the endpoint named as the
site record names it), written mode 0600 in a 0700 directory, atomically; read within bounds. It
is not the audit log: that holds one record per run, written by the operation pipeline.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tui.domain.bounded import BoundedInputError, load_json, read_text_file
from tui.errors import SiteError
from tui.procedures.site_record import site_record_path, write_private_atomically
from tui.settings import Settings

#: a journal entry is a few hundred bytes; anything far larger is not one
MAX_ENTRY_BYTES = 64 * 1024


@dataclass(frozen=True)
class MoveOrigin:
    """Where a VM was (host, CPU model) when a move that has not finished started."""

    vm_id: int
    host_id: int | None
    host_name: str
    cpu_model: str
    target_host_id: int
    redeploy: bool = False
    #: UTC time the move started
    started: str = ""

    def as_tuple(self) -> tuple[int | None, str, str]:
        return self.host_id, self.host_name, self.cpu_model


def _entry(value: Any, path: Path) -> MoveOrigin:
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    host_id, target = value.get("host_id"), value.get("target_host_id")
    if not isinstance(value.get("vm_id"), int) or not (host_id is None or isinstance(host_id, int)) \
            or not isinstance(target, int):
        raise ValueError("vm_id, host_id or target_host_id is not a number")
    return MoveOrigin(value["vm_id"], host_id, str(value.get("host_name") or ""), str(value.get("cpu_model") or ""),
                      target, bool(value.get("redeploy")), str(value.get("started") or ""))


class MoveJournal:
    """The journal of one cloud endpoint (see the module docstring)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def of(cls, settings: Settings) -> "MoveJournal":
        return cls(Path(settings.state_dir) / "moves" / site_record_path(settings).stem)

    def path(self, vm_id: int) -> Path:
        return self.directory / f"vm-{int(vm_id)}.json"

    def begin(self, origin: MoveOrigin) -> None:
        """Record where the VM is before the move's first change (an entry already there, from a
        move that did not finish, is kept: it names where the VM was before that one)."""
        if self.origin(origin.vm_id) is not None:
            return
        stamped = asdict(origin) | {"started": origin.started or datetime.now(timezone.utc).isoformat(timespec="seconds")}
        try:
            write_private_atomically(self.path(origin.vm_id), json.dumps(stamped, indent=2) + "\n")
        except OSError as exc:
            raise SiteError(f"The move of VM {origin.vm_id} cannot be journalled",
                            f"{self.path(origin.vm_id)}: {exc.strerror or exc}. Nothing was changed; fix the state "
                            "directory (space, permissions) and run the move again.") from None

    def end(self, vm_id: int) -> None:
        """The move ended cleanly: forget the VM's origin."""
        try:
            self.path(vm_id).unlink(missing_ok=True)
        except OSError as exc:
            raise SiteError(f"The move of VM {vm_id} finished but its journal entry stays",
                            f"{self.path(vm_id)}: {exc.strerror or exc}. Remove the file: a later put-back would "
                            "take the origin it names for the VM's.") from None

    def origin(self, vm_id: int) -> MoveOrigin | None:
        """Where the VM was before its unfinished move; None when its last move finished or there
        was none. An unreadable entry is an error naming the file (never a guessed origin)."""
        path = self.path(vm_id)
        try:
            text = read_text_file(path, "a move journal entry", MAX_ENTRY_BYTES)
            found = _entry(load_json(text, "a move journal entry"), path)
        except FileNotFoundError:
            return None
        except (BoundedInputError, OSError, ValueError) as exc:
            why = exc.message if isinstance(exc, BoundedInputError) else (
                exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
            raise SiteError(f"The move journal of VM {vm_id} cannot be read",
                            f"{path}: {why}. It names where the VM was before a move that did not finish; move "
                            f"the file away once you know where VM {vm_id} belongs (`onevm show {vm_id}`).") from None
        if found.vm_id != vm_id:
            raise SiteError(f"The move journal of VM {vm_id} names VM {found.vm_id}",
                            f"{path} was not written for this VM: move it away.")
        return found
