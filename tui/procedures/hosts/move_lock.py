"""Two moves of the same VM at once: the second is refused at once, naming the first.

A move undeploys a VM, changes its CPU model and deploys it; two of them on one VM (two consoles,
two `setup run`, a console and the CLI) act against each other: the second undeploys what the
first deploys, or waits for an UNDEPLOYED the first has already left, until its own time limit.
Every move (and put-back) of one VM in one cloud therefore holds a lock (`fcntl.flock`,
tui.adapters.file_lock) on `<state dir>/locks/move-<digest>.lock`, the digest of the XML-RPC
endpoint and the VM id, from before its first change to its end. Unlike a download, the second
does not wait: a VM in the middle of a move is not a VM to plan against, and the first may take
its whole time limit. It is refused before it changes anything, naming the holder (process,
command, since when); the plan refuses too (`sitetk hosts move --all-flagged` leaves that VM out
and says why).

A move killed outright (SIGKILL, an out-of-memory kill, a power cut) cannot release its lock
itself: the kernel does when the process ends, so the next move takes it at once. What the killed
holder wrote in the lock file stays there (a normal release empties it): the next move recognises
it as stale, says so (whose lock, since when) and records it in its audit entry; the move journal
still holds the VM's origin, so that move resumes from the VM's state or `sitetk hosts redeploy`
puts it back. The lock lives under the console's state dir: two operators under different
accounts do not share it.
"""

from __future__ import annotations

import hashlib
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from tui import timing
from tui.adapters.file_lock import Holder, LockBusy, hold, probe
from tui.errors import SiteError

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection



def move_lock_file(site: "SiteConnection", vm_id: int) -> Path:
    key = f"{site.settings.xmlrpc_url}|vm|{int(vm_id)}".encode()
    return Path(site.settings.state_dir) / "locks" / f"move-{hashlib.sha256(key).hexdigest()[:16]}.lock"


class MoveBusy(SiteError):
    """Another process is moving this VM; nothing was changed."""

    def __init__(self, vm_label: str, holder: Holder, lock_file: Path) -> None:
        self.holder = holder
        super().__init__(
            f"{vm_label} is being moved by {holder.describe()}",
            f"Two moves of one VM at once would undeploy and deploy it against each other. Nothing was changed. "
            f"Let that move end (its console or terminal shows its progress), then look at the VM (`sitetk hosts "
            f"list`) and run this again if it still needs to move: a move resumes from the VM's state. Lock file "
            f"{lock_file}.", retryable=True)


def busy_moving(site: "SiteConnection", vm_id: int, vm_label: str) -> None:
    """Raise `MoveBusy` when another process holds this VM's move lock (a plan's check; the move
    itself takes the lock with `MoveLock`)."""
    lock_file = move_lock_file(site, vm_id)
    try:
        holder = probe(lock_file)
    except OSError:
        return  # the move itself reports a lock file it cannot open
    if holder is not None:
        raise MoveBusy(vm_label, holder, lock_file)


class MoveLock:
    """The lock of the moves of one VM: `acquire()` (raises `MoveBusy`), then `release()` in a
    `finally`; `stale` is the holder a killed move left behind, if any."""

    def __init__(self, site: "SiteConnection", vm_id: int, vm_label: str) -> None:
        self.lock_file = move_lock_file(site, vm_id)
        self.vm_label = vm_label
        self.stale: Holder | None = None
        self._held: AbstractAsyncContextManager[None] | None = None

    async def acquire(self) -> None:
        left: list[Holder] = []
        try:
            self.lock_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            held = hold(self.lock_file, timing.PROFILE.move_lock_grace, left=left)
            await held.__aenter__()
        except LockBusy as busy:
            raise MoveBusy(self.vm_label, busy.holder, self.lock_file) from None
        except OSError as exc:
            raise SiteError(f"Cannot lock the move of {self.vm_label}",
                            f"{self.lock_file}: {exc.strerror or exc}. Nothing was changed.") from None
        self._held = held
        self.stale = left[0] if left else None

    def stale_text(self) -> str:
        """What the move says about a lock a killed move left ("" when none)."""
        if self.stale is None:
            return ""
        return (f"a lock left by {self.stale.describe()}, which ended without releasing it (killed), was stale: "
                "taken over")

    async def release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            await held.__aexit__(None, None, None)
