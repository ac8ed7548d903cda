"""A git run leaves nothing of itself to asyncio on any path (tui/adapters/git_process.py): when
`GitRepo._run` returns or raises, git and its helpers are reaped and the subprocess transport and
its pipes are closed. A transport left open was collected after its event loop had closed and
reported "Event loop is closed" as an unraisable exception (rarely, from tests/setup/test_status.py).

The stand-in for git leaves a helper in its process group holding its pipes, as a push's remote
helper does. The tests follow asyncio's own callbacks (the output, the exit) through a spy on the
loop's `subprocess_exec`, so they wait for events, never for time.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tui.adapters.git_repo import GitRemote, GitRepo
from tui.errors import SiteError


class SubprocessSpy:
    """Every subprocess the running loop starts: its transport, and an event for the first output
    and for the exit its protocol hears of."""

    def __init__(self) -> None:
        self.transports: list[asyncio.SubprocessTransport] = []
        self.output = asyncio.Event()
        self.exited = asyncio.Event()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        loop = asyncio.get_running_loop()
        start = loop.subprocess_exec

        async def spied(factory: Callable[[], asyncio.SubprocessProtocol], *args: Any,
                        **kwargs: Any) -> tuple[asyncio.SubprocessTransport, asyncio.SubprocessProtocol]:
            transport, protocol = await start(lambda: self._watched(factory()), *args, **kwargs)
            self.transports.append(transport)
            return transport, protocol

        monkeypatch.setattr(loop, "subprocess_exec", spied)

    def _watched(self, protocol: asyncio.SubprocessProtocol) -> asyncio.SubprocessProtocol:
        received, exited = protocol.pipe_data_received, protocol.process_exited

        def pipe_data_received(fd: int, data: bytes) -> None:
            received(fd, data)
            self.output.set()

        def process_exited() -> None:
            exited()
            self.exited.set()

        protocol.pipe_data_received = pipe_data_received  # type: ignore[method-assign]
        protocol.process_exited = process_exited  # type: ignore[method-assign]
        return protocol

    def assert_all_closed(self) -> None:
        assert self.transports, "no subprocess started"
        for transport in self.transports:
            assert transport.is_closing(), f"transport of pid {transport.get_pid()} left open"
            for fd in (1, 2):
                pipe = transport.get_pipe_transport(fd)
                assert pipe is None or pipe.is_closing(), f"pipe {fd} of pid {transport.get_pid()} left open"
            with pytest.raises(ChildProcessError):  # reaped: no longer a child that waitpid could wait for
                os.waitpid(transport.get_pid(), os.WNOHANG)


def _fake_git(tmp_path: Path, rest: str) -> tuple[str, Path]:
    """A `git` that starts a helper in its group holding its pipes (its pid in helper.pid), says
    `started` and then does `rest`."""
    helper = tmp_path / "helper.pid"
    script = tmp_path / "fake-git"
    script.write_text(f"#!/bin/sh\nsleep 600 &\necho $! > \"{helper}\"\necho started\n{rest}\n")
    script.chmod(0o700)
    return str(script), helper


def _gone(pid: int) -> bool:
    """`pid` has ended: no such process, or a zombie waiting for its parent (init) to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


async def _ends(pid: int) -> None:
    """Once `pid` has ended (its pidfd turns readable), or fail after 10 s. A killed process closes
    its files (which lets git's run here end) a moment before it has ended for good."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()
    loop.add_reader(pidfd, lambda: ended.done() or ended.set_result(None))
    try:
        await asyncio.wait_for(ended, 10)
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


@pytest.fixture
def helpers() -> Iterator[list[Path]]:
    """The helpers' pid files: any helper still running at the end is killed (a failed test's)."""
    files: list[Path] = []
    yield files
    for file in files:
        if file.exists():
            with_pid = int(file.read_text())
            if not _gone(with_pid):
                os.kill(with_pid, signal.SIGKILL)


@pytest.mark.parametrize("when", ["running", "exited"])
async def test_a_cancelled_git_leaves_no_process_nor_transport(tmp_path: Path, when: str, helpers: list[Path],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Cancelled while git runs, or once git has exited but its helper still holds the pipes: the
    cancellation goes on only once git's group has been stopped, git reaped and the transport and
    pipes closed. Before, a git that had exited was not signalled and its wait returned at once:
    the cancellation went on with the helper running and the transport open, to be collected
    after the loop had closed."""
    spy = SubprocessSpy()
    spy.install(monkeypatch)
    fake, helper = _fake_git(tmp_path, "wait" if when == "running" else "exit 0")
    helpers.append(helper)
    repo = GitRepo(GitRemote(str(tmp_path / "remote.git")), tmp_path, git=fake)
    task = asyncio.ensure_future(repo._run("status"))
    await (spy.output if when == "running" else spy.exited).wait()
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    spy.assert_all_closed()
    await _ends(int(helper.read_text()))  # the helper in git's group was stopped too


async def test_a_git_out_of_time_leaves_no_process_nor_transport(tmp_path: Path, helpers: list[Path],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    spy = SubprocessSpy()
    spy.install(monkeypatch)
    fake, helper = _fake_git(tmp_path, "wait")
    helpers.append(helper)
    repo = GitRepo(GitRemote(str(tmp_path / "remote.git")), tmp_path, git=fake, timeout=0.2)
    with pytest.raises(SiteError, match="git timed out"):
        await repo._run("fetch")
    spy.assert_all_closed()
    await _ends(int(helper.read_text()))


async def test_a_git_that_ends_leaves_no_transport(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ordinary path: `_run` returns git's output with the transport already closed (waiting
    for git's exit alone could return while the transport's closing was still to come)."""
    spy = SubprocessSpy()
    spy.install(monkeypatch)
    repo = GitRepo(GitRemote(str(tmp_path / "remote.git")), tmp_path)
    code, out, _err = await repo._run("--version")
    assert code == 0 and out.startswith("git version")
    spy.assert_all_closed()
