"""The marketplaces of the embedded site over loopback HTTP: listing and filter, records, downloads, faults."""

from __future__ import annotations

import json
import threading
from typing import Iterator

import httpx
import pytest

from tui.sim import catalog
from tui.sim.server import SimServer

JSON = {"Accept": "application/json"}


@pytest.fixture
def client(sim: SimServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.market_url, timeout=10.0) as http:
        yield http


def _names(response: httpx.Response) -> list[str]:
    return [a["name"] for a in response.json()["appliances"]]


def test_listing_shape_and_absolute_links(client: httpx.Client, sim: SimServer) -> None:
    response = client.get("/appliance")
    assert response.status_code == 200
    data = response.json()
    assert data["sEcho"] == 1 and isinstance(data["appliances"], list)
    for record in data["appliances"]:
        rid = record["_id"]["$oid"]
        assert record["links"]["download"]["href"] == f"{sim.market_url}/appliance/{rid}/download"
        for item in record.get("files", []):
            assert item["url"].startswith(sim.market_url + "/")
            assert set(item["checksum"]) == {"md5", "sha256"} and item["size"] > 0


def test_user_agent_filters_by_cloud_version(client: httpx.Client, sim: SimServer) -> None:
    """appmarket-simple `src/controllers/appmarket-server.rb`: a series no record lists, or no
    `OpenNebula X.Y` User-Agent at all, gets the latest series' list, never an empty one."""
    anonymous = _names(client.get("/appliance"))
    seven = _names(client.get("/appliance", headers={"User-Agent": "OpenNebula 7.0.0 (Market Driver)"}))
    six = _names(client.get("/appliance", headers={"User-Agent": "OpenNebula 6.10.0"}))
    old = _names(client.get("/appliance", headers={"User-Agent": "OpenNebula 5.12.0"}))
    newer = _names(client.get("/appliance", headers={"User-Agent": "OpenNebula 7.4.0 (Market Driver)"}))
    assert "VPN Gateway" in six and "VPN Gateway" not in seven
    assert sim.site.naming.toolkit_appliance_name in seven
    assert anonymous == seven and old == seven and newer == seven
    community_seven = _names(client.get("/community/appliance", headers={"User-Agent": "OpenNebula 7.0"}))
    community_six = _names(client.get("/community/appliance", headers={"User-Agent": "OpenNebula 6.10"}))
    assert "Ubuntu 24.04" in community_seven and "Ubuntu 24.04" not in community_six
    assert "Alpine Linux 3.21" in community_six and "Alpine Linux 3.21" not in community_seven


def test_record_is_json_with_accept_and_html_otherwise(client: httpx.Client) -> None:
    response = client.get(f"/appliance/{catalog.TOOLKIT_RECORD_ID}", headers=JSON)
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    record = response.json()
    assert record["_id"] == {"$oid": catalog.TOOLKIT_RECORD_ID}
    assert record["version"] == catalog.TOOLKIT_VERSION and record["type"] == "SERVICE_TEMPLATE"
    assert isinstance(json.loads(record["opennebula_template"]), dict)
    page = client.get(f"/appliance/{catalog.TOOLKIT_RECORD_ID}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<h1>" in page.text


def test_community_records_use_their_own_prefix(client: httpx.Client, sim: SimServer) -> None:
    record = client.get(f"/community/appliance/{catalog.TOOLKIT_RECORD_ID}", headers=JSON).json()
    assert record["version"] == catalog.TOOLKIT_OLD_VERSION
    assert record["links"]["download"]["href"].startswith(f"{sim.market_url}/community/appliance/")


def test_unknown_record_is_404(client: httpx.Client) -> None:
    assert client.get("/appliance/no_such_thing", headers=JSON).status_code == 404
    assert client.get("/appliance/no_such_thing/download").status_code == 404
    assert client.get("/community/appliance/no_such_thing", headers=JSON).status_code == 404


def test_download_redirects_with_the_size(client: httpx.Client) -> None:
    record = client.get("/appliance/service_dns", headers=JSON).json()
    response = client.get("/appliance/service_dns/download")
    assert response.status_code == 302
    assert response.headers["location"] == record["files"][0]["url"]
    assert int(response.headers["opennebula-appmarket-size"]) == record["files"][0]["size"]
    assert client.get("/appliance/service_dns/download/0").headers["location"] == record["files"][0]["url"]
    assert client.get("/appliance/service_dns/download/1").status_code == 404
    followed = client.get("/appliance/service_dns/download", follow_redirects=True)
    assert followed.status_code == 200 and followed.content.startswith(b"QFI\xfb")


def test_records_without_files_have_no_download(client: httpx.Client) -> None:
    assert client.get(f"/appliance/{catalog.TOOLKIT_RECORD_ID}/download").status_code == 404


def test_the_broken_appliance_file_is_missing(client: httpx.Client, sim: SimServer) -> None:
    broken = next(a for a in sim.site.marketapps.values() if a.broken)
    response = client.get(f"/appliance/{broken.record_id}/download", follow_redirects=True)
    assert response.status_code == 404


def test_other_methods_are_not_allowed(client: httpx.Client) -> None:
    assert client.post("/appliance", content=b"{}").status_code == 405


def test_fault_switches(client: httpx.Client, sim: SimServer) -> None:
    sim.site.faults.market_faults = {"service_dns": "error", "service_bastion": "invalid_json",
                                     "service_vm_kvm": "slow:300", "": "invalid_json"}
    assert client.get("/appliance/service_dns", headers=JSON).status_code == 500
    broken = client.get("/appliance/service_bastion", headers=JSON)
    assert broken.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken.text)
    with pytest.raises(json.JSONDecodeError):
        json.loads(client.get("/appliance").text)
    with pytest.raises(httpx.ReadTimeout):
        client.get("/appliance/service_vm_kvm", headers=JSON, timeout=0.05)
    sim.site.faults.market_faults = {}
    assert client.get("/appliance/service_vm_kvm", headers=JSON).status_code == 200


def test_the_cloud_apps_point_at_this_marketplace(client: httpx.Client, sim: SimServer) -> None:
    with sim.site.lock:
        app = next(a for a in sim.site.marketapps.values() if a.record_id == "service_dns")
        source = app.source
        endpoint = sim.site.marketplaces[app.marketplace_id].endpoint
    assert endpoint == sim.market_url + "/"
    response = httpx.get(source)
    assert response.status_code == 302


def test_a_slow_record_does_not_block_other_requests(client: httpx.Client, sim: SimServer) -> None:
    sim.site.faults.market_faults = {"service_vm_kvm": "slow:3000"}
    slow = threading.Thread(target=lambda: httpx.get(f"{sim.market_url}/appliance/service_vm_kvm", timeout=10))
    slow.start()
    try:
        assert client.get("/appliance/service_dns", headers=JSON).status_code == 200
        assert slow.is_alive()  # answered while the slow one still waits
    finally:
        slow.join()
