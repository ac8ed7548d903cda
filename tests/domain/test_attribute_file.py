"""The image attribute file: byte-exact rendering, reading back, and an image's installed tag."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.domain.attribute_file import (
    ApplianceTag,
    AttributeFileError,
    attribute_file_text,
    attributes_for,
    installed_version_from_image_template,
    is_tagged_with,
    parse_attribute_file,
    parse_attribute_pairs,
    render_attribute_file,
    tag_for,
)
from tui.domain.attributes import Attributes
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.template_text import merge_template, parse_template
from tui.domain.versions import NO_PART, canonical_version, parse_version

from .builders import record

SPEC_FILE = (
    'PLATFORM_MARKETPLACE_APPLIANCE_NAME="Site Toolkit"\n'
    'PLATFORM_MARKETPLACE_APPLIANCE_VERSION="20250403-1109"\n'
    'PLATFORM_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION="v0.5.0"\n'
)


def test_file_is_byte_for_byte_the_spec_shape() -> None:
    text = attribute_file_text(record(), DEFAULT_NAMING)
    assert text == SPEC_FILE
    assert text.encode() == SPEC_FILE.encode()


def test_pairs_are_in_the_spec_order() -> None:
    assert attributes_for(record(), DEFAULT_NAMING) == (
        ("PLATFORM_MARKETPLACE_APPLIANCE_NAME", "Site Toolkit"),
        ("PLATFORM_MARKETPLACE_APPLIANCE_VERSION", "20250403-1109"),
        ("PLATFORM_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION", "v0.5.0"),
    )


def test_prefix_comes_from_the_naming_profile() -> None:
    naming = NamingProfile(attribute_prefix="ONE")
    text = attribute_file_text(record(), naming)
    assert text.splitlines()[0] == 'ONE_MARKETPLACE_APPLIANCE_NAME="Site Toolkit"'
    assert "PLATFORM" not in text
    assert parse_attribute_file(text, naming) == tag_for(record())


@pytest.mark.parametrize(
    ("version", "stamp", "software"),
    [
        ("v1.29", "none", "v1.29"),
        ("1.31.3-6.10.0-3-20251118-1327", "6.10.0-3-20251118-1327", "1.31.3"),
        ("v4.3.0.23-20250919-1159", "20250919-1159", "v4.3.0.23"),
        ("7.4.0-0-20260714", "0-20260714", "7.4.0"),
        ("", "none", "none"),
        ("-20250101-1200", "20250101-1200", "none"),
    ],
)
def test_non_conforming_versions_split_at_the_first_dash(version: str, stamp: str, software: str) -> None:
    tag = tag_for(record(version=version))
    assert (tag.stamp, tag.software_version) == (stamp, software)
    assert tag.version.raw == version
    assert tag.complete


def test_a_bare_version_gets_a_build_stamp_attribute_that_is_not_empty() -> None:
    text = attribute_file_text(record(version="v1.29"), DEFAULT_NAMING)
    assert 'PLATFORM_MARKETPLACE_APPLIANCE_VERSION="none"\n' in text
    assert '=""' not in text
    back = parse_attribute_file(text, DEFAULT_NAMING)
    assert back == tag_for(record(version="v1.29")) and back.version.raw == "v1.29"


def test_an_empty_stamp_written_by_older_taggers_still_says_which_version() -> None:
    legacy = ApplianceTag("Container Cluster", "", "v1.29")
    assert legacy.complete and legacy.version.raw == "v1.29"
    assert legacy.same_version(tag_for(record(name="Container Cluster", version="v1.29")))
    assert legacy != tag_for(record(name="Container Cluster", version="v1.29"))  # re-tagging writes "none"


def test_quotes_and_backslashes_are_escaped() -> None:
    text = attribute_file_text(record(name='Say "hi" \\ bye'), DEFAULT_NAMING)
    assert text.splitlines()[0] == 'PLATFORM_MARKETPLACE_APPLIANCE_NAME="Say \\"hi\\" \\\\ bye"'
    assert parse_attribute_file(text, DEFAULT_NAMING).name == 'Say "hi" \\ bye'


def test_render_refuses_what_the_platform_would_refuse() -> None:
    with pytest.raises(AttributeFileError, match="]]>"):
        render_attribute_file([("A", "x]]>y")])
    with pytest.raises(AttributeFileError, match="attribute name"):
        render_attribute_file([("A B", "x")])
    with pytest.raises(AttributeFileError, match="attribute name"):
        render_attribute_file([("", "x")])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('PLATFORM_MARKETPLACE_APPLIANCE_NAME="x"\n', "missing PLATFORM_MARKETPLACE_APPLIANCE_VERSION"),
        (SPEC_FILE + 'OTHER="1"\n', "unexpected attribute OTHER"),
        (SPEC_FILE + 'PLATFORM_MARKETPLACE_APPLIANCE_NAME="y"\n', "more than once"),
        ('PLATFORM_MARKETPLACE_APPLIANCE_NAME="unterminated\n', "not an attribute file"),
        ("PLATFORM_MARKETPLACE_APPLIANCE_NAME\n", "not an attribute file"),
        ('PLATFORM_MARKETPLACE_APPLIANCE_NAME=[ A="1" ]\n', "is a vector"),
        ("", "missing"),
    ],
)
def test_parse_errors_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(AttributeFileError, match=message.replace("[", r"\[")):
        parse_attribute_file(text, DEFAULT_NAMING)


def test_parse_tolerates_order_and_comments() -> None:
    text = "# written by hand\n" + "\n".join(reversed(SPEC_FILE.splitlines())) + "\n"
    assert parse_attribute_file(text, DEFAULT_NAMING) == ApplianceTag("Site Toolkit", "20250403-1109", "v0.5.0")
    assert len(parse_attribute_pairs(text)) == 3


def test_installed_version_from_image_template() -> None:
    attrs = Attributes(
        (("DEV_PREFIX", "vd"), ("DISK", (("A", "1"),))) + attributes_for(record(), DEFAULT_NAMING)
    )
    tag = installed_version_from_image_template(attrs, DEFAULT_NAMING)
    assert tag == ApplianceTag("Site Toolkit", "20250403-1109", "v0.5.0")
    assert tag is not None and tag.complete
    assert tag.version == parse_version("v0.5.0-20250403-1109")
    # the list form of template_text works too
    assert installed_version_from_image_template(parse_template(SPEC_FILE), DEFAULT_NAMING) == tag


def test_untagged_and_partial_images() -> None:
    assert installed_version_from_image_template(Attributes((("DEV_PREFIX", "vd"),)), DEFAULT_NAMING) is None
    assert installed_version_from_image_template([("PLATFORM_MARKETPLACE_APPLIANCE_NAME", "  ")], DEFAULT_NAMING) is None
    partial = installed_version_from_image_template([("PLATFORM_MARKETPLACE_APPLIANCE_NAME", "X")], DEFAULT_NAMING)
    assert partial == ApplianceTag("X", "", "") and not partial.complete


def test_is_tagged_with_makes_attaching_idempotent() -> None:
    tag = tag_for(record())
    existing = parse_template('DEV_PREFIX="vd"\n')
    assert not is_tagged_with(existing, tag, DEFAULT_NAMING)
    merged = merge_template(existing, parse_template(attribute_file_text(record(), DEFAULT_NAMING)))
    assert is_tagged_with(merged, tag, DEFAULT_NAMING)
    assert ("DEV_PREFIX", "vd") in merged  # merge mode keeps the image's other attributes
    assert not is_tagged_with(merged, tag_for(record(version="v0.6.0-20250501-0000")), DEFAULT_NAMING)


values = st.text(st.characters(codec="utf-8"), max_size=40).filter(lambda v: "]]>" not in v)


@given(values, values, values)
def test_property_round_trip(name: str, stamp: str, software: str) -> None:
    tag = ApplianceTag(name, stamp, software)
    text = render_attribute_file(tag.pairs(DEFAULT_NAMING))
    assert text.endswith("\n")
    assert parse_attribute_file(text, DEFAULT_NAMING) == tag


#: the pieces marketplaces build versions from: `v`, dotted numbers, dates, dashes, letters
version_texts = st.one_of(
    st.text(alphabet="v0123456789.-x ", max_size=30),
    st.lists(st.sampled_from(["v", "1", "29", ".", "-", "0", "6.10.0", "20251118", "1327", "rc1", "V"]),
             max_size=10).map("".join),
    st.text(st.characters(codec="utf-8"), max_size=30),
).filter(lambda v: "]]>" not in v and NO_PART not in v.split("-"))


@given(version_texts, st.text(min_size=1, max_size=30).filter(lambda v: v.strip() and "]]>" not in v))
def test_property_record_to_file_to_version(version: str, name: str) -> None:
    rec = record(name=name, version=version)
    text = attribute_file_text(rec, DEFAULT_NAMING)
    tag = parse_attribute_file(text, DEFAULT_NAMING)
    assert tag == tag_for(rec) and tag.name == name
    # no attribute is ever empty, and they join back to the record's version
    assert tag.stamp and tag.software_version and tag.complete
    assert tag.version.raw == canonical_version(version)
    assert tag.version.same_release(rec.parsed_version)
    # attaching them again is recognised as "already tagged"
    assert is_tagged_with(parse_template(text), tag_for(rec), DEFAULT_NAMING)


@pytest.mark.parametrize("version", [
    "v1.29", "1.31.3-6.10.0-3-20251118-1327", "v4.3.0.23-20250919-1159", "7.4.0-0-20260714",
    "6.10.0-3-20250115", "6.10.0-2-20241210", "v0.5.0-20250403-1109",
])
def test_every_version_the_embedded_marketplaces_serve_reads_back(version: str) -> None:
    tag = parse_attribute_file(attribute_file_text(record(version=version), DEFAULT_NAMING), DEFAULT_NAMING)
    assert tag.version.raw == version and tag.stamp and tag.software_version
