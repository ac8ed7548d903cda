"""The platform's template text (tui.domain.template_text) and the simulator's XML form of templates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.domain.template_text import (
    TemplateSyntaxError,
    merge_template,
    parse_template,
    render_template,
)
from tui.sim.xml_render import template_xml

NAMES = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", min_size=1, max_size=12).filter(
    lambda n: not n[0].isdigit()
)
VALUES = st.text(max_size=40).filter(lambda v: "]]>" not in v)
VECTORS = st.lists(st.tuples(NAMES, VALUES), max_size=4)
TEMPLATES = st.lists(st.tuples(NAMES, st.one_of(VALUES, VECTORS)), max_size=8)
# what XML can carry: no control characters, and a parser turns \r into \n
XML_VALUES = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r\ufffe\uffff"), max_size=40
).filter(lambda v: "]]>" not in v and not any(ord(c) < 32 and c not in "\t\n" for c in v))
XML_TEMPLATES = st.lists(st.tuples(NAMES, st.one_of(XML_VALUES, st.lists(st.tuples(NAMES, XML_VALUES), min_size=1, max_size=4))), max_size=8)


@settings(max_examples=300, deadline=None)
@given(TEMPLATES)
def test_text_round_trips(attrs) -> None:
    assert parse_template(render_template(attrs)) == attrs


@settings(max_examples=200, deadline=None)
@given(XML_TEMPLATES)
def test_the_simulators_xml_reads_back_sorted_by_name(attrs) -> None:
    xml = template_xml("TEMPLATE", attrs)
    expected = [(n, sorted(v, key=lambda kv: kv[0]) if isinstance(v, list) else v) for n, v in sorted(attrs, key=lambda a: a[0])]
    assert parse_template(xml) == expected


def test_quotes_escapes_vectors_repeats_and_comments() -> None:
    text = '''
    # a comment
    name = "say \\"hi\\"" # trailing comment
    PATH = /var/lib/one
    DISK = [ IMAGE_ID = "1", SIZE = 10 ]
    DISK = [
      IMAGE = "two words",
      TARGET = vdb ]
    MULTI = "line one
    line two"
    HASH = "a # b"
    '''
    assert parse_template(text) == [
        ("NAME", 'say "hi"'),
        ("PATH", "/var/lib/one"),
        ("DISK", [("IMAGE_ID", "1"), ("SIZE", "10")]),
        ("DISK", [("IMAGE", "two words"), ("TARGET", "vdb")]),
        ("MULTI", "line one\n    line two"),
        ("HASH", "a # b"),
    ]


def test_the_xml_form_ignores_the_root_name() -> None:
    assert parse_template("<ANYTHING><a>1</a><VEC><k><![CDATA[x<y]]></k></VEC></ANYTHING>") == [
        ("A", "1"), ("VEC", [("K", "x<y")])]


@pytest.mark.parametrize(
    "text", ['A = "unterminated', "A = [ B = 1", "= 3", "A 3", 'A = "x]]>y"', "<A><B>", "A = [ B ]"]
)
def test_malformed_text_is_rejected_with_a_position_or_reason(text: str) -> None:
    with pytest.raises(TemplateSyntaxError):
        parse_template(text)


def test_merge_replaces_every_attribute_named_in_the_new_text() -> None:
    current = [("DISK", [("ID", "1")]), ("DISK", [("ID", "2")]), ("A", "1")]
    assert merge_template(current, [("DISK", [("ID", "3")])]) == [("A", "1"), ("DISK", [("ID", "3")])]


def test_a_cdata_terminator_inside_a_value_is_split_safely() -> None:
    xml = template_xml("T", [("A", "x]]>y")])
    assert xml == "<T><A><![CDATA[x]]]]><![CDATA[>y]]></A></T>"
