"""Reading and writing the site record (`domain.site_record`) in the console's state directory.

One file per cloud endpoint, `<state_dir>/toolkit/<host>_<port>-<hash>.json`, holding every
toolkit deployment recorded against that endpoint; `load_site_record(settings)` gives the most
recent one (other screens use it: hosts, site configuration). The file holds no secret but is
written mode 0600 in a 0700 directory anyway, atomically (a temporary file renamed over the old
one), under an advisory lock so two consoles updating it at once do not lose each other's
deployment.

    from tui.procedures.site_record import SiteRecord, load_site_record
    record = load_site_record(site.settings)     # None before the first deployment
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from tui.domain.bounded import BoundedInputError, load_json, read_text_file
from tui.domain.endpoints import without_credentials
from tui.domain.site_record import (
    RecordedRole,
    RecordedVm,
    SiteRecord,
    SiteRecordError,
    latest,
    records_from_json,
    records_to_json,
    upsert,
)
from tui.errors import SiteError
from tui.settings import Settings

__all__ = [
    "REBUILD_COMMAND", "RecordedRole", "RecordedVm", "SiteRecord", "SiteRecordUnreadable", "load_site_record",
    "load_site_records", "save_site_record", "set_aside_unreadable", "site_record_path", "site_record_problem",
]


def site_record_path(settings: Settings) -> Path:
    """Where the records of the settings' cloud endpoint live (credentials written into the
    endpoint URL play no part: the same cloud, the same file)."""
    endpoint = without_credentials(settings.xmlrpc_url)
    try:
        parts = urlsplit(endpoint)
        label = f"{parts.hostname or 'cloud'}_{parts.port or ''}".strip("_")
    except ValueError:
        label = "cloud"
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:60] or "cloud"
    digest = hashlib.sha256(endpoint.encode()).hexdigest()[:10]
    return Path(settings.state_dir) / "toolkit" / f"{label}-{digest}.json"


#: the command that rebuilds an unreadable site record from the cloud
REBUILD_COMMAND = "sitetk toolkit vms --rebuild-record"


class SiteRecordUnreadable(SiteError):
    """The site record file exists and cannot be read (`path`); the cloud is unchanged."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__("The site record cannot be read",
                         f"{path}: {reason}. Rebuild it from the cloud: `{REBUILD_COMMAND}` (add --service ID to "
                         "choose the service) sets this file aside and records the toolkit service OneFlow has; the "
                         "cloud itself is unchanged.")


def _unreadable(path: Path, reason: str) -> SiteError:
    return SiteRecordUnreadable(path, reason)


def site_record_problem(settings: Settings) -> str:
    """Why the endpoint's site record cannot be read ("" when it can, or when there is none)."""
    try:
        _read(site_record_path(settings))
    except SiteError as error:
        return f"{error.title}: {error.detail}"
    return ""


def set_aside_unreadable(settings: Settings) -> Path | None:
    """Rename an unreadable site record out of the way (`<name>.unreadable-<UTC time>`), so that a
    record rebuilt from the cloud can take its place; None when the record reads (or is absent)."""
    path = site_record_path(settings)
    try:
        _read(path)
        return None
    except SiteRecordUnreadable:
        pass
    aside = path.with_name(f"{path.name}.unreadable-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}")
    try:
        os.replace(path, aside)
    except OSError as exc:
        raise SiteError("The site record cannot be set aside", f"{path}: {exc.strerror or exc}.") from None
    return aside


def _read(path: Path) -> tuple[SiteRecord, ...]:
    try:
        text = read_text_file(path)
    except FileNotFoundError:
        return ()
    except BoundedInputError as exc:
        raise _unreadable(path, exc.message) from None
    except OSError as exc:
        raise _unreadable(path, str(exc.strerror or exc)) from None
    try:
        _, records = records_from_json(load_json(text, "the site record"))
    except BoundedInputError as exc:
        raise _unreadable(path, exc.message) from None
    except json.JSONDecodeError as exc:
        raise _unreadable(path, f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except SiteRecordError as exc:
        raise _unreadable(path, str(exc)) from None
    return records


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def write_private_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` mode 0600: a temporary file in the same directory, renamed over it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def load_site_records(settings: Settings) -> tuple[SiteRecord, ...]:
    """Every deployment recorded for the settings' endpoint, oldest first; () when none."""
    records = _read(site_record_path(settings))
    return tuple(sorted(records, key=lambda r: (r.created, r.service_id)))


def load_site_record(settings: Settings, service_id: int | None = None) -> SiteRecord | None:
    """The most recent deployment (or the one of `service_id`); None when there is none."""
    records = load_site_records(settings)
    if service_id is not None:
        return next((r for r in records if r.service_id == service_id), None)
    return latest(records)


def save_site_record(settings: Settings, record: SiteRecord) -> Path:
    """Add or replace `record` (by service ID) in the endpoint's file; returns the path."""
    path = site_record_path(settings)
    try:
        with _locked(path):
            records = upsert(_read(path), record)
            text = json.dumps(records_to_json(without_credentials(settings.xmlrpc_url), records), indent=2, ensure_ascii=False) + "\n"
            write_private_atomically(path, text)
    except OSError as exc:
        raise SiteError("The site record cannot be written",
                        f"{path}: {exc.strerror or exc}. Check the state directory (state_dir in the config file).") from None
    return path
