"""Operation 7 against the embedded site: plan, preview, move, resume after a failure, put back, cancel."""

from __future__ import annotations

import asyncio
from functools import partial

import pytest

from tests.hosts.conftest import FAST, Connect, collect
from tui.domain.cpu import HOST_PASSTHROUGH, VmVerdictKind
from tui.domain.one_states import HostState
from tui.domain.vm_detail import VmDetail
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.procedures.hosts.move_journal import MoveJournal
from tui.procedures.hosts.move_plan import (
    PASSTHROUGH_WARNING,
    STEP_DEPLOY,
    STEP_SET_MODEL,
    STEP_UNDEPLOY,
    STEP_WAIT_UNDEPLOYED,
    STEPS,
    plan_flagged,
    plan_move,
    plan_redeploy,
    preview_move,
)
from tui.procedures.hosts.move_vm import UPDATECONF_SECTIONS, MoveFailed, MoveLedger, move_many, move_vm
from tui.procedures.progress import Progress
from tui.sim.server import SimServer

WESTMERE, CASCADELAKE, BROADWELL, LEGACY, ARM, BROADWELL_DISABLED = 2, 0, 1, 3, 4, 5


async def _manager(site: SiteConnection) -> VmDetail:
    inventory = await load_inventory(site)
    [row] = inventory.db_vms
    return row.vm


def _sections(vm: VmDetail) -> dict[str, object]:
    """The updateconf sections other than CPU_MODEL, as the platform returns them."""
    return {name: value for name, value in vm.template.items if name in UPDATECONF_SECTIONS and name != "CPU_MODEL"}


def _actions(ledger: MoveLedger) -> list[tuple[str, str]]:
    """What the moves did as (action, outcome): each move's start, its changes, how it ended (the
    ledger the run's one audit record is written from)."""
    out: list[tuple[str, str]] = []
    for vm in ledger.vms:
        action = "hosts.redeploy" if vm["redeploy"] else "hosts.move"
        out += [(action, "started")] + [(change["action"], "ok") for change in vm["changes"]]
        if vm["outcome"] != "running":
            out.append((action, vm["outcome"]))
    return out


async def test_move_to_a_compatible_host_makes_the_manager_ready(deployed: SimServer, connect: Connect,
                                                                 ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    assert manager.summary.host_id == WESTMERE and not manager.cpu_model
    before = _sections(manager)
    assert "OS" in before and "CONTEXT" in before

    plan = await plan_move(site, manager.id)
    assert (plan.target_host_id, plan.cpu_model) == (CASCADELAKE, "Cascadelake-Server-noTSX")
    assert (plan.origin_host_id, plan.origin_cpu_model) == (WESTMERE, "")

    events = await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=ledger))
    finished = [e.step for e in events if e.state == "done"]
    assert finished == list(STEPS)
    assert events[-1].done == events[-1].total == len(STEPS)

    after = await site.cloud.vm_info(manager.id)
    assert after.summary.running and after.ready
    assert after.summary.host_id == CASCADELAKE
    assert after.cpu_model == "Cascadelake-Server-noTSX"
    assert _sections(after) == before  # OS, CONTEXT and the rest survived the update

    inventory = await load_inventory(site)
    assert inventory.db_vm(manager.id).verdict.kind is VmVerdictKind.FINE  # type: ignore[union-attr]
    assert inventory.at_risk == ()
    assert _actions(ledger) == [("hosts.move", "started"), ("hosts.undeploy", "ok"), ("hosts.set_cpu_model", "ok"),
                               ("hosts.deploy", "ok"), ("hosts.move", "done")]


