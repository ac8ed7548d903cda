"""The cloud's `one` market driver, release by release (`src/market_mad/remotes/one/monitor`: one
file at release-6.10.0..6.10.2, another at 6.10.3, another at 6.10.4..6.10.5, another at
7.0.0..7.0.2, and 7.4.0 differing from 7.0 only in its copyright line).

- up to 6.10.3 the record's JSON VM template is converted as it is (`render_image`,
  `render_vmtemplate`), and the app has no ARCHITECTURE;
- 6.10.4 gives the app ARCHITECTURE (the record's `os-arch`, line 182) and, when the record has an
  `os-arch`, replaces the template's SCHED_REQUIREMENTS with `HYPERVISOR=kvm & ARCH=<os-arch>`,
  merging the ARM OS section for `aarch64` (`generate_vm_template64`, lines 237-258);
- 7.0 maps the word (`app_arch`), adds HYPERVISOR, appends to SCHED_REQUIREMENTS (lines 274-332)
  and converts lists (`template_to_str`, lines 235-272; up to 6.10 lists are dropped);
- a number or boolean in the template makes `template_to_str` raise (`empty?`), which the driver
  rescues by storing no VM template.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pyone
import pytest

from tests.conftest import SimFactory
from tui.domain.template_text import parse_template, scalar
from tui.sim.market_driver import driver_url, driver_vm_template, monitor_app

_TEMPLATE: dict[str, Any] = {"CPU": "1", "SCHED_REQUIREMENTS": "ID!=3", "OS": {"BOOT": "disk0"}}


def _record(arch: str | None, template: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"_id": {"$oid": "rec1"}, "name": "App", "version": "1",
                              "opennebula_template": json.dumps(template if template is not None else _TEMPLATE),
                              "files": [{"size": 2**20, "md5": "x"}], **extra}
    if arch is not None:
        record["os-arch"] = arch
    return record


@pytest.mark.parametrize("version", ["6.10.0", "6.10.3"])
def test_up_to_6_10_3_the_template_is_the_records(version: str) -> None:
    assert driver_vm_template(_record("x86_64"), version) == _TEMPLATE
    assert driver_vm_template(_record("aarch64"), version) == _TEMPLATE


@pytest.mark.parametrize("version", ["6.10.4", "6.10.5"])
def test_6_10_4_replaces_the_requirements_with_the_records_arch(version: str) -> None:
    x86 = driver_vm_template(_record("x86_64"), version)
    assert x86 == {**_TEMPLATE, "SCHED_REQUIREMENTS": "HYPERVISOR=kvm & ARCH=x86_64"}  # replaced, no HYPERVISOR
    # the record's word as it is: arm64 is not mapped, nor does it get the ARM OS section
    arm64 = driver_vm_template(_record("arm64"), version)
    assert arm64 is not None and arm64["SCHED_REQUIREMENTS"] == "HYPERVISOR=kvm & ARCH=arm64"
    assert arm64["OS"] == {"BOOT": "disk0"}
    aarch64 = driver_vm_template(_record("aarch64"), version)
    assert aarch64 is not None and aarch64["OS"]["MACHINE"] == "virt" and aarch64["OS"]["BOOT"] == "disk0"
    assert driver_vm_template(_record(None), version) == _TEMPLATE  # no os-arch: as it is
    assert driver_vm_template(_record(""), version) == _TEMPLATE
    # `ot['OS'].merge!` on a template without OS raises: no VM template at all
    assert driver_vm_template(_record("aarch64", {"CPU": "1"}), version) is None


def test_7_0_appends_the_hypervisor_and_maps_the_arch() -> None:
    for version in ("7.0.0", "7.0.2", "7.4.0"):
        x86 = driver_vm_template(_record("x86_64"), version)
        assert x86 is not None and x86["SCHED_REQUIREMENTS"] == "ID!=3 & HYPERVISOR=kvm" and x86["HYPERVISOR"] == "kvm"
        # without OS the ARM section becomes the OS; an empty requirement is truthy in Ruby
        arm = driver_vm_template(_record("arm64", {"CPU": "1", "SCHED_REQUIREMENTS": ""}), version)
        assert arm is not None and arm["SCHED_REQUIREMENTS"] == " & HYPERVISOR=kvm & ARCH=aarch64"
        assert arm["OS"]["ARCH"] == "aarch64"


@pytest.mark.parametrize("version", ["6.10.0", "6.10.5", "7.0.0"])
def test_a_number_in_the_template_stores_no_vm_template(version: str) -> None:
    assert driver_vm_template(_record("x86_64", {"CPU": 1}), version) is None
    assert driver_vm_template(_record("x86_64", {"CPU": "1", "GRAPHICS": {"PORT": 5900}}), version) is None
    app = monitor_app(_record("x86_64", {"CPU": True}), driver_url("http://m/", version), version)
    assert "VMTEMPLATE64" not in [name for name, _ in app]


def _vm_template_of(app: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    encoded = next(value for name, value in app if name == "VMTEMPLATE64")
    return parse_template(base64.b64decode(encoded).decode())


@pytest.mark.parametrize(("version", "nics"), [("6.10.5", 0), ("7.0.0", 2)])
def test_lists_are_converted_from_7_0(version: str, nics: int) -> None:
    template = {"CPU": "1", "NIC": [{"NETWORK": "a", "MODEL": ""}, {"NETWORK": "b"}]}
    app = monitor_app(_record(None, template), driver_url("http://m/", version), version)
    converted = [value for name, value in _vm_template_of(app) if name == "NIC" and isinstance(value, list)]
    assert len(converted) == nics
    assert all(dict(nic).keys() == {"NETWORK"} for nic in converted)  # empty values dropped


@pytest.mark.parametrize(("version", "architecture", "hypervisor"),
                         [("6.10.3", None, None), ("6.10.4", "arm64", None), ("6.10.5", "arm64", None),
                          ("7.0.0", "aarch64", "kvm"), ("7.4.0", "aarch64", "kvm")])
def test_the_apps_architecture_and_hypervisor(version: str, architecture: str | None, hypervisor: str | None) -> None:
    app = dict((name, value) for name, value in monitor_app(_record("arm64"), driver_url("http://m/", version), version)
               if isinstance(value, str))
    assert app.get("ARCHITECTURE") == architecture and app.get("HYPERVISOR") == hypervisor
    bare = dict((name, value) for name, value in monitor_app(_record(None), driver_url("http://m/", version), version)
                if isinstance(value, str))
    assert bare.get("ARCHITECTURE") == ("all" if hypervisor else None)  # print_var leaves out nil


@pytest.mark.parametrize("version", ["6.10.5", "6.10.3"])
def test_an_embedded_site_of_a_patch_release_imports_as_its_driver(site_factory: SimFactory, version: str) -> None:
    """The embedded site started as 6.10.5 (the recorded 6.10 release) imports apps with
    ARCHITECTURE and `SCHED_REQUIREMENTS="HYPERVISOR=kvm & ARCH=x86_64"`; as 6.10.3, neither."""
    server = site_factory(one_version=version)
    apps = pyone.OneServer(server.xmlrpc_url, session=server.session).marketapppool.info(-2, -1, -1).MARKETPLACEAPP
    images = [app for app in apps if app.TYPE == 1 and app.TEMPLATE.get("VMTEMPLATE64")]
    assert images
    for app in images:
        template = parse_template(base64.b64decode(app.TEMPLATE["VMTEMPLATE64"]).decode())
        assert scalar(template, "HYPERVISOR") == ""
        if version == "6.10.5" and "ARCHITECTURE" in app.TEMPLATE:
            assert scalar(template, "SCHED_REQUIREMENTS") == f"HYPERVISOR=kvm & ARCH={app.TEMPLATE['ARCHITECTURE']}"
        else:  # 6.10.3, or a record without os-arch (Route Manager API)
            assert scalar(template, "SCHED_REQUIREMENTS") == ""
    with_arch = [app.NAME for app in images if app.TEMPLATE.get("ARCHITECTURE") == "x86_64"]
    assert bool(with_arch) is (version == "6.10.5")
