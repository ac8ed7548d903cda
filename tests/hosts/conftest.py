"""Fixtures of the host-compatibility tests: a connection to the embedded site and a move ledger.

`connect(server, **settings)` builds the `SiteConnection` the console would build for that site
(settings overrides such as `min_free_cpu_percent` apply); connections are closed at teardown.
Every test gets its own HOME, XDG directories (its audit log and move journal with them).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from tests.conftest import isolate_home
from tests.procedure_run import collect as collect  # the hosts tests' procedures report to a context
from tui.procedures.connection import SiteConnection
from tui.procedures.hosts.move_plan import MoveTimeouts
from tui.procedures.hosts.move_vm import MoveLedger
from tui.settings import Settings
from tui.sim.server import SimServer

#: waits bounded for a site running at time_scale 0.02 (an undeploy takes about 0.2 s there)
FAST = MoveTimeouts(undeploy=30.0, running=30.0, ready=30.0, poll_interval=0.02)

Connect = Callable[..., SiteConnection]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


@pytest.fixture
def ledger() -> MoveLedger:
    """What a test's moves did, VM by VM (what the run's one audit record is written from)."""
    return MoveLedger()


def settings_for(server: SimServer, **overrides: Any) -> Settings:
    settings = Settings.for_site(server.xmlrpc_url, server.session, server.flow_url, (server.market_url,))
    return replace(settings, **overrides) if overrides else settings


@pytest.fixture
def connect() -> Iterator[Connect]:
    opened: list[SiteConnection] = []

    def factory(server: SimServer, **overrides: Any) -> SiteConnection:
        site = SiteConnection(settings_for(server, **overrides))
        opened.append(site)
        return site

    yield factory
    for site in opened:
        asyncio.run(site.close())


@pytest.fixture
def deployed(sim_factory: Callable[..., SimServer]) -> SimServer:
    """A site after a toolkit deployment: the manager VM sits on the AVX-less host."""
    return sim_factory(scenario="deployed")


