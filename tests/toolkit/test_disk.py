"""`sitetk toolkit disk`: the object store's data disk (disk0 of the `objectstore` role's VM) shown,
previewed with `onevm disk-resize`, grown and waited for, left alone when already at the size;
refused (nothing sent) for too little datastore room, a VM state the platform refuses, a bad size
and read-only mode; a driver failure and a slow resize reported; one audit record per change."""

from __future__ import annotations

import asyncio
import re
from functools import partial
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.procedure_run import run_procedure
from tests.toolkit.conftest import settings_for
from tui.__main__ import main
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.operation import run_operation
from tui.procedures.progress import Progress
from tui.procedures.toolkit.objectstore_disk import DEFAULT_WAIT, ResizeObjectstoreDisk
from tui.sim.server import SimServer
from tui.sim.state import SimVm
from tui.timing import Clock

OBJECTSTORE_SIZE_MB = 3072


@pytest.fixture
def deployed(sim_factory: Any, monkeypatch: pytest.MonkeyPatch) -> SimServer:
    """The deployed scenario (the toolkit RUNNING); the environment points the CLI at it."""
    server: SimServer = sim_factory(scenario="deployed")
    monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
    monkeypatch.setenv("ONE_AUTH", str(server.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONEFLOW_URL", server.flow_url)
    return server


run = run_cli


def objectstore_vm(server: SimServer) -> SimVm:
    with server.site.lock:
        return next(vm for vm in server.site.vms.values() if vm.name.startswith("objectstore_") and vm.state == 3)


def disk0(vm: SimVm) -> dict[str, str]:
    return dict(next(v for k, v in vm.template if k == "DISK" and ("DISK_ID", "0") in v))


def audit(server: SimServer) -> list[dict[str, Any]]:
    site = SiteConnection(settings_for(server))
    return [e for e in site.audit.entries() if e["action"] == "vm.disk.resize"]


def test_shows_the_disk_and_previews_the_platform_command(deployed: SimServer,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    vm = objectstore_vm(deployed)
    size = int(disk0(vm)["SIZE"])
    code, data, _ = run(capsys, "toolkit", "disk", "--json")
    assert code == 0, data
    plan = data["plan"]
    assert (plan["vm_id"], plan["disk_id"], plan["size_mb"], plan["wanted_mb"]) == (vm.id, 0, size, 30720)
    assert plan["datastore"]["kind"] == "system" and plan["datastore"]["datastore_id"] == 0
    assert not plan["already"] and plan["problems"] == []

    code, data, _ = run(capsys, "toolkit", "disk", "--dry-run", "--json")
    assert code == 0 and data["dry_run"]
    assert [c["cli"] for c in data["preview"]["changes"]] == [f"onevm disk-resize {vm.id} 0 30G"]
    assert int(disk0(objectstore_vm(deployed))["SIZE"]) == size  # nothing sent
    assert audit(deployed) == []

    code, text, _ = run(capsys, "toolkit", "disk", "--size", "12G")
    assert code == 0 and f"disk 0: {size / 1024:.1f} GB ({size} MB); wanted 12.0 GB (12288 MB)" in text
    assert f"onevm disk-resize {vm.id} 0 12G" in text


def test_apply_grows_the_disk_waits_and_records_then_a_rerun_changes_nothing(
        deployed: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    vm = objectstore_vm(deployed)
    before = int(disk0(vm)["SIZE"])
    records = len(vm.history)
    code, data, err = run(capsys, "toolkit", "disk", "--apply", "--yes", "--poll", "0.02", "--json")
    assert code == 0, (data, err)
    assert data["result"] == {"vm_id": vm.id, "disk_id": 0, "size_before_mb": before, "size_mb": 30720,
                              "changed": True, "seconds": data["result"]["seconds"]}
    states = [e["message"] for e in data["events"] if e["step"] == "wait" and e["state"] == "running"]
    assert states and all("DISK_RESIZE" in m and " s of at most 600 s)" in m for m in states)
    after = objectstore_vm(deployed)
    assert int(disk0(after)["SIZE"]) == 30720 and "SIZE_PREV" not in disk0(after) and "RESIZE" not in disk0(after)
    assert (after.state, after.lcm_state) == (3, 3)
    # the platform closes the host record with the DISK_RESIZE action (29) and opens a copy (a real
    # 7.4.0 frontend showed it: tests/recordings/7.4.0.json, "vm: info (disk resized)")
    closed, copy = after.history[-2:]
    assert len(after.history) == records + 1 and closed.action == 29 and closed.etime and closed.running_end
    assert (copy.seq, copy.host_id, copy.etime, copy.running_end, copy.prolog) == (closed.seq + 1, closed.host_id, 0, 0, False)
    [record] = audit(deployed)
    assert record["outcome"] == "ok" and record["target"] == f"VM {vm.id} disk 0"
    assert record["details"]["size_before_mb"] == before and record["details"]["size_mb"] == 30720

    code, data, _ = run(capsys, "toolkit", "disk", "--apply", "--yes", "--json")
    assert code == 0 and data["plan"]["already"] and data["events"] == []
    code, text, _ = run(capsys, "toolkit", "disk", "--apply", "--yes")
    assert code == 0 and "already 30.0 GB (30720 MB): nothing to do" in text
    assert len(audit(deployed)) == 1  # a rerun sends and records nothing


def test_a_powered_off_vm_is_resized_and_stays_off(deployed: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    vm = objectstore_vm(deployed)
    asyncio.run(_poweroff(deployed, vm.id))
    code, data, err = run(capsys, "toolkit", "disk", "--size", "10g", "--apply", "--yes", "--poll", "0.02", "--json")
    assert code == 0, (data, err)
    assert data["plan"]["vm_state"] == "POWEROFF" and data["result"]["size_mb"] == 10240
    waits = [e["message"] for e in data["events"] if e["step"] == "wait" and e["state"] == "running"]
    assert all("DISK_RESIZE_POWEROFF" in m for m in waits)
    assert objectstore_vm_any(deployed, vm.id).state == 8  # back to POWEROFF


async def _poweroff(server: SimServer, vm_id: int) -> None:
    site = SiteConnection(settings_for(server))
    await site.connect()
    try:
        await site.cloud.vm_action("poweroff", vm_id)
        for _ in range(500):
            if (await site.cloud.vm_info(vm_id)).summary.state == 8:
                return
            await asyncio.sleep(0.02)
        raise AssertionError("the VM did not power off")
    finally:
        await site.close()


def objectstore_vm_any(server: SimServer, vm_id: int) -> SimVm:
    with server.site.lock:
        return server.site.vms[vm_id]


def test_too_little_datastore_room_is_refused_before_anything_is_sent(
        deployed: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    vm = objectstore_vm(deployed)
    before = int(disk0(vm)["SIZE"])
    with deployed.site.lock:
        deployed.site.datastores[0].free_mb = 1000
    code, data, _ = run(capsys, "toolkit", "disk", "--dry-run", "--json")
    assert code == 0 and any("system datastore 0 'system' has 1.0 GB (1000 MB) free" in w
                             for w in data["preview"]["warnings"])
    code, data, _ = run(capsys, "toolkit", "disk", "--apply", "--yes", "--json")
    assert code == 1 and not data["ok"]
    assert "cannot be resized now" in data["error"]["title"] and "needs 27.0 GB" in data["error"]["detail"]
    assert "Nothing was sent" in data["error"]["detail"]
    assert int(disk0(objectstore_vm(deployed))["SIZE"]) == before


def test_a_state_the_platform_refuses_is_said_and_nothing_is_sent(
        deployed: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    vm = objectstore_vm(deployed)
    before = int(disk0(vm)["SIZE"])
    asyncio.run(_action(deployed, "suspend", vm.id, 5))
    code, data, _ = run(capsys, "toolkit", "disk", "--apply", "--yes", "--json")
    assert code == 1
    assert f"VM {vm.id} is SUSPENDED: the platform resizes a disk only when the VM is RUNNING, POWEROFF or UNDEPLOYED" \
        in data["error"]["detail"]
    assert int(disk0(objectstore_vm_any(deployed, vm.id))["SIZE"]) == before


async def _action(server: SimServer, action: str, vm_id: int, state: int) -> None:
    site = SiteConnection(settings_for(server))
    await site.connect()
    try:
        await site.cloud.vm_action(action, vm_id)
        for _ in range(500):
            if (await site.cloud.vm_info(vm_id)).summary.state == state:
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"the VM did not reach state {state}")
    finally:
        await site.close()


@pytest.mark.parametrize("size", ["30X", "G30", "-5G", "0", "1.5.2G", ""])
def test_a_bad_size_is_refused_as_usage(deployed: SimServer, capsys: pytest.CaptureFixture[str], size: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["toolkit", "disk", "--size", size, "--apply", "--yes"])
    assert info.value.code == 2
    assert "--size" in capsys.readouterr().err


def test_a_driver_failure_is_reported_with_the_old_size_back_and_recorded(
        deployed: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    vm = objectstore_vm(deployed)
    before = int(disk0(vm)["SIZE"])
    with deployed.site.lock:
        deployed.site.faults.fail_disk_resizes = 1
    code, data, _ = run(capsys, "toolkit", "disk", "--apply", "--yes", "--poll", "0.02", "--json")
    assert code == 1
    assert data["error"]["title"] == f"The resize of disk 0 of VM {vm.id} failed"
    assert f"onevm show {vm.id}" in data["error"]["detail"]
    assert int(disk0(objectstore_vm(deployed))["SIZE"]) == before
    [record] = audit(deployed)
    assert record["outcome"] == "failed" and record["details"]["request_sent"] is True
    assert record["details"]["size_after_mb"] == before


async def _resize_past_its_timeout(server: SimServer, clock: Clock) -> SiteError:
    """`toolkit disk --apply` at the procedure level (the operation through `run_operation`, the one
    audit record), the clock moved past the wait's 600 s once the wait has begun: how it stopped."""
    site = SiteConnection(settings_for(server))
    await site.connect()
    operation = ResizeObjectstoreDisk(poll_interval=0.05)

    def waiting(event: Progress) -> None:
        if event.step == "wait":
            clock.advance(DEFAULT_WAIT + 1)

    try:
        plan = await operation.plan(site)
        with pytest.raises(SiteError) as stopped:
            await run_procedure(partial(run_operation, site, operation, plan), on_event=waiting)
        return stopped.value
    finally:
        await site.close()


async def test_a_slow_resize_times_out_saying_what_it_waited_for(deployed: SimServer, driven_clock: Clock) -> None:
    vm = objectstore_vm(deployed)
    with deployed.site.lock:
        deployed.site.faults.disk_resize_seconds = 100_000.0
    stopped = await _resize_past_its_timeout(deployed, driven_clock)
    waited = re.fullmatch(rf"VM {vm.id} is still DISK_RESIZE after (\d+) s", stopped.title)
    assert waited and int(waited[1]) >= DEFAULT_WAIT, stopped.title  # the clock, moved past the wait's timeout
    assert "running this again waits for it and sends nothing twice" in stopped.detail
    # a rerun while it is still under way sends nothing (the platform would refuse a second one)
    stopped = await _resize_past_its_timeout(deployed, driven_clock)
    assert stopped.title.startswith(f"VM {vm.id} is still DISK_RESIZE")
    assert [r["details"]["request_sent"] for r in audit(deployed)] == [True, False]


def test_read_only_mode_refuses_the_resize(deployed: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    vm = objectstore_vm(deployed)
    code, _, err = run(capsys, "--read-only", "toolkit", "disk", "--apply", "--yes")
    assert code == 2 and "read-only mode" in err
    [record] = audit(deployed)
    assert record["outcome"] == "refused" and record["target"] == f"VM {vm.id} disk 0"
    assert run(capsys, "--read-only", "toolkit", "disk", "--json")[0] == 0  # showing it is a read
