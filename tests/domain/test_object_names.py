"""Object names: the platform's refusals (src/pool/PoolObjectSQL.cc `name_is_valid`) and the
console's own (control characters the platform's XML cannot carry), and `fit_name`."""

from __future__ import annotations

import pytest

from tui.domain.object_names import (
    INVALID_NAME_CHARS,
    MAX_NAME_BYTES,
    console_name_problem,
    control_problem,
    fit_name,
    name_problem,
)


@pytest.mark.parametrize("char", list(INVALID_NAME_CHARS))
def test_every_refused_character_is_named_in_the_platforms_words(char: str) -> None:
    assert name_problem(f"a{char}b") == f"Invalid NAME, char '{char}' is not allowed"


def test_empty_and_long_names() -> None:
    assert name_problem("") == "Invalid NAME, it cannot be empty"
    assert name_problem("n" * MAX_NAME_BYTES) is None
    assert name_problem("é" * 64) is None and name_problem("é" * 65) == "Invalid NAME, max length is 128 chars"


def test_the_platform_takes_escape_and_the_console_does_not() -> None:
    assert name_problem("a\x1bb") is None
    assert control_problem("a\x1bb") == console_name_problem("a\x1bb")
    assert "U+001B" in (console_name_problem("a\x1bb") or "")
    assert console_name_problem("Site Toolkit v0.5.0 (ünïcode)") is None


@pytest.mark.parametrize("name", ["a/b:c", "x" * 300, "é" * 100, "esc\x1b[2J", "", "&&&"])
def test_fit_name_makes_any_name_acceptable(name: str) -> None:
    fitted = fit_name(name)
    assert console_name_problem(fitted) is None
    assert len(fitted.encode()) <= MAX_NAME_BYTES
