"""INT, TERM and HUP to a real `sitetk` process in the middle of a change: the same cancellation.

The download is held at a known point (its image LOCKED: the embedded site's clock is held), then
signalled; what the run created is deleted, the audit log says so, the exit status is 128+N.
A move is signalled while its VM is undeployed: the audit log records where it stopped and the
VM's state, stderr says how to finish, and the same command run again completes the move.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from tests.faults.processes import POLL, Runner
from tests.ui.conftest import SIZE, console_app
from tui.procedures.audit import AUDIT_ENV
from tui.procedures.stop_signals import on_stop_signals
from tui.screens.market_download import DownloadModal
from tui.screens.marketplace import MarketplaceScreen
from tui.screenshots import wait_for_screen
from tui.screenshots.pilot_waits import wait_for
from tui.sim.server import SimServer

STOPS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def _objects(server: SimServer) -> tuple[set[int], set[int]]:
    with server.site.lock:
        return set(server.site.images), set(server.site.templates)


@pytest.mark.parametrize("stop", STOPS, ids=[s.name for s in STOPS])
def test_a_stop_signal_during_a_download_deletes_what_it_created_and_audits_it(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner], stop: signal.Signals) -> None:
    server = sim_factory()
    runner = sitetk(server)
    before = _objects(server)
    server.site.hold_clock()  # the image stays LOCKED until the signal: a known point, the site not slowed
    run = runner.start("market", "download", f"{server.market_url}#service_dns", "--datastore", "1", "--yes", "--poll", POLL)
    run.wait_for_line("LOCKED")
    assert _objects(server) != before  # the image and the VM template exist now
    run.process.send_signal(stop)
    code = run.finish()
    assert code == 128 + stop, run.stderr
    assert _objects(server) == before, run.stderr  # nothing left behind
    export = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"]
    assert export and export[-1]["outcome"] == "cancelled", export
    assert export[-1]["details"]["left"] == [], export[-1]
    assert {(d["kind"], d["id"]) for d in export[-1]["details"]["deleted"]} \
        == {("image", i) for i in run_ids(export[-1], "images")} | {("VM template", i) for i in run_ids(export[-1], "templates")}
    assert f"{stop.name}: stopping" in run.stderr
    assert "Rolled back: deleted VM template" in run.stderr and "Nothing is left of this run" in run.stderr


def run_ids(entry: dict, kind: str) -> list[int]:  # type: ignore[type-arg]
    ids: list[int] = entry["details"]["created"][kind]
    return ids


BROADWELL = 1
ACTIVE = 3


def _manager(server: SimServer) -> tuple[int, int | None, int]:
    """The flagged document-database VM of the deployed scenario: (id, last host, state)."""
    with server.site.lock:
        vm = next(v for v in server.site.vms.values() if v.name.startswith("manager_0"))
        return vm.id, vm.history[-1].host_id if vm.history else None, vm.state


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_during_a_move_records_the_vm_state_and_the_next_run_finishes_it(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner], stop: signal.Signals) -> None:
    server = sim_factory(scenario="deployed")
    runner = sitetk(server)
    vm_id = _manager(server)[0]
    updateconf = threading.Event()  # the move held at its CPU model update, once the VM is undeployed
    with server.site.lock:
        server.site.faults.hold_methods["one.vm.updateconf"] = updateconf
    argv = ("hosts", "move", str(vm_id), "--host", str(BROADWELL), "--yes", "--timeout", "60")
    run = runner.start(*argv)
    run.wait_for_line("setting CPU model")
    run.signal_while_held(stop, updateconf)
    code = run.finish()
    assert code == 128 + stop, run.stderr
    assert f"Move of VM {vm_id}" in run.stderr and "cancelled at step “deploy”" in run.stderr, run.stderr  # after the call in flight
    assert f"sitetk hosts move {vm_id} --host {BROADWELL}" in run.stderr  # how to finish it
    assert f"sitetk hosts redeploy {vm_id} --host" in run.stderr  # how to put it back
    moves = [e for e in runner.audit_entries() if e["action"] == "hosts.move" and e["outcome"] == "cancelled"]
    assert moves and moves[-1]["details"]["vm_state"].startswith("UNDEPLOYED"), moves
    assert moves[-1]["details"]["resume"] == f"sitetk hosts move {vm_id} --host {BROADWELL}"

    with server.site.lock:
        server.site.faults.hold_methods.clear()
    code, again = runner.run_here(*argv)
    assert code == 0, again.stderr
    assert _manager(server)[1:] == (BROADWELL, ACTIVE)


async def test_a_stop_signal_to_the_console_cancels_the_running_download_then_exits(
        sim_factory: Callable[..., SimServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The console (a dropped session's SIGHUP, or SIGTERM; SIGTERM here, as SIGHUP would also
    silence a test run's terminal): the running download is cancelled and rolled back, then the
    app exits with 143."""
    audit = tmp_path / "audit.log"
    monkeypatch.setenv(AUDIT_ENV, str(audit))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    server = sim_factory()
    before = _objects(server)
    # the process's own handler, never the default (which would end the test run): without the
    # console's handling the signal is swallowed here and the checks below fail
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    app = console_app(server)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.info is not None, what="the connection")
            app.open_screen("market")
            screen = await wait_for(pilot, lambda: isinstance(s := app.screen, MarketplaceScreen)
                                    and s.catalog is not None and not s.reloading and s, what="the catalog")
            key = screen.catalog.newest("service_dns").key
            screen.table.move_cursor_to_key(key)
            await wait_for(pilot, lambda: screen.shown_key == key, what="the detail")
            await pilot.press("d")
            modal = await wait_for_screen(pilot, DownloadModal, what="the download form")
            await wait_for(pilot, lambda: modal.market_app, what="the download form's appliance")
            modal.review()
            await wait_for(pilot, lambda: modal.plan is not None, what="the preview")
            server.site.hold_clock()  # the image stays LOCKED until the signal
            modal.start()
            await wait_for(pilot, lambda: any(e.data.get("state") == "LOCKED" for e in modal.events),
                           what="a LOCKED image")
            os.kill(os.getpid(), signal.SIGTERM)
            await wait_for(pilot, lambda: app.return_code is not None, timeout=60, what="the app's exit")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert app.return_code == 128 + signal.SIGTERM and app.return_value == 128 + signal.SIGTERM
    assert _objects(server) == before
    entries = [json.loads(line) for line in audit.read_text().splitlines()]
    export = [e for e in entries if e["action"] == "marketapp.export"]
    assert export and export[-1]["outcome"] == "cancelled" and export[-1]["details"]["left"] == []


def test_a_stop_block_left_open_by_an_ended_event_loop_does_not_disable_the_next() -> None:
    """A console or a command whose loop ended without leaving its block (a crash) must not leave
    the next one without its handling: the next loop installs its own and gets the signal."""

    kept: list[object] = []  # held, so that nothing closes the block

    async def leave_open() -> None:
        block = on_stop_signals(lambda _signum: None)
        block.__enter__()
        kept.append(block)

    asyncio.run(leave_open())
    received: list[int] = []

    async def handled() -> bool:
        with on_stop_signals(received.append) as active:
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 10
            while not received and time.monotonic() < deadline:
                await asyncio.sleep(0.01)  # paces the look at `received`; the signal is what is waited for
            return active

    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # never the default: it would end the test run
    try:
        assert asyncio.run(handled()) is True
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert received == [signal.SIGTERM]
