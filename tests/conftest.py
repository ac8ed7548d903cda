"""Fixtures shared by every test: the embedded simulated site, started in-process on a free loopback port.

`sim_factory(scenario="fresh", one_version="7.0.0", time_scale=0.02, vms=0)` starts a seeded site
(state directory under the test's tmp_path) and stops it at teardown; `sim` is a fresh 7.0.0
site. Both return a `tui.sim.server.SimServer` (xmlrpc_url, flow_url, market_url, session, site).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from tui.sim.runner import start_sim
from tui.sim.server import SimServer
from tui.sim.state import SimConfig

SimFactory = Callable[..., SimServer]


@pytest.fixture
def sim_factory(tmp_path: Path) -> Iterator[SimFactory]:
    started: list[SimServer] = []

    def factory(scenario: str = "fresh", one_version: str = "7.0.0", time_scale: float = 0.02,
                vms: int = 0) -> SimServer:
        config = SimConfig(one_version=one_version, time_scale=time_scale, scenario=scenario, extra_vms=vms)
        server = start_sim(config, tmp_path / f"sim-{len(started)}")
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimServer:
    return sim_factory()
