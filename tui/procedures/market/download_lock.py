"""Two downloads of the same appliance at once: the second waits for the first, then reuses.

Without a lock, two processes that plan the same export before either has created anything both
create: the second's image allocation is refused (the platform's NAME is unique per owner) or,
for objects whose names the platform does not keep unique, a second copy is made. Every download
of one marketplace app into one cloud therefore holds a lock (`fcntl.flock`, tui.adapters.file_lock)
on `<state dir>/locks/download-<digest>.lock`, the digest of the XML-RPC endpoint and the app id,
from its first platform change to its end (rollback included). The second download waits for it
(cancellable, up to its own step timeout), says whom it waited for, then plans again: what the
first created is found by name and origin (FROM_APP) and reused, never created twice. A wait that
runs out fails naming the holder and changing nothing. The lock lives under the console's state
dir: two operators under different accounts do not share it; for them the platform's unique
image and VM template names still refuse the second copy (the loser's rollback says so).
"""

from __future__ import annotations

import asyncio
import hashlib
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from tui import timing
from tui.adapters.file_lock import Holder, LockBusy, hold
from tui.errors import SiteError

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection



def download_lock_file(site: "SiteConnection", app_id: int) -> Path:
    key = f"{site.settings.xmlrpc_url}|{int(app_id)}".encode()
    return Path(site.settings.state_dir) / "locks" / f"download-{hashlib.sha256(key).hexdigest()[:16]}.lock"


class DownloadLock:
    """The lock of the downloads of one app (see the module docstring): `try_acquire()` once, and
    when it names a holder, report the wait and `acquire()`; `release()` in a `finally`."""

    def __init__(self, site: "SiteConnection", app_id: int, what: str) -> None:
        self.lock_file = download_lock_file(site, app_id)
        self.what = what
        self.holder: Holder | None = None
        self.waited = 0.0
        self._held: AbstractAsyncContextManager[None] | None = None

    async def _take(self, timeout: float) -> None:
        held = hold(self.lock_file, timeout)
        try:
            await held.__aenter__()
        except OSError as exc:
            raise SiteError(f"Cannot lock the download of {self.what}",
                            f"{self.lock_file}: {exc.strerror or exc}. Nothing was changed.") from None
        self._held = held

    async def try_acquire(self) -> Holder | None:
        """Take the lock if it is free (None), else the holder as it described itself."""
        try:
            self.lock_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            await self._take(0)
        except LockBusy as busy:
            self.holder = busy.holder
            return busy.holder
        except OSError as exc:
            raise SiteError(f"Cannot lock the download of {self.what}",
                            f"{self.lock_file.parent}: {exc.strerror or exc}. Nothing was changed.") from None
        return None

    async def acquire(self, timeout: float, cancel: asyncio.Event | None = None) -> None:
        """Wait for the holder to finish: up to `timeout` seconds, stopping early on `cancel`."""
        started = timing.monotonic()
        while self._held is None:
            if cancel is not None and cancel.is_set():
                raise SiteError("Download cancelled", f"Cancelled while waiting for {self.describe_holder()} to "
                                f"finish downloading {self.what}. Nothing had been created.")
            try:
                await self._take(min(timing.PROFILE.lock_slice, max(0.0, timeout - (timing.monotonic() - started))))
            except LockBusy as busy:
                self.holder = busy.holder if busy.holder.pid is not None else self.holder
                self.waited = timing.monotonic() - started
                if self.waited >= timeout:
                    raise SiteError(f"Another download of {self.what} is still running",
                                    f"{self.describe_holder()} has been downloading it; waited {self.waited:.0f} s "
                                    f"(lock file {self.lock_file}). Nothing was changed: run this again once it "
                                    "has finished; it will reuse what that download created.",
                                    retryable=True) from None
        self.waited = timing.monotonic() - started

    def describe_holder(self) -> str:
        return self.holder.describe() if self.holder is not None else "another process"

    async def release(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            await held.__aexit__(None, None, None)
