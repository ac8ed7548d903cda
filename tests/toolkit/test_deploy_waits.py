"""Waits that explain themselves: a role that stays DEPLOYING says why, and offers the move.

Against the embedded site: the `deployed` scenario leaves the manager VM on the AVX-less host, so
its database never starts, READY=YES never comes and the manager role stays DEPLOYING (the
deployment's progress stops short of RUNNING). The follow reports, while it waits, how long each
step has waited, for what, and why, with `sitetk hosts move <id>`; the CLI prints it; the
deployment view shows it and `m` opens the hosts screen's move for that VM.
"""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.procedure_run import run_procedure
from tests.sim.flow_support import values_key
from tests.toolkit.conftest import FAST
from tests.ui.conftest import console_app
from tests.waiting import wait_until
from tui.__main__ import main
from tui.cli.common import EXIT_FAILED
from tui.domain.documents import SERVICE_DOCUMENT
from tui.domain.one_states import HostState
from tui.domain.template_text import scalar
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.progress import Progress
from tui.procedures.toolkit.deploy_waits import explain_roles
from tui.procedures.toolkit.instantiate import follow_deployment
from tui.procedures.toolkit.service import record_for_service
from tui.settings import Settings
from tui.sim.scenarios import AUTOMATION_PASSWORD
from tui.sim.server import SimServer
from tui.timing import Clock, format_elapsed

WESTMERE = 2


@pytest.fixture
def deployed(sim_factory: Any) -> SimServer:
    return sim_factory(scenario="deployed")


def test_elapsed_reads_as_time() -> None:
    assert [format_elapsed(s) for s in (0, 42, 185, 3725)] == ["0s", "42s", "3m 05s", "1h 02m"]


async def _site(server: SimServer) -> SiteConnection:
    site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url, (server.market_url,)))
    await site.connect()
    return site


async def test_a_role_that_stays_deploying_says_why_with_the_host_verdict_and_the_move(deployed: SimServer,
                                                                                      driven_clock: Clock) -> None:
    site = await _site(deployed)
    try:
        [service] = await site.flow.list_services()
        assert service.state_name == "DEPLOYING"
        waits = await explain_roles(site, service)
        [manager] = [w for w in waits if w.role == "manager"]
        assert manager.state == "DEPLOYING" and "READY=YES" in manager.waits_for
        [vm] = manager.moves
        assert vm.host.endswith("kvm-westmere-01") and "no AVX" in vm.why and "database cannot start" in vm.why
        assert vm.move_command == f"sitetk hosts move {vm.vm_id}" and vm.move_command in vm.why
        assert [w.role for w in waits] == ["manager"]  # the other roles are RUNNING

        record = record_for_service(site, service, 0, "toolkit", "7.0.0", "tkauto")
        events: list[Any] = []

        def seen(event: Progress) -> None:
            events.append(event)
            if event.step == "service" and "elapsed_s" in event.data:  # a heartbeat came: now the deadline
                driven_clock.advance(601)

        with pytest.raises(SiteError, match="not RUNNING after 600 s") as caught:
            await run_procedure(partial(follow_deployment, site, record, timeout=600.0, key_timeout=5.0,
                                        poll_interval=FAST["poll_interval"], heartbeat=0.2), on_event=seen)
        beats = [e for e in events if e.step == "role manager" and "waiting" in e.data]
        assert beats, [e.message for e in events]
        assert "DEPLOYING for " in beats[-1].message and "waits for its VMs to run" in beats[-1].message
        assert beats[-1].data["moves"][0]["move"] == vm.move_command
        service_beats = [e for e in events if e.step == "service" and "elapsed_s" in e.data]
        assert service_beats and "waits for roles manager (DEPLOYING)" in service_beats[-1].message
        assert vm.move_command in caught.value.detail
    finally:
        await site.close()


