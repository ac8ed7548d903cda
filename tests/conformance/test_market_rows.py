"""Conformance rows of the marketplace server (OpenNebula/appmarket-simple) and of the cloud's market
driver (OpenNebula/one `src/market_mad/remotes/one/monitor`), on every emulated platform version."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import httpx
import pyone

from tui.domain.template_text import parse_template, scalar
from tui.sim import catalog
from tui.sim.market_driver import driver_vm_template
from tui.sim.market_series import lists_version
from tui.sim.platform import driver_adds_requirements, market_driver_user_agent, series
from tui.sim.server import SimServer


def _listing(sim: SimServer, user_agent: str | None, path: str = "/appliance", **headers: str) -> list[dict[str, Any]]:
    sent = {"Accept": "application/json", **headers, **({"User-Agent": user_agent} if user_agent else {})}
    with httpx.Client(timeout=10.0) as http:
        if user_agent is None:
            http.headers.pop("User-Agent", None)
        response = http.get(sim.market_url + path, headers=sent)
    assert response.status_code == 200
    return list(response.json()["appliances"])


def _names(records: list[dict[str, Any]]) -> set[str]:
    return {r["name"] for r in records}


def _apps(sim: SimServer) -> list[Any]:
    return list(pyone.OneServer(sim.xmlrpc_url, session=sim.session).marketapppool.info(-2, -1, -1).MARKETPLACEAPP)


def _main_market_apps(sim: SimServer) -> list[Any]:
    names = catalog.marketplace_names(sim.site.naming)
    market_id = next(m.id for m in sim.site.marketplaces.values() if m.name == names[catalog.MAIN_PREFIX])
    return [app for app in _apps(sim) if app.MARKETPLACE_ID == market_id]


def test_listing_follows_the_series_in_user_agent(site: SimServer) -> None:
    """appmarket-simple src/controllers/appmarket-server.rb (`get '/appliance/?'`) and
    src/models/appliances.rb: `^OpenNebula (\\d+\\.\\d+)` picks the series' list."""
    six = _listing(site, "OpenNebula 6.10")
    seven = _listing(site, "OpenNebula 7.0")
    assert all(lists_version(r, "6.10") for r in six)
    assert all(lists_version(r, "7.0") for r in seven)
    assert "VPN Gateway" in _names(six) and "VPN Gateway" not in _names(seven)


def test_unknown_or_missing_series_gets_the_latest_series_list(site: SimServer) -> None:
    """appmarket-simple src/controllers/appmarket-server.rb: a series no record lists, a User-Agent
    without `OpenNebula X.Y` at its start, or none at all, gets `latest_one_version`'s list
    (src/models/appliances.rb, versions compared number by number: 7.0 > 6.10)."""
    latest = _names(_listing(site, "OpenNebula 7.0"))
    for user_agent in ("OpenNebula 7.4", "OpenNebula 7.2.0", "OpenNebula 7.3.80 (Market Driver)",
                       "Mozilla/5.0 OpenNebula 6.10", "curl/8.0", None):
        assert _names(_listing(site, user_agent)) == latest, user_agent


def test_download_href_comes_from_the_servers_own_address(site: SimServer) -> None:
    """appmarket-simple src/lib/appliance.rb `to_h`: `links.download.href` is
    `<APPMARKET_URL>/appliance/<id>/download`, the configured address, whatever Host was asked."""
    for record in _listing(site, "OpenNebula 7.0", Host="market.example.org:8080"):
        assert record["links"]["download"]["href"] == f"{site.market_url}/appliance/{record['_id']['$oid']}/download"


def test_a_record_is_json_for_the_platform_without_accept(site: SimServer) -> None:
    """appmarket-simple src/controllers/appmarket-server.rb: the HTML route of `/appliance/:id`
    passes a User-Agent matching /OpenNebula/i on to the JSON one."""
    with httpx.Client(timeout=10.0) as http:
        response = http.get(f"{site.market_url}/appliance/{catalog.TOOLKIT_RECORD_ID}",
                            headers={"User-Agent": "OpenNebula 7.0.0 (Market Driver)", "Accept": "*/*"})
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["_id"] == {"$oid": catalog.TOOLKIT_RECORD_ID}


def test_download_redirects_with_the_size_header(site: SimServer) -> None:
    """appmarket-simple src/controllers/appmarket-server.rb `get '/appliance/:id/download/?:file_id?'`:
    302 to the file's URL with `OpenNebula-AppMarket-Size`; 404 for an unknown record or file."""
    image = next(r for r in _listing(site, "OpenNebula 7.0") if r.get("files"))
    with httpx.Client(timeout=10.0, follow_redirects=False) as http:
        found = http.get(image["links"]["download"]["href"] + "/0")
        assert found.status_code == 302
        assert found.headers["OpenNebula-AppMarket-Size"] == str(image["files"][0]["size"])
        assert http.get(image["links"]["download"]["href"] + f"/{len(image['files'])}").status_code == 404
        assert http.get(f"{site.market_url}/appliance/no-such-record/download").status_code == 404


def test_driver_user_agent_names_the_full_version() -> None:
    """src/market_mad/remotes/one/monitor `initialize`: `OpenNebula <VERSION> [<EDITION>] (Market Driver)`."""
    assert market_driver_user_agent("7.4.0") == "OpenNebula 7.4.0 (Market Driver)"
    assert market_driver_user_agent("6.10.0", "EE") == "OpenNebula 6.10.0 EE (Market Driver)"