async def test_running_a_finished_move_again_changes_nothing(deployed: SimServer, connect: Connect,
                                                             ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    await collect(partial(move_vm, site, await plan_move(site, manager.id, BROADWELL), timeouts=FAST, ledger=ledger))

    again = await plan_move(site, manager.id)
    assert again.target_host_id == BROADWELL  # it stays where it already runs with the host's model
    preview = preview_move(again)
    assert preview.is_noop and "nothing to change" in preview.title
    assert not preview.destructive

    mutations = len(_actions(ledger))
    events = await collect(partial(move_vm, site, again, timeouts=FAST, ledger=ledger))
    assert {e.step for e in events if e.state == "skipped"} >= {STEP_UNDEPLOY, STEP_WAIT_UNDEPLOYED, STEP_SET_MODEL,
                                                               STEP_DEPLOY}
    assert [a for a, _ in _actions(ledger)[mutations:]] == ["hosts.move", "hosts.move"]  # started, done: no change


async def test_preview_states_every_step_with_its_cli(deployed: SimServer, connect: Connect, ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    plan = await plan_move(site, manager.id, BROADWELL)
    preview = preview_move(plan)
    assert preview.destructive and preview.target == f"VM {manager.id} {manager.name}"
    script = preview.cli_script()
    assert f"onevm undeploy {manager.id}" in script
    assert f"onevm updateconf {manager.id} vm-{manager.id}-cpu.tmpl --append" in script
    assert 'CPU_MODEL = [ MODEL = "Broadwell-noTSX" ]' in script
    assert f"onevm deploy {manager.id} {BROADWELL}" in script
    assert [c.kind for c in preview.changes] == ["action", "none", "update", "action", "none", "none"]
    assert any("unavailable" in w for w in preview.warnings)
    hard = preview_move(await plan_move(site, manager.id, BROADWELL, hard=True))
    assert f"onevm undeploy --hard {manager.id}" in hard.cli_script()
    # planning and previewing change nothing, record nothing, journal nothing
    assert site.audit.entries() == [] and site.changes == 0
    assert MoveJournal.of(site.settings).origin(manager.id) is None


async def test_a_failed_deploy_leaves_a_clear_state_and_resumes(deployed: SimServer, connect: Connect,
                                                                ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    plan = await plan_move(site, manager.id, BROADWELL)
    deployed.site.faults.fail_next_deploys = 1

    seen: list[Progress] = []
    with pytest.raises(MoveFailed) as caught:
        await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=ledger), on_event=seen.append)
    failure = caught.value
    assert failure.step == STEP_DEPLOY
    assert failure.vm_state.startswith("UNDEPLOYED (CPU model Broadwell-noTSX")
    assert f"sitetk hosts move {manager.id} --host {BROADWELL}" in failure.detail
    assert f"sitetk hosts redeploy {manager.id} --host {WESTMERE} --cpu-model ''" in failure.detail
    assert seen[-1].state == "failed" and seen[-1].step == STEP_DEPLOY
    assert ("hosts.move", "failed") in _actions(ledger)

    vm = await site.cloud.vm_info(manager.id)
    assert vm.summary.status == "UNDEPLOYED" and vm.cpu_model == "Broadwell-noTSX"

    # resuming: a new plan (as a new process would make) keeps the origin from the move journal
    resumed = await plan_move(site, manager.id, BROADWELL)
    assert (resumed.origin_host_id, resumed.origin_cpu_model) == (WESTMERE, "")
    events = await collect(partial(move_vm, site, resumed, timeouts=FAST, ledger=ledger))
    skipped = [e.step for e in events if e.state == "skipped"]
    assert skipped == [STEP_UNDEPLOY, STEP_WAIT_UNDEPLOYED, STEP_SET_MODEL]
    vm = await site.cloud.vm_info(manager.id)
    assert vm.ready and vm.summary.host_id == BROADWELL


async def test_put_back_where_it_was_after_a_failure(deployed: SimServer, connect: Connect, ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    before = _sections(manager)
    deployed.site.faults.fail_next_deploys = 1
    with pytest.raises(MoveFailed):
        await collect(partial(move_vm, site, await plan_move(site, manager.id), timeouts=FAST, ledger=ledger))

    back = await plan_redeploy(site, manager.id, WESTMERE)
    assert back.cpu_model == "" and back.redeploy and not back.wait_ready  # its database cannot start there
    assert any("not expected to start" in w for w in back.warnings)
    events = await collect(partial(move_vm, site, back, timeouts=FAST, ledger=ledger))
    assert events[-1].state == "done"

    vm = await site.cloud.vm_info(manager.id)
    assert vm.summary.running and vm.summary.host_id == WESTMERE
    assert vm.cpu_model == ""  # removed again
    assert _sections(vm) == before
    assert ("hosts.redeploy", "done") in _actions(ledger)


async def test_cancelling_leaves_a_clear_state_and_the_move_resumes(deployed: SimServer, connect: Connect,
                                                                    ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    plan = await plan_move(site, manager.id, CASCADELAKE)
    waiting = asyncio.Event()

    def seen(event: Progress) -> None:
        if event.step == STEP_WAIT_UNDEPLOYED:
            waiting.set()

    async def run() -> None:
        await collect(partial(move_vm, site, plan, timeouts=FAST, ledger=ledger), on_event=seen)

    task = asyncio.create_task(run())
    await asyncio.wait_for(waiting.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    cancelled = ledger.vms[-1]
    assert (_actions(ledger)[-1], cancelled["outcome"]) == (("hosts.move", "cancelled"), "cancelled")
    assert cancelled["step"] == STEP_WAIT_UNDEPLOYED
    assert cancelled["vm_state"]

    events = await collect(partial(move_vm, site, await plan_move(site, manager.id, CASCADELAKE),
                                   timeouts=FAST, ledger=ledger))
    assert events[0].state == "skipped"  # the undeploy requested before the cancel is not repeated
    assert (await site.cloud.vm_info(manager.id)).ready


async def test_targets_are_checked(deployed: SimServer, connect: Connect, ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    with pytest.raises(SiteError, match="not a suitable target") as caught:
        await plan_move(site, manager.id, WESTMERE)
    assert "no AVX" in caught.value.detail and "Suitable hosts" in caught.value.detail
    with pytest.raises(SiteError, match="not a suitable target"):
        await plan_move(site, manager.id, BROADWELL_DISABLED)
    with pytest.raises(SiteError, match="No host 99"):
        await plan_move(site, manager.id, 99)
    with pytest.raises(SiteError):
        await plan_move(site, 9999)


async def test_passthrough_only_when_no_compatible_host_exists(deployed: SimServer, connect: Connect,
                                                               ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    with pytest.raises(SiteError, match="host-passthrough is not offered"):
        await plan_move(site, manager.id, passthrough=True)

    with deployed.site.lock:  # every compatible host goes out of service
        for host_id in (CASCADELAKE, BROADWELL):
            deployed.site.hosts[host_id].state = HostState.DISABLED
    with pytest.raises(SiteError, match="No compatible host") as caught:
        await plan_move(site, manager.id)
    assert "--passthrough" in caught.value.detail

    plan = await plan_move(site, manager.id, passthrough=True)
    assert plan.cpu_model == HOST_PASSTHROUGH
    assert plan.target_host_id == LEGACY  # the features are unknown there; never an AVX-less or aarch64 host
    assert PASSTHROUGH_WARNING in preview_move(plan).warnings
    for host_id in (ARM, WESTMERE):
        with pytest.raises(SiteError, match="cannot take the VM"):
            await plan_move(site, manager.id, host_id, passthrough=True)


async def test_all_flagged_vms_get_a_plan(deployed: SimServer, connect: Connect, ledger: MoveLedger) -> None:
    site = connect(deployed)
    plans, problems = await plan_flagged(site)
    assert [p.vm_name for p in plans] == [(await _manager(site)).name]
    assert problems == ()


async def test_a_ready_vm_is_moved_again_and_its_old_ready_is_not_trusted(deployed: SimServer, connect: Connect,
                                                                          ledger: MoveLedger) -> None:
    site = connect(deployed)
    manager = await _manager(site)
    await collect(partial(move_vm, site, await plan_move(site, manager.id, BROADWELL), timeouts=FAST, ledger=ledger))
    assert (await site.cloud.vm_info(manager.id)).ready

    second = await plan_move(site, manager.id, CASCADELAKE)
    assert second.facts.ready_flag
    preview = preview_move(second)
    assert f"onevm update {manager.id} vm-{manager.id}-ready.tmpl --append" in preview.cli_script()
    await collect(partial(move_vm, site, second, timeouts=FAST, ledger=ledger))
    assert ("hosts.reset_ready", "ok") in _actions(ledger)
    vm = await site.cloud.vm_info(manager.id)
    assert vm.ready and vm.summary.host_id == CASCADELAKE and vm.cpu_model == "Cascadelake-Server-noTSX"


async def test_flagged_vms_planned_together_do_not_share_room_for_one(deployed: SimServer, connect: Connect,
                                                                       ledger: MoveLedger) -> None:
    from dataclasses import replace

    from tui.procedures.hosts.cpu_inventory import rank_targets
    from tui.procedures.hosts.move_plan import reserve

    site = connect(deployed)
    manager = await _manager(site)
    other = next(vm for vm in await site.cloud.list_vms() if vm.service_id is not None and vm.id != manager.id)
    await site.cloud.vm_update(other.id, 'DOCUMENT_DB="YES"', 1)  # a second database VM
    inventory = await load_inventory(site)
    assert {row.id for row in inventory.flagged} == {manager.id, other.id}
    # one compatible host is left (the others disabled, as an operator would during maintenance),
    # and the free CPU it must keep lets it take one of the two VMs, not both
    ranked = rank_targets(await site.cloud.list_hosts(), site.settings).eligible
    best = ranked[0].host
    with deployed.site.lock:
        for entry in ranked[1:]:
            deployed.site.hosts[entry.host.id].state = HostState.DISABLED
    [best] = [h for h in await site.cloud.list_hosts() if h.id == best.id]
    after_one = max(reserve(best, vm.summary).free_cpu_percent for vm in (manager, await site.cloud.vm_info(other.id)))
    threshold = (best.free_cpu_percent + after_one) / 2
    assert after_one < threshold <= best.free_cpu_percent
    site.settings = replace(site.settings, min_free_cpu_percent=threshold)

    plans, problems = await plan_flagged(site)
    assert len(plans) + len(problems) == 2
    assert [plan.target_host_id for plan in plans].count(best.id) == 1  # never both
    assert len(problems) == 1 and "No compatible host with enough free capacity" in problems[0][1].title


async def test_two_flagged_vms_move_together_and_each_step_names_its_vm(deployed: SimServer, connect: Connect,
                                                                        ledger: MoveLedger) -> None:
    # regression: move_many labelled steps with an unimported `replace`, a NameError for two or more VMs
    site = connect(deployed)
    manager = await _manager(site)
    other = next(vm for vm in await site.cloud.list_vms() if vm.service_id is not None and vm.id != manager.id)
    await site.cloud.vm_update(other.id, 'DOCUMENT_DB="YES"', 1)  # a second database VM
    plans, problems = await plan_flagged(site)
    assert problems == () and {plan.vm_id for plan in plans} == {manager.id, other.id}

    events = await collect(partial(move_many, site, plans, timeouts=FAST, ledger=ledger))
    total = sum(len(plan.steps) for plan in plans)
    assert all(e.total == total for e in events) and events[-1].done == total
    for plan in plans:
        done = [e.step for e in events if e.state == "done" and e.step.startswith(f"VM {plan.vm_id}: ")]
        assert done == [f"VM {plan.vm_id}: {step}" for step in plan.steps]
        vm = await site.cloud.vm_info(plan.vm_id)
        assert vm.summary.running and vm.summary.host_id == plan.target_host_id and vm.cpu_model == plan.cpu_model
