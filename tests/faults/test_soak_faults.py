"""The soak's faults of issue 22 (bench.soak), each forced once: two operators moving the same VM,
a session that expires mid-run, the audit log made unwritable. Each ends in a documented exit
code with a message, nothing left behind, nothing duplicated, and no change without its record
(`bench.soak.checks.unrecorded_findings`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from bench.soak.checks import change_state, cloud_findings, unrecorded_findings
from bench.soak.operations import Operation, same_vm_moves
from bench.soak.run import TRACEBACK, Step, documented_exit_codes, prepare, run_step
from bench.soak.world import World
from tests.faults.processes import soak_run_here

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    world = World.start(root=tmp_path / "soak")
    try:
        prepare(world, soak_run_here(world))
        yield world
    finally:
        world.stop(remove=False)


def _step(world: World, step: Step) -> tuple[list[Any], list[Any]]:
    before, records = change_state(world), world.audit_lines()
    outcomes = run_step(world, step)
    findings = cloud_findings(world) + unrecorded_findings(world, step.index, before, records)
    for outcome in outcomes:
        assert outcome.code in documented_exit_codes() and not outcome.hung, outcome
        assert TRACEBACK not in outcome.stderr, outcome.stderr
    return outcomes, findings


def test_two_operators_moving_one_vm_one_runs_the_other_is_refused_at_once(world: World) -> None:
    import random

    moves = same_vm_moves(random.Random(4), world, "0m")
    moves = [Operation(m.name, (*m.argv[:4], "1", *m.argv[5:])) for m in moves]  # both to host 1
    outcomes, findings = _step(world, Step(0, moves, same_vm=True))
    assert findings == []
    codes = sorted(o.code for o in outcomes)
    assert codes[0] == 0, outcomes
    refused = [o for o in outcomes if o.code != 0]
    assert all("is being moved by" in (o.stdout + o.stderr) or "moves this VM" in (o.stdout + o.stderr)
               or "lock" in (o.stdout + o.stderr).lower() for o in refused), refused


@pytest.mark.parametrize("call", ["one.vm.info", "one.imagepool.info", "one.vm.deploy"])
def test_a_session_expiring_mid_run_is_an_authentication_error_with_nothing_left(world: World, call: str) -> None:
    ops = [Operation("hosts move", ("hosts", "move", "1", "--host", "0", "--timeout", "60", "--yes", "--json")),
           Operation("market download", ("market", "download", world.appliance_keys["service_dns"], "--datastore", "1",
                                         "--yes", "--json"))]
    outcomes, findings = _step(world, Step(0, ops, expire_at=call))
    assert findings == [], findings
    failed = [o for o in outcomes if o.code != 0]
    assert failed and all(o.code == 1 for o in failed), outcomes
    world.set_faults()  # logged in again: a move left half-way resumes
    again, findings = _step(world, Step(1, ops[:1]))
    assert again[0].code == 0 and findings == [], again


@pytest.mark.parametrize("how", ["directory", "dangling symlink"])
def test_with_the_audit_log_unwritable_nothing_changes(world: World, how: str) -> None:
    ops = [Operation("site edit", ("site", "edit", str(world.core), "--set", "soak_x=1", "--json")),
           Operation("market download", ("market", "download", world.appliance_keys["service_dns"], "--datastore", "1",
                                         "--yes", "--json")),
           Operation("hosts move", ("hosts", "move", "2", "--host", "0", "--timeout", "60", "--yes", "--json"))]
    before = change_state(world)
    outcomes, findings = _step(world, Step(0, ops, audit_broken=how))
    assert findings == [], findings
    for outcome in outcomes:
        assert outcome.code != 0 and "audit log" in (outcome.stdout + outcome.stderr), outcome
    assert change_state(world) == before
    assert not world.audit_log.is_dir() and not world.audit_log.is_symlink()  # mended: the next step records


def test_an_object_a_rollback_left_is_no_leftover_once_recorded_and_the_next_download_deletes_it(
        world: World) -> None:
    # the soak's step 771: the broken appliance's image ends in ERROR, and the session expires at
    # one.image.info, so the rollback cannot delete what the download created
    broken = Operation("market download", ("market", "download", world.appliance_keys["service_traffic_generator"],
                                           "--datastore", "1", "--yes", "--json"))
    outcomes, findings = _step(world, Step(0, [broken], expire_at="one.image.info"))
    assert outcomes[0].code == 1 and "Left in the cloud" in outcomes[0].stdout, outcomes
    assert findings == [], findings
    entries = {path: path.read_bytes() for path in world.root.glob("**/downloads/*/*.json")}
    assert any(path.name.startswith("image-") for path in entries), entries
    for path in entries:  # unrecorded, the same objects are leftovers
        path.unlink()
    assert any(f.kind == "leftover" and f.key.startswith("image ") for f in cloud_findings(world))
    for path, data in entries.items():
        path.write_bytes(data)
    world.set_faults()  # logged in again: the next download deletes them first
    dns = Operation("market download", ("market", "download", world.appliance_keys["service_dns"], "--datastore", "1",
                                        "--yes", "--json"))
    again, findings = _step(world, Step(1, [dns]))
    assert again[0].code == 0 and findings == [], (again, findings)
    assert json.loads(again[0].stdout)["result"]["cleaned"]
    assert not list(world.root.glob("**/downloads/*/*.json"))
