"""Listing the marketplaces over loopback: sources, version filter, odd records, failing servers."""

from __future__ import annotations

import pytest

from tests.market.conftest import SiteFactory, community_url, register_community, served_series
from tui.domain.upgrades import InstallState
from tui.errors import SiteError
from tui.procedures.market.marketplaces import AmbiguousAppliance, appliance_record, load_catalog, sources_from
from tui.sim.server import SimServer


def _names(catalog, marketplace: str | None = None) -> set[str]:  # type: ignore[no-untyped-def]
    return {e.record.name for e in catalog.entries if marketplace is None or e.source.name == marketplace}


def _add_record(server: SimServer, record: dict, prefix: str = "") -> None:  # type: ignore[type-arg]
    with server.site.lock:
        server.site.market_records[prefix].append(record)


def _record(record_id: str, **fields: object) -> dict:  # type: ignore[type-arg]
    base = {"_id": {"$oid": record_id}, "links": {"download": {"href": f"/appliance/{record_id}/download"}},
            "name": record_id.replace("_", " ").title(), "version": "v1.0.0-20250101-1200", "publisher": "Tests",
            "opennebula_version": "6.10, 7.0"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


async def test_lists_every_registered_marketplace_with_install_status(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim)
    catalog = await load_catalog(site)
    # marketplaces 0 and 1 (disabled, no ENDPOINT) are not read; the site's own is
    assert [(s.name, s.marketplace_id) for s in catalog.sources] == [("Site Toolkit Marketplace", 100)]
    assert all(s.origin == "cloud" and s.registered for s in catalog.sources)
    assert catalog.failures == () and catalog.record_errors == ()
    # the cloud imported every record the marketplace lists for its version: each is exportable
    apps = {a.name: a.id for a in await site.cloud.list_marketapps()}
    assert all(e.cloud is not None and e.cloud.app is not None and e.cloud.app.id == apps[e.record.name]
               for e in catalog.entries)
    toolkit = catalog.find(f"{sim.market_url}#service_toolkit")
    record = toolkit.record
    assert record.version == "v0.5.0-20250403-1109"
    assert record.download_url == f"{sim.market_url}/appliance/service_toolkit/download"
    assert record.type.value == "SERVICE_TEMPLATE" and set(record.roles) == set(site.naming.roles)
    assert record.publisher and record.description.startswith("# Site Toolkit")
    assert toolkit.state is InstallState.NOT_DOWNLOADED
    assert {e.state for e in catalog.entries} == {InstallState.NOT_DOWNLOADED}


async def test_a_settings_url_is_read_once_even_when_the_cloud_registers_it(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim, marketplace_urls=(sim.market_url + "/", community_url(sim)))
    catalog = await load_catalog(site)
    assert [s.origin for s in catalog.sources] == ["cloud+settings", "settings"]


async def test_a_disabled_marketplace_is_not_read_as_registered(sim: SimServer, connect: SiteFactory) -> None:
    """A disabled marketplace is not monitored and disabling drops its apps (src/rm/
    RequestManagerMarketPlace.cc 47-51, 88-110 at release-7.0.2): its records are not the cloud's."""
    site = await connect(sim, marketplace_urls=(community_url(sim),))
    market_id = register_community(sim)
    await site.cloud.market_enable(market_id, False)
    catalog = await load_catalog(site)
    community = next(s for s in catalog.sources if s.url == community_url(sim))
    assert community.origin == "settings" and not community.registered
    # an appliance the community lists for 6.10 and 7.x alike (its Ubuntu 24.04 is 7.x only)
    debian = catalog.find(f"{community_url(sim)}#" + next(
        e.record.id for e in catalog.entries if e.record.name == "Debian 12 (arm64)"))
    assert debian.cloud is not None and debian.cloud.app is None
    assert debian.cloud.title == f"Marketplace {market_id} (Community Marketplace) is disabled"
    assert f"onemarket enable {market_id}" in debian.cloud.detail


def test_sources_keep_cloud_marketplaces_with_an_http_endpoint_first() -> None:
    from tui.domain.attributes import Attributes
    from tui.domain.marketapps import Marketplace

    def market(mid: int, endpoint: str) -> Marketplace:
        return Marketplace(mid, f"m{mid}", "oneadmin", 0, "one", 0, (), Attributes((("ENDPOINT", endpoint),)))

    sources = sources_from([market(0, ""), market(1, "http://a/"), market(2, "http://a")], ["http://b", " "])
    assert [(s.url, s.origin, s.marketplace_id) for s in sources] == [("http://a", "cloud", 1),
                                                                      ("http://b", "settings", None)]


@pytest.mark.parametrize("one_version, expected_in, expected_out", [
    ("7.0.0", {"Ubuntu 24.04", "DNS Server"}, {"Alpine Linux 3.21"}),
    ("6.10.0", {"Alpine Linux 3.21", "Container Cluster"}, {"Ubuntu 24.04"}),
    ("6.8.0", {"Site Toolkit", "Container Cluster"}, {"DNS Server", "Ubuntu 24.04", "Bastion"}),
])
async def test_marketplaces_list_only_records_for_the_platform_version(
        sim_factory, connect: SiteFactory, one_version: str, expected_in: set[str],  # type: ignore[no-untyped-def]
        expected_out: set[str]) -> None:
    server = sim_factory(one_version=one_version)
    site = await connect(server, marketplace_urls=(community_url(server),))
    catalog = await load_catalog(site)
    assert catalog.platform_version == one_version
    names = _names(catalog)
    assert expected_in <= names
    assert not expected_out & names
    series = ".".join(one_version.split(".")[:2])
    assert all(series in e.record.platform_versions for e in catalog.entries)


@pytest.mark.parametrize("one_version", ["7.2.0", "7.4.0", "7.3.80"])
async def test_a_series_no_marketplace_lists_keeps_the_latest_series_list(
        sim_factory, connect: SiteFactory, one_version: str) -> None:  # type: ignore[no-untyped-def]
    """appmarket-simple answers a series it does not list with its latest series' list
    (src/controllers/appmarket-server.rb); the console shows those records, as the cloud's market
    driver imports them, instead of hiding both marketplaces whole."""
    server = sim_factory(one_version=one_version)
    site = await connect(server, marketplace_urls=(community_url(server),))
    catalog = await load_catalog(site)
    names = _names(catalog)
    assert {"Ubuntu 24.04", "DNS Server", site.naming.toolkit_appliance_name} <= names
    assert "Alpine Linux 3.21" not in names  # listed for 6.8 and 6.10 only: not in the 7.0 list
    assert catalog.hidden_other_versions == 0
    assert dict(catalog.other_series) == {"Site Toolkit Marketplace": "6.10, 7.0",
                                          community_url(server): "6.8, 6.10, 7.0"}
    imported = {app.name for app in await site.cloud.list_marketapps()}
    assert _names(catalog, "Site Toolkit Marketplace") <= imported


async def test_a_record_with_missing_and_extra_fields_is_listed_with_what_it_has(sim: SimServer,
                                                                                 connect: SiteFactory) -> None:
    _add_record(sim, _record("sparse_one", publisher=None, description=None, tags="a, b", creation_time="12",
                             files="not a list", flavour="mint", size_hint=3))
    site = await connect(sim)
    catalog = await load_catalog(site)
    sparse = catalog.find("sparse_one").record
    assert sparse.publisher == "" and sparse.description == "" and sparse.os_id == ""
    assert sparse.tags == ("a", "b") and sparse.creation_time == 12 and sparse.files == ()
    assert dict(sparse.extra) == {"flavour": "mint", "size_hint": 3}
    assert "field 'publisher' is missing" in sparse.warnings
    assert any("'files' ignored" in w for w in sparse.warnings)
    route = catalog.find("Route Manager API").record
    assert route.os_id == "" and dict(route.extra) == {"downloads": 412, "maintainer_notes": "static routes only"}
    rows = dict(catalog.find("sparse_one").detail_rows())
    assert rows["publisher"] == "-" and rows["extra field flavour"] == "mint"


async def test_a_record_without_a_required_field_is_reported_and_hides_nothing(sim: SimServer,
                                                                               connect: SiteFactory) -> None:
    _add_record(sim, _record("nameless", name=None))
    _add_record(sim, _record("no_link", links={"download": {}}))
    site = await connect(sim)
    catalog = await load_catalog(site)
    assert len(catalog.record_errors) == 2
    assert any("'name' is missing" in e and "nameless" in e for e in catalog.record_errors)
    assert any("links.download.href" in e for e in catalog.record_errors)
    assert "DNS Server" in _names(catalog, "Site Toolkit Marketplace")


@pytest.mark.parametrize("version, software, stamp", [
    ("v1.29", "v1.29", ""),
    ("1.31.3-6.10.0-3-20251118-1327", "1.31.3", "6.10.0-3-20251118-1327"),
    ("v4.3.0.23-20250919-1159", "v4.3.0.23", "20250919-1159"),
    ("7.4.0-0-20260714", "7.4.0", "0-20260714"),
    ("", "", ""),
    ("latest", "latest", ""),
])
async def test_each_non_conforming_version_is_flagged_and_split_at_the_first_dash(
        sim: SimServer, connect: SiteFactory, version: str, software: str, stamp: str) -> None:
    _add_record(sim, _record("odd_version", version=version))
    site = await connect(sim)
    catalog = await load_catalog(site)
    entry = catalog.find("odd_version")
    parsed = entry.record.parsed_version
    assert not parsed.conforming and parsed.reason
    assert (parsed.software, parsed.stamp) == (software, stamp)
    rows = dict(entry.detail_rows())
    assert rows["software version"] == (software or "-") and rows["build stamp"] == (stamp or "-")
    assert rows["version problem"] == parsed.reason
    assert entry.as_json()["version_conforming"] is False


async def test_the_seeded_catalogue_flags_its_non_conforming_versions(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim, marketplace_urls=(community_url(sim),))
    catalog = await load_catalog(site)
    flagged = {e.record.version for e in catalog.entries if not e.record.parsed_version.conforming}
    # the community Ubuntu 24.04 lists only 7.0; its Container Cluster v1.29 and Alpine only 6.10
    only = {"7.0": {"7.4.0-0-20260714"}, "6.10": {"v1.29", "6.10.0-3-20250115"}}
    assert flagged == {"v4.3.0.23-20250919-1159", "1.31.3-6.10.0-3-20251118-1327",
                       "6.10.0-2-20241210"} | only[served_series(sim)]


async def test_unknown_record_is_a_clear_404(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim)
    with pytest.raises(SiteError) as caught:
        await appliance_record(site, sim.market_url, "no_such_appliance")
    assert caught.value.code == 404 and "not found" in caught.value.title


async def test_a_marketplace_url_that_is_not_one_fails_alone(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim, marketplace_urls=(sim.market_url + "/nothing-here", "http://127.0.0.1:9"))
    catalog = await load_catalog(site)
    failures = {f.source.url: f for f in catalog.failures}
    assert failures[sim.market_url + "/nothing-here"].title == "the appliance list not found"
    assert "Nothing listening" in failures["http://127.0.0.1:9"].title
    assert not catalog.all_failed
    assert "Site Toolkit" in _names(catalog)


@pytest.mark.parametrize("fault, title_part", [
    ("error", "Marketplace error reading the appliance list"),
    ("invalid_json", "Malformed answer"),
])
async def test_server_errors_and_invalid_json_are_reported_and_change_nothing(
        sim: SimServer, connect: SiteFactory, fault: str, title_part: str) -> None:
    site = await connect(sim)
    images_before = await site.cloud.list_images()
    sim.site.faults.market_faults[""] = fault
    catalog = await load_catalog(site)
    assert catalog.all_failed and catalog.entries == ()
    assert all(title_part in f.title for f in catalog.failures)
    if fault == "error":
        assert all(f.retryable and "HTTP 500" in f.detail for f in catalog.failures)
    else:
        assert all("invalid JSON" in f.detail for f in catalog.failures)
    assert await site.cloud.list_images() == images_before


async def test_a_marketplace_timeout_is_reported_and_changes_nothing(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim, timeout=0.5)
    images_before = await site.cloud.list_images()
    sim.site.faults.market_faults[""] = "slow:3000"
    catalog = await load_catalog(site)
    assert catalog.all_failed
    assert all(f.title.startswith("No answer from") and "within 0.5 s" in f.title for f in catalog.failures)
    assert all(f.retryable for f in catalog.failures)
    assert await site.cloud.list_images() == images_before


async def test_find_needs_the_key_when_several_marketplaces_hold_it_and_newest_is_for_definitions(
        sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim, marketplace_urls=(community_url(sim),))
    catalog = await load_catalog(site)
    with pytest.raises(AmbiguousAppliance) as info:
        catalog.find("site toolkit")
    assert info.value.keys == (f"{sim.market_url}#service_toolkit", f"{sim.market_url}/community#service_toolkit")
    assert catalog.find(f"{sim.market_url}#service_toolkit").record.version == "v0.5.0-20250403-1109"
    assert catalog.find(f"{community_url(sim)}#service_dns").record.version == "v1.0.0-20250110-1005"
    assert catalog.newest("site toolkit").record.version == "v0.5.0-20250403-1109"
    assert catalog.newest("service_dns").record.version == "v1.1.0-20250520-0931"
    with pytest.raises(SiteError, match="No appliance"):
        catalog.find("nothing like this")


async def test_of_two_registered_marketplaces_listing_a_name_only_the_build_the_cloud_holds_is_exportable(
        sim: SimServer, connect: SiteFactory) -> None:
    """The cloud keeps one app per name (MarketPlaceAppPool::import, src/market/MarketPlaceAppPool.cc
    211-223 at release-7.0.2): registered and monitored after the site's marketplace, the community
    one's older toolkit is what the site's toolkit app holds. The list says which record the cloud
    can export and why the other cannot; disabling the community marketplace and the next
    monitoring of the site's one give the site's build back."""
    from tui.procedures.market.download_planning import find_market_app
    from tui.sim import market_monitor

    site = await connect(sim)
    market_id = register_community(sim)
    catalog = await load_catalog(site)
    assert [s.marketplace_id for s in catalog.sources] == [100, market_id]
    mine, theirs = (catalog.find(f"{url}#service_toolkit") for url in (sim.market_url, community_url(sim)))
    assert theirs.cloud is not None and theirs.cloud.app is not None and theirs.cloud.app.marketplace_id == 100
    assert theirs.cloud.app.version == "v0.4.0-20250219-2235"
    assert mine.cloud is not None and mine.cloud.app is None
    assert mine.cloud.title == "The cloud holds Site Toolkit from another marketplace"
    assert f"onemarket disable {market_id}" in mine.cloud.detail and community_url(sim) in mine.cloud.detail
    assert dict(mine.detail_rows())["cloud app"] == f"app {theirs.cloud.app.id} holds v0.4.0-20250219-2235 from " \
                                                    "Community Marketplace"
    assert mine.as_json()["cloud_app"] == {"app_id": None, "label": mine.cloud.label, "problem": mine.cloud.title,
                                           "fix": mine.cloud.detail}
    with pytest.raises(SiteError, match="another marketplace"):
        await find_market_app(site, mine.record)
    assert (await find_market_app(site, theirs.record)).id == theirs.cloud.app.id
    # the fix the finding names
    await site.cloud.market_enable(market_id, False)
    with sim.site.lock:
        market_monitor.monitor_all(sim.site)
    app = await find_market_app(site, mine.record)
    assert app.id == theirs.cloud.app.id and app.version == "v0.5.0-20250403-1109"


@pytest.mark.parametrize("one_version", ["6.10.0", "7.0.0"])
async def test_an_endpoint_without_its_slash_stops_downloads_on_6_10_0_with_the_fix(
        sim_factory, connect: SiteFactory, one_version: str) -> None:  # type: ignore[no-untyped-def]
    """6.10.0-6.10.2's market driver builds every app's link and SOURCE from the ENDPOINT as it is
    (src/market_mad/remotes/one/monitor line 170 at release-6.10.0): without the trailing slash the
    cloud's downloads fail. The console names it, with `onemarket update`, before any change."""
    from tui.procedures.market.download_planning import find_market_app
    from tui.sim import market_monitor

    server = sim_factory(one_version=one_version)
    site = await connect(server)
    await site.cloud.market_update(100, f'ENDPOINT="{server.market_url}"', True)
    with server.site.lock:
        market_monitor.monitor_all(server.site)
    entry = (await load_catalog(site)).find("service_dns")
    assert entry.cloud is not None
    if one_version != "6.10.0":  # 6.10.3 and later add the slash themselves
        assert entry.cloud.app is not None and entry.cloud.app.link.startswith(server.market_url + "/appliance/")
        return
    assert entry.cloud.app is None and entry.cloud.label == "marketplace 100: ENDPOINT lacks its trailing slash"
    with pytest.raises(SiteError) as caught:
        await find_market_app(site, entry.record)
    assert caught.value.title == "Marketplace 100 (Site Toolkit Marketplace) gives its apps broken links"
    assert f"({server.market_url}appliance/<id>)" in caught.value.detail
    assert f'ENDPOINT="{server.market_url}/"' in caught.value.detail and "onemarket update 100" in caught.value.detail
