"""Cloud adapter failures, on the embedded site: every platform error code, XML-RPC faults (a
wrongly typed parameter, an unknown method), HTTP errors, timeouts under injected latency,
injected failures, refused connections. Every failure is a SiteError that never shows the
session's password.

The timing bound (a call slower than the timeout fails within timeout + 1 s) is a correctness
property of the adapter's deadline, not a performance figure.
"""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable

import pytest

from tests.adapters.conftest import eventually
from tui.adapters.cloud import CloudClient
from tui.adapters.retry import NO_PAUSE
from tui.errors import SiteError

pytestmark = pytest.mark.usefixtures("sim_only")

SHORT_TIMEOUT_S = 0.5


def _password(sim: Any) -> str:
    return sim.session.split(":", 1)[1]


async def _fails(call: Awaitable[Any], secret: str) -> SiteError:
    with pytest.raises(SiteError) as info:
        await call
    error = info.value
    assert secret not in f"{error.title} {error.detail} {error}"
    return error


def _user_session(sim: Any) -> str:
    """The session of an ordinary user (not in the oneadmin group)."""
    with sim.site.lock:
        user = next(u for u in sim.site.users.values() if u.name != "oneadmin" and u.gid != 0)
    return f"{user.name}:{user.password}"


async def test_authentication_0x100(sim: Any) -> None:
    client = CloudClient(sim.xmlrpc_url, "oneadmin:not-the-password", 5)
    try:
        error = await _fails(client.version(), "not-the-password")
    finally:
        await client.close()
    assert error.code == 0x0100 and not error.retryable
    assert "ONE_AUTH" in error.detail


async def test_expired_credentials_read_as_authentication(sim: Any, cloud: CloudClient) -> None:
    sim.site.faults.expired_credentials = True
    try:
        error = await _fails(cloud.list_vms(), _password(sim))
    finally:
        sim.site.faults.expired_credentials = False
    assert error.code == 0x0100


async def test_authorization_0x200(sim: Any) -> None:
    session = _user_session(sim)
    client = CloudClient(sim.xmlrpc_url, session, 5)
    try:
        error = await _fails(client.host_info(0), session.split(":", 1)[1])
    finally:
        await client.close()
    assert error.code == 0x0200 and "Not authorized" in error.detail


async def test_no_exists_0x400_action_0x800_api_0x1000_allocate_0x4000(sim: Any, cloud: CloudClient) -> None:
    secret = _password(sim)
    error = await _fails(cloud.vm_info(987654), secret)
    assert error.code == 0x0400 and "[one.vm.info]" in error.detail
    running_vm = await cloud.template_instantiate((await cloud.list_templates())[0].id, "errors")

    async def running() -> bool:
        return (await cloud.vm_info(running_vm)).summary.running

    await eventually(running, 20, "the VM to run")
    error = await _fails(cloud.vm_deploy(running_vm, 0), secret)
    assert error.code == 0x0800 and not error.retryable
    error = await _fails(cloud.image_allocate('NAME = "unterminated', 1), secret)
    # a parse error answers INTERNAL (src/rm/api/ImageAPI.cc), yet no retry can fix it
    assert error.code == 0x2000 and not error.retryable and "Parse error" in error.detail
    error = await _fails(cloud.image_allocate('TYPE = "OS"', 1), secret)
    assert error.code == 0x4000


async def test_refusals_read_as_final_whatever_their_code(sim: Any, cloud: CloudClient) -> None:
    """The platform answers a wrong-state action ACTION (src/dm/DispatchManagerActions.cc) but an
    updateconf the VM's state refuses, a parse error and an unknown marketplace app INTERNAL
    (src/rm/api/VirtualMachineAPI.cc, SharedAPI.cc, ImageAPI.cc): none of them is worth a retry."""
    secret = _password(sim)
    vm_id = await cloud.template_instantiate((await cloud.list_templates())[0].id, "refusals", hold=True)
    action = await _fails(cloud.vm_action("undeploy", vm_id), secret)
    assert action.code == 0x0800 and not action.retryable and "not available for state HOLD" in action.detail
    await cloud.vm_action("release", vm_id)

    async def running() -> bool:
        return (await cloud.vm_info(vm_id)).summary.running

    await eventually(running, 20, "the VM to run")
    await cloud.vm_action("suspend", vm_id)

    async def suspended() -> bool:
        return (await cloud.vm_info(vm_id)).summary.status == "SUSPENDED"

    await eventually(suspended, 20, "the VM to be suspended")
    state = await _fails(cloud.vm_updateconf(vm_id, 'CPU_MODEL = [ MODEL = "Westmere" ]'), secret)
    assert state.code == 0x2000 and not state.retryable and state.title.startswith("Not allowed in this state")
    assert "configuration cannot be updated in state SUSPENDED" in state.detail
    parse = await _fails(cloud.image_update(0, 'A = "open', 1), secret)
    assert parse.code == 0x2000 and not parse.retryable and parse.title.startswith("Template refused")
    unknown = await _fails(cloud.image_allocate('NAME = "x"\nFROM_APP = "99999"', 1), secret)
    assert not unknown.retryable and unknown.title.startswith("Marketplace app unknown to the cloud")


