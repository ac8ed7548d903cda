"""An expired session is an authentication error everywhere (issue 22 item 2).

A refused session (the cloud's AUTHENTICATION, OneFlow's refused login) is `AuthenticationFailed`:
no reader turns it into "not found", "not known", a note or a step done. `setup status` whose
session expires in the middle of its reading exits 1 with that error, never 3 with "Toolkit
appliance downloaded" done on 0 images and "read the appliance's log"; a source that cannot be
read (the session still good) leaves its steps unchecked, never done, and the command exits 1, not
3 ("not done")."""

from __future__ import annotations

import asyncio
import pickle
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.conftest import isolate_home
from tests.market.conftest import SiteFactory, connect  # noqa: F401 (fixture)
from tests.setup.conftest import point_at, run, steps
from tui.adapters.cloud_errors import platform_error
from tui.adapters.cloud_transport import PlatformFailure
from tui.adapters.flow_errors import flow_http_error
from tui.cli.exit_codes import EXIT_FAILED, EXIT_FINDINGS
from tui.domain.error_codes import AUTHENTICATION, AUTHORIZATION
from tui.errors import AuthenticationFailed, SiteError
from tui.procedures.setup.facts import read_setup_facts
from tui.procedures.setup.status import build_checklist
from tui.sim.server import SimServer


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


@pytest.fixture
def deployed(sim_factory: Callable[..., SimServer]) -> SimServer:
    return sim_factory(scenario="deployed")


# -- what is an authentication error -----------------------------------------------------------


def test_the_refused_session_of_either_service_is_an_authentication_error() -> None:
    cloud = platform_error(PlatformFailure("[one.vmpool.info] User couldn't be authenticated", AUTHENTICATION),
                           "one.vmpool.info")
    assert isinstance(cloud, AuthenticationFailed) and cloud.code == AUTHENTICATION and not cloud.retryable
    refused = platform_error(PlatformFailure("[one.vm.info] Not authorized", AUTHORIZATION), "one.vm.info")
    assert not isinstance(refused, AuthenticationFailed)
    assert isinstance(flow_http_error("GET", "/service", 401, "Invalid credentials"), AuthenticationFailed)
    assert isinstance(flow_http_error("GET", "/service", 403, "[one.document.info] User couldn't be authenticated"),
                      AuthenticationFailed)
    not_allowed = flow_http_error("POST", "/service/3/action", 401, "[one.document.update] Not authorized")
    assert not isinstance(not_allowed, AuthenticationFailed) and isinstance(not_allowed, SiteError)
    # it stays what it is across a pickle (a worker thread or process handing it back)
    again = pickle.loads(pickle.dumps(cloud))
    assert isinstance(again, AuthenticationFailed) and again.title == cloud.title and again.code == AUTHENTICATION


# -- setup status ------------------------------------------------------------------------------


async def test_a_session_expiring_while_the_site_is_read_stops_the_reading(
        deployed: SimServer, connect: SiteFactory) -> None:  # noqa: F811
    site = await connect(deployed)
    deployed.site.faults.expire_at.add("one.imagepool.info")
    with pytest.raises(AuthenticationFailed) as caught:
        await read_setup_facts(site)
    # whichever read the refusal reached first: the cloud's or OneFlow's
    assert caught.value.title.startswith(("Authentication failed (", "OneFlow rejected the credentials"))
    # the other reads of the checklist were cancelled and awaited (issue 22 item 1)
    current = asyncio.current_task()
    assert [t for t in asyncio.all_tasks() if t is not current and not t.done()] == []


