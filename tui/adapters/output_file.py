"""One safe writer for every file the console writes for the operator (attribute files, input files).

`write_output_file(path, text, force=..., secret=...)`:

- a new file is created with `O_CREAT|O_EXCL|O_NOFOLLOW`: it never writes through a symlink an
  attacker (or an old checkout) left at the path, and never truncates a file that appeared meanwhile;
- an existing path (a file, or a symlink, dangling or not) is refused with `OutputFileExists`
  unless `force` (the CLI's `--force`, a confirmation in the console); then the file is replaced
  atomically (a temporary file in the same directory, renamed over the path): a symlink is replaced
  by the file, never followed, and a reader never sees half a file;
- directories and special files (a FIFO, a device) are refused, forced or not;
- `secret` files are mode 0600 from their first byte; others 0644 less the umask.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from tui.errors import SiteError


class OutputFileExists(SiteError):
    """The path exists (or is a symlink): writing needs `--force` or a confirmation."""

    def __init__(self, path: Path, symlink: bool) -> None:
        what = "is a symbolic link" if symlink else "exists"
        super().__init__(f"{path} {what}",
                         "Nothing was written. Give --force to replace it (a symlink is replaced, not followed), "
                         "or choose another path.")
        self.path = path
        self.symlink = symlink


def _mode(secret: bool) -> int:
    if secret:
        return 0o600
    umask = os.umask(0)
    os.umask(umask)
    return 0o644 & ~umask


def write_output_file(path: Path | str, text: str, *, force: bool = False, secret: bool = False) -> Path:
    """Write `text` (UTF-8, newlines as given) at `path`; see the module docstring for the rules."""
    target = Path(path).expanduser()
    if not target.parent.is_dir():
        raise SiteError(f"No directory {target.parent}", "Create it first or choose another path.")
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise SiteError(f"Cannot write {target}", str(exc.strerror or exc)) from None
    if info is not None:
        symlink = stat.S_ISLNK(info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            raise SiteError(f"{target} is a directory", "Give the path of the file to write.")
        if not symlink and not stat.S_ISREG(info.st_mode):
            raise SiteError(f"{target} is not a regular file", "Choose the path of a regular file to write.")
        if not force:
            raise OutputFileExists(target, symlink)
    data = text.encode("utf-8")
    try:
        if info is None:
            _create(target, data, _mode(secret))
        else:
            _replace(target, data, _mode(secret))
    except FileExistsError:
        raise OutputFileExists(target, target.is_symlink()) from None
    except OSError as exc:
        raise SiteError(f"Cannot write {target}", str(exc.strerror or exc)) from None
    return target


def _create(target: Path, data: bytes, mode: int) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise


def _replace(target: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
