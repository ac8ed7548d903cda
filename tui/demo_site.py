"""The embedded site in a child process, as `sitetk --demo` runs it.

`SimChild(("--vms", "100")).start()` spawns `python -m tui sim ... --state-dir <new temp dir>
--repositories-on-request --exit-on-stdin-eof --remove-state-dir` and returns at once: the
child's imports and seeding overlap the console's own start-up on another core. `await
child.endpoints()` gives the site's endpoints once it listens. The child builds its git
repositories only when asked (`request_repositories()`, a line on its stdin: the console asks
once its first frame is painted, so the build competes with nothing the operator waits for);
`await child.repositories()` asks, then returns once they are built. Both raise `SiteError`
(what was run, its log, how to fix) when the child dies or stays silent past its deadline.

The child never outlives its parent: `close()` (also run when the object is garbage-collected
and at interpreter exit) closes its stdin, which stops it, then terminates and at last kills it,
and removes the state directory. Should the parent die without any of that, the child sees its
stdin close, stops on its own and removes the directory. It runs in a session of its own (no
terminal signals) and writes its stderr to `<state dir>/sim.log`, never to the console's terminal.

It imports no part of the simulator (the console pays only for `subprocess`), so it lives
beside `tui.console` rather than in `tui.sim`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Sequence

from tui.domain.bounded import BoundedInputError, read_tail
from tui.errors import SiteError

#: seconds for the child to announce its endpoints (importing and seeding takes ~0.2 s)
START_TIMEOUT_S = 60.0
#: seconds for the child to build its git repositories once asked
REPOSITORIES_TIMEOUT_S = 120.0
#: seconds a child gets to stop after its stdin closes, then after SIGTERM
STOP_GRACE_S = (5.0, 3.0)
LOG_NAME = "sim.log"


@dataclass(frozen=True)
class SimEndpoints:
    """What the child announced: endpoints, session (user:password), files of the site."""

    xmlrpc: str
    oneflow: str
    marketplace: str
    session: str = field(repr=False)
    state_dir: Path
    sites_repo: str
    library_repo: str
    vault_password_file: str

    @classmethod
    def from_line(cls, data: dict[str, Any]) -> "SimEndpoints":
        return cls(xmlrpc=str(data["xmlrpc"]), oneflow=str(data["oneflow"]), marketplace=str(data["marketplace"]),
                   session=str(data["session"]), state_dir=Path(str(data["state_dir"])),
                   sites_repo=str(data.get("sites_repo") or ""), library_repo=str(data.get("library_repo") or ""),
                   vault_password_file=str(data.get("vault_password_file") or ""))


class _Announcements:
    """The child's stdout lines as the reader thread sees them (no reference to the `SimChild`,
    so that dropping the `SimChild` still finalizes it)."""

    def __init__(self) -> None:
        self.endpoints: dict[str, Any] | None = None
        self.repositories: dict[str, Any] | None = None
        self.garbage = ""
        self.started = threading.Event()
        self.built = threading.Event()


def _read_announcements(stdout: IO[bytes], seen: _Announcements) -> None:
    try:
        for raw in stdout:
            try:
                data = json.loads(raw)
            except ValueError:
                seen.garbage = raw.decode("utf-8", "replace").strip()[:200]
                break
            if seen.endpoints is None:
                seen.endpoints = data
                seen.started.set()
                if data.get("repositories", "ready") == "ready":
                    seen.repositories = {"repositories": "ready"}
                    seen.built.set()
            elif "repositories" in data:
                seen.repositories = data
                seen.built.set()
    except (OSError, ValueError):  # the pipe closed under us at shutdown
        pass
    finally:
        seen.started.set()
        seen.built.set()
        stdout.close()


def _stop(process: subprocess.Popen[bytes], log: IO[bytes], state_dir: Path,
          grace: tuple[float, float] = STOP_GRACE_S) -> None:
    """Stop the child (stdin EOF, then SIGTERM, then SIGKILL) and remove its state directory."""
    try:
        if process.stdin is not None:
            try:
                process.stdin.close()
            except OSError:
                pass
        for step, seconds in enumerate(grace):
            try:
                process.wait(timeout=seconds)
                break
            except subprocess.TimeoutExpired:
                if step == 0:
                    process.terminate()
        else:
            process.kill()
            process.wait()
    finally:
        log.close()
        shutil.rmtree(state_dir, ignore_errors=True)


class SimChild:
    """`sitetk sim` in a child process (see the module docstring); also a context manager."""

    def __init__(self, sim_args: Sequence[str] = (), *, start_timeout: float = START_TIMEOUT_S,
                 repositories_timeout: float = REPOSITORIES_TIMEOUT_S, stop_grace: tuple[float, float] = STOP_GRACE_S,
                 python: str = sys.executable) -> None:
        self.sim_args = tuple(sim_args)
        self.start_timeout = start_timeout
        self.repositories_timeout = repositories_timeout
        self.stop_grace = stop_grace
        self.python = python
        self.state_dir: Path | None = None
        self.command: tuple[str, ...] = ()
        self._process: subprocess.Popen[bytes] | None = None
        self._seen = _Announcements()
        self._finalizer: weakref.finalize | None = None
        self._request_lock = threading.Lock()
        self._requested = False

    def __enter__(self) -> "SimChild":
        return self.start() if self._process is None else self

    def __exit__(self, *_: object) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path | None:
        return self.state_dir / LOG_NAME if self.state_dir is not None else None

    @property
    def command_text(self) -> str:
        """The command as an operator would type it (without the temp state dir)."""
        import shlex  # for messages only: not on the start-up path

        return "sitetk sim " + shlex.join(self.sim_args) if self.sim_args else "sitetk sim"

    def start(self) -> "SimChild":
        """Spawn the child and return at once."""
        if self._process is not None:
            raise RuntimeError("this SimChild was already started")
        state_dir = Path(tempfile.mkdtemp(prefix="sitetk-demo-"))
        log = open(state_dir / LOG_NAME, "ab")
        self.command = (self.python, "-m", "tui", "sim", *self.sim_args, "--state-dir", str(state_dir),
                        "--repositories-on-request", "--exit-on-stdin-eof", "--remove-state-dir")
        try:
            process = subprocess.Popen(self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                       start_new_session=True, close_fds=True)
        except OSError:
            log.close()
            shutil.rmtree(state_dir, ignore_errors=True)
            raise
        self.state_dir, self._process = state_dir, process
        self._finalizer = weakref.finalize(self, _stop, process, log, state_dir, self.stop_grace)
        assert process.stdout is not None
        threading.Thread(target=_read_announcements, args=(process.stdout, self._seen),
                         name="sitetk-demo-site", daemon=True).start()
        return self

    def close(self) -> None:
        """Stop the child and remove its state directory (safe to call more than once)."""
        if self._finalizer is not None:
            self._finalizer()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # ------------------------------------------------------------------ announcements

    def wait_endpoints(self) -> SimEndpoints:
        """Block until the child announced its endpoints; `SiteError` if it died or stayed silent."""
        if self._process is None:
            raise RuntimeError("start() the SimChild first")
        if not self._seen.started.wait(self.start_timeout):
            raise self._failure("The demo site did not start",
                                f"It announced no endpoints within {self.start_timeout:g} s.")
        if self._seen.endpoints is None:
            raise self._failure("The demo site did not start", self._why_silent())
        try:
            return SimEndpoints.from_line(self._seen.endpoints)
        except (KeyError, TypeError) as error:
            raise self._failure("The demo site did not start", f"Its first line lacked {error}.") from None

    def request_repositories(self) -> None:
        """Ask the child to build its git repositories now; only the first call writes (safe from
        any thread, and when the child is gone: waiting for them then says why)."""
        with self._request_lock:
            process = self._process
            if self._requested or process is None or process.stdin is None:
                return
            self._requested = True
            try:
                process.stdin.write(b"repositories\n")
                process.stdin.flush()
            except (OSError, ValueError):  # the child exited, or close() closed its stdin
                pass

    def wait_repositories(self) -> None:
        """Ask for the child's git repositories and block until they are built; `SiteError` if
        building them failed."""
        self.wait_endpoints()
        self.request_repositories()
        if not self._seen.built.wait(self.repositories_timeout):
            raise self._failure("Demo repositories not ready",
                                f"The demo site did not build its git repositories within "
                                f"{self.repositories_timeout:g} s.")
        line = self._seen.repositories
        if line is None:
            raise self._failure("Demo repositories not ready", self._why_silent())
        if line.get("repositories") != "ready":
            raise self._failure("Demo repositories could not be built", str(line.get("error", line)))

    async def endpoints(self) -> SimEndpoints:
        if self._seen.endpoints is not None:
            return self.wait_endpoints()
        import asyncio  # here: the child is spawned before the console imports asyncio (and Textual)

        return await asyncio.to_thread(self.wait_endpoints)

    async def repositories(self) -> None:
        if self._seen.repositories is not None:
            return self.wait_repositories()
        import asyncio

        await asyncio.to_thread(self.wait_repositories)

    # ------------------------------------------------------------------ errors

    def _why_silent(self) -> str:
        process = self._process
        assert process is not None
        try:
            code = process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "It closed its output but is still running."
        if self._seen.garbage:
            return f"It printed {self._seen.garbage!r} instead of a JSON line, then exited with code {code}."
        return f"It exited with code {code}."

    def _failure(self, title: str, what: str) -> SiteError:
        log = self.log_path
        tail = ""
        if log is not None and log.exists():
            try:  # its newest part only: a log can be large
                lines = read_tail(log, "the demo site's log", 64 * 1024).decode("utf-8", "replace").strip().splitlines()[-12:]
            except (OSError, BoundedInputError):
                lines = []
            tail = "\n".join(lines)
        parts = [what, f"Tried: {self.command_text} (a child process, log {log})."]
        if tail:
            parts.append("Its log ends with:\n" + tail)
        parts.append(f"How to fix: run `{self.command_text}` in a terminal to see the whole error "
                     "(a missing dependency, no free loopback port, an unwritable temp directory); "
                     "`sitetk` without --demo connects to a real site.")
        return SiteError(title, "\n".join(parts), retryable=False)
