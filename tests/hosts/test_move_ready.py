"""A move waits for READY=YES only when the VM can report it (issue 20 item 14).

Only the guest writes READY, through the gate, with the token its CONTEXT's TOKEN=YES gives it,
and the contextualization packages report only with REPORT_READY=YES (tui.domain.guest_ready
cites the platform's and the packages' sources). A database VM without them is moved and the move
ends once it runs on its target, saying why it does not wait and what to check; before, it waited
the whole READY limit (900 s) for a report that could never come. The embedded site follows the
same rule (tui.sim.appliances): such a VM never publishes READY."""

from __future__ import annotations

from functools import partial

import pytest

from tests.hosts.conftest import Connect, collect
from tui.domain.attributes import Attributes
from tui.domain.guest_ready import cannot_report_ready
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.procedures.hosts.move_plan import STEP_WAIT_READY, STEPS, MoveTimeouts, plan_move, preview_move
from tui.procedures.hosts.move_vm import MoveLedger, move_vm
from tui.sim.server import SimServer

CASCADELAKE = 0
#: READY's limit here: a move that waited for a VM that cannot report would fail after it (never
#: reached by the fixed move, which does not wait)
READY_LIMIT = 20.0
TIMEOUTS = MoveTimeouts(undeploy=30.0, running=30.0, ready=READY_LIMIT, poll_interval=0.02)
GOOD = [("TOKEN", "YES"), ("REPORT_READY", "YES"), ("NETWORK", "YES")]


def _why(context: list[tuple[str, str]] | None) -> str:
    return cannot_report_ready(7, Attributes.from_template([("CONTEXT", context)] if context is not None else []))


@pytest.mark.parametrize(("context", "why"), [
    (None, "has no CONTEXT"),
    ([("NETWORK", "YES")], "no TOKEN=YES"),
    ([("TOKEN", "NO"), ("REPORT_READY", "YES")], "no TOKEN=YES"),
    ([("TOKEN", "YES")], "no REPORT_READY=YES"),
    ([*GOOD, ("ONEGATE_ENDPOINT", "http://127.0.0.1:5030")], "a loopback address"),
    ([*GOOD, ("ONEGATE_ENDPOINT", "http://localhost:5030")], "a loopback address"),
], ids=["no-context", "no-token", "token-no", "no-report-ready", "gate-loopback", "gate-localhost"])
def test_a_vm_that_cannot_report_ready_says_why(context: list[tuple[str, str]] | None, why: str) -> None:
    assert why in _why(context)


def test_a_vm_with_a_token_and_report_ready_can_report() -> None:
    assert _why(GOOD) == ""
    assert _why([*GOOD, ("ONEGATE_ENDPOINT", "http://10.0.0.1:5030")]) == ""


def _strip_context(server: SimServer, vm_id: int) -> None:
    """The manager VM as a VM made by hand: no CONTEXT at all."""
    with server.site.lock:
        vm = server.site.vms[vm_id]
        vm.template = [(name, value) for name, value in vm.template if name != "CONTEXT"]
        vm.touch()


async def test_a_vm_without_context_is_moved_without_waiting_for_ready(deployed: SimServer, connect: Connect,
                                                                       ledger: MoveLedger) -> None:
    site = connect(deployed)
    [row] = (await load_inventory(site)).db_vms
    _strip_context(deployed, row.id)
    plan = await plan_move(site, row.id)
    assert plan.target_host_id == CASCADELAKE and not plan.wait_ready and "has no CONTEXT" in plan.ready_unreported
    assert plan.steps == STEPS[:-1]
    preview = preview_move(plan, TIMEOUTS)
    assert any("No wait for READY=YES" in c.description for c in preview.changes)
    assert not any("reports READY=YES (at most" in c.description for c in preview.changes)
    assert any("Not waiting for READY=YES" in w and "onevm updateconf" in w for w in preview.warnings)

    events = await collect(partial(move_vm, site, plan, timeouts=TIMEOUTS, ledger=ledger))
    assert not [e for e in events if e.step == STEP_WAIT_READY]
    assert "not waiting for READY=YES" in events[-1].message and "has no CONTEXT" in events[-1].message
    assert events[-1].done == events[-1].total == len(STEPS) - 1
    after = await site.cloud.vm_info(row.id)
    assert after.summary.running and after.summary.host_id == CASCADELAKE and not after.ready
    [entry] = ledger.vms
    assert entry["outcome"] == "done" and "has no CONTEXT" in entry["ready_not_waited"]


async def test_a_vm_with_context_still_waits_for_ready(deployed: SimServer, connect: Connect,
                                                       ledger: MoveLedger) -> None:
    site = connect(deployed)
    [row] = (await load_inventory(site)).db_vms
    plan = await plan_move(site, row.id)
    assert plan.wait_ready and plan.ready_unreported == "" and plan.steps == STEPS
    events = await collect(partial(move_vm, site, plan, timeouts=TIMEOUTS, ledger=ledger))
    assert [e for e in events if e.step == STEP_WAIT_READY and e.state == "done"]
    assert (await site.cloud.vm_info(row.id)).ready
