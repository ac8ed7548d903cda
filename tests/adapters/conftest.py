"""Fixtures of the adapter contract tests: the site under test is the embedded site, or a real
frontend when ONE_XMLRPC and ONE_AUTH are set in the environment (then only read-only tests run:
the ones that take `site`; the ones that take `sim` change the site or inject faults and skip).

OneFlow contract tests on a real frontend also need ONEFLOW_URL; marketplace ones a marketplace
URL in the config file ([marketplace] urls).

On the embedded site every contract test runs once per emulated platform version (the
`one_version` fixture of tests/conftest.py; `--one-versions` or SITETK_ONE_VERSIONS narrows it);
against a real frontend it runs once, on whatever version the frontend is.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from typing import Any, AsyncIterator, Awaitable, Callable, TypeVar

import pytest

from tui.adapters.cloud import CloudClient
from tui.adapters.flow import FlowClient
from tui.adapters.marketplace import MarketplaceClient
from tui.settings import Settings

T = TypeVar("T")

#: the contract tests target a real frontend when these are set
REAL_FRONTEND = bool(os.environ.get("ONE_XMLRPC") and os.environ.get("ONE_AUTH"))
#: a bound generous enough for a loaded CI machine; the calls themselves take milliseconds
CALL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SiteUnderTest:
    xmlrpc_url: str
    session: str
    flow_url: str
    flow_user: str
    flow_password: str
    marketplace_urls: tuple[str, ...]
    #: the embedded site's server, None for a real frontend
    sim: Any
    flow_configured: bool

    @property
    def user(self) -> str:
        return self.session.split(":", 1)[0]


@pytest.fixture
def site(request: pytest.FixtureRequest, one_version: str) -> SiteUnderTest:
    """The site the read-only contract tests talk to."""
    if REAL_FRONTEND:
        settings = Settings.load()
        if not settings.has_credentials:
            pytest.fail(f"ONE_AUTH is set but unusable: {settings.credentials_problem}")
        return SiteUnderTest(settings.xmlrpc_url, settings.session, settings.flow_url, settings.flow_user,
                             settings.flow_password, settings.marketplace_urls, None,
                             bool(os.environ.get("ONEFLOW_URL")))
    sim = request.getfixturevalue("sim")
    user, _, password = sim.session.partition(":")
    return SiteUnderTest(sim.xmlrpc_url, sim.session, sim.flow_url, user, password, (sim.market_url,), sim, True)


@pytest.fixture
def sim_only() -> None:
    """Skip a test that changes the site or injects faults when the target is a real frontend."""
    if REAL_FRONTEND:
        pytest.skip("changes the site or injects faults: embedded site only")


@pytest.fixture
async def cloud(site: SiteUnderTest) -> AsyncIterator[CloudClient]:
    client = CloudClient(site.xmlrpc_url, site.session, CALL_TIMEOUT_S)
    yield client
    await client.close()


@pytest.fixture
async def flow(site: SiteUnderTest) -> AsyncIterator[FlowClient]:
    if not site.flow_configured:
        pytest.skip("real frontend without ONEFLOW_URL")
    client = FlowClient(site.flow_url, site.flow_user, site.flow_password, CALL_TIMEOUT_S)
    yield client
    await client.close()


@pytest.fixture
async def market(cloud: CloudClient) -> AsyncIterator[MarketplaceClient]:
    client = MarketplaceClient(CALL_TIMEOUT_S, await cloud.version())
    yield client
    await client.close()


async def eventually(probe: Callable[[], Awaitable[T | None]], timeout: float, what: str) -> T:
    """Poll `probe` until it returns something truthy, failing with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last: {last!r})")
