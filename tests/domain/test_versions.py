"""Appliance versions: the convention, every non-conforming form, ordering (with properties)."""

from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tui.domain.versions import ApplianceVersion, newest, parse_version, version_from_parts


def test_conforming_version_splits_into_software_and_stamp() -> None:
    v = parse_version("v1.0.0-20250915-1622")
    assert v.conforming and v.reason == ""
    assert v.software == "v1.0.0"
    assert v.stamp == "20250915-1622"
    assert v.numbers == (1, 0, 0)
    assert v.build == datetime(2025, 9, 15, 16, 22)
    assert str(v) == v.raw == v.label


@pytest.mark.parametrize(
    ("raw", "software", "stamp", "numbers", "build", "reason_part"),
    [
        ("v1.29", "v1.29", "", (1, 29), None, "has 2 numbers"),
        ("1.31.3-6.10.0-3-20251118-1327", "1.31.3", "6.10.0-3-20251118-1327", (1, 31, 3), datetime(2025, 11, 18, 13, 27), "no leading 'v'"),
        ("v4.3.0.23-20250919-1159", "v4.3.0.23", "20250919-1159", (4, 3, 0, 23), datetime(2025, 9, 19, 11, 59), "has 4 numbers"),
        ("7.4.0-0-20260714", "7.4.0", "0-20260714", (7, 4, 0), datetime(2026, 7, 14), "is not YYYYMMDD-HHMM"),
        ("", "", "", (), None, "empty"),
        ("   ", "", "", (), None, "empty"),
        ("garbage!", "garbage!", "", (), None, "not numbers separated by dots"),
        ("v1.0.0-20251340-1622", "v1.0.0", "20251340-1622", (1, 0, 0), None, "not a real date"),
        ("v1.0.0-2025091-1622", "v1.0.0", "2025091-1622", (1, 0, 0), None, "is not YYYYMMDD-HHMM"),
        (" v1.0.0-20250915-1622 ", "v1.0.0", "20250915-1622", (1, 0, 0), datetime(2025, 9, 15, 16, 22), "whitespace"),
        ("V1.0.0-20250915-1622", "V1.0.0", "20250915-1622", (1, 0, 0), datetime(2025, 9, 15, 16, 22), "no leading 'v'"),
        ("v1.0.0", "v1.0.0", "", (1, 0, 0), None, "no build stamp"),
        ("v1.2rc1-20250101-0000", "v1.2rc1", "20250101-0000", (1, 2), datetime(2025, 1, 1), "not numbers"),
        ("-", "", "", (), None, "no leading 'v'"),
    ],
)
def test_non_conforming_forms_are_flagged_and_split_at_first_dash(
    raw: str, software: str, stamp: str, numbers: tuple[int, ...], build: datetime | None, reason_part: str
) -> None:
    v = parse_version(raw)
    assert not v.conforming
    assert reason_part in v.reason
    assert v.software == software
    assert v.stamp == stamp
    assert v.numbers == numbers
    assert v.build == build


def test_empty_version_has_a_table_label() -> None:
    assert parse_version("").label == "(no version)"


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("v0.4.0-20250219-2235", "v0.5.0-20250403-1109"),
        ("v1.0.0-20250101-0000", "v1.0.0-20250101-0001"),  # same software, later build
        ("v1.9.0-20250101-0000", "v1.10.0-20240101-0000"),  # numeric, not text, comparison
        ("v1.29", "v1.29.1-20250101-0000"),
        ("garbage", "v0.0.1-20200101-0000"),  # garbage is older than any real version
        ("1.31.3-6.10.0-3-20251118-1327", "1.31.3-6.10.0-3-20251119-0000"),
        ("v4.3.0.23-20250919-1159", "v4.3.0.24-20250101-0000"),
        ("7.4.0-0-20260714", "7.4.1-0-20260101"),
    ],
)
def test_newer_than(older: str, newer: str) -> None:
    a, b = parse_version(older), parse_version(newer)
    assert b.newer_than(a)
    assert not a.newer_than(b)
    assert a.compare(b) == -1 and b.compare(a) == 1
    assert a < b and sorted([b, a]) == [a, b]


def test_without_a_build_stamp_only_the_software_versions_compare() -> None:
    bare, stamped = parse_version("v1.29"), parse_version("v1.29.0-20250101-0000")
    assert bare.same_release(stamped) and not stamped.newer_than(bare) and not bare.newer_than(stamped)
    assert parse_version("1.31.3-6.10.0-3-20251118-1327").newer_than(bare)
    assert bare < stamped  # sorting still puts the stamped build last (the newest of equals)