def test_cloud_imports_what_the_server_answers_its_driver(site: SimServer, one_version: str) -> None:
    """src/market_mad/remotes/one/monitor `fetch_appliances`: the apps are the records
    `GET /appliance` answers the driver's User-Agent; on a series no record lists (7.4) that is
    the latest series' list (appmarket-simple src/controllers/appmarket-server.rb)."""
    served = _names(_listing(site, market_driver_user_agent(one_version)))
    assert {app.NAME for app in _main_market_apps(site)} == served
    if series(one_version) not in {"6.10", "7.0"}:
        assert served == _names(_listing(site, "OpenNebula 7.0"))


def test_app_source_and_link_point_at_the_download(site: SimServer) -> None:
    """src/market_mad/remotes/one/monitor `fetch_appliances`: LINK `<endpoint>/appliance/<id>`,
    SOURCE `<link>/download/0`, IMPORT_ID the record id."""
    for app in _main_market_apps(site):
        record_id = app.TEMPLATE["IMPORT_ID"]
        assert app.TEMPLATE["LINK"] == f"{site.market_url}/appliance/{record_id}"
        assert app.SOURCE == f"{site.market_url}/appliance/{record_id}/download/0"


def test_image_app_size_and_md5_come_from_the_first_file(site: SimServer, one_version: str) -> None:
    """src/market_mad/remotes/one/monitor `render_image`: SIZE is the first file's size in MiB
    rounded up, MD5 its `md5` (appmarket-simple src/lib/appliance/image.rb adds it beside checksum)."""
    records = {r["_id"]["$oid"]: r for r in _listing(site, market_driver_user_agent(one_version))}
    images = [app for app in _main_market_apps(site) if app.TYPE == 1]
    assert images
    for app in images:
        first = records[app.TEMPLATE["IMPORT_ID"]]["files"][0]
        assert int(app.SIZE) == math.ceil(first["size"] / 2**20)
        assert app.MD5 == first["md5"] == first["checksum"]["md5"]


def test_vm_template_gains_requirements_and_hypervisor_from_7_0(site: SimServer, one_version: str) -> None:
    """src/market_mad/remotes/one/monitor `generate_vm_template64` (7.0, 7.4): VMTEMPLATE64 of an
    image app and APPTEMPLATE64 of a VM template app get `SCHED_REQUIREMENTS="HYPERVISOR=kvm"`
    and `HYPERVISOR="kvm"`, the app ARCHITECTURE and HYPERVISOR; release-6.10.0's monitor converts
    the record's template as it is and adds none of them (6.10.4 adds ARCHITECTURE and its own
    SCHED_REQUIREMENTS: tests/sim/test_market_driver_versions.py)."""
    records = {r["_id"]["$oid"]: r for r in _listing(site, market_driver_user_agent(one_version))}
    checked = 0
    for app in _main_market_apps(site):
        encoded = app.TEMPLATE.get("VMTEMPLATE64") if app.TYPE == 1 else (app.APPTEMPLATE64 if app.TYPE == 2 else None)
        if not encoded:
            continue
        template = parse_template(base64.b64decode(encoded).decode())
        original = json.loads(records[app.TEMPLATE["IMPORT_ID"]]["opennebula_template"])
        if driver_adds_requirements(one_version):
            assert scalar(template, "SCHED_REQUIREMENTS") == "HYPERVISOR=kvm"
            assert scalar(template, "HYPERVISOR") == "kvm"
            assert app.TEMPLATE["HYPERVISOR"] == "kvm" and app.TEMPLATE["ARCHITECTURE"]
        else:
            # 6.10.0 (emulated here; 6.10.4+ in tests/sim/test_market_driver_versions.py)
            assert "SCHED_REQUIREMENTS" not in original and scalar(template, "SCHED_REQUIREMENTS") == ""
            assert "HYPERVISOR" not in app.TEMPLATE and "ARCHITECTURE" not in app.TEMPLATE
        assert scalar(template, "CPU") == str(original["CPU"])
        checked += 1
    assert checked


def test_arm64_apps_require_the_arch_and_get_the_arm_os_section() -> None:
    """src/market_mad/remotes/one/monitor `generate_vm_template64`/`app_arch` (7.0+): arm64 maps to
    aarch64, adds `& ARCH=aarch64` to SCHED_REQUIREMENTS after an existing one and merges the ARM
    OS section; amd64 maps to x86_64 and adds no ARCH term (the check runs on the mapped name)."""
    template = json.dumps({"CPU": "1", "SCHED_REQUIREMENTS": "ID!=3", "OS": {"BOOT": "disk0"}})
    arm = driver_vm_template({"opennebula_template": template, "os-arch": "arm64"}, "7.4.0")
    assert arm is not None
    assert arm["SCHED_REQUIREMENTS"] == "ID!=3 & HYPERVISOR=kvm & ARCH=aarch64"
    assert arm["OS"]["ARCH"] == "aarch64" and arm["OS"]["BOOT"] == "disk0" and arm["OS"]["MACHINE"] == "virt"
    amd = driver_vm_template({"opennebula_template": template, "os-arch": "amd64", "hypervisor": "ALL"},
                                     "7.0.0")
    assert amd is not None and amd["SCHED_REQUIREMENTS"] == "ID!=3 & HYPERVISOR=kvm" and "ARCH" not in amd["OS"]
    assert driver_vm_template({"opennebula_template": template, "os-arch": "arm64"}, "6.10.0") == \
        json.loads(template)
