"""Two moves of the same VM at once (issue 22 item 3): the second is refused at once, naming the
first; a lock a killed move left behind is recognised as stale and taken over.

Real `sitetk hosts move` processes on the deployed scenario's manager VM. The first is held in
the middle of its move with SIGSTOP (it keeps its lock: it is only stopped), so the second runs
against a move that is certainly under way; SIGCONT lets the first finish. Before, the second
undeployed nothing and waited "for UNDEPLOYED: VM is RUNNING" until its time limit."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from functools import partial
from pathlib import Path
from typing import Callable

import pytest

from tests.faults.processes import Runner
from tests.hosts.conftest import FAST, collect, settings_for
from tui.adapters.file_lock import Holder, hold, probe, read_holder
from tui.procedures.connection import SiteConnection
from tui.procedures.hosts.move_lock import MoveBusy, move_lock_file
from tui.procedures.hosts.move_plan import plan_move
from tui.procedures.hosts.move_vm import MoveLedger, move_vm
from tui.sim.server import SimServer

BROADWELL, ACTIVE = 1, 3
#: a refusal is at once: far below any wait of a move (the undeploy wait alone is 600 s)
AT_ONCE_S = 30.0


def _manager(server: SimServer) -> tuple[int, int | None, int]:
    """The flagged document-database VM of the deployed scenario: (id, last host, state)."""
    with server.site.lock:
        vm = next(v for v in server.site.vms.values() if v.name.startswith("manager_0"))
        return vm.id, vm.history[-1].host_id if vm.history else None, vm.state


def _held_move(server: SimServer, runner: Runner, vm_id: int) -> "tuple[object, int]":
    """A `hosts move` stopped (SIGSTOP) once it has undeployed the VM: it holds the VM's lock."""
    argv = ("hosts", "move", str(vm_id), "--host", str(BROADWELL), "--yes", "--timeout", "60")
    first = runner.start(*argv)
    first.wait_for_line("undeploy requested")
    first.process.send_signal(signal.SIGSTOP)
    return first, first.process.pid


def test_a_second_move_of_the_same_vm_is_refused_at_once_naming_the_first(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner]) -> None:
    server = sim_factory(scenario="deployed")
    runner = sitetk(server)
    vm_id = _manager(server)[0]
    first, pid = _held_move(server, runner, vm_id)
    try:
        started = time.monotonic()
        code, second = runner.run_here("hosts", "move", str(vm_id), "--host", str(BROADWELL), "--yes", "--timeout", "60")
        took = time.monotonic() - started
        # the plan refuses it, before any confirmation or change, naming the holder
        assert code == 1 and took < AT_ONCE_S, second.stderr
        assert f"is being moved by process {pid} (" in second.stderr and "hosts move" in second.stderr, second.stderr
        assert "Traceback" not in second.stderr
        # --all-flagged leaves that VM out, saying why
        code, flagged = runner.run_here("hosts", "move", "--all-flagged", "--dry-run", "--json")
        assert f"is being moved by process {pid}" in flagged.stdout + flagged.stderr
    finally:
        first.process.send_signal(signal.SIGCONT)  # type: ignore[attr-defined]
    assert first.finish() == 0, first.stderr  # type: ignore[attr-defined]
    assert _manager(server)[1:] == (BROADWELL, ACTIVE)
    # only the first changed the VM: one undeploy, one deploy
    moves = [e for e in runner.audit_entries() if e["action"] == "hosts.move"]
    assert [e["outcome"] for e in moves] == ["ok"], moves
    assert [c["action"] for c in moves[0]["details"]["changes"]].count("hosts.undeploy") == 1


async def test_a_move_that_finds_the_vm_locked_when_it_starts_changes_nothing(
        sim_factory: Callable[..., SimServer], tmp_path: Path) -> None:
    """Planned before the other move took the lock (the plan's check passed): the move itself is
    refused before its first change, with nothing written to the move journal."""
    server = sim_factory(scenario="deployed")
    vm_id = _manager(server)[0]
    site = SiteConnection(settings_for(server))
    try:
        plan = await plan_move(site, vm_id, BROADWELL)
        lock_file = move_lock_file(site, vm_id)
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        ledger = MoveLedger()
        taken, done = asyncio.Event(), asyncio.Event()

        async def other_holder() -> None:  # another task: its own descriptor, as another process's
            async with hold(lock_file, 0):
                taken.set()
                await done.wait()

        holder = asyncio.create_task(other_holder())
        await taken.wait()
        started = time.monotonic()
        try:
            with pytest.raises(MoveBusy) as caught:
                await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=ledger))
        finally:
            done.set()
            await holder
        busy = caught.value
        assert busy.holder.pid == os.getpid() and time.monotonic() - started < AT_ONCE_S
        assert busy.title == f"VM {vm_id} {plan.vm_name} is being moved by {busy.holder.describe()}"
        assert "Nothing was changed" in busy.detail
        assert ledger.vms == [] and _manager(server)[2] == ACTIVE
        assert not list((Path(site.settings.state_dir) / "moves").rglob("vm-*.json"))
    finally:
        await site.close()


def test_a_lock_left_by_a_killed_move_is_recognised_as_stale_and_the_move_finishes(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner]) -> None:
    server = sim_factory(scenario="deployed")
    runner = sitetk(server)
    vm_id = _manager(server)[0]
    first, pid = _held_move(server, runner, vm_id)
    first.process.send_signal(signal.SIGKILL)  # type: ignore[attr-defined]
    first.process.wait(30)  # type: ignore[attr-defined]
    lock_files = list((runner.home / "state").rglob("move-*.lock"))
    assert len(lock_files) == 1 and read_holder(lock_files[0]).pid == pid  # what the killed move left
    assert probe(lock_files[0]) is None  # the kernel released it
    code, again = runner.run_here("hosts", "move", str(vm_id), "--host", str(BROADWELL), "--yes", "--timeout", "60")
    assert code == 0, again.stderr
    assert f"a lock left by process {pid} (" in again.stderr and "was stale: taken over" in again.stderr
    assert _manager(server)[1:] == (BROADWELL, ACTIVE)
    [record] = [e for e in runner.audit_entries() if e["action"] == "hosts.move"]
    assert record["outcome"] == "ok" and f"process {pid}" in record["details"]["stale_lock"]
    # released normally: nothing is left to look stale next time
    assert lock_files[0].read_bytes() == b"" and probe(lock_files[0]) is None


async def test_the_lock_file_tells_a_normal_release_from_a_killed_holder(tmp_path: Path) -> None:
    lock_file = tmp_path / "move.lock"
    left: list[Holder] = []
    async with hold(lock_file, 0, left=left):
        assert probe(lock_file) is not None and probe(lock_file).pid == os.getpid()  # type: ignore[union-attr]
    assert left == [] and probe(lock_file) is None and lock_file.read_bytes() == b""
    # a holder killed outright leaves its description behind: the next holder is told
    lock_file.write_text('{"pid": 999999, "command": "sitetk hosts move", "since": "20:01:02 UTC"}')
    async with hold(lock_file, 0, left=left):
        pass
    assert left == [Holder(999999, "sitetk hosts move", "20:01:02 UTC")]
    assert probe(tmp_path / "missing.lock") is None
