"""Every check of the site configuration on good and bad configurations."""

from __future__ import annotations

import pytest

from tui.domain.components import parse_public_yaml
from tui.domain.naming import NamingProfile
from tui.domain.site_checks import (
    MINIMAL_COMPONENT_SET,
    CloudIds,
    Finding,
    Requirement,
    Severity,
    check_cloud_ids,
    check_component_variables,
    check_minimal_components,
    check_mtu,
    check_s3_server,
    check_site_config,
    minimal_component_set,
)
from tui.domain.site_config import SiteConfig

GOOD = """
site_clusters: [0]
site_networks_id: {default: 3}
site_vxlan_mtu: 1500
site_vxlan_guest_mtu: 1450
site_variables:
  tn_init: null
  tn_vxlan: null
  vnet: null
  tn_bastion: {template_id: 10, image_id: 20}
  vm_kvm: {template_id: 11, image_id: 21}
  cluster:
    "129": {template_id: 12}
    "131": {template_id: 13}
  core_net_cluster: null
  core_net_vm: {template_id: 14, image_id: 22}
  ran_sim: {template_id: 15, image_id: 23}
site_s3_server:
  endpoint: "https://10.0.0.21:9000"
  bucket: "trial-networks"
  region: "main"
  insecure: true
"""

BASTION = parse_public_yaml("tn_bastion", "site_variables:\n  template_id: 'bastion template'\n  image_id: 'bastion image'\n")
CLUSTER = parse_public_yaml("cluster", "site_variables:\n  '129': {template_id: 't129'}\n  '131': {template_id: 't131'}\n")
VXLAN = parse_public_yaml("tn_vxlan", "metadata: {short_description: vxlan}\n")
CLOUD = CloudIds(
    templates=frozenset({10, 11, 12, 13, 14, 15}),
    images=frozenset({20, 21, 22, 23}),
    networks=frozenset({3}),
    clusters=frozenset({0}),
)


def config(text: str = GOOD) -> SiteConfig:
    return SiteConfig.parse(text)


def paths(findings: list[Finding] | tuple[Finding, ...], severity: Severity | None = None) -> list[str]:
    return [f.path for f in findings if severity is None or f.severity is severity]


def test_good_configuration_has_no_findings() -> None:
    definitions = {"tn_bastion": BASTION, "cluster": CLUSTER, "tn_vxlan": VXLAN}
    findings = check_site_config(config(), definitions={**definitions, **_stubs()}, cloud=CLOUD, nic_mtu=1500)
    assert findings == ()


def _stubs() -> dict:
    """Definitions for the remaining listed components (no site variables needed for the test)."""
    return {name: parse_public_yaml(name, "metadata: {}\n") for name in ("tn_init", "vnet", "vm_kvm", "core_net_cluster", "core_net_vm", "ran_sim")}


def test_minimal_set_levels() -> None:
    bare = config("site_variables:\n  vm_kvm: null\n")
    findings = check_minimal_components(bare, MINIMAL_COMPONENT_SET)
    errors = paths(findings, Severity.ERROR)
    warnings = paths(findings, Severity.WARNING)
    assert errors == ["site_variables.tn_bastion", "site_variables.tn_vxlan"]
    assert "mandatory" in findings[0].message
    assert warnings == [f"site_variables.{n}" for n in ("vnet", "cluster", "core_net_cluster", "core_net_vm", "ran_sim")]
    assert not any("tn_init" in p for p in paths(findings))  # optional: never flagged


def test_minimal_set_identifiers_are_data_renamable_by_the_naming_profile() -> None:
    naming = NamingProfile.from_mapping({"component_cluster": "ccluster", "component_ran_sim": "uesim"})
    renamed = {item.role: item.component for item in minimal_component_set(naming)}
    assert renamed["cluster"] == "ccluster" and renamed["ran_sim"] == "uesim" and renamed["bastion"] == "tn_bastion"
    text = GOOD.replace("  cluster:", "  ccluster:").replace("  ran_sim:", "  uesim:")
    assert check_minimal_components(config(text), minimal_component_set(naming)) == []
    assert {i.requirement for i in MINIMAL_COMPONENT_SET} == set(Requirement)


def test_component_map_missing_or_empty() -> None:
    assert paths(check_site_config(config("site_domain: x\n")), Severity.ERROR)[0] == "site_variables"
    findings = check_site_config(config("site_variables: {}\n"))
    assert findings[0].path == "site_variables" and findings[0].severity is Severity.ERROR


def test_component_variables_missing_unset_or_unknown() -> None:
    text = "site_variables:\n  tn_bastion: {template_id: 1}\n  cluster: {'129': {template_id: null}}\n  mystery: null\n"
    findings = check_component_variables(config(text), {"tn_bastion": BASTION, "cluster": CLUSTER})
    by_path = {f.path: f for f in findings}
    assert by_path["site_variables.tn_bastion.image_id"].message == "missing site variable (bastion image)"
    assert by_path["site_variables.cluster.129.template_id"].message.startswith("site variable not set")
    assert "site_variables.cluster.131.template_id" not in by_path  # a version the site does not offer
    assert by_path["site_variables.mystery"].severity is Severity.WARNING
    no_version = {f.path: f for f in check_component_variables(config("site_variables:\n  cluster: {}\n"), {"cluster": CLUSTER})}
    assert no_version["site_variables.cluster"].message.startswith("cluster lists no version: give the IDs of at least one of 129, 131")
    listed_null = check_component_variables(config("site_variables:\n  tn_bastion: null\n"), {"tn_bastion": BASTION})
    assert listed_null[0].message == "tn_bastion needs its site variables: template_id, image_id"