def test_same_release_ignores_spelling() -> None:
    a, b = parse_version("v1.29"), parse_version("1.29.0")
    assert a.same_release(b) and a.compare(b) == 0
    assert a != b  # different raw text: still a total order
    assert (a < b) != (b < a)


def test_unparseable_versions_are_equally_old_but_still_ordered() -> None:
    empty, garbage = parse_version(""), parse_version("garbage")
    assert empty.compare(garbage) == 0 and not garbage.newer_than(empty)
    assert sorted([garbage, empty]) == [empty, garbage]


def test_version_from_parts_joins_back() -> None:
    assert version_from_parts("v0.5.0", "20250403-1109") == parse_version("v0.5.0-20250403-1109")
    assert version_from_parts("v1.29", "").raw == "v1.29"
    assert version_from_parts("", "20250403-1109").raw == "-20250403-1109"
    assert version_from_parts("", "").raw == ""


def test_newest() -> None:
    versions = [parse_version(x) for x in ("v0.4.0-20250219-2235", "v0.5.0-20250403-1109", "v0.4.9")]
    assert newest(versions) == parse_version("v0.5.0-20250403-1109")
    assert newest([]) is None


def test_comparison_with_other_types() -> None:
    v = parse_version("v1.0.0-20250915-1622")
    assert v != "v1.0.0-20250915-1622"
    with pytest.raises(TypeError):
        _ = v < "x"  # type: ignore[operator]
    assert {v, parse_version("v1.0.0-20250915-1622")} == {v}


conforming_parts = st.tuples(
    st.integers(0, 999), st.integers(0, 999), st.integers(0, 999),
    st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2999, 12, 31)),
)


@given(conforming_parts)
def test_property_conforming_versions_round_trip(parts: tuple[int, int, int, datetime]) -> None:
    major, minor, patch, when = parts
    raw = f"v{major}.{minor}.{patch}-{when:%Y%m%d-%H%M}"
    v = parse_version(raw)
    assert v.conforming, v.reason
    assert v.numbers == (major, minor, patch)
    assert v.build == when.replace(second=0, microsecond=0)
    assert f"{v.software}-{v.stamp}" == raw
    assert version_from_parts(v.software, v.stamp) == v


@given(st.text())
def test_property_parse_never_raises_and_splits_at_first_dash(raw: str) -> None:
    v = parse_version(raw)
    assert isinstance(v, ApplianceVersion)
    assert v.conforming == (v.reason == "")
    text = raw.strip()
    if "-" in text:
        assert f"{v.software}-{v.stamp}" == text
    else:
        assert v.software == text and v.stamp == ""


@given(st.lists(st.text(alphabet="v0123456789.-x ", max_size=24), min_size=3, max_size=3))
def test_property_total_order(raws: list[str]) -> None:
    a, b, c = (parse_version(r) for r in raws)
    # exactly one of <, ==, > holds
    for x, y in ((a, b), (b, c), (a, c)):
        assert [x < y, x == y, x > y].count(True) == 1
    if a <= b and b <= c:
        assert a <= c
    assert sorted([a, b, c]) == sorted([c, b, a])


@given(st.lists(st.text(alphabet="v0123456789.-", max_size=24), min_size=2, max_size=2))
def test_property_compare_is_antisymmetric(raws: list[str]) -> None:
    a, b = (parse_version(r) for r in raws)
    assert a.compare(b) == -b.compare(a)
    assert a.newer_than(b) == (a.compare(b) > 0)


def test_absurdly_long_numbers_do_not_raise() -> None:
    v = parse_version("v" + "9" * 5000 + ".0.0-20250101-0000")
    assert v.numbers == () and v.build == datetime(2025, 1, 1)
    assert not v.conforming and "longer than" in v.reason


def test_a_version_text_is_parsed_once_and_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    import tui.domain.versions as versions

    parse_version.cache_clear()
    stamps: list[str] = []
    stamp_time = versions._stamp_time
    monkeypatch.setattr(versions, "_stamp_time", lambda date, clock: stamps.append(date) or stamp_time(date, clock))
    first = parse_version("v1.0.0-20250915-1622")
    assert parse_version("v1.0.0-20250915-1622") is first and stamps == ["20250915"]  # kept: parsed once
    spaced = parse_version(" v1.0.0-20250915-1622 ")  # another text: parsed, and flagged, on its own
    assert spaced is not first and not spaced.conforming and first.conforming and len(stamps) == 2
    parse_version.cache_clear()
