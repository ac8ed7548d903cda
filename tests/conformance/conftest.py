"""The conformance table: one test per behaviour of the platform read in its source, run against the
embedded site as every emulated platform version (6.10.0, 7.0.0, 7.4.0; `--one-versions` or
SITETK_ONE_VERSIONS narrows the set, see tests/conftest.py).

Every test's docstring names the upstream file it follows (OpenNebula/one at the tag it says,
release-7.4.0 when it says none, or OpenNebula/appmarket-simple), so a row is checked against the
source, not against our notes (`test_table.py` enforces it). Rows of
/work/shared/reference/upstream-behaviour.md and every further behaviour verified in the source.

Fixtures: `site` (a fresh site as the version under test), `deployed_site` (the `deployed`
scenario), `one_version`. Helpers: `rpc` (the raw XML-RPC answer array, as the wire carries it),
`failure` (a failed call's parts), `wait_vm` (jump simulated time until a VM is in a state).
"""

from __future__ import annotations

import xmlrpc.client
from dataclasses import dataclass
from typing import Any, Callable

import pytest

from tests.conftest import SimFactory
from tui.sim.server import SimServer
from tui.sim.state import SimVm


@pytest.fixture
def site(sim: SimServer) -> SimServer:
    return sim


@pytest.fixture
def deployed_site(sim_factory: SimFactory) -> SimServer:
    return sim_factory(scenario="deployed")


def rpc(sim: SimServer, method: str, *params: Any, session: str | None = None) -> list[Any]:
    """One XML-RPC call with the session first; the platform's answer array as it came."""
    proxy = xmlrpc.client.ServerProxy(sim.xmlrpc_url, allow_none=False)
    return list(getattr(proxy, method)(session or sim.session, *params))


@dataclass(frozen=True)
class Failure:
    """A failed call's answer `[false, message, code, resp_id, replication_index]`."""

    message: str
    code: int
    resp_id: int
    replication_index: int


def failure(answer: list[Any]) -> Failure:
    assert answer[0] is False, f"the call succeeded: {answer!r}"
    assert len(answer) == 5, f"a failure has five items: {answer!r}"
    return Failure(answer[1], answer[2], answer[3], answer[4])


def ok(answer: list[Any]) -> Any:
    assert answer[0] is True, f"the call failed: {answer!r}"
    return answer[1]


def wait_vm(sim: SimServer, vm_id: int, done: Callable[[SimVm], bool], what: str, limit: int = 200) -> SimVm:
    """Jump simulated time event by event until `done(vm)`; fail naming `what` when the site has
    nothing left to do (or after `limit` events) and the VM is still elsewhere."""
    site = sim.site
    for _ in range(limit):
        with site.lock:
            site.advance()
            vm = site.vms[vm_id]
            if done(vm):
                return vm
            if not site.run_next_event():
                break
    with site.lock:
        vm = site.vms[vm_id]
        raise AssertionError(f"VM {vm_id} never reached {what} (state {vm.state}, lcm {vm.lcm_state})")
