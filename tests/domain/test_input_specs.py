"""Input description strings (`M|O|type|description|params|default`) and length rules."""

from __future__ import annotations

import pytest

from tui.domain.input_specs import (
    InputSpecError,
    InputType,
    LengthRule,
    NetworkSpec,
    parse_input_description,
    parse_length_rule,
    parse_network_description,
    template_inputs,
    template_networks,
)


def test_full_description() -> None:
    spec = parse_input_description("N", "O|range|Replicas|1..5|2")
    assert (spec.name, spec.mandatory, spec.type) == ("N", False, InputType.RANGE)
    assert (spec.description, spec.params, spec.default) == ("Replicas", "1..5", "2")
    assert spec.bounds == (1.0, 5.0) and spec.options == ()
    assert spec.raw == "O|range|Replicas|1..5|2" and spec.problem == ""


def test_short_description_fills_blanks() -> None:
    spec = parse_input_description("P", "M|password|Admin password")
    assert spec.mandatory and spec.type is InputType.PASSWORD and spec.secret
    assert (spec.params, spec.default) == ("", "")


def test_default_may_contain_bars_and_fields_are_trimmed() -> None:
    spec = parse_input_description("T", " m | text | Opts | | --a|b ")
    assert spec.mandatory and spec.type is InputType.TEXT
    assert spec.default == "--a|b"


def test_list_options() -> None:
    spec = parse_input_description("L", "M|list|Size|small, medium ,large|medium")
    assert spec.options == ("small", "medium", "large")
    multi = parse_input_description("L", "O|list-multiple|Sizes|a,b")
    assert multi.options == ("a", "b")


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ("X|text|d", "must start with M"),
        ("", "must start with M"),
        ("M", "names no type"),
        ("M||d", "names no type"),
        ("M|colour|d", "unknown type 'colour'"),
        ("M|range|d|1-5", "min..max"),
        ("M|range|d|a..b", "min..max"),
        ("M|list|d|", "a,b,c"),
    ],
)
def test_bad_descriptions(description: str, message: str) -> None:
    with pytest.raises(InputSpecError, match=message):
        parse_input_description("X", description)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("Admin password (min 8 chars)", LengthRule(8, None)),
        ("min. 10 characters", LengthRule(10, None)),
        ("Minimum 12 characters", LengthRule(12, None)),
        ("at least 6 characters long", LengthRule(6, None)),
        ("minimum length: 9", LengthRule(9, None)),
        ("min length 7", LengthRule(7, None)),
        ("use 16+ chars", LengthRule(16, None)),
        ("max 20 chars", LengthRule(None, 20)),
        ("Maximum length = 30", LengthRule(None, 30)),
        ("between: at least 8 characters, at most 64 characters", LengthRule(8, 64)),
        ("up to 12 characters", LengthRule(None, 12)),
        ("minimum 3 replicas", LengthRule(None, None)),
        ("the minio root password", LengthRule(None, None)),
        ("", LengthRule(None, None)),
    ],
)
def test_length_rules(text: str, rule: LengthRule) -> None:
    assert parse_length_rule(text) == rule


def test_length_rule_check() -> None:
    rule = LengthRule(8, 10)
    assert rule.check("") is None
    assert rule.check("12345678") is None
    assert rule.check("1234567") == "must be at least 8 characters (has 7)"
    assert rule.check("12345678901") == "must be at most 10 characters (has 11)"
    assert parse_input_description("P", "M|password|Password (min 8 chars)").length_rule == LengthRule(8, None)
    assert parse_input_description("P", "M|password|Password|min 8 chars").length_rule == LengthRule(8, None)


def test_template_inputs_7x_6x_and_object_forms() -> None:
    body7 = {"user_inputs": {"a": "M|text|A", "b": "O|boolean|B||NO"}}
    assert [s.name for s in template_inputs(body7)] == ["a", "b"]
    body6 = {"custom_attrs": {"c": "M|password|C"}}
    assert template_inputs(body6)[0].type is InputType.PASSWORD
    objects = {
        "user_inputs": [
            {"name": "d", "type": "list", "mandatory": False, "description": "D", "options": ["x", "y"], "default": "x"},
            {"name": "e", "type": "range", "min": 1, "max": 3},
            {"name": "f"},
            "ignored",
        ]
    }
    d, e, f = template_inputs(objects)
    assert (d.mandatory, d.options, d.default) == (False, ("x", "y"), "x")
    assert e.bounds == (1.0, 3.0)
    assert f.type is InputType.TEXT and f.mandatory
    assert template_inputs({}) == ()


def test_unreadable_inputs_still_get_a_field() -> None:
    specs = template_inputs({"user_inputs": {"bad": "Q|text|x", "worse": 5}})
    assert [s.name for s in specs] == ["bad", "worse"]
    assert all(s.mandatory and s.type is InputType.TEXT and s.problem for s in specs)
    (obj,) = template_inputs({"user_inputs": [{"name": "g", "type": "colour"}]})
    assert obj.name == "g" and "unknown type" in obj.problem
    (anon,) = template_inputs({"user_inputs": [{"type": "text"}]})
    assert anon.name == "input_0" and anon.problem


def test_networks() -> None:
    assert parse_network_description("Public", "M|network|Public||id:0") == NetworkSpec("Public", True, "Public", "id", "0")
    assert parse_network_description("P", "O|network|P||reserve_from:3").kind == "reserve_from"
    assert parse_network_description("P", "M|network|P").default_id == ""
    with pytest.raises(InputSpecError):
        parse_network_description("P", "M|text|P")
    nets = template_networks({"networks": {"Public": "M|network|Public||id:", "Odd": 3}})
    assert [n.name for n in nets] == ["Public", "Odd"] and nets[1].mandatory
    assert template_networks({}) == ()
