"""The audit log: one JSON line per mutating operation, append-only, secrets redacted.

Default place: `$XDG_STATE_HOME/sitetk/audit.log` (`~/.local/state/sitetk/audit.log`), mode 0600
in a 0700 directory; `SITETK_AUDIT_LOG` or the `path` argument override it. Each entry has the
UTC time, the local user, the action, its target, the outcome and details. Before writing, the
`Redactor` replaces every registered secret value (vault password, repository token, ...) and
the value of every key named like a secret (password, token, secret, key) with `***`.

A change that cannot be recorded does not start: `run_operation` calls `check_writable()` before
a mutating operation executes, which opens the log for appending as a record does (never through a
symlink: O_NOFOLLOW), checks it is a regular file and that its file system has room
(`MIN_FREE_BYTES`), and raises `AuditUnwritable` otherwise (a directory, a dangling symlink, a
full disk: issue 22 item 5; before, `site edit` wrote core.yaml, then failed on its record with a
traceback). A record that still fails (the disk filled during the run) raises `AuditUnwritable`
carrying the entry itself, so what happened is said even when it could not be kept.
"""

from __future__ import annotations

import errno
import getpass
import json
import os
import stat
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping

from tui.domain.bounded import BoundedInputError, load_json, read_tail
from tui.domain.secret_names import MASK, is_secret_key
from tui.errors import SiteError

#: how much of the audit log `entries` reads (its newest part)
MAX_AUDIT_READ = 64 * 1024 * 1024

AUDIT_ENV = "SITETK_AUDIT_LOG"
#: room the audit log's file system must have before a change starts (a record is a few KiB)
MIN_FREE_BYTES = 1024 * 1024


class AuditUnwritable(SiteError):
    """The audit log cannot be written: a change does not start (or, written meanwhile, is said
    with the entry that could not be kept)."""


def default_audit_path() -> Path:
    override = os.environ.get(AUDIT_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "sitetk" / "audit.log"


class Redactor:
    """Removes secrets from values before they are logged or shown."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._lock = threading.Lock()
        for secret in secrets:
            self.register(secret)

    def register(self, secret: str | None) -> None:
        """Remember a secret value; very short values are ignored (they would mask ordinary text)."""
        if secret and len(secret) >= 4:
            with self._lock:
                self._secrets.add(secret)

    def text(self, value: str) -> str:
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        for secret in secrets:
            value = value.replace(secret, MASK)
        return value

    def redact(self, value: Any) -> Any:
        """A copy of `value` (JSON-like) with secret-named keys masked and secret values replaced."""
        if isinstance(value, Mapping):
            return {str(k): (MASK if is_secret_key(str(k)) and v not in (None, "") else self.redact(v)) for k, v in value.items()}
        if isinstance(value, (list, tuple, set, frozenset)):
            return [self.redact(item) for item in value]
        if isinstance(value, str):
            return self.text(value)
        if value is None or isinstance(value, (bool, int, float)):
            return value
        return self.text(str(value))


#: the process-wide redactor: procedures register the secrets they handle here
REDACTOR = Redactor()


@dataclass(frozen=True)
class AuditEntry:
    action: str
    target: str = ""
    outcome: str = "ok"
    details: Mapping[str, Any] = field(default_factory=dict)
    time: str = ""
    user: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"time": self.time, "user": self.user, "action": self.action, "target": self.target, "outcome": self.outcome, "details": dict(self.details)}


class AuditLog:
    """Append-only JSON-lines log; writes are single `write` calls on an O_APPEND descriptor."""

    def __init__(self, path: Path | None = None, redactor: Redactor | None = None) -> None:
        self.path = Path(path) if path is not None else default_audit_path()
        self.redactor = redactor if redactor is not None else REDACTOR
        self._lock = threading.Lock()
        #: entries recorded through this object (every mutating operation records at least one)
        self.changes = 0

    def _open(self) -> int:
        """The log opened for appending (created 0600 in a 0700 directory), never through a symlink,
        and only when it is a regular file."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     0o600)
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise OSError(errno.EINVAL, "not a regular file")
            if mode & 0o077:
                os.fchmod(fd, 0o600)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _unwritable(self, exc: OSError, what: str) -> AuditUnwritable:
        reason = exc.strerror or str(exc)
        if exc.errno == errno.ELOOP:
            reason = "it is a symbolic link (the audit log is never written through one)"
        elif exc.errno == errno.EISDIR:
            reason = "it is a directory"
        return AuditUnwritable(f"The audit log cannot be written: {self.path}",
                               f"{reason}. {what} Point {AUDIT_ENV} at a file this user can append to, or fix "
                               f"{self.path} (a regular file, mode 0600, on a file system with room).")

    def check_writable(self) -> None:
        """Raise `AuditUnwritable` unless a record could be appended now (see the module docstring)."""
        try:
            fd = self._open()
        except OSError as exc:
            raise self._unwritable(exc, "Nothing was changed: a change that cannot be recorded does not start.") \
                from None
        try:
            space = os.fstatvfs(fd)
            free = space.f_bavail * space.f_frsize
        except OSError:
            free = MIN_FREE_BYTES  # a file system that does not say: the write itself will tell
        finally:
            os.close(fd)
        if free < MIN_FREE_BYTES:
            raise self._unwritable(OSError(errno.ENOSPC, f"its file system is full ({free} bytes free)"),
                                   "Nothing was changed: a change that cannot be recorded does not start.")

    def record(self, action: str, target: str = "", outcome: str = "ok", details: Mapping[str, Any] | None = None) -> AuditEntry:
        try:
            user = getpass.getuser()
        except Exception:  # noqa: BLE001 - no user name in odd containers
            user = str(os.getuid())
        entry = AuditEntry(
            action=action,
            target=self.redactor.text(target),
            outcome=outcome,
            details=self.redactor.redact(dict(details or {})),
            time=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            user=user,
        )
        line = json.dumps(entry.as_json(), sort_keys=False, default=str) + "\n"
        data = line.encode("utf-8")
        with self._lock:
            try:
                fd = self._open()
                try:
                    if os.write(fd, data) != len(data):
                        raise OSError(errno.ENOSPC, "the entry was written in part (file system full)")
                finally:
                    os.close(fd)
            except OSError as exc:
                raise self._unwritable(exc, f"This entry could not be kept: {line.strip()}") from None
            self.changes += 1
        return entry

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first (unreadable lines are skipped)."""
        try:
            # the newest MAX_AUDIT_READ bytes: a log grows for ever, the console shows its recent part
            lines = read_tail(self.path, "the audit log", MAX_AUDIT_READ).decode("utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        except BoundedInputError:  # not a regular file: nothing the console wrote
            return []
        result = []
        for line in lines:
            try:
                result.append(load_json(line, "an audit entry"))
            except ValueError:  # malformed, too deep, too long a number: skipped like any bad line
                continue
        return result
