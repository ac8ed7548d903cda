"""`widgets.shared_stylesheet`: parsed CSS rules kept for the process, per set of CSS variables."""

from __future__ import annotations

from typing import Any

import pytest
import textual.css.stylesheet
from textual.app import App, ComposeResult
from textual.color import Color
from textual.css.stylesheet import StylesheetParseError
from textual.screen import Screen
from textual.widgets import Label

from tests.ui.conftest import console_app
from tui.screenshots import wait_for, wait_for_screen
from widgets.shared_stylesheet import SharedStylesheet, shared_stylesheet


class _Pane(Label):
    DEFAULT_CSS = "_Pane { background: $primary; }"


class _Shown(Screen[None]):
    """A screen with CSS of its own, so showing it makes the app parse its stylesheet again."""

    CSS = "#shown { color: #102030; }"

    def compose(self) -> ComposeResult:
        yield Label("shown", id="shown")


class _Harness(App[None]):
    CSS = "#first { color: #405060; }"

    def __init__(self, shared: bool = True) -> None:
        super().__init__()
        if shared:
            self.stylesheet = shared_stylesheet(self.stylesheet)

    def compose(self) -> ComposeResult:
        yield Label("first", id="first")
        yield _Pane("pane", id="pane")


def _counted_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The CSS texts Textual parses from now on (its `parse` of one source)."""
    parsed: list[str] = []
    parse = textual.css.stylesheet.parse

    def counting(scope: str, css: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(css)
        return parse(scope, css, *args, **kwargs)

    monkeypatch.setattr(textual.css.stylesheet, "parse", counting)
    return parsed


async def _run(app: _Harness) -> tuple[Color, Color, Color]:
    """The first label's colour, the pane's background and, once `_Shown` is shown, its label's colour."""
    async with app.run_test(size=(40, 10)) as pilot:
        first = app.query_one("#first").styles.color
        pane = app.query_one("#pane").styles.background
        app.push_screen(_Shown())
        screen = await wait_for_screen(pilot, _Shown)
        return first, pane, screen.query_one("#shown").styles.color


async def test_an_app_after_the_first_parses_nothing_and_styles_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _counted_parses(monkeypatch)
    first = await _run(_Harness())
    assert _Pane.DEFAULT_CSS in parsed and _Shown.CSS in parsed and _Harness.CSS in parsed
    parsed.clear()
    again = await _run(_Harness())
    assert parsed == []  # the second app, and its screen shown for the first time, reuse every rule
    assert again == first == (Color.parse("#405060"), again[1], Color.parse("#102030"))
    # Textual's own stylesheet parses all of it again, then all of it once more for the screen
    parsed.clear()
    assert await _run(_Harness(shared=False)) == first
    assert parsed.count(_Pane.DEFAULT_CSS) == 2 and parsed.count(_Harness.CSS) == 2


def test_rules_are_kept_per_set_of_variables() -> None:
    css = "Label { color: $primary; }"
    colours = []
    for primary in ("#ff0000", "#0000ff", "#ff0000"):
        sheet = SharedStylesheet(variables={"primary": primary})
        sheet.add_source(css, read_from=("test", "variables"))
        sheet.parse()
        colours.append(sheet.rules[0].styles.color)
    assert colours == [Color.parse("#ff0000"), Color.parse("#0000ff"), Color.parse("#ff0000")]
    # new variables on a stylesheet (a theme change) parse again with them, leaving the others' rules
    sheet = SharedStylesheet(variables={"primary": "#ff0000"})
    sheet.add_source(css, read_from=("test", "variables"))
    sheet.set_variables({"primary": "#00ff00"})
    sheet.reparse()
    assert sheet.rules[0].styles.color == Color.parse("#00ff00")
    other = SharedStylesheet(variables={"primary": "#ff0000"})
    other.add_source(css, read_from=("test", "variables"))
    other.parse()
    assert other.rules[0].styles.color == Color.parse("#ff0000")


def test_a_reparse_with_an_error_keeps_the_rules_it_had() -> None:
    sheet = SharedStylesheet(variables={})
    sheet.add_source("Label { color: red; }", read_from=("test", "good"))
    sheet.parse()
    rules = sheet.rules
    sheet.add_source("Label { color: nonsense-colour; }", read_from=("test", "bad"))
    with pytest.raises(StylesheetParseError):
        sheet.reparse()
    assert sheet.rules == rules
    assert isinstance(sheet.copy(), SharedStylesheet)


async def test_the_console_shares_its_parsed_css(sim: Any) -> None:
    app = console_app(sim)
    assert isinstance(app.stylesheet, SharedStylesheet)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        assert app.stylesheet.rules  # the app's CSS and its widgets' went through it
