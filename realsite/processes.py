"""The frontend's daemons: started detached, recorded, stopped with everything they started.

Each daemon starts in a session of its own (`setsid`), so the drivers, monitoring clients and
shells it forks share its session ID. The record (`pids.json` in the state directory) keeps each
daemon's PID, session and start time (from /proc: a recycled PID is never mistaken for ours).
`stop` sends SIGTERM to each daemon in reverse start order, waits a bounded time, then ends what
is left of its session (SIGTERM, then SIGKILL), by PID, never by name; a second `stop` finds
nothing to do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

PIDS_FILE = "pids.json"


@dataclass(frozen=True)
class Daemon:
    name: str
    pid: int
    #: /proc/<pid>/stat field 22 (clock ticks after boot): the PID's identity
    start_ticks: int
    log: str


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) is parenthesised and may hold spaces
    rest = raw[raw.rfind(")") + 2:].split()
    return [str(pid), "comm", *rest]


def start_ticks(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[21]) if fields else None


def session_of(pid: int) -> int | None:
    fields = _stat_fields(pid)
    return int(fields[5]) if fields else None


def is_zombie(pid: int) -> bool:
    fields = _stat_fields(pid)
    return fields is not None and fields[2] == "Z"


def alive(daemon: Daemon) -> bool:
    """Whether the recorded daemon still runs (the same process, not a recycled PID)."""
    return start_ticks(daemon.pid) == daemon.start_ticks and not is_zombie(daemon.pid)


def session_members(sid: int) -> list[int]:
    """Every live process of session `sid`."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and session_of(int(entry)) == sid and not is_zombie(int(entry)):
            members.append(int(entry))
    return members


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def processes_under(folder: Path) -> list[int]:
    """Live processes running a script of `folder` (an argument of their command line inside it):
    the monitoring clients the dummy IM driver starts in sessions of their own, found by this
    frontend's own path, which no other frontend shares."""
    prefix = str(folder).rstrip("/") + "/"
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            argv = _cmdline(int(entry))
            if any(arg.startswith(prefix) for arg in argv[:3]) and not is_zombie(int(entry)):
                found.append(int(entry))
    return found


def end_processes(pids: list[int], *, wait: float = 5.0) -> list[int]:
    """SIGTERM, then SIGKILL what is left after `wait` seconds; returns what survived."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            _signal(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            for pid in pids:
                _reap(pid)
            pids = [p for p in pids if start_ticks(p) is not None and not is_zombie(p)]
            if not pids:
                return []
            time.sleep(0.1)
    return pids


def spawn(name: str, argv: list[str], *, env: dict[str, str], log: Path, cwd: Path | None = None) -> Daemon:
    """Start `argv` detached in its own session, stdout and stderr appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   cwd=cwd, start_new_session=True, close_fds=True)
    ticks = start_ticks(process.pid)
    if ticks is None:  # it ended at once: its log says why
        process.wait()
        raise RuntimeError(f"{name} exited at once (code {process.returncode}); read {log}")
    # not waited for: reaped by whoever runs the harness, or by init once the harness exits
    process.returncode = 0
    return Daemon(name, process.pid, ticks, str(log))


def load(state: Path) -> list[Daemon]:
    path = state / PIDS_FILE
    if not path.exists():
        return []
    return [Daemon(**item) for item in json.loads(path.read_text())]


def save(state: Path, daemons: list[Daemon]) -> None:
    path = state / PIDS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps([asdict(d) for d in daemons], indent=1))
    tmp.replace(path)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def stop_daemon(daemon: Daemon, *, grace: float = 30.0, say: Callable[[str], None] = print) -> None:
    """SIGTERM the daemon, wait up to `grace` seconds, then end what is left of its session."""
    sid = daemon.pid  # started with setsid: its session ID is its PID
    ticks = start_ticks(daemon.pid)
    if ticks is not None and ticks != daemon.start_ticks:
        # the PID was handed out again, which Linux does only once no process of the old session
        # is left: the session with this ID now is someone else's
        return
    if alive(daemon):
        _signal(daemon.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            _reap(daemon.pid)
            if not alive(daemon):
                break
            time.sleep(0.2)
        else:
            say(f"{daemon.name} (pid {daemon.pid}) did not stop within {grace:.0f} s: killed")
            _signal(daemon.pid, signal.SIGKILL)
            _reap(daemon.pid)
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        left = session_members(sid)
        if not left:
            return
        for pid in left:
            _signal(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and session_members(sid):
            for pid in left:
                _reap(pid)
            time.sleep(0.2)
    left = session_members(sid)
    if left:
        raise RuntimeError(f"{daemon.name}: processes {left} of its session survived SIGKILL")


def stop_all(state: Path, *, say: Callable[[str], None] = print) -> int:
    """Stop every recorded daemon (reverse start order); returns how many were running."""
    daemons = load(state)
    running = 0
    for daemon in reversed(daemons):
        if alive(daemon):
            running += 1
            stop_daemon(daemon, say=say)
            say(f"stopped {daemon.name} (pid {daemon.pid})")
        else:
            stop_daemon(daemon, say=say)  # what it left behind in its session, if anything
        remaining = [d for d in load(state) if d.pid != daemon.pid]
        save(state, remaining)
    (state / PIDS_FILE).unlink(missing_ok=True)
    return running
