"""Conformance rows of the cloud's marketplaces and apps as oned keeps them (OpenNebula/one
src/market/, at the tags each row names), on every emulated platform version: the bootstrap
marketplaces and user ones from 100, the apps' TEMPLATE copies, what monitoring imports (one app
per name across marketplaces), the 6.10.0-6.10.2 driver's missing slash, `one.market.update` and
`one.market.enable`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SimFactory
from tests.sim.one_client import call, one
from tests.waiting import wait_until
from tui.sim import catalog, market_monitor
from tui.sim.server import SimServer


def _monitor(sim: SimServer) -> None:
    """The next monitoring round (every MONITORING_INTERVAL_MARKET on the platform)."""
    with sim.site.lock:
        market_monitor.monitor_all(sim.site)


def _apps(sim: SimServer, market_id: int) -> dict[str, Any]:
    return {a.NAME: a for a in one(sim).marketapppool.info(-2, -1, -1).MARKETPLACEAPP if a.MARKETPLACE_ID == market_id}


def _register(sim: SimServer, endpoint: str) -> int:
    answer = call(sim, "one.market.allocate", f'NAME="community"\nMARKET_MAD="one"\nENDPOINT="{endpoint}"\n')
    assert answer[0] is True, answer
    return int(answer[1])


def test_a_fresh_cloud_has_the_bootstrap_marketplaces_and_user_ones_from_100(site: SimServer) -> None:
    """src/market/MarketPlacePool.cc 36-103 (release-7.0.2; 6.10.0 and 7.4.0 the same): 0 "OpenNebula
    Public" (MARKET_MAD=one, no ENDPOINT; created enabled, disabled by this site's operator as a
    loopback frontend must) and 1 "Linux Containers" (DISABLED), then `set_lastOID(99)`."""
    markets = {m.ID: m for m in one(site).marketpool.info().MARKETPLACE}
    assert (markets[0].NAME, markets[0].MARKET_MAD, markets[0].STATE) == ("OpenNebula Public", "one", 1)
    assert (markets[1].NAME, markets[1].MARKET_MAD, markets[1].STATE) == ("Linux Containers", "linuxcontainers", 1)
    assert "ENDPOINT" not in markets[0].TEMPLATE and not markets[0].MARKETPLACEAPPS.ID
    assert min(i for i in markets if i > 1) == 100
    assert _register(site, site.market_url + "/nowhere/") == 101


def test_apps_keep_description_version_and_apptemplate64_in_template(site: SimServer) -> None:
    """MarketPlaceApp::from_template64 (src/market/MarketPlaceApp.cc 434-487 at release-7.0.2, 6.10.0
    and 7.4.0 the same): the driver's APP becomes TEMPLATE; TYPE and ORIGIN_ID are removed; NAME,
    SOURCE, SIZE, MD5, FORMAT, REGTIME moved out; DESCRIPTION, VERSION, APPTEMPLATE64 read and kept."""
    for app in one(site).marketapppool.info(-2, -1, -1).MARKETPLACEAPP:
        template = app.TEMPLATE
        assert template["VERSION"] == app.VERSION and template.get("DESCRIPTION", "") == app.DESCRIPTION
        assert template.get("APPTEMPLATE64", "") == app.APPTEMPLATE64
        assert not {"NAME", "SOURCE", "SIZE", "MD5", "FORMAT", "REGTIME", "TYPE", "ORIGIN_ID"} & set(template)
        assert template["LINK"] == f"{site.market_url}/appliance/{template['IMPORT_ID']}"
        assert app.SOURCE == template["LINK"] + "/download/0"


def test_a_second_marketplace_gets_only_the_names_no_marketplace_holds(sim: SimServer) -> None:
    """MarketPlaceAppPool::import (src/market/MarketPlaceAppPool.cc 211-223 at release-7.0.2) and
    MarketPlaceManager::_monitor (MarketPlaceManagerProtocol.cc 266-286)."""
    toolkit = sim.site.naming.toolkit_appliance_name
    market_id = _register(sim, sim.market_url + "/community/")
    assert market_id == 101  # MarketPlacePool.cc `set_lastOID(99)`, and 100 is the site's own
    assert _apps(sim, market_id) == {}  # nothing until the platform monitors it
    _monitor(sim)
    own = _apps(sim, market_id)
    # an appliance the community lists for 6.10 and 7.x alike (its Ubuntu 24.04 is 7.x only)
    assert "Debian 12 (arm64)" in own and toolkit not in own
    site_apps = _apps(sim, 100)
    # the toolkit stays app of marketplace 100 with the community's build, monitored last
    assert site_apps[toolkit].VERSION == catalog.TOOLKIT_OLD_VERSION
    assert site_apps[toolkit].SOURCE.startswith(sim.market_url + "/community/appliance/")
    assert site_apps[toolkit].TEMPLATE["LINK"] == f"{sim.market_url}/community/appliance/{catalog.TOOLKIT_RECORD_ID}"
    names = [a.NAME for a in one(sim).marketapppool.info(-2, -1, -1).MARKETPLACEAPP]
    assert len(names) == len(set(names))


def test_disabling_a_marketplace_drops_its_apps_and_enabling_monitors_it(sim: SimServer) -> None:
    """MarketPlaceEnable (src/rm/RequestManagerMarketPlace.cc 39-115 at release-7.0.2)."""
    market_id = _register(sim, sim.market_url + "/community/")
    _monitor(sim)
    assert _apps(sim, market_id)
    assert call(sim, "one.market.enable", market_id, False)[0] is True
    assert _apps(sim, market_id) == {} and one(sim).market.info(market_id).STATE == 1
    _monitor(sim)
    assert _apps(sim, market_id) == {}  # a disabled marketplace is not monitored
    assert call(sim, "one.market.enable", market_id, True)[0] is True
    assert _apps(sim, market_id) and one(sim).market.info(market_id).STATE == 0


@pytest.mark.parametrize("one_version", ["6.10.0", "7.0.0", "7.4.0"])
def test_an_endpoint_without_a_slash_breaks_the_links_before_6_10_3(sim_factory: SimFactory, one_version: str) -> None:
    """6.10.0-6.10.2's driver builds `"#{@url}appliance/#{id}"` from the ENDPOINT as it is
    (src/market_mad/remotes/one/monitor line 170 at release-6.10.0); 6.10.3 adds the slash
    (line 42 at release-6.10.3). The listing works either way; every app's link is broken, and an
    image exported from such an app fails its download. `onemarket update` adding the slash mends
    the apps at the next monitoring (their SOURCE differs: rebuilt in place)."""
    sim = sim_factory(one_version=one_version)
    market_id = _register(sim, sim.market_url + "/community")
    _monitor(sim)
    apps = _apps(sim, market_id)
    alpine_or_ubuntu = next(a for name, a in apps.items() if name in ("Alpine Linux 3.21", "Ubuntu 24.04"))
    broken = one_version == "6.10.0"
    expected = f"{sim.market_url}/community{'' if broken else '/'}appliance/"
    assert alpine_or_ubuntu.TEMPLATE["LINK"].startswith(expected)
    image = call(sim, "one.image.allocate", f'NAME="probe"\nFROM_APP="{alpine_or_ubuntu.ID}"\n', 1)
    assert image[0] is True, image
    done = wait_until(lambda: one(sim).image.info(image[1]).STATE in (1, 5), what="the image's download to end")
    assert done and one(sim).image.info(image[1]).STATE == (5 if broken else 1)  # ERROR / READY
    assert call(sim, "one.market.update", market_id, f'ENDPOINT="{sim.market_url}/community/"', 1)[0] is True
    assert one(sim).market.info(market_id).TEMPLATE["ENDPOINT"] == f"{sim.market_url}/community/"
    _monitor(sim)
    mended = _apps(sim, market_id)[alpine_or_ubuntu.NAME]
    assert mended.ID == alpine_or_ubuntu.ID
    assert mended.TEMPLATE["LINK"].startswith(f"{sim.market_url}/community/appliance/")