def test_cloud_ids_exist() -> None:
    text = GOOD.replace("template_id: 10", "template_id: 99").replace("image_id: 21", "image_id: abc").replace("default: 3", "default: 7")
    findings = check_cloud_ids(config(text), CLOUD)
    assert [(f.path, f.message) for f in findings] == [
        ("site_variables.tn_bastion.template_id", "VM template 99 does not exist in the cloud"),
        ("site_variables.vm_kvm.image_id", "'abc' is not a image ID (a whole number)"),
        ("site_networks_id.default", "virtual network 7 does not exist in the cloud"),
    ]
    assert check_cloud_ids(config(text), CloudIds()) == [paths_only for paths_only in findings if "whole number" in paths_only.message]


def test_service_template_ids_are_checked_against_service_templates() -> None:
    text = "site_variables:\n  svc: {service_template_id: 5, template_id: 10}\n"
    assert check_cloud_ids(config(text), CloudIds(templates=frozenset({10}), service_templates=frozenset({5}))) == []
    findings = check_cloud_ids(config(text), CloudIds(templates=frozenset({5}), service_templates=frozenset({1})))
    assert [f.message for f in findings] == ["service template 5 does not exist in the cloud", "VM template 10 does not exist in the cloud"]


@pytest.mark.parametrize(
    ("guest", "nic", "given", "expected"),
    [
        (1450, 1500, None, []),
        (1450, 1500, 1500, []),
        (1500, 1500, None, [("error", "site_vxlan_guest_mtu")]),
        (1600, 1500, None, [("error", "site_vxlan_guest_mtu")]),
        (1480, 1500, None, [("warning", "site_vxlan_guest_mtu")]),
        (1450, 1500, 1450, [("warning", "site_vxlan_mtu"), ("error", "site_vxlan_guest_mtu")]),
        (1400, 9000, 1450, [("warning", "site_vxlan_mtu")]),
        ("big", 1500, None, [("error", "site_vxlan_guest_mtu")]),
    ],
)
def test_guest_mtu_below_nic_mtu(guest: object, nic: int, given: int | None, expected: list[tuple[str, str]]) -> None:
    text = f"site_vxlan_mtu: {nic}\nsite_vxlan_guest_mtu: {guest}\n"
    assert [(f.severity.value, f.path) for f in check_mtu(config(text), given)] == expected


def test_mtu_message_suggests_a_value() -> None:
    finding = check_mtu(config("site_vxlan_mtu: 1500\nsite_vxlan_guest_mtu: 1500\n"))[0]
    assert "must be lower than site_vxlan_mtu 1500" in finding.message and "use 1450" in finding.message


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ("https://10.0.0.21:9000", None),
        ("http://objectstore.site.internal:9000/", None),
        ("https://[2001:db8::1]:9000", None),
        ("https://<objectstore ip>:9000", "placeholder"),
        ("10.0.0.21:9000", "http:// or https://"),
        ("https://10.0.0.21", "no port"),
        ("https://10.0.0.21:9000/bucket", "without a path"),
        ("https://user:pw@10.0.0.21:9000", "credentials"),
        ("https://bad_host!:9000", "no valid host"),
        ("https://10.0.0.21:99999", "not a URL"),
        ("", "not set"),
    ],
)
def test_s3_endpoint_shape(endpoint: str, problem: str | None) -> None:
    findings = check_s3_server(config(f'site_s3_server:\n  endpoint: "{endpoint}"\n  bucket: b\n'))
    if problem is None:
        assert findings == []
    else:
        assert len(findings) == 1 and problem in findings[0].message and findings[0].path == "site_s3_server.endpoint"


def test_s3_server_missing_or_malformed() -> None:
    assert check_s3_server(config("a: 1\n"))[0].path == "site_s3_server"
    assert "mapping" in check_s3_server(config("site_s3_server: https://x:9000\n"))[0].message
    findings = check_s3_server(config('site_s3_server: {endpoint: "https://1.2.3.4:9000", insecure: "yes"}\n'))
    assert [(f.severity.value, f.path) for f in findings] == [("error", "site_s3_server.bucket"), ("warning", "site_s3_server.insecure")]


def test_errors_come_first() -> None:
    text = "site_vxlan_mtu: 1500\nsite_vxlan_guest_mtu: 1480\nsite_variables:\n  tn_bastion: null\n"
    findings = check_site_config(config(text))
    severities = [f.severity for f in findings]
    assert severities == sorted(severities, key=lambda s: s is not Severity.ERROR)
    assert findings[-1].as_json()["severity"] == "warning"