async def test_internal_0x2000_is_retryable(sim: Any, cloud: CloudClient) -> None:
    vm_id = await cloud.template_instantiate((await cloud.list_templates())[0].id, "internal", hold=True)
    sim.site.faults.fail_next_deploys = 1
    error = await _fails(cloud.vm_deploy(vm_id, 0), _password(sim))
    assert error.code == 0x2000 and error.retryable
    assert await cloud.vm_deploy(vm_id, 0) == vm_id


async def test_wrongly_typed_parameter_is_a_fault(sim: Any, cloud: CloudClient) -> None:
    vm_id = await cloud.template_instantiate((await cloud.list_templates())[0].id, "typed")
    # pyone would send True as <boolean>; the server wants an <int> append flag
    error = await _fails(cloud.raw("one.vm.update", vm_id, 'A = "1"', True), _password(sim))
    assert "Request rejected" in error.title and error.code is not None and not error.retryable
    assert await cloud.raw("one.vm.update", vm_id, 'A = "1"', 1) == vm_id
    error = await _fails(cloud.raw("one.nosuch.method"), _password(sim))
    assert "not supported" in error.detail


async def test_not_an_xmlrpc_endpoint(sim: Any) -> None:
    client = CloudClient(f"{sim.flow_url}/not-rpc", sim.session, 5)
    try:
        error = await _fails(client.version(), _password(sim))
    finally:
        await client.close()
    assert error.code == 404 or "Malformed" in error.title


async def _bounded(call: Callable[[], Awaitable[Any]], secret: str) -> tuple[SiteError, float]:
    started = time.monotonic()
    error = await _fails(call(), secret)
    return error, time.monotonic() - started


async def test_latency_beyond_the_timeout_fails_within_the_bound(sim: Any) -> None:
    client = CloudClient(sim.xmlrpc_url, sim.session, SHORT_TIMEOUT_S)
    sim.site.faults.latency_ms = 4000
    try:
        for call in (client.version, client.list_vms, client.whoami):
            error, elapsed = await _bounded(call, _password(sim))
            assert elapsed < SHORT_TIMEOUT_S + 1.0
            assert error.retryable and "No answer" in error.title
    finally:
        sim.site.faults.latency_ms = 0
        await client.close()


async def test_one_slow_method_does_not_hold_the_others(sim: Any) -> None:
    client = CloudClient(sim.xmlrpc_url, sim.session, SHORT_TIMEOUT_S)
    sim.site.faults.method_delay_ms["one.vmpool.info"] = 4000
    try:
        error, elapsed = await _bounded(client.list_vms, _password(sim))
        assert elapsed < SHORT_TIMEOUT_S + 1.0 and error.retryable
        assert await client.version()
    finally:
        sim.site.faults.method_delay_ms.clear()
        await client.close()


async def test_injected_failures_are_site_errors_never_crashes(sim: Any, cloud: CloudClient) -> None:
    cloud.retry_policy = NO_PAUSE  # every try fails: six tries a call, without the back-off's second
    sim.site.faults.fail_rate = 1.0
    calls: list[Callable[[], Awaitable[Any]]] = [
        cloud.version, cloud.list_vms, cloud.list_hosts, cloud.list_images, cloud.list_users,
        cloud.whoami, cloud.system_config, cloud.acl_list, lambda: cloud.vm_info(0),
    ] * 3
    try:
        for call in calls:
            error = await _fails(call(), _password(sim))
            assert error.retryable, error.title
    finally:
        sim.site.faults.fail_rate = 0.0
    assert await cloud.version()


async def test_stopped_site_is_refused_then_recovers(sim: Any, cloud: CloudClient) -> None:
    assert await cloud.version()
    sim.stop()
    try:
        error = await _fails(cloud.version(), _password(sim))
        assert error.retryable and "Nothing listening" in error.title and "ONE_XMLRPC" in error.detail
        error = await _fails(cloud.list_vms(), _password(sim))
        assert "Nothing listening" in error.title
    finally:
        sim.start()
    assert await cloud.version()
    assert isinstance(await cloud.list_vms(), tuple)


async def test_client_side_bad_input(sim: Any, cloud: CloudClient) -> None:
    with pytest.raises(SiteError):
        CloudClient("localhost:2633", sim.session)
    with pytest.raises(SiteError):
        CloudClient(sim.xmlrpc_url, "no-colon")
    with pytest.raises(SiteError):
        await cloud.vm_action("explode", 0)
    with pytest.raises(SiteError):
        await cloud.image_chmod(0, (1, 2, 3))
    with pytest.raises(SiteError):
        await cloud.acl_addrule("zz", "1", "1")
    other = CloudClient(sim.xmlrpc_url, "oneadmin:s3cret")
    assert "s3cret" not in repr(other)
    await other.close()
