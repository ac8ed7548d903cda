"""Marketplace adapter contract: the listing filtered by the platform version in User-Agent, one
record, the download redirect and size, bad records reported one by one, and failures (404, 500,
invalid JSON, slow answers, refused connections) as SiteErrors."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.adapters.conftest import CALL_TIMEOUT_S, SiteUnderTest
from tui.adapters.marketplace import MarketplaceClient
from tui.adapters.retry import NO_PAUSE
from tui.domain.appliances import ApplianceType
from tui.errors import SiteError


@pytest.fixture
def market_url(site: SiteUnderTest) -> str:
    if not site.marketplace_urls:
        pytest.skip("no marketplace URL configured ([marketplace] urls)")
    return site.marketplace_urls[0]


async def test_listing_and_record_agree(market: MarketplaceClient, market_url: str) -> None:
    listing = await market.list_appliances(market_url)
    assert listing.records
    # the server filters on the series in User-Agent; a series it does not list gets its latest
    # series' list (appmarket-simple src/controllers/appmarket-server.rb), so: all or none
    fits = [r.supports_platform(market.platform_version) for r in listing.records]
    assert all(fits) or not any(fits)
    first = listing.records[0]
    assert await market.get_appliance(market_url, first.id) == first
    with pytest.raises(SiteError) as info:
        await market.get_appliance(market_url, "no-such-appliance-here")
    assert info.value.code == 404 and not info.value.retryable


async def test_user_agent_names_the_platform_series(sim_only: None, sim: Any) -> None:
    async with httpx.AsyncClient() as raw:
        anonymous = (await raw.get(f"{sim.market_url}/appliance", headers={"Accept": "application/json"})).json()
    latest_ids = {r["_id"]["$oid"] for r in anonymous["appliances"]}
    seen: dict[str, set[str]] = {}
    for version in ("7.0.0", "6.10.0", "7.4.0"):
        client = MarketplaceClient(CALL_TIMEOUT_S, version)
        try:
            assert client.user_agent == f"OpenNebula {version.rsplit('.', 1)[0]}"
            listing = await client.list_appliances(sim.market_url)
        finally:
            await client.close()
        seen[version] = {r.id for r in listing.records}
        if version != "7.4.0":
            assert all(r.supports_platform(version) for r in listing.records)
    assert seen["7.0.0"] != seen["6.10.0"]
    # no record lists 7.4: the server answers its latest series' list, as to a client without one
    assert seen["7.4.0"] == seen["7.0.0"] == latest_ids


async def test_download_info_reads_the_redirect_without_following(market: MarketplaceClient, market_url: str,
                                                                  site: SiteUnderTest) -> None:
    listing = await market.list_appliances(market_url)
    image = next(r for r in listing.records if r.type is ApplianceType.IMAGE and r.files)
    info = await market.download_info(image)
    assert info.url == image.download_url
    assert info.location != info.url and info.location.startswith("http")
    if site.sim is not None:
        assert info.size == image.files[0].size
        service = next(r for r in listing.records if r.type is ApplianceType.SERVICE_TEMPLATE and not r.files)
        with pytest.raises(SiteError) as error:
            await market.download_info(service)
        assert error.value.code == 404 and service.name in error.value.title


async def test_a_bad_record_does_not_hide_the_others(sim_only: None, sim: Any, market: MarketplaceClient) -> None:
    before = await market.list_appliances(sim.market_url)
    with sim.site.lock:
        records = sim.site.market_records[""]
        records.append({"_id": {"$oid": "broken_record"}, "opennebula_version": "7.0, 6.10", "version": "v1"})
    listing = await market.list_appliances(sim.market_url)
    assert [r.id for r in listing.records] == [r.id for r in before.records]
    assert len(listing.errors) == 1 and "name" in str(listing.errors[0])


@pytest.mark.parametrize("fault, words, retryable", [
    ("error", "Marketplace error", True),
    ("invalid_json", "Malformed answer", False),
])
async def test_listing_faults(sim_only: None, sim: Any, market: MarketplaceClient, fault: str, words: str,
                              retryable: bool) -> None:
    sim.site.faults.market_faults[""] = fault
    with pytest.raises(SiteError) as info:
        await market.list_appliances(sim.market_url)
    assert words in info.value.title and info.value.retryable is retryable


async def test_record_faults_and_slow_answers(sim_only: None, sim: Any, market: MarketplaceClient) -> None:
    # the fault and the listing go through the suite's client (its usual timeout), so a loaded
    # machine cannot turn them into "No answer"; only the slow answer meets the 0.5 s client
    impatient = MarketplaceClient(0.5, "7.0.0")
    try:
        record = (await market.list_appliances(sim.market_url)).records[0]
        sim.site.faults.market_faults[record.id] = "invalid_json"
        with pytest.raises(SiteError) as info:
            await market.get_appliance(sim.market_url, record.id)
        assert "Malformed" in info.value.title
        # an answer 3 s late: with its 0.5 s timeout the client gives up ("No answer", retryable);
        # a client that waited would get the record instead and fail the raises
        sim.site.faults.market_faults[record.id] = "slow:3000"
        with pytest.raises(SiteError) as info:
            await impatient.get_appliance(sim.market_url, record.id)
        assert info.value.retryable and "No answer" in info.value.title
    finally:
        sim.site.faults.market_faults.clear()
        await impatient.close()


async def test_refused_and_injected_failures(sim_only: None, sim: Any, market: MarketplaceClient) -> None:
    market.retry_policy = NO_PAUSE  # every try fails: the tries without the back-off's pauses
    sim.site.faults.fail_rate = 1.0
    try:
        for _ in range(6):
            with pytest.raises(SiteError) as info:
                await market.list_appliances(sim.market_url)
            assert info.value.retryable
    finally:
        sim.site.faults.fail_rate = 0.0
    sim.stop()
    try:
        with pytest.raises(SiteError) as info:
            await market.list_appliances(sim.market_url)
        assert "Nothing listening" in info.value.title and info.value.retryable
    finally:
        sim.start()
    assert (await market.list_appliances(sim.market_url)).records
