"""ACL rules: hex fields, STRING rendering, duplicates, malformed rules and what they authorize."""

from __future__ import annotations

import pyone
import pytest

from tests.sim.one_client import one
from tui.sim.acl import Rule, parse_hex
from tui.sim.scenarios import AUTOMATION_USER
from tui.sim.server import SimServer

GROUP_1 = 0x200000001
ALL = 0x400000000


@pytest.mark.parametrize(
    ("text", "value"),
    [("0x4400000000", 0x4400000000), ("4400000000", 0x4400000000), ("  1F", 0x1F), ("zz", 0), ("", 0)],
)
def test_hex_fields_are_read_as_the_platform_reads_them(text: str, value: int) -> None:
    assert parse_hex(text) == value


@pytest.mark.parametrize(
    ("rule", "string"),
    [
        (Rule(GROUP_1, 0x4000000000 | ALL, 0x1, 0x100000000), "@1 NET/* USE #0"),
        (Rule(0x100000069, 0x4000000000 | 0x200000000000 | ALL, 0xF, ALL), "#105 NET+CLUSTER/* USE+MANAGE+ADMIN+CREATE *"),
        (Rule(ALL, 0x8000000000 | 0x100000007, 0x2, 0x100000000), "* IMAGE/#7 MANAGE #0"),
        (Rule(0x200000069, 0x100000000000 | 0x800000000, 0x1, 0x100000000), "@105 DATASTORE/%0 USE #0"),
    ],
)
def test_the_string_form(rule: Rule, string: str) -> None:
    assert rule.to_str() == string
    assert rule.malformed() == ""


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        (Rule(0x1, 0x4000000000 | ALL, 0x1, 0x100000000), "[user] is missing one of the INDIVIDUAL, GROUP or ALL bits"),
        (Rule(GROUP_1, ALL, 0x1, 0x100000000), "[resource] type is missing"),
        (Rule(GROUP_1, 0x4000000000 | ALL, 0x0, 0x100000000), "wrong [rights], it cannot be 0"),
        (Rule(GROUP_1, 0x4000000000 | ALL | 0x5, 0x1, 0x100000000), "when using the ALL bit, [resource] ID must be 0"),
        (Rule(GROUP_1, 0x2000000000 | 0x200000000, 0x1, 0x100000000), "GROUP(@) selector cannot be applied to HOST"),
    ],
)
def test_malformed_rules_say_why(rule: Rule, reason: str) -> None:
    assert reason in rule.malformed()


def test_rules_over_xmlrpc(sim: SimServer) -> None:
    client = one(sim)
    before = client.acl.info().ACL
    rule_id = client.acl.addrule("0x200000001", "4400000000", "3")
    rules = {r.ID: r for r in client.acl.info().ACL}
    assert len(rules) == len(before) + 1
    added = rules[rule_id]
    assert (added.USER, added.RESOURCE, added.RIGHTS, added.ZONE) == ("200000001", "4400000000", "3", "100000000")
    assert added.STRING == "@1 NET/* USE+MANAGE #0"
    with pytest.raises(pyone.OneInternalException, match=r"^\[one.acl.addrule\] Rule @1 NET/\* USE\+MANAGE #0 already exists$"):
        client.acl.addrule("200000001", "4400000000", "3")
    with pytest.raises(pyone.OneInternalException, match="is malformed: wrong \\[rights\\], it cannot be 0"):
        client.acl.addrule("200000001", "4400000000", "0")
    assert client.acl.delrule(rule_id) == rule_id
    with pytest.raises(pyone.OneInternalException, match=f"Rule {rule_id} does not exist"):
        client.acl.delrule(rule_id)


def test_a_rule_grants_what_permissions_do_not(sim: SimServer) -> None:
    """The users group uses the networks through the default VDC's rule `@1 NET/* USE #0` (a fresh
    site's rule 4, src/vdc/Vdc.cc ResourceSet; a 7.0.2 frontend lists it); without it, nothing."""
    user = sim.site.user_by_name(AUTOMATION_USER)
    assert user is not None
    as_user = one(sim, f"{user.name}:{user.password}")
    vdc_rule = next(r.ID for r in one(sim).acl.info().ACL if r.STRING == "@1 NET/* USE #0")
    assert as_user.vn.info(0).NAME == "oam"
    one(sim).acl.delrule(vdc_rule)
    with pytest.raises(pyone.OneAuthorizationException, match=r"Not authorized to perform USE NET \[0\]"):
        as_user.vn.info(0)
    one(sim).acl.addrule("200000001", "4400000000", "1")  # @1 NET/* USE
    assert as_user.vn.info(0).NAME == "oam"
    assert [n.ID for n in as_user.vnpool.info(-2, -1, -1).VNET] == [1, 0]
