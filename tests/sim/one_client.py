"""Clients of the simulated cloud's XML-RPC API for the tests: the real pyone, and a raw proxy.

pyone is the client the console uses; the raw `xmlrpc.client` proxy shows the wire itself (the
5-element failure arrays, faults, exact parameter types), which pyone turns into exceptions.
"""

from __future__ import annotations

import xmlrpc.client
from typing import Any

import pyone

from tui.sim.server import SimServer
from tui.sim.state import SimVm


def one(sim: SimServer, session: str | None = None) -> Any:
    return pyone.OneServer(sim.xmlrpc_url, session=session or sim.session)


def raw(sim: SimServer) -> xmlrpc.client.ServerProxy:
    return xmlrpc.client.ServerProxy(sim.xmlrpc_url, allow_none=False)


def call(sim: SimServer, method: str, *params: Any, session: str | None = None) -> list[Any]:
    """One XML-RPC call with the session prepended; returns the platform's answer array."""
    proxy = raw(sim)
    return getattr(proxy, method)(session or sim.session, *params)


def site_vm(sim: SimServer, vm_id: int) -> SimVm:
    """The VM as the site holds it, after letting due transitions run."""
    sim.site.advance()
    return sim.site.vms[vm_id]


def states(one_client: Any, vm_id: int) -> tuple[int, int]:
    vm = one_client.vm.info(vm_id)
    return vm.STATE, vm.LCM_STATE
