"""The embedded site's appliance catalogue: record fields, versions, and the cloud's MARKETPLACEAPPs."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tui.domain.naming import NamingProfile
from tui.domain.template_text import first, parse_template
from tui.sim import catalog, market_monitor
from tui.sim.market_series import lists_version
from tui.sim.state import SimConfig, SimSite

REQUIRED = ("_id", "links", "name", "version", "publisher", "creation_time", "opennebula_version")


def _site(tmp_path: Path, one_version: str = "7.0.0", naming: NamingProfile | None = None) -> SimSite:
    site = SimSite(SimConfig(one_version=one_version), tmp_path, **({"naming": naming} if naming else {}))
    catalog.seed_catalog(site)
    return site


def test_every_record_has_the_required_fields_and_a_download_link(tmp_path: Path) -> None:
    site = _site(tmp_path)
    for prefix in catalog.PREFIXES:
        for record in site.market_records[prefix]:
            assert all(key in record for key in REQUIRED), record["_id"]
            rid = record["_id"]["$oid"]
            assert record["links"]["download"]["href"] == f"{prefix}/appliance/{rid}/download"
            assert isinstance(record["creation_time"], int)
            if "opennebula_template" in record:
                assert isinstance(record["opennebula_template"], str)
                json.loads(record["opennebula_template"])


def test_toolkit_service_has_four_roles_23_inputs_and_four_images(tmp_path: Path) -> None:
    site = _site(tmp_path)
    record = catalog.find_record(site, "", record_id=catalog.TOOLKIT_RECORD_ID)
    assert record is not None and record["type"] == "SERVICE_TEMPLATE"
    body = json.loads(record["opennebula_template"])
    assert [r["name"] for r in body["roles"]] == ["objectstore", "automation", "manager", "timeseries"]
    assert body["deployment"] == "straight" and body["ready_status_gate"] is True
    assert body["networks"] == {"Public": "M|network|Public||id:"}
    # a record listed for 6.10 and 7.0 carries the 6.x key, which 7.x converts (service_template.rb)
    inputs = body["custom_attrs"]
    assert len(inputs) == 23 and all(k.startswith("app_") for k in inputs)
    assert inputs["app_objectstore_root_password"].startswith("M|password|")
    assert inputs["app_automation_cloud_insecure"].split("|")[1] == "boolean"
    assert all(len(v.split("|")) == 5 for v in inputs.values())
    images: set[str] = set()
    for role, template_name in record["roles"].items():
        vm_record = catalog.find_record(site, "", name=template_name)
        assert vm_record is not None and vm_record["type"] == "VMTEMPLATE", role
        images.update(vm_record["disks"])
    assert len(images) == 4
    for name in images:
        image = catalog.find_record(site, "", name=name)
        assert image is not None and "type" not in image and image["files"][0]["size"] > 0


def test_names_follow_the_naming_profile(tmp_path: Path) -> None:
    naming = NamingProfile(input_prefix="x_", role_manager="lcm", toolkit_appliance_name="Kit")
    site = _site(tmp_path, naming=naming)
    record = catalog.find_record(site, "", record_id=catalog.TOOLKIT_RECORD_ID)
    assert record is not None and record["name"] == "Kit"
    body = json.loads(record["opennebula_template"])
    assert "lcm" in [r["name"] for r in body["roles"]]
    assert all(key.startswith("x_") for key in body["custom_attrs"])
    assert "x_lcm_admin_password" in body["custom_attrs"]


def test_versions_include_old_new_and_nonconforming(tmp_path: Path) -> None:
    site = _site(tmp_path)
    versions = {r["version"] for p in catalog.PREFIXES for r in site.market_records[p]}
    for expected in (catalog.TOOLKIT_VERSION, catalog.TOOLKIT_OLD_VERSION, "v1.29", "1.31.3-6.10.0-3-20251118-1327",
                     "v4.3.0.23-20250919-1159", "7.4.0-0-20260714"):
        assert expected in versions
    community_toolkit = catalog.find_record(site, "/community", record_id=catalog.TOOLKIT_RECORD_ID)
    assert community_toolkit is not None and community_toolkit["version"] == catalog.TOOLKIT_OLD_VERSION


def test_some_records_lack_optional_fields_and_some_carry_unknown_ones(tmp_path: Path) -> None:
    site = _site(tmp_path)
    records = [r for p in catalog.PREFIXES for r in site.market_records[p]]
    assert any("tags" not in r and "logo" not in r for r in records)
    assert any("os-id" not in r for r in records)
    known = set(REQUIRED) | {"description", "short_description", "tags", "format", "os-id", "os-release", "os-arch",
                             "hypervisor", "opennebula_template", "logo", "type", "roles", "disks", "files"}
    assert any(set(r) - known for r in records)


@pytest.mark.parametrize(("one_version", "label"), [("7.0.0", "7.0"), ("6.10.0", "6.10")])
def test_cloud_imports_the_apps_listed_for_its_version(tmp_path: Path, one_version: str, label: str) -> None:
    site = _site(tmp_path, one_version)
    # src/market/MarketPlacePool.cc 36-103: the bootstrap marketplaces, then user ones from 100
    assert {m.id: (m.name, m.market_mad, m.state) for m in site.marketplaces.values()} == {
        0: ("OpenNebula Public", "one", 1), 1: ("Linux Containers", "linuxcontainers", 1),
        100: (f"{site.naming.toolkit_appliance_name} Marketplace", "one", 0)}
    listed = {r["_id"]["$oid"] for r in site.market_records[catalog.MAIN_PREFIX] if lists_version(r, label)}
    assert {a.record_id for a in site.marketapps.values()} == listed
    assert {a.marketplace_id for a in site.marketapps.values()} == {100}
    # the version filter matters: the VPN gateway lists 6.6, 6.8 and 6.10 only
    assert ("service_vpn_gateway" in listed) == (label == "6.10")


def test_app_shapes_follow_the_market_driver(tmp_path: Path) -> None:
    site = _site(tmp_path)
    apps = list(site.marketapps.values())
    service = next(a for a in apps if a.record_id == catalog.TOOLKIT_RECORD_ID)
    assert service.type == 3
    roles = [dict(v) for k, v in service.template if k == "ROLE"]
    assert {r["NAME"] for r in roles} == {"objectstore", "automation", "manager", "timeseries"}
    assert json.loads(base64.b64decode(service.apptemplate64))["name"] == site.naming.toolkit_appliance_name
    vm_app = next(a for a in apps if a.name == roles[0]["APP"])
    assert vm_app.type == 2
    disks = [dict(v) for k, v in vm_app.template if k == "DISK"]
    assert disks and all(any(a.name == d["APP"] and a.type == 1 for a in apps) for d in disks)
    assert first(parse_template(base64.b64decode(vm_app.apptemplate64).decode()), "CONTEXT")
    image = next(a for a in apps if a.name == disks[0]["APP"])
    assert image.size_mb > 0 and image.md5 and base64.b64decode(image.apptemplate64).startswith(b"DEV_PREFIX=")
    assert sum(1 for a in site.marketapps.values() if a.broken) == 1


def test_apps_keep_description_version_and_apptemplate64_in_their_template(tmp_path: Path) -> None:
    """`MarketPlaceApp::from_template64` (src/market/MarketPlaceApp.cc 434-487 at release-7.0.2)
    reads DESCRIPTION, VERSION and APPTEMPLATE64 without removing them; it moves NAME, SOURCE, SIZE,
    MD5, FORMAT and REGTIME out of TEMPLATE and removes TYPE and ORIGIN_ID. The platform's export
    reads TEMPLATE/APPTEMPLATE64 (marketplaceapp_ext.rb 281, 347)."""
    site = _site(tmp_path)
    for app in site.marketapps.values():
        template = dict((k, v) for k, v in app.template if isinstance(v, str))
        assert template["VERSION"] == app.version and template.get("DESCRIPTION", "") == app.description
        assert template.get("APPTEMPLATE64", "") == app.apptemplate64
        assert not {"NAME", "SOURCE", "SIZE", "MD5", "FORMAT", "REGTIME", "TYPE", "ORIGIN_ID"} & set(template)
        assert template["IMPORT_ID"] == app.record_id and template["LINK"] == f"/appliance/{app.record_id}"
    service = next(a for a in site.marketapps.values() if a.type == 3)
    assert dict(service.template)["APPTEMPLATE64"]


def _versions(site: SimSite) -> dict[str, tuple[int, str, str]]:
    return {a.name: (a.marketplace_id, a.version, a.source) for a in site.marketapps.values()}


def test_one_app_per_name_across_marketplaces_its_content_from_the_last_monitored(tmp_path: Path) -> None:
    """MarketPlaceAppPool::import (src/market/MarketPlaceAppPool.cc 211-223 at release-7.0.2): an
    app name imported already, by any marketplace, is not imported again but rebuilt in place
    when its VERSION, MD5 or SOURCE differ; `_monitor` adds only new apps to the marketplace
    (MarketPlaceManagerProtocol.cc 266-286)."""
    site = _site(tmp_path)
    toolkit = site.naming.toolkit_appliance_name
    before = _versions(site)
    community = catalog.register_marketplace(site, catalog.COMMUNITY_PREFIX)
    assert community.id == 101
    market_monitor.monitor(site, community.id)
    after = _versions(site)
    # the community's own appliances are its apps; the names the site's marketplace holds are not
    own = {a.name for a in site.marketapps.values() if a.marketplace_id == community.id}
    assert "Ubuntu 24.04" in own and toolkit not in own and "DNS Server" not in own
    assert len(site.marketapps) == len(before) + len(own)
    # ... but their content is now the community's build, still apps of marketplace 100
    assert after[toolkit][:2] == (100, catalog.TOOLKIT_OLD_VERSION)
    assert after[toolkit][2] == f"{catalog.COMMUNITY_PREFIX}/appliance/{catalog.TOOLKIT_RECORD_ID}/download/0"
    assert after["DNS Server"][1] == "v1.0.0-20250110-1005"
    assert after["Bastion"] == before["Bastion"]  # only the community lists it: untouched
    service = next(a for a in site.marketapps.values() if a.name == toolkit)
    assert dict(service.template)["VERSION"] == catalog.TOOLKIT_OLD_VERSION
    # the site's marketplace monitored last: its builds again, in the same apps
    market_monitor.monitor(site, 100)
    assert _versions(site) == {**before, **{n: v for n, v in after.items() if n not in before}}
    # a whole round monitors in ID order: the community's builds win
    market_monitor.monitor_all(site)
    assert _versions(site)[toolkit][1] == catalog.TOOLKIT_OLD_VERSION


def test_an_app_missing_from_three_answers_is_dropped(tmp_path: Path) -> None:
    """MarketPlaceAppPool::test_map_check (MarketPlaceAppPool.cc 291-330 at release-7.0.2): a miss
    after an answer that listed the app counts from -1; the app goes at the count of 3."""
    site = _site(tmp_path)
    dns = next(a.id for a in site.marketapps.values() if a.name == "DNS Server")
    site.market_records[catalog.MAIN_PREFIX] = [r for r in site.market_records[catalog.MAIN_PREFIX]
                                                if r["name"] != "DNS Server"]
    for _ in range(3):
        market_monitor.monitor(site, 100)
        assert dns in site.marketapps
    market_monitor.monitor(site, 100)
    assert dns not in site.marketapps


def test_disabled_and_foreign_marketplaces_import_nothing(tmp_path: Path) -> None:
    site = _site(tmp_path)
    count = len(site.marketapps)
    site.marketplaces[0].state = 0  # OpenNebula Public enabled: its public URL is never reached here
    assert market_monitor.monitor(site, 0) is False and market_monitor.monitor(site, 1) is False
    site.marketplaces[100].state = 1
    assert market_monitor.monitor(site, 100) is False
    assert len(site.marketapps) == count


def test_base_url_binds_the_endpoints_and_the_apps_follow(tmp_path: Path) -> None:
    site = _site(tmp_path)
    app = next(a for a in site.marketapps.values() if a.type == 1)
    assert app.source == f"/appliance/{app.record_id}/download/0"
    site.base_url = "http://127.0.0.1:4321"
    catalog.bind_base_url(site)
    market = site.marketplaces[100]
    assert market.endpoint == "http://127.0.0.1:4321/"
    assert app.source == f"http://127.0.0.1:4321/appliance/{app.record_id}/download/0"
    assert ("ENDPOINT", "http://127.0.0.1:4321/") in market.template


def test_seeding_twice_does_not_duplicate_apps(tmp_path: Path) -> None:
    site = _site(tmp_path)
    count = len(site.marketapps)
    catalog.seed_catalog(site)
    assert len(site.marketapps) == count and len(site.marketplaces) == 3
