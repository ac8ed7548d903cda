"""A soak stopped while it starts a command (SIGTERM to `python -m bench.soak` between the child's
fork and `Popen` returning) leaves no command running: the stop is put off until the command is
known, and the world ends every command it started when it stops."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from bench.soak.world import World, request_stop, stop_held
from tests.faults.processes import running_in

pytestmark = pytest.mark.timeout(120)


def test_a_stop_while_held_comes_when_the_hold_ends_and_at_once_otherwise() -> None:
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with stop_held():
            request_stop(signal.SIGTERM, None)
            reached.append("after the stop, still held")
    assert reached == ["after the stop, still held"]
    with stop_held():
        pass  # the stop was taken: nothing pending
    with pytest.raises(KeyboardInterrupt):
        request_stop(signal.SIGTERM, None)


def test_a_command_started_as_the_soak_was_stopped_is_ended_with_the_world(tmp_path: Path) -> None:
    root = tmp_path / "soak"
    world = World.start(root=root)
    try:
        world.set_faults(latency_ms=60_000)  # the command waits on the site: it would outlive the soak
        with pytest.raises(KeyboardInterrupt):
            with stop_held():
                request_stop(signal.SIGTERM, None)  # the stop arrives while the command is being started
                world.spawn(("market", "list"))
        [process] = world.spawned
        assert process.poll() is None
    finally:
        world.set_faults()
        world.stop(remove=False)
    assert process.returncode is not None
    assert running_in(root) == []
