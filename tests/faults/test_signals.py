"""INT, TERM and HUP to a real `sitetk` process in the middle of a change: the same cancellation.

The download is held at a known point (its image LOCKED: the embedded site copies slowly), then
signalled; what the run created is deleted, the audit log says so, the exit status is 128+N.
A move is signalled while its VM is undeployed: the audit log records where it stopped and the
VM's state, stderr says how to finish, and the same command run again completes the move.
"""

from __future__ import annotations

import signal
from typing import Callable

import pytest

from tests.faults.processes import POLL, Runner
from tui.sim.server import SimServer

STOPS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def _objects(server: SimServer) -> tuple[set[int], set[int]]:
    with server.site.lock:
        return set(server.site.images), set(server.site.templates)


@pytest.mark.parametrize("stop", STOPS, ids=[s.name for s in STOPS])
def test_a_stop_signal_during_a_download_deletes_what_it_created_and_audits_it(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner], stop: signal.Signals) -> None:
    server = sim_factory(time_scale=50.0)  # the image stays LOCKED for minutes: a known point to signal
    runner = sitetk(server)
    before = _objects(server)
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
    with server.site.lock:  # hold the move once the VM is undeployed: its CPU model update is slow
        server.site.faults.method_delay_ms["one.vm.updateconf"] = 3000
    argv = ("hosts", "move", str(vm_id), "--host", str(BROADWELL), "--yes", "--timeout", "60")
    run = runner.start(*argv)
    run.wait_for_line("setting CPU model")
    run.process.send_signal(stop)
    code = run.finish()
    assert code == 128 + stop, run.stderr
    assert f"Move of VM {vm_id}" in run.stderr and "cancelled at step “deploy”" in run.stderr, run.stderr  # after the call in flight
    assert f"sitetk hosts move {vm_id} --host {BROADWELL}" in run.stderr  # how to finish it
    assert f"sitetk hosts redeploy {vm_id} --host" in run.stderr  # how to put it back
    moves = [e for e in runner.audit_entries() if e["action"] == "hosts.move" and e["outcome"] == "cancelled"]
    assert moves and moves[-1]["details"]["vm_state"].startswith("UNDEPLOYED"), moves
    assert moves[-1]["details"]["resume"] == f"sitetk hosts move {vm_id} --host {BROADWELL}"

    with server.site.lock:
        server.site.faults.method_delay_ms.clear()
    code, again = runner.run(*argv)
    assert code == 0, again.stderr
    assert _manager(server)[1:] == (BROADWELL, ACTIVE)
