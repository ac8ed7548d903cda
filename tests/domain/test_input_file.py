"""The toolkit input file: loading (with line and column), saving, and the instantiate request."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.domain.input_file import (
    InputFile,
    InputFileError,
    load_input_file,
    merge_template,
    missing_values,
    render_input_file,
    skeleton_input_file,
    suggested_instance_name,
    values_key,
)
from tui.domain.input_specs import template_inputs
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.toolkit_inputs import form_fields, secret_names
from tui.domain.versions import parse_version

SPEC_SHAPE = """{
  "name": "Site Toolkit v0.5.0",
  "custom_attrs_values": {
    "app_objectstore_hostname": "s3.site.org",
    "app_objectstore_root_password": "s3cret"
  },
  "networks_values": [{"Public": {"id": "0"}}]
}
"""


def test_load_the_spec_shape() -> None:
    f = load_input_file(SPEC_SHAPE)
    assert f.name == "Site Toolkit v0.5.0"
    assert f.values == (("app_objectstore_hostname", "s3.site.org"), ("app_objectstore_root_password", "s3cret"))
    assert f.networks == (("Public", "0"),)
    assert f.value_map()["app_objectstore_hostname"] == "s3.site.org"


def test_load_accepts_the_7x_key_and_missing_optional_parts() -> None:
    f = load_input_file('{"name": "t", "user_inputs_values": {"a": "1"}}')
    assert f.values == (("a", "1"),) and f.networks == ()
    assert load_input_file('{"name": "t"}') == InputFile("t")


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ('{\n  "name": "x",\n  "custom_attrs_values": {\n    "a": "1",\n  }\n}', 5, 3, "not valid JSON"),
        ('{"name": "x"', 1, 13, "not valid JSON"),
        ("", 1, 1, "not valid JSON"),
        ("[1, 2]", 1, 1, "one JSON object"),
        ('{\n  "name": "x",\n  "custom_attrs_values": {\n    "count": 3\n  }\n}', 4, 5, "'count' must be a string"),
        ('{\n  "name": "x",\n  "custom_attrs_values": {"flag": true}\n}', 3, 27, "got a boolean"),
        ('{\n  "name": "x",\n  "custom_attrs_values": {"v": null}\n}', 3, 27, "got null"),
        ('{\n  "name": 5\n}', 2, 3, "'name' must be a string"),
        ('{\n  "name": "x",\n  "custom_attr_values": {}\n}', 3, 3, "unknown key 'custom_attr_values'"),
        ('{"name": "x", "custom_attrs_values": []}', 1, 15, "must be an object"),
        ('{"name": "x", "networks_values": {"Public": {"id": "0"}}}', 1, 15, "must be a list"),
        ('{"name": "x",\n "networks_values": [{"Public": {"id": 0}}]}', 2, 23, "id as a string"),
        ('{"name": "x",\n "networks_values": [{"Public": {"id": "zero"}}]}', 2, 23, "is not a network ID"),
        ('{"name": "x",\n "networks_values": [{"Public": {"id": "0"}, "Private": {"id": "1"}}]}', 2, 2, "single network name"),
        ('{"name": "x",\n "networks_values": ["Public"]}', 2, 2, "single network name"),
        ('{"name": "x",\n "custom_attrs_values": {"a": "1",\n  "a": "2"}}', 3, 3, "'a' appears twice"),
        ('{"name": "x", "custom_attrs_values": {}, "user_inputs_values": {}}', 1, 42, "either"),
    ],
)
def test_malformed_files_report_line_and_column(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(InputFileError) as info:
        load_input_file(text)
    assert message in info.value.message
    assert (info.value.line, info.value.column) == (line, column)
    assert str(info.value).startswith(f"line {line}, column {column}: ")


def test_missing_name_has_no_position() -> None:
    with pytest.raises(InputFileError) as info:
        load_input_file('{"custom_attrs_values": {}}')
    assert info.value.line is None and str(info.value) == info.value.message


def test_render_in_the_spec_shape_with_secrets_left_out() -> None:
    f = load_input_file(SPEC_SHAPE)
    text = render_input_file(f)
    assert json.loads(text) == json.loads(SPEC_SHAPE)
    assert text.endswith("\n")
    without = render_input_file(f, omit=secret_names(DEFAULT_NAMING))
    assert "s3cret" not in without
    assert load_input_file(without).values == (("app_objectstore_hostname", "s3.site.org"),)


def test_values_key_by_platform_version() -> None:
    assert values_key("6.10.0") == "custom_attrs_values"
    assert values_key("6.8") == "custom_attrs_values"
    assert values_key("7.0.0") == "user_inputs_values"
    assert values_key("7.3.80") == "user_inputs_values"
    assert values_key(" 10.0 ") == "user_inputs_values"
    with pytest.raises(ValueError, match="major number"):
        values_key("unknown")
    with pytest.raises(ValueError):
        values_key("")


def test_merge_template_shapes_6x_and_7x() -> None:
    f = load_input_file(SPEC_SHAPE)
    six = merge_template(f, "6.10.0")
    assert six == {
        "name": "Site Toolkit v0.5.0",
        "custom_attrs_values": {"app_objectstore_hostname": "s3.site.org", "app_objectstore_root_password": "s3cret"},
        "networks_values": [{"Public": {"id": "0"}}],
    }
    seven = merge_template(f, "7.3.80")
    assert "custom_attrs_values" not in seven
    assert seven["user_inputs_values"] == six["custom_attrs_values"]
    assert seven["networks_values"] == [{"Public": {"id": "0"}}]
    json.dumps(seven)  # a JSON body as is


def test_merge_template_with_fields_and_secrets_asked_at_deploy_time() -> None:
    body = {
        "user_inputs": {
            "app_objectstore_hostname": "M|text|Hosts",
            "app_objectstore_root_password": "M|password|Password",
            "app_objectstore_opts": "O|text|Options",
        }
    }
    fields = form_fields(DEFAULT_NAMING, template_inputs(body))
    f = load_input_file('{"name": "t", "custom_attrs_values": {"app_objectstore_hostname": "s3"}}')
    assert missing_values(f, fields) == ("app_objectstore_root_password",)
    with pytest.raises(InputFileError, match="no value for app_objectstore_root_password"):
        merge_template(f, "7.0", fields=fields)
    request = merge_template(f, "7.0", fields=fields, extra_values={"app_objectstore_root_password": "pw"})
    assert request["user_inputs_values"] == {
        "app_objectstore_hostname": "s3",
        "app_objectstore_root_password": "pw",
        "app_objectstore_opts": "",  # every input gets a value
    }
    assert missing_values(f, fields, {"app_objectstore_root_password": "pw"}) == ()


def test_with_values() -> None:
    f = InputFile("t", (("a", "1"), ("b", "2")), (("Public", "0"),))
    assert f.with_values({"b": "3", "c": "4"}).values == (("a", "1"), ("b", "3"), ("c", "4"))


def test_skeleton_and_suggested_name() -> None:
    fields = form_fields(DEFAULT_NAMING)
    name = suggested_instance_name("v0.5.0-20250403-1109", DEFAULT_NAMING)
    assert name == "Site Toolkit v0.5.0"
    skeleton = skeleton_input_file(fields, name)
    assert len(skeleton.values) == 23 and skeleton.networks == (("Public", "0"),)
    assert load_input_file(render_input_file(skeleton)) == skeleton
    assert suggested_instance_name(parse_version("1.31.3-6.10.0-3-20251118-1327"), DEFAULT_NAMING) == "Site Toolkit 1.31.3"
    assert suggested_instance_name("", NamingProfile(toolkit_appliance_name="TK")) == "TK"


names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20)


@given(
    st.text(st.characters(codec="utf-8"), max_size=20),
    st.dictionaries(names, st.text(st.characters(codec="utf-8"), max_size=30), max_size=5),
    st.lists(st.tuples(names, st.integers(0, 9999).map(str)), max_size=3),
)
def test_property_render_load_round_trip(name: str, values: dict[str, str], networks: list[tuple[str, str]]) -> None:
    f = InputFile(name, tuple(values.items()), tuple(networks))
    assert load_input_file(render_input_file(f)) == f
