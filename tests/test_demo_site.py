"""`sitetk --demo`'s site in a child process (tui.demo_site.SimChild): it starts, announces its
endpoints and then its repositories, serves the console's connection, and never outlives its
parent: closed, dropped, left by an exception, or orphaned by a parent that dies."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from tui.console import demo_settings_for
from tui.demo_site import SimChild
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.settings import Settings

ROOT = Path(__file__).resolve().parents[1]


def _poll(condition: Callable[[], bool], what: str, deadline_s: float = 30.0) -> None:
    """Wait until `condition()` holds (a state polled with a deadline, not a timed sleep)."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {deadline_s:g} s")
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by a dead parent's init) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


async def test_the_console_connects_to_the_child_and_close_stops_it(tmp_path: Path) -> None:
    child = SimChild(("--vms", "3")).start()
    try:
        base = Settings(state_dir=tmp_path / "console", audit_log=tmp_path / "audit.log")
        starting = Settings.for_site(endpoint="the demo site (starting)", session="", flow_url="", base=base)

        async def settings_ready() -> Settings:
            return demo_settings_for(await child.endpoints(), base)

        connection = SiteConnection(starting, settings_ready=settings_ready, repositories_ready=child.repositories)
        try:
            info = await connection.connect()
            assert info.user == "oneadmin" and info.version and connection.endpoint.startswith("http://127.0.0.1:")
            assert len(await connection.cloud.list_vms()) >= 3
            await connection.wait_for_repositories()
            settings = connection.settings
            assert settings.sites_repo and Path(settings.sites_repo).is_dir()
            assert settings.vault_password_file is not None and settings.vault_password_file.is_file()
        finally:
            await connection.close()
        state_dir, pid = child.state_dir, child.pid
        assert state_dir is not None and pid is not None and (state_dir / "sim.log").exists()
    finally:
        child.close()
    assert not child.running and not _alive(pid) and not state_dir.exists()
    child.close()  # a second close is harmless


def test_a_dropped_child_object_stops_the_process() -> None:
    child = SimChild().start()
    endpoints = child.wait_endpoints()
    pid, state_dir = child.pid, endpoints.state_dir
    assert pid is not None and _alive(pid) and state_dir.is_dir()
    del child
    gc.collect()
    assert not _alive(pid) and not state_dir.exists()


def test_an_exception_in_the_with_block_stops_the_process() -> None:
    with pytest.raises(KeyError):
        with SimChild() as child:
            child.wait_endpoints()
            pid, state_dir = child.pid, child.state_dir
            raise KeyError("boom")
    assert pid is not None and state_dir is not None
    assert not _alive(pid) and not state_dir.exists()


