"""A dropped SSH session while the console runs: the console (`sitetk` without a verb) on a
real pseudo-terminal, its terminal closed under it. The kernel sends SIGHUP (and SIGCONT); the
console cancels what runs, undoes it, audits it, and exits 129 promptly with no traceback.

Found by this test: Textual's driver took the hang-up's SIGCONT for a resume after ctrl+z and
started a second output thread, which died writing to the gone terminal; the shutdown then
waited for ever on its full queue once the screen had been drawn 30 more times (a rollback on a
slow site does that every time). widgets/terminal_driver.py is the fix."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.faults.processes import ROOT
from tests.faults.terminal import Terminal
from tests.waiting import wait_until
from tui.procedures.audit import AUDIT_ENV
from tui.sim.server import SimServer

HANGUP_EXIT = 128 + signal.SIGHUP
#: seconds the console may take to exit after the hang-up (its rollback included): generous for a loaded machine
EXIT_TIMEOUT = 60.0
DOWN = "\x1b[B"


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    started: list[Terminal] = []
    yield started
    for terminal in started:
        terminal.close()


def _console(server: SimServer, tmp_path: Path, started: list[Terminal]) -> Terminal:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "XDG_CONFIG_HOME": str(home / "config"), "XDG_STATE_HOME": str(home / "state"),
           AUDIT_ENV: str(tmp_path / "audit.log"), "ONE_AUTH": str(server.site.state_dir / "one_auth"),
           "ONE_XMLRPC": server.xmlrpc_url, "ONEFLOW_URL": server.flow_url}
    terminal = Terminal.start([], env, tmp_path / "errors.txt", ROOT)
    started.append(terminal)
    terminal.wait_for("q Quit")  # the first screen is drawn
    terminal.wait_for("● connected")
    return terminal


def _objects(server: SimServer) -> tuple[set[int], set[int]]:
    with server.site.lock:
        return set(server.site.images), set(server.site.templates)


def _exits_cleanly(terminal: Terminal, tmp_path: Path) -> None:
    code = terminal.process.wait(EXIT_TIMEOUT)  # a hang fails here (TimeoutExpired), never waits for ever
    errors = terminal.errors.read_text() if terminal.errors.exists() else ""
    assert "Traceback" not in errors and "Exception ignored" not in errors, errors
    assert code == HANGUP_EXIT, (code, errors)


def _audit(tmp_path: Path) -> list[dict]:  # type: ignore[type-arg]
    path = tmp_path / "audit.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_hang_up_of_the_idle_console_ends_it_with_129(
        sim: SimServer, tmp_path: Path, terminals: list[Terminal]) -> None:
    before = _objects(sim)
    terminal = _console(sim, tmp_path, terminals)
    terminal.hang_up()
    _exits_cleanly(terminal, tmp_path)
    assert _objects(sim) == before and _audit(tmp_path) == []


@pytest.mark.slow  # 96 s in the whole run at load 4-8
def test_a_hang_up_during_a_download_rolls_it_back_audits_it_and_exits_129(
        sim_factory: Callable[..., SimServer], tmp_path: Path, terminals: list[Terminal]) -> None:
    server = sim_factory()
    before = _objects(server)
    terminal = _console(server, tmp_path, terminals)
    terminal.wait_for("Toolkit appliance downloaded (to do)")  # the front door has read the site (it redraws once more)
    terminal.type(":")
    terminal.wait_for("(host, cpu)")  # the jump prompt lists the screens
    terminal.type("market")
    wait_until(lambda: "(host, cpu)" not in terminal.read(), 30, "the jump prompt narrowed to the marketplace")
    terminal.type("\r")
    terminal.wait_for(" appliances · ")  # the list has loaded (how many depends on the platform series)
    terminal.type(DOWN * 9)  # the catalog's tenth row: DNS Server v1.1.0, a small IMAGE app
    terminal.wait_for("▏ DNS Server  - not downloaded")
    terminal.type("d")
    terminal.wait_for("cloud app 9 in")  # the download form knows its app and datastores
    terminal.type("\t\r")  # Enter in the final name field: review
    terminal.wait_for("onemarketapp export 9")  # the preview; the Download button has the focus
    server.site.hold_clock()  # the image stays LOCKED until the hang-up: it finds the download running
    terminal.type("\r")
    terminal.wait_for("LOCKED")
    with server.site.lock:  # a slow site: the rollback takes seconds, the screen keeps being drawn meanwhile
        server.site.faults.latency_ms = 400
    terminal.hang_up()
    _exits_cleanly(terminal, tmp_path)
    assert _objects(server) == before
    export = [e for e in _audit(tmp_path) if e["action"] == "marketapp.export"]
    assert export and export[-1]["outcome"] == "cancelled", export
    assert export[-1]["details"]["rolled_back"] is True and export[-1]["details"]["left"] == []
    assert export[-1]["details"]["created"]["images"], export  # something was created, and undone
