"""Marketplace records: required fields, optional ones tolerated, extra ones kept, listings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tui.domain.appliances import (
    ApplianceFile,
    ApplianceType,
    RecordError,
    parse_listing,
    parse_record,
    platform_series,
)

MARKET = "http://127.0.0.1:8089"


def full_record(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "_id": {"$oid": "service_toolkit"},
        "links": {"download": {"href": f"{MARKET}/appliance/service_toolkit/download"}},
        "name": "Site Toolkit",
        "version": "v0.5.0-20250403-1109",
        "publisher": "Site team",
        "description": "# Toolkit\nFour VMs.",
        "short_description": "The site toolkit",
        "tags": ["toolkit", "service"],
        "format": "qcow2",
        "creation_time": 1743671340,
        "os-id": "Ubuntu",
        "os-release": "22.04",
        "os-arch": "x86_64",
        "hypervisor": "KVM",
        "opennebula_version": "6.10, 7.0",
        "opennebula_template": json.dumps({"name": "toolkit", "roles": [{"name": "manager"}]}),
        "logo": "toolkit.png",
        "type": "SERVICE_TEMPLATE",
        "roles": {"manager": "Toolkit manager", "automation": "Toolkit automation"},
        "files": [
            {
                "name": "disk0", "url": "http://files/disk0.qcow2", "type": "OS", "dev_prefix": "vd",
                "driver": "qcow2", "size": 1024, "checksum": {"md5": "abc", "sha256": "def"},
            }
        ],
    }
    data.update(overrides)
    return data


def test_full_record_parses_every_field() -> None:
    r = parse_record(full_record(), MARKET)
    assert r.id == "service_toolkit"
    assert r.name == "Site Toolkit"
    assert r.version == "v0.5.0-20250403-1109"
    assert r.parsed_version.software == "v0.5.0"
    assert r.download_url == f"{MARKET}/appliance/service_toolkit/download"
    assert r.marketplace_url == MARKET
    assert r.publisher == "Site team"
    assert r.description.startswith("# Toolkit")
    assert r.short_description == "The site toolkit"
    assert r.tags == ("toolkit", "service")
    assert r.format == "qcow2"
    assert r.creation_time == 1743671340
    assert (r.os_id, r.os_release, r.os_arch, r.hypervisor) == ("Ubuntu", "22.04", "x86_64", "KVM")
    assert r.platform_versions == ("6.10", "7.0")
    assert r.template == {"name": "toolkit", "roles": [{"name": "manager"}]}
    assert r.type is ApplianceType.SERVICE_TEMPLATE
    assert r.roles == {"manager": "Toolkit manager", "automation": "Toolkit automation"}
    assert r.files == (ApplianceFile("disk0", "http://files/disk0.qcow2", "OS", "vd", "qcow2", 1024, "abc", "def"),)
    assert r.size == 1024
    assert r.logo == "toolkit.png"
    assert r.extra == {}
    assert r.warnings == ()
    hash(r)  # usable as a key despite its mappings


def test_minimal_record_takes_defaults() -> None:
    data = {
        "_id": {"$oid": "img"},
        "links": {"download": {"href": f"{MARKET}/appliance/img/download"}},
        "name": "Ubuntu",
        "version": "v1.29",
    }
    r = parse_record(data, MARKET)
    assert r.type is ApplianceType.IMAGE
    assert r.publisher == "" and "field 'publisher' is missing" in r.warnings
    assert r.template is None and r.roles == {} and r.disks == () and r.files == ()
    assert r.creation_time is None and r.size is None
    assert not r.parsed_version.conforming  # flagged, not refused


def test_extra_fields_are_kept() -> None:
    r = parse_record(full_record(popularity=5, nested={"a": 1}), MARKET)
    assert r.extra == {"popularity": 5, "nested": {"a": 1}}


def test_vm_template_record_has_disks() -> None:
    r = parse_record(full_record(type="VMTEMPLATE", disks=["Toolkit disk0", "Toolkit disk1"], roles=None), MARKET)
    assert r.type is ApplianceType.VMTEMPLATE
    assert r.disks == ("Toolkit disk0", "Toolkit disk1")


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (lambda d: d.pop("_id"), "_id", "'_id' is missing"),
        (lambda d: d.update({"_id": "service_toolkit"}), "_id.$oid", "must be an object"),
        (lambda d: d.update({"_id": {"$oid": 5}}), "_id.$oid", "must be an object"),
        (lambda d: d.update({"_id": {"$oid": "  "}}), "_id.$oid", "is empty"),
        (lambda d: d.pop("name"), "name", "'name' is missing"),
        (lambda d: d.update({"name": None}), "name", "must be a string, got null"),
        (lambda d: d.pop("version"), "version", "'version' is missing"),
        (lambda d: d.update({"version": 1.2}), "version", "must be a string, got a number"),
        (lambda d: d.pop("links"), "links.download.href", "is missing"),
        (lambda d: d.update({"links": {"download": {}}}), "links.download.href", "is missing"),
        (lambda d: d.update({"links": {"download": {"href": 3}}}), "links.download.href", "must be a URL string"),
        (lambda d: d.update({"links": {"download": {"href": ""}}}), "links.download.href", "must be a URL string"),
        (lambda d: d.update({"type": "CONTAINER"}), "type", "expected VMTEMPLATE"),
    ],
)
def test_required_fields_raise_record_error_naming_the_field(mutate: Any, field: str, message: str) -> None:
    data = full_record()
    mutate(data)
    with pytest.raises(RecordError) as info:
        parse_record(data, MARKET)
    assert info.value.field == field
    assert message in str(info.value)


def test_record_error_names_the_record() -> None:
    data = full_record()
    del data["name"]
    with pytest.raises(RecordError, match="'service_toolkit'"):
        parse_record(data, MARKET)


@pytest.mark.parametrize("data", [None, [], "x", 3])
def test_non_object_record(data: object) -> None:
    with pytest.raises(RecordError, match="expected a JSON object"):
        parse_record(data, MARKET)


@pytest.mark.parametrize(
    ("overrides", "warning"),
    [
        ({"tags": 5}, "'tags' ignored"),
        ({"creation_time": "yesterday"}, "'creation_time' ignored"),
        ({"opennebula_template": "{not json"}, "not valid JSON"),
        ({"opennebula_template": "[1, 2]"}, "not an object"),
        ({"opennebula_template": 7}, "'opennebula_template' ignored"),
        ({"roles": ["a"]}, "'roles' ignored"),
        ({"files": {"name": "x"}}, "'files' ignored"),
        ({"files": [{"name": "x"}]}, "files[0] ignored"),
        ({"description": ["x"]}, "'description' ignored"),
    ],
)
def test_optional_fields_of_the_wrong_shape_become_warnings(overrides: dict[str, Any], warning: str) -> None:
    r = parse_record(full_record(**overrides), MARKET)
    assert any(warning in w for w in r.warnings), r.warnings


def test_lenient_shapes_are_accepted() -> None:
    r = parse_record(
        full_record(
            tags="a, b,,c",
            creation_time="1700000000",
            opennebula_version=["6.10", 7.0],
            opennebula_template={"already": "decoded"},
            type="vmtemplate",
            files=[{"name": "d", "url": "u", "size": "42", "checksum": None}],
        ),
        MARKET,
    )
    assert r.tags == ("a", "b", "c")
    assert r.creation_time == 1700000000
    assert r.platform_versions == ("6.10", "7.0")
    assert r.template == {"already": "decoded"}
    assert r.type is ApplianceType.VMTEMPLATE
    assert r.files[0].size == 42 and r.files[0].md5 == ""
    assert r.warnings == ()


def test_supports_platform() -> None:
    r = parse_record(full_record(), MARKET)
    assert r.supports_platform("7.0.1") and r.supports_platform("6.10.0")
    assert not r.supports_platform("6.8.0")
    bare = parse_record(full_record(opennebula_version=None), MARKET)
    assert bare.supports_platform("5.0")
    assert platform_series("7.3.80") == "7.3"


def test_listing_keeps_good_records_and_reports_bad_ones() -> None:
    bad = full_record(_id={"$oid": "broken"})
    del bad["version"]
    listing = parse_listing({"sEcho": 1, "appliances": [full_record(), bad, "nonsense"]}, MARKET)
    assert [r.id for r in listing.records] == ["service_toolkit"]
    assert len(listing.errors) == 2
    assert "entry 1" in str(listing.errors[0]) and listing.errors[0].field == "version"
    assert "entry 2" in str(listing.errors[1])
    assert parse_listing([full_record()], MARKET).records[0].id == "service_toolkit"


@pytest.mark.parametrize("data", [{"sEcho": 1}, {"appliances": {}}, None, "x"])
def test_listing_of_the_wrong_shape(data: object) -> None:
    with pytest.raises(RecordError, match="'appliances' array"):
        parse_listing(data, MARKET)
