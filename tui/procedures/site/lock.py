"""Two operators at once: which lock guards a core.yaml or a working clone, and what the loser reads.

Every change of a site configuration file and every git operation on a working clone of the
sites repository holds one lock (`adapters.file_lock`):

- a core.yaml inside a working clone, and the clone itself (fetch, checkout, commit, push), share
  the clone's lock file, beside the clone (`<clone>.lock`, outside the work tree so it is never
  committed): a submit never commits half of an edit, and an edit never writes into a clone that
  another process is switching to another branch;
- a core.yaml outside any clone (`--path`) has its own lock file beside it (`.core.yaml.lock`).

Writers re-read the file once they hold the lock and apply their change to what is there, so two
edits at once both land (one waits for the other). The second waits up to `lock_timeout()`
seconds (`$SITETK_LOCK_TIMEOUT`, default 30), then fails with a SiteError naming the holder
(pid and command): never a silent success.
"""

from __future__ import annotations

import os
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

from tui import timing
from tui.adapters.file_lock import LockBusy, hold
from tui.errors import SiteError

LOCK_TIMEOUT_ENV = "SITETK_LOCK_TIMEOUT"


def lock_timeout() -> float:
    """Seconds a change waits for another process's lock (`$SITETK_LOCK_TIMEOUT`, default the
    profile's `site_lock_timeout`)."""
    default = timing.PROFILE.site_lock_timeout
    try:
        value = float(os.environ.get(LOCK_TIMEOUT_ENV, ""))
    except ValueError:
        return default
    return value if 0 <= value <= 3600 else default


def clone_root(path: Path) -> Path | None:
    """The working clone holding `path` (the nearest directory with a `.git`), None outside any."""
    for directory in Path(path).absolute().parents:
        if (directory / ".git").exists():
            return directory
    return None


def clone_lock_file(workdir: Path) -> Path:
    workdir = Path(workdir).absolute()
    return workdir.parent / f"{workdir.name}.lock"


def config_lock_file(path: Path) -> Path:
    """The lock file guarding the configuration file `path` (see the module docstring)."""
    root = clone_root(path)
    if root is not None:
        return clone_lock_file(root)
    path = Path(path).absolute()
    return path.parent / f".{path.name}.lock"


@asynccontextmanager
async def _locked(lock_file: Path, what: str, timeout: float | None) -> AsyncIterator[None]:
    wait = lock_timeout() if timeout is None else timeout
    lock = hold(lock_file, wait)
    try:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        await lock.__aenter__()
    except LockBusy as busy:
        raise SiteError(
            f"{what} is in use",
            f"{busy.holder.describe()} is changing it; waited {busy.waited:.0f} s "
            f"(lock file {busy.lock_file}). Nothing was changed: run this again once it has finished "
            f"(${LOCK_TIMEOUT_ENV} sets the wait).",
        ) from None
    except OSError as exc:
        raise SiteError(f"Cannot lock {what}", f"{lock_file}: {exc.strerror or exc}. Nothing was changed.") from None
    try:
        yield
    finally:
        await lock.__aexit__(None, None, None)


def config_lock(path: Path, timeout: float | None = None) -> AbstractAsyncContextManager[None]:
    """Hold the lock of the configuration file `path` (and of its clone) for an `async with` block."""
    return _locked(config_lock_file(path), str(path), timeout)


def clone_lock(workdir: Path, timeout: float | None = None) -> AbstractAsyncContextManager[None]:
    """Hold the lock of the working clone `workdir` for an `async with` block."""
    return _locked(clone_lock_file(workdir), f"the working clone {workdir}", timeout)
