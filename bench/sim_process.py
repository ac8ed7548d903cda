"""The embedded site in its own process (`sitetk sim`), so its work is not counted against the
client being measured.

    with SimProcess(vms=10_000) as sim:
        sim.xmlrpc, sim.session      # endpoint and user:password of the running site
        sim.child_env()              # environment pointing a child process at it (ONE_XMLRPC, ONE_AUTH)

The site's first stdout line is one JSON object (endpoints, session, state directory); the
process is ready once `one.system.version` answers. Leaving the block sends SIGTERM (the
simulator stops cleanly), kills it only if it does not exit in time, and removes the site's
state directory.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import xmlrpc.client
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import urlsplit

#: seconds to wait for the JSON line (seeding 50,000 VMs takes a few seconds on a slow machine)
START_TIMEOUT_S = 300.0
#: seconds to wait after SIGTERM before killing the process
STOP_TIMEOUT_S = 20.0


class SimProcessError(RuntimeError):
    """The simulator did not start, or did not become ready."""


class SimProcess:
    """`sitetk sim --vms N --scenario S` as a child process (a context manager)."""

    def __init__(self, vms: int = 0, scenario: str = "fresh", *, time_scale: float = 1.0,
                 extra_args: tuple[str, ...] = (), start_timeout: float = START_TIMEOUT_S) -> None:
        self.vms = vms
        self.scenario = scenario
        self.time_scale = time_scale
        self.extra_args = extra_args
        self.start_timeout = start_timeout
        self.info: dict[str, Any] = {}
        self._proc: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None
        self._state_dir: tempfile.TemporaryDirectory[str] | None = None

    # the running site ---------------------------------------------------------------------
    @property
    def xmlrpc(self) -> str:
        return str(self.info["xmlrpc"])

    @property
    def session(self) -> str:
        return str(self.info["session"])

    @property
    def oneflow(self) -> str:
        return str(self.info["oneflow"])

    @property
    def state_dir(self) -> Path:
        return Path(self.info["state_dir"])

    @property
    def pid(self) -> int:
        assert self._proc is not None, "not started"
        return self._proc.pid

    def child_env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """An environment in which `sitetk` (or any child) reaches this site the platform CLI's
        way: ONE_XMLRPC, and ONE_AUTH naming the 0600 file the simulator wrote (the session never
        goes on a command line)."""
        env = dict(os.environ if base is None else base)
        env["ONE_XMLRPC"] = self.xmlrpc
        env["ONE_AUTH"] = str(self.state_dir / "one_auth")
        env["ONEFLOW_URL"] = self.oneflow
        return env

    # start and stop -------------------------------------------------------------------------
    def start(self) -> "SimProcess":
        self._state_dir = tempfile.TemporaryDirectory(prefix="sitetk-bench-sim-")
        command = [sys.executable, "-m", "tui", "sim", "--vms", str(self.vms), "--scenario", self.scenario,
                   "--time-scale", str(self.time_scale), "--state-dir", self._state_dir.name, *self.extra_args]
        self._stderr = tempfile.TemporaryFile(mode="w+", prefix="sitetk-sim-stderr-")
        self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=self._stderr, text=True, cwd=_project_root())
        try:
            line = self._first_line()
            try:
                self.info = json.loads(line)
            except ValueError:
                raise SimProcessError(f"sitetk sim printed {line[:200]!r}, not its JSON line{self._stderr_tail()}") from None
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _first_line(self) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(self._proc.stdout.readline()),  # type: ignore[union-attr]
                                  daemon=True)
        reader.start()
        reader.join(self.start_timeout)
        if reader.is_alive() or not out or not out[0]:
            code = self._proc.poll()
            if code is None and out and not out[0]:
                # End of output comes before the exit status can be read: a child that failed
                # at once has closed stdout but may not be reaped yet.
                try:
                    code = self._proc.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    code = None
            why = f"exited with {code}" if code is not None else f"printed nothing within {self.start_timeout:g} s"
            raise SimProcessError(f"sitetk sim --vms {self.vms} {why}{self._stderr_tail()}")
        return out[0]

    def _wait_ready(self, timeout: float = 30.0) -> None:
        """Poll `one.system.version` until the site answers (deadline, not a fixed sleep)."""
        deadline = time.monotonic() + timeout
        body = xmlrpc.client.dumps((self.session,), "one.system.version").encode()
        last = ""
        while time.monotonic() < deadline:
            try:
                if post_xmlrpc(self.xmlrpc, body, timeout=5.0):
                    return
            except OSError as exc:
                last = str(exc)
            if self._proc is not None and self._proc.poll() is not None:
                break
            time.sleep(0.05)
        raise SimProcessError(f"sitetk sim at {self.xmlrpc} never answered ({last}){self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read()[-2000:].strip()
        return f"; its stderr:\n{text}" if text else ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._state_dir is not None:
            self._state_dir.cleanup()
            self._state_dir = None

    def __enter__(self) -> "SimProcess":
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def post_xmlrpc(endpoint: str, body: bytes, timeout: float = 300.0) -> bytes:
    """POST one XML-RPC body on a new connection (the simulator, like the adapter's transport
    against it, serves one request per connection) and return the raw answer."""
    parts = urlsplit(endpoint)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=timeout)
    try:
        conn.request("POST", parts.path or "/", body, {"Content-Type": "text/xml"})
        response = conn.getresponse()
        raw = response.read()
        if response.status != 200:
            raise OSError(f"HTTP {response.status} {response.reason}")
        return raw
    finally:
        conn.close()


def _project_root() -> Path:
    return Path(__file__).resolve().parent.parent