def test_setup_status_with_the_session_expiring_mid_check_exits_1_with_the_authentication_error(
        deployed: SimServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    point_at(deployed, monkeypatch)
    deployed.site.faults.expire_at.add("one.imagepool.info")
    code, data, err = run(capsys, "setup", "status", "--json")
    assert code == EXIT_FAILED and data["ok"] is False
    # whichever read the refusal reached first: the cloud's or OneFlow's
    assert data["error"]["title"].startswith(("Authentication failed (", "OneFlow rejected the credentials"))
    assert "steps" not in data


def test_setup_status_with_the_automation_vm_expiring_the_session_never_blames_the_appliance(
        deployed: SimServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The automation VM's read is the one refused: not "the automation VM published something
    that is not a key: check the appliance's log", but the authentication error."""
    point_at(deployed, monkeypatch)
    deployed.site.faults.expire_at.add("one.vm.info")
    code, data, err = run(capsys, "setup", "status")
    assert code == EXIT_FAILED and "error: Authentication failed (one." in err  # whichever read came first
    assert "appliance's log" not in data + err and "✔" not in data


def test_a_source_that_cannot_be_read_leaves_its_steps_unchecked_and_exits_1(
        deployed: SimServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The images refused (the session still good): the download is not done on 0 images, it could
    not be checked; `setup status` says which steps and why, and exits 1, not 3."""
    point_at(deployed, monkeypatch)
    deployed.site.faults.fail_methods["one.imagepool.info"] = 1000
    code, data, err = run(capsys, "setup", "status", "--json")
    assert code == EXIT_FAILED and data["ok"] is False
    by_id = steps(data)
    assert by_id["download"]["state"] == "blocked" and by_id["download"]["blocked_by"] == "unreadable source"
    assert by_id["tagged"]["state"] == "blocked" and by_id["tagged"]["blocked_by"] == "unreadable source"
    assert {"download", "tagged"} <= set(data["unreadable"])
    assert data["error"]["title"].startswith(f"{len(data['unreadable'])} step(s) could not be checked")
    assert "images: Not allowed in this state" in data["error"]["detail"]
    assert not [s for s in data["steps"] if s["id"] in data["unreadable"] and s["state"] == "done"]
    # the same site, readable: the steps are decided and the exit says "not done" (3)
    deployed.site.faults.fail_methods.clear()
    code, data, err = run(capsys, "setup", "status", "--json")
    assert code == EXIT_FINDINGS and data["ok"] is True and data["unreadable"] == []
    assert steps(data)["download"]["state"] == "done"


async def test_a_checklist_never_marks_a_step_done_whose_evidence_was_not_read(
        deployed: SimServer, connect: SiteFactory) -> None:  # noqa: F811
    """Every source that can fail, failing alone: no step that depends on it is done."""
    site = await connect(deployed)
    whole = build_checklist(await read_setup_facts(site))
    done = {s.id.value for s in whole.steps if s.done}
    assert {"download", "tagged", "record"} <= done
    for method, depends in (("one.imagepool.info", {"download", "tagged", "dns", "route-manager"}),
                            ("one.userpool.info", {"cloud-user", "grant"}),
                            ("one.vmpool.info", {"forwarded-addresses", "dns", "route-manager"}),
                            ("one.vm.info", {"record"})):
        deployed.site.faults.fail_methods = {method: 1000}
        checklist = build_checklist(await read_setup_facts(site))
        states = {s.id.value: s for s in checklist.steps}
        wrongly_done = [d for d in depends if states[d].done]
        assert not wrongly_done, f"{method} unreadable, yet done: {wrongly_done}"
        assert {d for d in depends if d in done or d == "grant"} <= {s.id.value for s in checklist.unreadable} | {
            d for d in depends if states[d].state.value == "blocked"}
    deployed.site.faults.fail_methods = {}


# -- the other readers that used to swallow it -------------------------------------------------


async def test_every_reader_reports_a_refused_session_as_itself(deployed: SimServer,
                                                                connect: SiteFactory) -> None:  # noqa: F811
    """Each of these turned the refusal into something else: no fact, a check skipped, a VM
    gone, a VM that cannot move, a role waiting, an unknown version."""
    from tui.domain.services import SERVICE_DONE
    from tui.procedures.hosts.move_plan import plan_flagged
    from tui.procedures.site.fill import gather_cloud_facts
    from tui.procedures.toolkit.deploy_waits import explain_roles
    from tui.procedures.toolkit.input_checks import check_cloud_user
    from tui.procedures.toolkit.service import list_toolkit_templates, recorded_roles, toolkit_version

    site = await connect(deployed)
    [service] = [s for s in await site.flow.list_services() if s.state != SERVICE_DONE]
    [template] = await list_toolkit_templates(site)
    faults = deployed.site.faults
    readers: list[tuple[str, Callable[[], Any]]] = [
        ("", lambda: gather_cloud_facts(site)),
        ("", lambda: check_cloud_user(site, "app_automation_cloud_username", "automation")),
        ("one.vm.info", lambda: plan_flagged(site)),
        ("one.vm.info", lambda: explain_roles(site, service)),
        ("one.vm.info", lambda: recorded_roles(site, service)),
        # named without its version: the version is read from its first role's image
        ("one.template.info", lambda: toolkit_version(site, replace(template, name="toolkit", description=""))),
    ]
    for n, (expire_at, read) in enumerate(readers):
        if expire_at:
            faults.expire_at = {expire_at}
        else:
            faults.expired_credentials = True
        try:
            with pytest.raises(AuthenticationFailed):
                await read()
                print(f"reader {n} did not raise")
        finally:
            faults.expired_credentials = False
            faults.expire_at = set()
