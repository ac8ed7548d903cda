"""Pure rules: which site variables take which appliance IDs, and who may already use an object."""

from __future__ import annotations

from tui.domain.acls import ACL_ALL, ACL_GID, ACL_RESOURCES, ACL_UID, AclRule
from tui.domain.components import ComponentDefinition, VariableSpec
from tui.domain.object_grants import CloudObject, acl_rule, already_usable, plan_grants
from tui.domain.permissions import Permissions
from tui.domain.site_config import SiteConfig
from tui.domain.site_fill import CloudFacts, InstalledAppliance, appliance_values, fill_changes
from tui.domain.users import User
from tui.sim.repos import template_core_yaml

BASTION = InstalledAppliance("service_bastion", "Bastion", "v1.3.0-20250612-1045", image_id=5, template_id=6)


def definition(name: str, leaves: tuple[VariableSpec, ...], *records: str) -> ComponentDefinition:
    return ComponentDefinition(name, appliances=tuple(f"{{marketplace_url}}/appliance/{r}" for r in records), site_variables=leaves)


def test_single_appliance_fills_template_and_image() -> None:
    d = definition("tn_bastion", (VariableSpec("template_id"), VariableSpec("image_id")), "service_bastion")
    assert appliance_values(d, {"service_bastion": BASTION}) == ({"template_id": 6, "image_id": 5}, ())
    values, notes = appliance_values(d, {})
    assert values == {} and notes == ("tn_bastion: appliance(s) service_bastion not downloaded",)


def test_prefixed_variables_match_their_appliance_and_groups_are_left() -> None:
    collector = InstalledAppliance("service_collector", "Collector", "v1", image_id=7, template_id=8)
    switch = InstalledAppliance("service_switch", "Switch", "v1", image_id=9, template_id=10)
    d = definition(
        "switch", (VariableSpec("collector_template_id"), VariableSpec("switch_image_id"), VariableSpec("registry_token"),
                   VariableSpec("template_id")), "service_collector", "service_switch")
    values, notes = appliance_values(d, {"service_collector": collector, "service_switch": switch})
    assert values == {"collector_template_id": 8, "switch_image_id": 9}
    assert notes == ("switch: template_id left as they are (which appliance serves each is for the operator to say)",)
    cluster = definition("cluster", (VariableSpec("129", children=(VariableSpec("template_id"),)),), "service_container_cluster")
    installed = {"service_container_cluster": InstalledAppliance("service_container_cluster", "Container Cluster", "1.31", 3, 4)}
    assert appliance_values(cluster, installed) == ({}, ())  # no 1.29 build: the version is left out, not guessed
    both = definition("cluster", (VariableSpec("129", children=(VariableSpec("template_id"),)),
                                  VariableSpec("131", children=(VariableSpec("template_id"),))), "service_container_cluster")
    odd = {"service_container_cluster": InstalledAppliance("service_container_cluster", "Container Cluster",
                                                           "1.31.3-6.10.0-3-20251118-1327", 3, 4)}
    assert appliance_values(both, odd)[0] == {"131.template_id": 4}


def test_fill_changes_only_what_differs() -> None:
    config = SiteConfig.parse(template_core_yaml())
    d = definition("tn_bastion", (VariableSpec("template_id"), VariableSpec("image_id")), "service_bastion")
    facts = CloudFacts(objectstore_address="10.0.0.5", objectstore_source="x", gate_endpoint="http://10.1.1.1:5030",
                       default_network_id=0, appliances={"service_bastion": BASTION})
    changes, notes = fill_changes(config, facts, {"tn_bastion": d})
    assert [(c.path, c.new) for c in changes] == [
        ("site_s3_server.endpoint", "https://10.0.0.5:9000"), ("site_onegate", "10.1.1.1"),
        ("site_variables.tn_bastion.template_id", 6), ("site_variables.tn_bastion.image_id", 5),
    ]
    assert changes[2].source == "downloaded appliance Bastion v1.3.0-20250612-1045" and notes == ()
    after = config.edit([(c.path, c.new) for c in changes])
    assert fill_changes(after, facts, {"tn_bastion": d})[0] == ()
    plain = config.with_value("site_s3_server.endpoint", "http://old:9100")
    assert fill_changes(plain, CloudFacts(objectstore_address="fd00::5"))[0][0].new == "http://[fd00::5]:9100"


def user(uid: int = 2, gid: int = 1) -> User:
    return User(uid, "tkauto", gid, "users", (gid,), "core", True)


def obj(kind: str = "image", perms: str = "600", uid: int = 0, gid: int = 0, oid: int = 40) -> CloudObject:
    return CloudObject(kind, oid, "Bastion", uid, gid, Permissions.from_octal(perms))


def rule(rid: int, who: int, resource: int, text: str) -> AclRule:
    return AclRule(rid, who, resource, 1, ACL_UID, text)


def test_who_may_already_use_an_object() -> None:
    assert already_usable(obj(), user(), []) == ""
    assert already_usable(obj(uid=2), user(), []) == "tkauto owns it"
    assert "its group may use it" in already_usable(obj(perms="640", gid=1), user(), [])
    assert "everyone may use it" in already_usable(obj(perms="604"), user(), [])
    image = ACL_RESOURCES["IMAGE"]
    assert already_usable(obj(), user(), [rule(3, ACL_UID | 2, image | ACL_UID | 40, "#2 IMAGE/#40 USE")]) == "ACL rule 3 (#2 IMAGE/#40 USE) allows it"
    assert already_usable(obj(), user(), [rule(4, ACL_GID | 1, image | ACL_ALL, "@1 IMAGE/* USE")]).startswith("ACL rule 4")
    assert already_usable(obj(), user(), [rule(5, ACL_UID | 2, image | ACL_UID | 41, "#2 IMAGE/#41 USE")]) == ""
    assert already_usable(obj("template"), user(), [rule(6, ACL_UID | 2, image | ACL_ALL, "#2 IMAGE/* USE")]) == ""


def test_one_rule_per_object() -> None:
    objects = [obj(), obj("template", oid=40), obj("service_template", oid=7), obj()]
    grants = plan_grants(objects, user(), [])
    assert [g.rule for g in grants] == ["#2 IMAGE/#40 USE", "#2 TEMPLATE/#40 USE", "#2 DOCUMENT/#7 USE"]
    assert grants[0].cli == "oneacl create '#2 IMAGE/#40 USE'"
    assert acl_rule(2, obj("service_template", oid=3)) == "#2 DOCUMENT/#3 USE"