def test_the_child_stops_on_its_own_when_its_parent_dies(tmp_path: Path) -> None:
    # the parent dies abruptly (os._exit: no finally, no atexit): the child sees its stdin close
    parent = (
        "import json, os, sys\n"
        "from tui.demo_site import SimChild\n"
        "child = SimChild().start()\n"
        "child.wait_endpoints()\n"
        "print(json.dumps({'pid': child.pid, 'state_dir': str(child.state_dir)}), flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run([sys.executable, "-c", parent], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    announced = json.loads(done.stdout.splitlines()[-1])
    pid, state_dir = announced["pid"], Path(announced["state_dir"])
    _poll(lambda: not _alive(pid) and not state_dir.exists(), "the orphaned site did not stop and clean up")


def test_a_child_that_fails_to_start_gives_a_clear_error() -> None:
    with SimChild(("--vms", "-1")) as child:  # refused by `sitetk sim`: exits 2 with a reason
        with pytest.raises(SiteError) as caught:
            child.wait_endpoints()
    error = caught.value
    assert error.title == "The demo site did not start" and not error.retryable
    assert "exited with code 2" in error.detail and "negative" in error.detail
    assert "Tried: sitetk sim --vms -1" in error.detail and "How to fix" in error.detail


async def test_a_silent_child_times_out_with_a_clear_error(tmp_path: Path) -> None:
    silent = tmp_path / "silent-python"
    silent.write_text("#!/bin/sh\nexec sleep 60\n")
    silent.chmod(0o755)
    child = SimChild(python=str(silent), start_timeout=0.3, stop_grace=(0.1, 5.0)).start()
    try:
        with pytest.raises(SiteError) as caught:
            await child.endpoints()
        assert "announced no endpoints within 0.3 s" in caught.value.detail
        assert "How to fix" in caught.value.detail
        pid = child.pid
    finally:
        child.close()
    assert pid is not None and not _alive(pid)


def test_sim_builds_repositories_on_request_only(tmp_path: Path) -> None:
    state = tmp_path / "state"
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", "sim", "--state-dir", str(state), "--repositories-on-request",
         "--exit-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    try:
        first = json.loads(process.stdout.readline())
        assert first["repositories"] == "on request"
        # the site serves while nothing is built: not even a build directory has appeared
        assert not Path(first["sites_repo"]).exists() and not Path(first["library_repo"]).exists()
        process.stdin.write("something else\nrepositories\nrepositories\n")  # asked twice: built once
        process.stdin.flush()
        assert json.loads(process.stdout.readline()) == {"repositories": "ready"}
        assert Path(first["sites_repo"]).is_dir() and Path(first["library_repo"]).is_dir()
    finally:
        process.stdin.close()
        assert process.wait(timeout=30) == 0


def test_sim_never_asked_for_repositories_stops_at_once(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", "sim", "--state-dir", str(tmp_path / "state"), "--repositories-on-request",
         "--exit-on-stdin-eof", "--remove-state-dir"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    assert json.loads(process.stdout.readline())["repositories"] == "on request"
    process.stdin.close()
    assert process.wait(timeout=10) == 0  # no wait for a build that never started
    assert not (tmp_path / "state").exists()


async def test_child_repositories_are_built_once_asked(tmp_path: Path) -> None:
    with SimChild() as child:
        endpoints = await child.endpoints()
        assert not Path(endpoints.sites_repo).exists()
        child.request_repositories()
        child.request_repositories()  # only the first call writes
        await child.repositories()
        assert Path(endpoints.sites_repo).is_dir() and Path(endpoints.library_repo).is_dir()


async def test_waiting_for_repositories_asks_for_them(tmp_path: Path) -> None:
    with SimChild() as child:
        endpoints = await child.endpoints()
        await child.repositories()  # nobody asked before: waiting asks
        assert Path(endpoints.sites_repo).is_dir()


def test_sim_announces_repositories_on_a_second_line(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", "sim", "--state-dir", str(tmp_path / "state"), "--repositories-later",
         "--exit-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdin is not None
    try:
        first = json.loads(process.stdout.readline())
        assert first["repositories"] == "building" and first["xmlrpc"].startswith("http://")
        assert json.loads(process.stdout.readline()) == {"repositories": "ready"}
        assert Path(first["sites_repo"]).is_dir()
    finally:
        process.stdin.close()  # end of stdin: the site stops and exits 0
        assert process.wait(timeout=30) == 0


async def test_asking_a_dead_child_for_its_repositories_says_it_exited(tmp_path: Path) -> None:
    with SimChild() as child:
        await child.endpoints()
        assert child.pid is not None
        os.kill(child.pid, 9)
        _poll(lambda: not child.running, "the child to exit")
        with pytest.raises(SiteError) as caught:
            await child.repositories()  # the request goes to a closed pipe: no error of its own
        assert caught.value.title == "Demo repositories not ready"
        assert "exited with code -9" in caught.value.detail and "How to fix" in caught.value.detail


async def test_the_demo_keeps_its_state_in_its_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--demo` writes audit records, toolkit records, the move journal, locks and clones under the
    demo site's temporary folder, never into the operator's state folder (issue 20 item 10): with
    HOME, XDG_STATE_HOME and SITETK_AUDIT_LOG pointing at the operator's, nothing is written there."""
    from tui.console import demo_connection
    from tui.domain.site_record import SiteRecord
    from tui.procedures.audit import AUDIT_ENV
    from tui.procedures.hosts.move_journal import MoveJournal, MoveOrigin
    from tui.procedures.market.download_lock import download_lock_file
    from tui.procedures.site.workspace import repos_dir
    from tui.procedures.site_record import load_site_record, save_site_record

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv(AUDIT_ENV, str(home / "audit.log"))
    settings = Settings.load()
    assert str(settings.state_dir).startswith(str(home))  # the operator's state folder, as a real run uses
    child = SimChild(("--vms", "2")).start()
    try:
        connection = demo_connection(child, settings)
        try:
            await connection.connect()
            demo = child.state_dir
            assert demo is not None
            used = connection.settings
            connection.audit.record("demo.test", "the demo's record")
            record = SiteRecord(endpoint=used.xmlrpc_url, service_id=7, service_name="toolkit", template_id=1,
                                template_name="toolkit", platform_version="7.0.0", created="2026-01-01T00:00:00Z")
            record_path = save_site_record(used, record)
            assert load_site_record(used) == record
            journal = MoveJournal.of(used)
            journal.begin(MoveOrigin(vm_id=3, host_id=0, host_name="host0", cpu_model="x86_64", target_host_id=1))
            written = [connection.audit.path, record_path, journal.path(3), download_lock_file(connection, 5),
                       repos_dir(used)]
            for path in written:
                assert Path(path).resolve().is_relative_to(demo.resolve()), path
            assert connection.audit.path.is_file() and journal.path(3).is_file()
        finally:
            await connection.close()
    finally:
        child.close()
    assert not any(home.rglob("*")), sorted(str(p) for p in home.rglob("*"))
    assert child.state_dir is not None and not child.state_dir.exists()
