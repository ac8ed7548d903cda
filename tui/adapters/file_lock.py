"""An exclusive lock between processes: `fcntl.flock` on a lock file, with a deadline.

Two operators (two `sitetk` processes, or a console and a script) changing the same file or the
same working clone take the same lock file; the second waits (polling, so the wait is cancellable)
up to its deadline, then fails with `LockBusy`, which names the holder (pid, command, since when)
as the holder wrote it into the lock file. The kernel drops the lock when the holder's process
ends, however it ends (signal, crash), so a lock is never left behind; the lock file itself stays
(it holds nothing but the last holder's description, emptied on a normal release: a description
found in it by the next holder is what a killed holder left, which `hold(..., left=[])` reports). `probe` tells whether a
lock is held without taking it.

Nested holds of the same lock file by one task are allowed (a submit that also edits): the held
lock files travel in a context variable, so another asyncio task of the same process still waits.
"""

from __future__ import annotations

import contextvars
import fcntl
import json
import os
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator

from tui import timing

_HELD: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("sitetk_held_locks", default=frozenset())
_MAX_HOLDER_BYTES = 4096


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as the holder described itself (empty when it had not written yet)."""

    pid: int | None
    command: str
    since: str

    def describe(self) -> str:
        if self.pid is None:
            return "another process"
        what = f" ({self.command})" if self.command else ""
        when = f" since {self.since}" if self.since else ""
        return f"process {self.pid}{what}{when}"


class LockBusy(Exception):
    """The lock was still held by someone else when the deadline passed."""

    def __init__(self, lock_file: Path, holder: Holder, waited: float) -> None:
        super().__init__(f"{lock_file} is held by {holder.describe()}")
        self.lock_file = lock_file
        self.holder = holder
        self.waited = waited


def own_command() -> str:
    """This process as a holder shows it: the program and its sub-command words, never option
    values (argv can name files; secrets never reach argv, but nothing more than the verb is needed)."""
    words = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"]
    for word in sys.argv[1:4]:
        if word.startswith("-"):
            break
        words.append(word)
    return " ".join(words)[:200]


def read_holder(lock_file: Path) -> Holder:
    """The holder's description from the lock file (bounded read; anything unreadable: unknown)."""
    try:
        with open(lock_file, "rb") as handle:
            raw = handle.read(_MAX_HOLDER_BYTES)
        data = json.loads(raw.decode("utf-8", "replace")) if raw.strip() else {}
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    pid = data.get("pid")
    return Holder(pid if isinstance(pid, int) else None, str(data.get("command", ""))[:200], str(data.get("since", ""))[:40])


def probe(lock_file: Path) -> Holder | None:
    """Whether `lock_file` is held right now, without taking it for more than an instant and
    without writing: None when free (or missing), else the holder as it described itself."""
    try:
        fd = os.open(lock_file, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return read_holder(Path(lock_file))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _describe_self(fd: int) -> None:
    text = json.dumps({"pid": os.getpid(), "command": own_command(),
                       "since": time.strftime("%H:%M:%S UTC", time.gmtime())}).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, text, 0)


def _left_in(fd: int, lock_file: Path) -> Holder | None:
    """What the previous holder left in the lock file we now hold: a holder that ended normally
    emptied it, so a description still there is one that ended without (SIGKILL, an out-of-memory
    kill, a power cut); the kernel released its lock."""
    try:
        if os.fstat(fd).st_size == 0:
            return None
    except OSError:
        return None
    holder = read_holder(lock_file)
    return holder if holder.pid is not None and holder.pid != os.getpid() else None


@asynccontextmanager
async def hold(lock_file: Path, timeout: float, *, left: list[Holder] | None = None) -> AsyncIterator[None]:
    """Hold the exclusive lock on `lock_file` (created 0600 if missing) for the block; wait up to
    `timeout` seconds for it, then raise `LockBusy`. OSError when the lock file cannot be opened.
    `left` receives the holder a killed process left in the file (read once the lock is ours)."""
    key = str(Path(lock_file).absolute())
    held = _HELD.get()
    if key in held:
        yield
        return
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        started = timing.monotonic()
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = timing.monotonic() - started
                if waited >= timeout:
                    raise LockBusy(Path(lock_file), read_holder(Path(lock_file)), waited) from None
                await timing.sleep(timing.PROFILE.lock_poll)
        if left is not None and (stale := _left_in(fd, Path(lock_file))) is not None:
            left.append(stale)
        _describe_self(fd)
        token = _HELD.set(held | {key})
        try:
            yield
        finally:
            _HELD.reset(token)
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
    finally:
        os.close(fd)  # closing the only descriptor releases the lock
