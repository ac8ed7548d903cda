"""Daemons run in sessions of their own; stop ends each and everything its session still holds
(by PID), a second stop finds nothing, and a PID handed out again is never taken for ours."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from realsite import processes
from tests.waiting import wait_until


def test_stop_ends_the_daemon_and_what_it_started(tmp_path: Path) -> None:
    state = tmp_path
    # a shell that leaves a child behind when it is told to stop
    daemon = processes.spawn("worker", ["sh", "-c", "sleep 300 & wait"], env={"PATH": os.environ["PATH"]},
                             log=tmp_path / "worker.log")
    processes.save(state, [daemon])
    assert processes.alive(daemon)
    wait_until(lambda: len(processes.session_members(daemon.pid)) == 2, 10, "the shell and its child")
    said: list[str] = []
    assert processes.stop_all(state, say=said.append) == 1
    assert processes.session_members(daemon.pid) == []
    assert not (state / processes.PIDS_FILE).exists()
    assert processes.stop_all(state, say=said.append) == 0  # idempotent


def test_a_recycled_pid_is_not_ours(tmp_path: Path) -> None:
    me = os.getpid()
    ticks = processes.start_ticks(me)
    assert ticks is not None
    stranger = processes.Daemon("old", me, ticks + 1, "x")
    assert not processes.alive(stranger)
    processes.stop_daemon(stranger, say=lambda _: None)  # must leave this very process alone
    assert processes.start_ticks(me) == ticks


def test_a_daemon_that_ended_counts_as_stopped(tmp_path: Path) -> None:
    log = tmp_path / "bad.log"
    daemon = processes.spawn("bad", ["sh", "-c", "echo boom; exit 3"], env={"PATH": os.environ["PATH"]}, log=log)
    processes.save(tmp_path, [daemon])
    wait_until(lambda: not processes.alive(daemon), 10, "the daemon to end")  # a zombie is not alive
    assert processes.stop_all(tmp_path, say=lambda _: None) == 0
    assert "boom" in log.read_text()


def test_detached_clients_are_found_by_this_frontends_path_and_ended(tmp_path: Path) -> None:
    remotes = tmp_path / "one" / "var" / "remotes"
    remotes.mkdir(parents=True)
    (remotes / "client.py").write_text("import time\ntime.sleep(300)\n")
    (tmp_path / "other.py").write_text("import time\ntime.sleep(300)\n")
    env = {"PATH": os.environ["PATH"]}
    # Popen returns once the child has exec'ed: its command line already names the script
    mine = processes.spawn("client", [sys.executable, str(remotes / "client.py")], env=env, log=tmp_path / "c.log")
    theirs = processes.spawn("other", [sys.executable, str(tmp_path / "other.py")], env=env, log=tmp_path / "o.log")
    try:
        assert processes.processes_under(remotes) == [mine.pid]
        assert processes.end_processes([mine.pid]) == []
        assert not processes.alive(mine) and processes.alive(theirs)
    finally:
        processes.end_processes([mine.pid, theirs.pid])
