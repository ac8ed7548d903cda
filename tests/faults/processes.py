"""A real `sitetk` process against the embedded site over loopback (the `sitetk` fixture), its
stderr read line by line (to send a signal at a known step), its audit log and state dir under the
test's tmp_path. Test modules import the fixture: `from tests.faults.processes import sitetk`.

A process costs about a second of CPU (the interpreter, the verb's imports, ansible for a vault);
the runs around the point under test (preparing the site, running the command again) go through
`Runner.run_here`: the same command line and environment, in the test's own process.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pytest

from bench.soak.world import Outcome, World
from tests.waiting import wait_until
from tui.__main__ import main
from tui.procedures.audit import AUDIT_ENV
from tui.sim.server import SimServer

ROOT = Path(__file__).resolve().parents[2]
#: poll fast: the embedded site runs faster than real time in tests
POLL = "0.02"


@dataclass
class Sitetk:
    """One running `sitetk` process; `lines` fills from its stderr as it writes."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    out: list[str] = field(default_factory=list)

    def wait_for_line(self, text: str, timeout: float = 60.0) -> str:
        """The first stderr line holding `text` (fails naming what was seen when it never comes)."""

        def seen() -> str | None:
            found = next((line for line in list(self.lines) if text in line), None)
            if found is None and self.process.poll() is not None:
                raise AssertionError(f"sitetk ended ({self.process.returncode}) before {text!r}: {self.lines}")
            return found

        return wait_until(seen, timeout, f"a line with {text!r} from sitetk")

    def signal_while_held(self, stop: signal.Signals, held: threading.Event) -> None:
        """Send `stop` while the site holds the run's call in flight (`held`, a `Faults.hold_methods`
        event), and let that call answer once the run has said it took the signal: a known point,
        never a site slowed down to make the window wide enough."""
        self.process.send_signal(stop)
        try:
            self.wait_for_line(f"{stop.name}: ")
        finally:
            held.set()

    def finish(self, timeout: float = 120.0) -> int:
        code = self.process.wait(timeout)
        self._readers_done(timeout)
        return code

    def _readers_done(self, timeout: float) -> None:
        for reader in self._readers:
            reader.join(timeout)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    @property
    def stdout(self) -> str:
        return "".join(self.out)

    _readers: list[threading.Thread] = field(default_factory=list)


@dataclass
class Ran:
    """A `sitetk` command run in the test's process (`Runner.run_here`): what it wrote."""

    stdout: str
    stderr: str


@dataclass
class Runner:
    """Starts `sitetk` processes pointed at one embedded site, sharing a home and an audit log."""

    server: SimServer
    home: Path
    audit: Path
    started: list[Sitetk] = field(default_factory=list)
    #: more environment for every process (a PATH with a git wrapper first, a token)
    extra: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {**self._base_env(), **self.extra}

    def _base_env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_STATE_HOME": str(self.home / "state"),
            AUDIT_ENV: str(self.audit),
            "ONE_AUTH": str(self.server.site.state_dir / "one_auth"),
            "ONE_XMLRPC": self.server.xmlrpc_url,
            "ONEFLOW_URL": self.server.flow_url,
            "PYTHONUNBUFFERED": "1",
        }

    def start(self, *argv: str) -> Sitetk:
        process = subprocess.Popen([sys.executable, "-m", "tui", *argv], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env(),
                                   cwd=ROOT)
        run = Sitetk(process)
        for stream, sink in ((process.stderr, run.lines), (process.stdout, run.out)):
            reader = threading.Thread(target=_drain, args=(stream, sink.append), daemon=True)
            reader.start()
            run._readers.append(reader)
        self.started.append(run)
        return run

    def run(self, *argv: str, timeout: float = 180.0) -> tuple[int, Sitetk]:
        run = self.start(*argv)
        return run.finish(timeout), run

    def run_here(self, *argv: str) -> tuple[int, Ran]:
        """`sitetk ARGV` in this process with exactly the environment `start` gives a process: for
        a run that is not the one under test."""
        return run_in_process(self.env(), argv)

    def audit_entries(self) -> list[dict[str, Any]]:
        if not self.audit.exists():
            return []
        return [json.loads(line) for line in self.audit.read_text().splitlines() if line.strip()]


def run_in_process(env: dict[str, str], argv: Sequence[str]) -> tuple[int, Ran]:
    """`sitetk ARGV` in this process with `env` as the whole environment (nothing else of the
    test's), its output captured; the test's environment is put back afterwards."""
    saved = dict(os.environ)
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(argv))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return code, Ran(out.getvalue(), err.getvalue())


def soak_run_here(world: World) -> Callable[..., Outcome]:
    """The soak's preparing reads (`site open`, `market list`, `toolkit inputs`: bench.soak.run's
    `prepare`) in the test's process, with the environment a command of the soak gets: only the
    steps under test start a process."""
    def run(*argv: str) -> Outcome:
        code, ran = run_in_process(world.env, argv)
        return Outcome(tuple(argv), code, ran.stdout, ran.stderr)
    return run


def _drain(stream: Any, sink: Callable[[str], None]) -> None:
    for line in stream:
        sink(line)


@pytest.fixture
def sitetk(tmp_path: Path) -> Iterator[Callable[[SimServer], Runner]]:
    """`sitetk(server)`: a `Runner` for that site; every process it started is ended afterwards."""
    runners: list[Runner] = []

    def make(server: SimServer) -> Runner:
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        runner = Runner(server, home, tmp_path / "audit" / "audit.log")
        runners.append(runner)
        return runner

    yield make
    for runner in runners:
        for run in runner.started:
            if run.process.poll() is None:
                run.process.kill()
                run.process.wait(30)


def running_in(root: Path) -> list[str]:
    """The ids of the processes whose working directory is in `root` (a soak's commands run there)."""
    running = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(root):
                running.append(proc.name)
        except OSError:
            continue
    return running
