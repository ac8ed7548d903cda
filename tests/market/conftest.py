"""Fixtures of the marketplace tests: a connected `SiteConnection` to the embedded site, with the
audit log and console state under the test's tmp_path, and helpers to collect progress events."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest

from tui.procedures.audit import AUDIT_ENV
from tui.procedures.connection import SiteConnection
from tui.settings import Settings
from tui.sim.server import SimServer

#: poll fast: the embedded site runs 50 times faster than real time in tests
POLL = 0.02


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Audit log, config and state under tmp_path; no operator config file is read."""
    audit = tmp_path / "audit" / "audit.log"
    monkeypatch.setenv(AUDIT_ENV, str(audit))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SITETK_CONFIG", raising=False)
    return audit


def settings_for(server: SimServer, tmp_path: Path, *, marketplace_urls: tuple[str, ...] = (),
                 timeout: float | None = None) -> Settings:
    """Settings pointed at the embedded site; marketplaces come from the cloud unless given."""
    base = Settings(state_dir=tmp_path / "state", audit_log=tmp_path / "audit" / "audit.log")
    settings = Settings.for_site(server.xmlrpc_url, server.session, server.flow_url, marketplace_urls, base=base)
    return replace(settings, xmlrpc_timeout=timeout) if timeout is not None else settings


def community_url(server: SimServer) -> str:
    """The embedded site's second HTTP marketplace, which the fresh cloud does not register (it
    lists older builds under the names of the site's own appliances): tests read it through the
    settings (`connect(server, marketplace_urls=(community_url(server),))`)."""
    return server.market_url + "/community"


def register_community(server: SimServer) -> int:
    """Register the community marketplace in the cloud and let the cloud monitor every marketplace
    once (in ID order, as oned does): what an operator who runs `onemarket create` for it gets. The
    cloud keeps one app per name, so the site's toolkit app then holds the community's build."""
    from tui.sim import catalog, market_monitor

    with server.site.lock:
        market = catalog.register_marketplace(server.site, catalog.COMMUNITY_PREFIX)
        market_monitor.monitor_all(server.site)
    return market.id


#: the series whose list the marketplace answers each emulated platform's User-Agent with: its own
#: when some record lists it; no record lists 7.4, so appmarket-simple answers its latest series
#: (`src/controllers/appmarket-server.rb`, `get '/appliance/?'`)
SERVED_SERIES = {"6.10.0": "6.10", "7.0.0": "7.0", "7.4.0": "7.0"}
#: appliances a fresh site lists per served series (its one registered marketplace): the VPN
#: gateway lists 6.10 and not 7.0 (`tui.sim.catalog`)
FRESH_APPLIANCES = {"6.10": 18, "7.0": 17}


def served_series(server: SimServer) -> str:
    """The platform series of the appliances the marketplaces answer this site's console."""
    return SERVED_SERIES[server.site.config.one_version]


def fresh_appliances(server: SimServer) -> int:
    """How many appliances the console lists on this fresh site."""
    return FRESH_APPLIANCES[served_series(server)]


SiteFactory = Callable[..., Awaitable[SiteConnection]]


@pytest.fixture
async def connect(tmp_path: Path) -> AsyncIterator[SiteFactory]:
    """`await connect(server, marketplace_urls=..., timeout=...)`: a connected SiteConnection."""
    opened: list[SiteConnection] = []

    async def factory(server: SimServer, **kwargs: Any) -> SiteConnection:
        site = SiteConnection(settings_for(server, tmp_path, **kwargs))
        opened.append(site)
        await site.connect()
        return site

    yield factory
    for site in opened:
        await site.close()


def audit_entries(path: Path) -> list[dict[str, Any]]:
    from tui.procedures.audit import AuditLog

    return AuditLog(path).entries()


#: the toolkit's attribute file, as the spec shows it
TOOLKIT_FILE_TEXT = (
    'PLATFORM_MARKETPLACE_APPLIANCE_NAME="Site Toolkit"\n'
    'PLATFORM_MARKETPLACE_APPLIANCE_VERSION="20250403-1109"\n'
    'PLATFORM_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION="v0.5.0"\n'
)


def free_old_images(server: SimServer) -> None:
    """As if the deployed toolkit's VMs had moved to a new version: no VM uses the old images."""
    with server.site.lock:
        for image in server.site.images.values():
            image.running_vms = 0
            image.vm_ids = []
            if image.state == 2:  # USED
                image.state = 1  # READY
