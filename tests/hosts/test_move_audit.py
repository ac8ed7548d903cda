"""The move's journal and its one audit record: the origin of an unfinished move kept in its own
0600 file (not the audit log) until the VM runs where it was sent, and each run of a move
operation recorded once by the pipeline with its changes, or where it stopped and what is left."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.hosts.conftest import FAST, Connect
from tests.operating import operate
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.procedures.hosts.move_journal import MAX_ENTRY_BYTES, MoveJournal, MoveOrigin
from tui.procedures.hosts.move_operation import MoveVms, RedeployVm
from tui.procedures.hosts.move_plan import STEP_DEPLOY, STEP_WAIT_UNDEPLOYED, STEPS
from tui.procedures.hosts.move_vm import MoveCancelled, MoveFailed
from tui.procedures.operation import RunContext
from tui.procedures.progress import Progress
from tui.sim.server import SimServer

WESTMERE, CASCADELAKE, BROADWELL = 2, 0, 1


async def _manager_id(site: SiteConnection) -> int:
    [row] = (await load_inventory(site)).db_vms
    return row.vm.id


def _records(site: SiteConnection, start: int) -> list[dict]:  # type: ignore[type-arg]
    return site.audit.entries()[start:]


def test_the_journal_keeps_the_first_origin_privately_until_the_move_ends(tmp_path: Path) -> None:
    journal = MoveJournal(tmp_path / "moves" / "site")
    assert journal.origin(7) is None
    journal.begin(MoveOrigin(7, 2, "kvm-westmere-01", "", 1))
    path = journal.path(7)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    # a later start of an unfinished move (a resume, a put-back) keeps where the VM was first
    journal.begin(MoveOrigin(7, 1, "kvm-broadwell-01", "Broadwell-noTSX", 2, redeploy=True))
    found = journal.origin(7)
    assert found is not None and found.as_tuple() == (2, "kvm-westmere-01", "") and found.started
    journal.end(7)
    assert journal.origin(7) is None and not path.exists()
    journal.end(7)  # ending twice is fine


@pytest.mark.parametrize("content, says", [("{not json", "cannot be read"), ('{"vm_id": 8}', "cannot be read"),
                                           ('{"vm_id": 9, "host_id": 1, "target_host_id": 2}', "names VM 9"),
                                           ("x" * (MAX_ENTRY_BYTES + 1), "cannot be read")])
def test_an_unreadable_journal_entry_is_an_error_naming_the_file(tmp_path: Path, content: str, says: str) -> None:
    journal = MoveJournal(tmp_path)
    journal.path(8).write_text(content)
    with pytest.raises(SiteError, match=says) as caught:
        journal.origin(8)
    assert str(journal.path(8)) in caught.value.detail


async def test_a_move_operation_is_recorded_once_with_its_changes(deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    vm_id = await _manager_id(site)
    start = len(site.audit.entries())
    await operate(site, MoveVms((vm_id,), CASCADELAKE, timeouts=FAST))
    [record] = _records(site, start)
    assert (record["action"], record["outcome"]) == ("hosts.move", "ok") and f"VM {vm_id}" in record["target"]
    details = record["details"]
    assert [c["action"] for c in details["changes"]] == ["hosts.undeploy", "hosts.set_cpu_model", "hosts.deploy"]
    assert details["changes"][2]["cli"] == f"onevm deploy {vm_id} {CASCADELAKE}"
    assert [(s["step"], s["state"]) for s in details["steps"]] == [(step, "done") for step in STEPS]
    assert details["outcome"] == "done" and details["vm_state"].startswith("RUNNING")
    assert (details["origin_host_id"], details["target_host_id"]) == (WESTMERE, CASCADELAKE)
    assert MoveJournal.of(site.settings).origin(vm_id) is None  # a finished move leaves no journal entry


async def test_a_failed_move_is_recorded_once_with_what_is_left_and_the_put_back_clears_the_journal(
        deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    vm_id = await _manager_id(site)
    deployed.site.faults.fail_next_deploys = 1
    start = len(site.audit.entries())
    with pytest.raises(MoveFailed):
        await operate(site, MoveVms((vm_id,), BROADWELL, timeouts=FAST))
    [record] = _records(site, start)
    assert (record["action"], record["outcome"]) == ("hosts.move", "failed")
    details = record["details"]
    assert details["step"] == STEP_DEPLOY and details["vm_state"].startswith("UNDEPLOYED (CPU model Broadwell-noTSX")
    assert [c["action"] for c in details["changes"]] == ["hosts.undeploy", "hosts.set_cpu_model"]
    assert details["resume"] == f"sitetk hosts move {vm_id} --host {BROADWELL}"
    assert details["put_back"] == f"sitetk hosts redeploy {vm_id} --host {WESTMERE} --cpu-model ''"
    assert details["resume"] in details["left"] and details["put_back"] in details["left"]
    assert "UNDEPLOYED" in details["left"] and details["steps_done"]
    assert site.settings.one_password not in site.audit.path.read_text()
    origin = MoveJournal.of(site.settings).origin(vm_id)
    assert origin is not None and origin.as_tuple()[0::2] == (WESTMERE, "")  # the journal, not the audit log

    # the put-back takes the origin's CPU model from the journal, and clears it
    start = len(site.audit.entries())
    await operate(site, RedeployVm(vm_id, WESTMERE, timeouts=FAST))
    [back] = _records(site, start)
    assert (back["action"], back["outcome"]) == ("hosts.redeploy", "ok") and back["details"]["cpu_model"] == ""
    assert MoveJournal.of(site.settings).origin(vm_id) is None
    vm = await site.cloud.vm_info(vm_id)
    assert vm.summary.host_id == WESTMERE and vm.cpu_model == ""


async def test_a_cancelled_move_is_recorded_once_with_the_vm_state(deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    vm_id = await _manager_id(site)
    context = RunContext(emit=lambda event: None)

    def emit(event: Progress) -> None:
        if event.step == STEP_WAIT_UNDEPLOYED:
            context.cancel.set()

    context.emit = emit
    start = len(site.audit.entries())
    with pytest.raises(MoveCancelled):
        await operate(site, MoveVms((vm_id,), CASCADELAKE, timeouts=FAST), context=context)
    [record] = _records(site, start)
    assert (record["action"], record["outcome"]) == ("hosts.move", "cancelled")
    details = record["details"]
    assert details["step"] == STEP_WAIT_UNDEPLOYED and details["vm_state"]
    assert [c["action"] for c in details["changes"]] == ["hosts.undeploy"]
    assert details["resume"] == f"sitetk hosts move {vm_id} --host {CASCADELAKE}" and details["resume"] in details["left"]
    assert MoveJournal.of(site.settings).origin(vm_id) is not None