@pytest.mark.every_version  # deploys with the values key of the site's OneFlow version
def test_the_cli_prints_why_and_the_move_command(deployed: SimServer, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 driven_clock: Clock) -> None:
    """`toolkit deploy --wait` follows through the same procedure; here a new deployment whose
    manager lands on a host without AVX (the compatible hosts are disabled first). Its timeout is
    not waited out: once the new manager runs there, the follow's clock is moved past it."""
    monkeypatch.setenv("ONE_XMLRPC", deployed.xmlrpc_url)
    monkeypatch.setenv("ONE_AUTH", str(deployed.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONEFLOW_URL", deployed.flow_url)
    assert main(["toolkit", "inputs", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    file = data["file"]
    values = file[values_key(deployed)]  # the key of the site's OneFlow
    for name in list(values):
        if name.endswith(("password", "_token")):
            values[name] = "S3cret-value-long-enough-1"
    values.update({"app_objectstore_hostname": "localhost,minio-*.example.net", "app_manager_sites_branch": "demo-site",
                   "app_manager_deployment_site": "demo-site", "app_automation_cloud_username": "tkauto",
                   "app_automation_cloud_password": AUTOMATION_PASSWORD})
    file["name"] = "Site Toolkit second"  # beside the scenario's toolkit: asked for by its name (--another)
    path = tmp_path / "inputs.json"
    path.write_text(json.dumps(file))
    path.chmod(0o600)
    with deployed.site.lock:  # only hosts whose CPU cannot run the database are left
        for host in deployed.site.hosts.values():
            if host.id not in (WESTMERE,):
                host.state = HostState.DISABLED
    with deployed.site.lock:
        services_before = {d.id for d in deployed.site.documents.values() if d.type == SERVICE_DOCUMENT}
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(main, ["toolkit", "deploy", "--input", str(path), "--wait", "--yes", "--timeout", "600",
                                 "--poll", "0.05", "--heartbeat", "0.5", "--another", "Site Toolkit second"])
        wait_until(lambda: run.done() or _new_manager_runs_on(deployed, WESTMERE, services_before), timeout=60,
                   what="the new deployment's manager VM running on the host without AVX")
        driven_clock.advance(601)
        code = run.result(timeout=120)
    err = capsys.readouterr().err
    assert code == EXIT_FAILED
    assert "role manager" in err and "waits for its VMs to run and report READY=YES" in err
    assert "kvm-westmere-01" in err and "sitetk hosts move" in err


def _new_manager_runs_on(server: SimServer, host_id: int, services_before: set[int]) -> bool:
    """Whether a manager VM of a service created since is RUNNING (ACTIVE/RUNNING) on `host_id`."""
    with server.site.lock:
        for vm in server.site.vms.values():
            service = scalar(vm.user_template, "SERVICE_ID")
            if (scalar(vm.user_template, "ROLE_NAME") == "manager" and service and int(service) not in services_before
                    and vm.history and vm.history[-1].host_id == host_id and (vm.state, vm.lcm_state) == (3, 3)):
                return True
    return False


async def test_the_deployment_view_explains_and_m_opens_the_move(deployed: SimServer) -> None:
    from tests.toolkit.test_screen import SIZE, open_form
    from tui.screens.hosts_move import MoveModal
    from tui.screenshots import wait_for, wait_for_screen

    site = await _site(deployed)
    try:
        [service] = await site.flow.list_services()
        from tui.procedures.site_record import save_site_record

        save_site_record(site.settings, record_for_service(site, service, 0, "toolkit", "7.0.0", "tkauto"))
    finally:
        await site.close()
    app = console_app(deployed)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        screen.heartbeat = 0.3
        await pilot.press("ctrl+f")  # follow the recorded deployment
        view = screen.deploy_view
        await wait_for(pilot, lambda: view.move_vm_id is not None, timeout=30, what="the explanation")
        why = str(view.query_one("#dv-why").render())
        assert "Why it waits" in why and "no AVX" in why and f"sitetk hosts move {view.move_vm_id}" in why
        await pilot.press("m")
        modal = await wait_for_screen(pilot, MoveModal, timeout=30, what="the move dialog")
        assert modal.vm_ids == (view.move_vm_id,)


async def test_the_key_wait_says_how_long_and_for_what(deployed: SimServer, driven_clock: Clock) -> None:
    from tui.domain.site_record import RecordedRole, RecordedVm
    from tui.procedures.toolkit.instantiate import KeyNotPublished, capture_automation_key

    site = await _site(deployed)
    try:
        [service] = await site.flow.list_services()
        manager = service.role("manager")
        assert manager is not None
        node = manager.nodes[0]
        # a record whose automation VM is one that never publishes a key (the manager's)
        record = record_for_service(site, service, 0, "toolkit", "7.0.0", "tkauto")
        record = record.with_roles((RecordedRole("automation", (RecordedVm(node.vm_id, node.vm_name),)),),
                                   record.state, record.updated)
        events: list[Any] = []

        loop = asyncio.get_running_loop()

        def seen(event: Progress) -> None:  # the clock moves past a heartbeat, then past the timeout
            events.append(event)
            if "elapsed_s" in event.data:
                driven_clock.advance(601)
            elif len(events) == 1:  # "waiting for VM ...": once the wait has taken its start, 11 s on
                loop.call_soon(driven_clock.advance, 11)

        with pytest.raises(KeyNotPublished):
            await run_procedure(partial(capture_automation_key, site, record, timeout=600.0, poll_interval=0.05,
                                        heartbeat=10.0), on_event=seen)
    finally:
        await site.close()
    beats = [e for e in events if "elapsed_s" in e.data]
    assert beats and re.match(r"waiting 1\ds \(at most 10m 00s\) for ", beats[-1].message), beats  # 11 s on the clock
    assert f"VM {node.vm_id} to publish" in beats[-1].message
