"""The generic widgets on their own: confirmation, secret input, validated field, progress, context bar,
key bar."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.color import Color
from textual.containers import Vertical
from textual.widgets import Button, Input

from tests.ui.conftest import rendered_text
from tui.domain.endpoints import endpoint_address
from tui.screenshots import click_shown, wait_for, wait_for_screen
from widgets.confirm_modal import ConfirmModal
from widgets.context_bar import ContextBar
from widgets.key_bar import KeyBar, _Entry, fit
from widgets.progress_panel import ProgressPanel
from widgets.secret_input import SecretInput
from widgets.state_cell import StateLook, StatePalette
from widgets.validated_field import ValidatedField, first_invalid


def _not_empty(value: str) -> str | None:
    return None if value.strip() else "required: type a name"


class Harness(App[None]):
    def __init__(self, *widgets) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self._widgets = widgets
        self.results: list[object] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield from self._widgets


async def test_confirm_names_the_object_and_defaults_to_cancel() -> None:
    app = Harness()
    async with app.run_test(size=(100, 30)) as pilot:
        app.push_screen(ConfirmModal("Terminate", "VM 12 a[/]b", command="onevm terminate 12"), app.results.append)
        modal = await wait_for_screen(pilot, ConfirmModal, what="the confirmation")
        assert isinstance(modal, ConfirmModal)
        assert app.focused is not None and app.focused.id == "cancel"
        assert "VM 12 a[/]b" in rendered_text(modal.query_one("#confirm-object"))
        assert "$ onevm terminate 12" in rendered_text(modal.query_one("#confirm-command"))
        await pilot.press("enter")  # a stray enter cancels
        await wait_for(pilot, lambda: app.results, what="the answer")
        assert app.results == [False]

        app.push_screen(ConfirmModal("Terminate", "VM 12"), app.results.append)
        await wait_for_screen(pilot, ConfirmModal, what="the second confirmation")
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(app.results) == 2, what="the second answer")
        app.push_screen(ConfirmModal("Terminate", "VM 12"), app.results.append)
        await wait_for_screen(pilot, ConfirmModal, what="the third confirmation")
        await click_shown(pilot, "#confirm")
        await wait_for(pilot, lambda: len(app.results) == 3, what="the third answer")
        assert app.results == [False, False, True]


async def test_secret_input_is_masked_until_revealed() -> None:
    secret = SecretInput("s3cret", id="secret")
    app = Harness(secret)
    async with app.run_test(size=(80, 10)) as pilot:
        assert secret.input.password is True
        assert "s3cret" not in rendered_text(secret.input)
        await click_shown(pilot, "#secret-reveal")
        await wait_for(pilot, lambda: secret.revealed, what="the reveal")
        assert secret.revealed and secret.input.password is False
        assert "s3cret" in rendered_text(secret.input)
        assert str(secret.query_one("#secret-reveal", Button).label) == "Hide"
        secret.input.focus()
        await pilot.press("ctrl+r")
        assert not secret.revealed and secret.input.password is True
        assert secret.value == "s3cret"


async def test_validated_fields_show_the_reason_and_focus_the_first_invalid() -> None:
    name = ValidatedField("Name", check=_not_empty, id="name")
    password = ValidatedField("Password", "x", check=_not_empty, secret=True, id="password")
    app = Harness(name, password)
    async with app.run_test(size=(100, 20)) as pilot:
        form = app.query_one("#form")
        invalid = first_invalid(form)
        assert invalid is name
        assert app.focused is name.query_one(Input)
        assert name.reason == "required: type a name"
        assert "required: type a name" in rendered_text(name.query_one(".field-reason"))
        assert name.has_class("-invalid")
        await pilot.press(*"web")
        assert name.is_valid and name.reason is None and not name.has_class("-invalid")
        assert first_invalid(form) is None
        assert password.value == "x"


def _scrolled_to_the_end(field: Input) -> bool:
    """The field shows the end of its text and no longer its start (its line between the borders)."""
    shown = rendered_text(field).split("\n")[1].strip("▊▎ ")
    return shown.endswith("jEND") and not shown.startswith(field.value[:5])


async def test_typing_in_a_field_repaints_it_and_lays_nothing_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A keystroke repaints the field alone: Textual's Input laid the whole screen out at every change
    of its text (about 35 ms of CPU a key in the toolkit form). A text longer than the field still
    scrolls to the cursor, in a plain field and in a revealed secret one."""
    name = ValidatedField("Name", "x", check=_not_empty, id="name")
    token = ValidatedField("Token", "y", check=_not_empty, secret=True, id="token")
    app = Harness(name, token)
    async with app.run_test(size=(60, 20)) as pilot:
        name.focus()
        await pilot.pause()
        layouts: list[object] = []
        layout = app.screen._refresh_layout
        monkeypatch.setattr(app.screen, "_refresh_layout", lambda *a, **k: (layouts.append(a), layout(*a, **k))[1])
        typed = "abcdefghij" * 6 + "END"
        await pilot.press("end", *typed)  # the focus selected the whole text
        await wait_for(pilot, lambda: name.value == "x" + typed, what="the name typed")
        await pilot.pause()
        assert layouts == [], "a keystroke laid the screen out"
        assert _scrolled_to_the_end(name.query_one(Input))
        token.query_one(SecretInput).revealed = True
        await pilot.pause()
        layouts.clear()
        token.focus()
        await pilot.press("end", *typed)  # the focus selected the whole text
        await wait_for(pilot, lambda: token.value == "y" + typed, what="the token typed")
        await pilot.pause()
        assert layouts == [], "a keystroke laid the screen out"
        assert _scrolled_to_the_end(token.query_one(SecretInput).input)


def _host_then_port(value: str) -> str | None:
    """A reason that changes length as the operator types: longer at odd lengths (a URL's host, then its port)."""
    if value.endswith("ok"):
        return None
    if len(value) % 2:
        return "names no valid host: expected http://<host>:<port>/RPC2, e.g. http://10.0.0.1:2633/RPC2"
    return "names no port: expected http://<host>:<port>"


async def test_a_reason_that_changes_as_one_types_keeps_its_height_until_the_field_is_left(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An error that gets shorter or goes while the operator types keeps its lines (no layout of the
    form, no jump of what is under it at each key); it grows when it needs to, and leaving the field
    gives it its own height again."""
    url = ValidatedField("Endpoint", "", check=_host_then_port, id="url")
    other = ValidatedField("Other", "x", check=_not_empty, id="other")
    app = Harness(url, other)
    async with app.run_test(size=(60, 30)) as pilot:
        url.focus()
        await pilot.press("h")
        await wait_for(pilot, lambda: url.reason is not None and "host" in url.reason, what="the long reason")
        await pilot.pause()
        label = url.query_one(".field-reason")
        tall = label.size.height
        layouts: list[object] = []
        layout = app.screen._refresh_layout
        monkeypatch.setattr(app.screen, "_refresh_layout", lambda *a, **k: (layouts.append(a), layout(*a, **k))[1])
        for key in "ttp:/":
            await pilot.press(key)
            await pilot.pause()
            shown = rendered_text(label)
            assert url.reason is not None and ("host" in shown) == ("host" in url.reason), shown
            assert label.size.height == tall, "the reason kept its height"
        assert layouts == [], "a shorter or as long reason laid the form out"
        await pilot.press("tab")
        await wait_for(pilot, lambda: app.focused is other.query_one(Input), what="the other field focused")
        await pilot.pause()
        assert "port" in rendered_text(label) and label.size.height < tall, "left: the reason's own height"
        url.focus()
        await pilot.press("/")
        await wait_for(pilot, lambda: label.size.height == tall, what="the longer reason shown whole")
        assert rendered_text(label).rstrip().endswith("3/RPC2"), "the whole reason, to its last line"
        await pilot.press("o")
        await pilot.pause()
        layouts.clear()
        await pilot.press("k")
        await wait_for(pilot, lambda: url.is_valid and rendered_text(label).strip() == "", what="valid: no reason")
        await pilot.pause()
        assert layouts == [] and label.size.height == tall, "valid while typing: the lines kept"
        await pilot.press("tab")
        await wait_for(pilot, lambda: label.outer_size.height == 3, what="left: no reason, the input's height (min-height)")
        assert rendered_text(label).strip() == ""


async def test_progress_panel_marks_steps_with_glyphs_and_moves_the_bar() -> None:
    panel = ProgressPanel(["undeploy", "set CPU model", "deploy"])
    app = Harness(panel)
    async with app.run_test(size=(80, 12)) as pilot:
        panel.update_step("undeploy", "done", "VM 3 is UNDEPLOYED")
        panel.update_step("set CPU model", "running")
        await pilot.pause()
        text = rendered_text(panel.query_one("#progress-steps"))
        assert "✔ undeploy  done  VM 3 is UNDEPLOYED" in text
        assert "▶ set CPU model  running" in text
        assert "· deploy  pending" in text
        assert panel.query_one("#progress-bar").progress == 1


async def test_context_bar_hides_empty_slots_and_shows_text_as_is() -> None:
    bar = ContextBar((("endpoint", ""), ("user", "user"), ("mode", "")))
    app = Harness(bar)
    async with app.run_test(size=(80, 5)) as pilot:
        bar.set_item("user", "a[/]b")
        bar.set_item("mode", "READ-ONLY", "badge")
        await pilot.pause()
        assert rendered_text(bar).rstrip() == "user a[/]b  READ-ONLY"  # the empty endpoint takes no room
        assert bar.value("endpoint") == "" and bar.variant("mode") == "badge"
        bar.set_item("user", "")
        await pilot.pause()
        assert rendered_text(bar).rstrip() == " READ-ONLY"


async def test_a_context_bar_too_narrow_shortens_its_first_slots_and_keeps_the_last_whole() -> None:
    """At 80 columns the header lost the time of the last refresh ("... connected refreshed"): the
    endpoint's compact value comes first, then the labels go, and only then is the line cut."""
    bar = ContextBar((("endpoint", ""), ("user", "user"), ("version", "version"), ("health", ""),
                      ("refresh", "refreshed")))
    app = Harness(bar)
    async with app.run_test(size=(80, 5)) as pilot:
        bar.set_item("endpoint", "https://frontend.example.org:2633/RPC2", compact="frontend.example.org:2633")
        bar.set_item("user", "oneadmin")
        bar.set_item("version", "7.0.0")
        bar.set_item("health", "● connected", "ok")
        bar.set_item("refresh", "07:45:12")
        await pilot.pause()
        full = "https://frontend.example.org:2633/RPC2 user oneadmin version 7.0.0 ● connected refreshed 07:45:12"
        assert len(full) > 80
        assert rendered_text(bar).rstrip() == "frontend.example.org:2633 oneadmin 7.0.0 ● connected 07:45:12"
        await pilot.resize_terminal(120, 5)
        await pilot.pause()
        assert rendered_text(bar).rstrip() == full  # room enough: all of it
        await pilot.resize_terminal(90, 5)
        await pilot.pause()
        assert rendered_text(bar).rstrip() == ("frontend.example.org:2633 user oneadmin version 7.0.0 ● connected "
                                               "refreshed 07:45:12")
        await pilot.resize_terminal(30, 5)
        await pilot.pause()
        assert rendered_text(bar).startswith("frontend.example.org:2633")  # cut only when nothing else fits


def test_an_endpoints_address_is_its_host_and_port() -> None:
    assert endpoint_address("https://user:secret@one.example.org:2633/RPC2") == "one.example.org:2633"
    assert endpoint_address("http://[::1]:2633/RPC2") == "[::1]:2633"
    assert endpoint_address("the demo site (starting)") == ""
    assert endpoint_address("http://host:port/") == ""


def test_state_palette_gives_word_glyph_and_style() -> None:
    palette = StatePalette({"running": StateLook("green", "●")}, default=StateLook("magenta", "?"))
    text = palette.text("runn", "running")
    assert text.plain == "● runn"
    assert palette.text("[x]").plain == "? [x]"  # unknown states still read as words


class KeyHarness(App[None]):
    """Two shown keys (one of them disabled while `locked`), one hidden key, the palette key."""

    BINDINGS = [
        ("a", "press('a')", "Add"),
        Binding("b", "press('b')", "Burn", id="burn"),
        Binding("z", "press('z')", "Hidden", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.pressed: list[str] = []
        self.locked = False

    def compose(self) -> ComposeResult:
        yield KeyBar()

    def action_press(self, key: str) -> None:
        self.pressed.append(key)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "press" and parameters == ("b",) and self.locked:
            return None  # shown, disabled
        return True


def _painted(entries: list[_Entry], palette: _Entry | None, width: int) -> list[tuple[str, str]]:
    fitted, fitted_palette = fit(entries, palette, width)
    assert width <= 0 or sum(e.width() for e in fitted) + (fitted_palette.width() if fitted_palette else 0) <= width
    return [(e.display, e.description) for e in (*fitted, *([fitted_palette] if fitted_palette else []))]


#: the setup screen's keys while a step runs, the app's (quit, go to, help) and the palette's
SETUP_KEYS = [_Entry("n", "Next step", "n", True), _Entry("d", "Do this", "d", True),
              _Entry("i", "Input file", "i", True), _Entry("c", "Cancel", "c", True), _Entry("r", "Refresh", "r", True)]
APP_KEYS = [_Entry("q", "Quit", "q", True, True), _Entry(":", "Go to", "colon", True, True),
            _Entry("?", "Help", "question_mark", True, True)]
PALETTE = _Entry("^p", "Commands", "ctrl+p", True)


def test_key_bar_fit_drops_the_app_keys_descriptions_before_the_screens() -> None:
    """The order in which descriptions go as the line narrows: the palette's, then the app's keys'
    (help's, go to's, quit's), then the screen's keys' from the right, then the screen's keys themselves behind
    `…`; the app's keys and the palette's stay, on the right. Before, the screen's keys lost their
    descriptions first: at 80 columns a running setup step showed `c  r  q Quit  : Go to  ? Help`."""
    entries = SETUP_KEYS + APP_KEYS
    described = [(e.display, e.description) for e in SETUP_KEYS]
    everything = described + [("q", "Quit"), (":", "Go to"), ("?", "Help"), ("^p", "Commands")]
    assert _painted(entries, PALETTE, 97) == everything
    assert _painted(entries, PALETTE, 0) == everything  # not laid out yet
    # the palette's description alone is enough to go
    assert _painted(entries, PALETTE, 96) == _painted(entries, PALETTE, 88) == [*everything[:-1], ("^p", "")]
    # then the app's keys lose theirs one at a time, from the right: help, go to, quit; at 80
    # columns (a running setup step) quit keeps its description, every key of the screen its own
    assert _painted(entries, PALETTE, 87) == _painted(entries, PALETTE, 83) == described + [
        ("q", "Quit"), (":", "Go to"), ("?", ""), ("^p", "")]
    assert _painted(entries, PALETTE, 82) == _painted(entries, PALETTE, 80) == _painted(entries, PALETTE, 77) == \
        described + [("q", "Quit"), (":", ""), ("?", ""), ("^p", "")]
    bare_app = [("q", ""), (":", ""), ("?", ""), ("^p", "")]
    assert _painted(entries, PALETTE, 76) == _painted(entries, PALETTE, 72) == described + bare_app
    # narrower: the screen's keys lose theirs from the right, never before the app's keys
    assert _painted(entries, PALETTE, 71) == [*described[:4], ("r", ""), *bare_app]
    assert _painted(entries, PALETTE, 50) == [("n", "Next step"), ("d", "Do this"), ("i", ""), ("c", ""), ("r", ""),
                                              *bare_app]
    assert _painted(entries, PALETTE, 30) == [("n", ""), ("d", ""), ("i", ""), ("c", ""), ("r", ""), *bare_app]
    # narrower still: `…` stands for the screen's keys that are left out, the app's keys stay
    assert _painted(entries, PALETTE, 24) == [("n", ""), ("d", ""), ("…", ""), *bare_app]
    # no palette key (a harness without one), keys in the app's order when they all fit
    assert _painted(entries, None, 80) == described + [("q", "Quit"), (":", "Go to"), ("?", "")]
    assert _painted(APP_KEYS + SETUP_KEYS[:1], None, 80) == [("q", "Quit"), (":", "Go to"), ("?", "Help"),
                                                            ("n", "Next step")]


def test_key_bar_fit_keeps_the_app_keys_descriptions_when_only_the_palettes_is_in_the_way() -> None:
    """The setup screen with no step running at 80 columns: everything but the palette's
    description fits, so quit, go to and help keep theirs."""
    entries = [e for e in SETUP_KEYS if e.key != "c"] + APP_KEYS
    assert _painted(entries, PALETTE, 80) == [
        ("n", "Next step"), ("d", "Do this"), ("i", "Input file"), ("r", "Refresh"),
        ("q", "Quit"), (":", "Go to"), ("?", "Help"), ("^p", "")]


def test_key_bar_fit_describes_the_marketplace_keys_the_room_allows() -> None:
    """The marketplace at 80 columns: every key but the last described. Before, `d a u` showed
    alone next to `q Quit  : Go to  ? Help`; a key kept no description either when only the
    three cells of a `…` that no key needed were missing."""
    market = [_Entry("/", "Filter", "slash", True), _Entry("esc", "Clear filter", "escape", True),
              _Entry("r", "Reload", "r", True), _Entry("d", "Download", "d", True),
              _Entry("a", "Attributes", "a", True), _Entry("u", "Upgrade plan", "u", True)]
    assert _painted(market + APP_KEYS, PALETTE, 80) == [
        ("/", "Filter"), ("esc", "Clear filter"), ("r", "Reload"), ("d", "Download"), ("a", "Attributes"), ("u", ""),
        ("q", ""), (":", ""), ("?", ""), ("^p", "")]


def test_key_bar_gives_the_last_key_the_room_no_ellipsis_needs() -> None:
    """The `…` is reserved only while a key could follow it: at 80 columns the setup's last key
    (r Refresh) lost its description for want of the three cells it kept for nothing."""
    entries = [_Entry("a", "Add", "a", True), _Entry("r", "Refresh", "r", True), _Entry("q", "Quit", "q", True, True)]
    assert _painted(entries, None, 26) == [("a", "Add"), ("r", "Refresh"), ("q", "Quit")]
    assert _painted(entries, None, 21) == [("a", "Add"), ("r", "Refresh"), ("q", "")]
    # one cell less: the last key alone, no `…` (nothing was left out)
    assert _painted(entries, None, 20) == [("a", "Add"), ("r", ""), ("q", "")]


async def test_key_bar_shows_active_keys_dims_disabled_ones_and_presses_on_click() -> None:
    app = KeyHarness()
    async with app.run_test(size=(80, 5)) as pilot:
        bar = app.query_one(KeyBar)
        await wait_for(pilot, lambda: bar.slots, what="the keys painted")
        assert [(key, text) for key, text, _enabled in bar.keys()] == [("a", "Add"), ("b", "Burn"), ("^p", "palette")]
        line = rendered_text(bar)
        assert line.startswith(" a Add  b Burn ") and line.rstrip().endswith("^p palette")
        assert "Hidden" not in line

        await pilot.click(KeyBar, offset=(bar.slots[1].start + 1, 0))
        assert app.pressed == ["b"]

        app.locked = True
        app.refresh_bindings()
        await wait_for(pilot, lambda: not bar.keys()[1][2], what="the disabled key")
        await pilot.click(KeyBar, offset=(bar.slots[1].start + 1, 0))
        assert app.pressed == ["b"]  # a disabled key does nothing (the bell rings)
        await pilot.click(KeyBar, offset=(bar.slots[0].start + 1, 0))
        assert app.pressed == ["b", "a"]


class NarrowHarness(App[None]):
    """The app's own keys (quit, go to, help) and a screen with the keys `screen_keys` describes."""

    BINDINGS = [Binding("q", "press('q')", "Quit"), Binding("colon", "press(':')", "Go to", key_display=":"),
                Binding("question_mark", "press('?')", "Help", key_display="?")]

    def __init__(self, screen_keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.pressed: list[str] = []
        self.screen_keys = screen_keys

    def on_mount(self) -> None:
        from textual.screen import Screen

        class Busy(Screen[None]):
            BINDINGS = [Binding(k, f"app.press('{k}')", text) for k, text in self.screen_keys]

            def compose(self) -> ComposeResult:
                yield KeyBar()

        self.push_screen(Busy())

    def action_press(self, key: str) -> None:
        self.pressed.append(key)


async def _key_line(app: NarrowHarness, size: tuple[int, int]) -> str:
    async with app.run_test(size=size) as pilot:
        bar = await wait_for(pilot, lambda: (found := app.screen.query(KeyBar)) and found.first().slots and found.first(),
                             what="the keys painted")
        line = rendered_text(bar)
        at = next(slot for slot in bar.slots if slot.key == "q")
        await pilot.click(KeyBar, offset=(at.start + 1, 0))
        assert app.pressed == ["q"]  # the app's key, without its description, still pressed by a click
        return line


async def test_key_bar_at_80_columns_describes_the_screens_keys_before_the_apps() -> None:
    """The setup screen's keys while a step runs, at 80 columns: every one keeps its description
    and quit, go to and help show as keys alone. Before, `c` and `r` showed bare next to `q Quit  :
    Go to  ? Help`."""
    setup_keys = [("n", "Next step"), ("d", "Do this"), ("i", "Input file"), ("c", "Cancel"), ("r", "Refresh")]
    line = await _key_line(NarrowHarness(setup_keys), (80, 5))
    assert len(line) <= 80
    assert line.startswith(" n Next step  d Do this  i Input file  c Cancel  r Refresh  q Quit  :  ? "), line
    assert line.rstrip().endswith(" ^p"), line
    # the marketplace's keys fill the 80 columns to the last cell, the palette's key in the last four
    market_keys = [("slash", "Filter"), ("escape", "Clear filter"), ("r", "Reload"), ("d", "Download"),
                   ("a", "Attributes"), ("u", "Upgrade plan")]
    line = await _key_line(NarrowHarness(market_keys), (80, 5))
    assert line == " / Filter  esc Clear filter  r Reload  d Download  a Attributes  u  q  :  ?  ^p ", line
    # wide enough: every key described, the palette's too
    line = await _key_line(NarrowHarness(setup_keys), (120, 5))
    assert " c Cancel  r Refresh  q Quit  : Go to  ? Help " in line and line.rstrip().endswith("^p palette"), line


async def test_key_bar_at_80_columns_keeps_quit_go_to_help_and_the_palette() -> None:
    """A screen with more keys than 80 columns hold even with the app's keys alone: its first key
    described, the others alone, the app's keys and the palette's on the right."""
    long_keys = [(k, f"Long description {k}") for k in "nmdicrw"]
    line = await _key_line(NarrowHarness(long_keys), (80, 5))
    assert len(line) <= 80
    assert line.startswith(" n Long description n "), line  # the screen's first key, described
    assert all(f" {k} " in line for k in "dicrw"), line  # the last ones as keys alone
    assert " w  q  :  ? " in line and line.rstrip().endswith(" ^p"), line
    line = await _key_line(NarrowHarness(long_keys), (200, 5))
    assert "Long description w" in line and "…" not in line and " q Quit " in line and "^p palette" in line


async def test_dialog_buttons_have_accelerators_a_visible_focus_and_stay_in_sight() -> None:
    from widgets.dialog import choose_keys

    assert choose_keys(["Cancel", "Cancel download", "Review", "Download"]) == ["c", "a", "r", "d"]
    assert choose_keys(["Quit", "Keep"]) == ["u", "e"]  # q and k are the console's (quit, up)
    long_detail = "\n".join(f"- change {n}" for n in range(80))
    for size in ((80, 24), (160, 48)):
        app = Harness()
        async with app.run_test(size=size) as pilot:
            app.push_screen(ConfirmModal("Download", "the toolkit", detail=long_detail, command="onemarketapp export 0"),
                            app.results.append)
            modal = await wait_for_screen(pilot, ConfirmModal, what="the confirmation")
            await wait_for(pilot, lambda modal=modal: modal.query_one("#confirm").region.area, what="the buttons laid out")
            confirm, cancel = modal.query_one("#confirm", Button), modal.query_one("#cancel", Button)
            assert confirm.region.bottom <= size[1] and cancel.region.bottom <= size[1], "the buttons are in sight"
            assert modal.accelerator_of(cancel) == "c" and modal.accelerator_of(confirm) == "d"
            assert any("underline" in str(span.style) for span in confirm.label.spans), "the letter is underlined"
            # the focus shows as a frame in the accent colour and an underlined label, not only reverse video
            accent = Color.parse(app.theme_variables["accent"])
            assert cancel.has_focus and cancel.styles.border_top[1] == accent and "underline" in str(cancel.styles.text_style)
            assert confirm.styles.border_top[1] != accent
            await pilot.press("tab")
            await wait_for(pilot, lambda confirm=confirm: confirm.has_focus, what="the focus on the action")
            assert confirm.styles.border_top[1] == accent and cancel.styles.border_top[1] != accent
            body = modal.query_one("#confirm-body")
            await pilot.press("pagedown")
            await wait_for(pilot, lambda body=body: body.scroll_y > 0, what="the text to scroll from the buttons")
            await pilot.press("d")
            await wait_for(pilot, lambda app=app: app.results, what="the answer")
            assert app.results == [True]


async def test_error_go_to_and_help_dialogs_share_the_dialog_base() -> None:
    """The error, go-to and help dialogs are `widgets.dialog.Dialog`s like the others: the error
    dialog's buttons have accelerator keys (Copy c, Close l) and the framed focus, at 80x24."""
    from widgets.dialog import Dialog
    from widgets.error_modal import ErrorModal
    from widgets.help_screen import HelpScreen
    from widgets.jump_prompt import JumpPrompt

    assert issubclass(JumpPrompt, Dialog) and issubclass(HelpScreen, Dialog)
    app = Harness()
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(ErrorModal("Boom", "\n".join(f"line {n}" for n in range(60))), app.results.append)
        modal = await wait_for_screen(pilot, ErrorModal, what="the error dialog")
        close = await wait_for(pilot, lambda: (b := modal.query_one("#error-close", Button)).region.area and b,
                               what="the buttons laid out")
        assert isinstance(modal, Dialog) and close.region.bottom <= 24
        assert modal.query_one("#error-detail").region.bottom <= close.region.y, "the detail scrolls above the buttons"
        assert modal.accelerator_of(modal.query_one("#error-copy", Button)) == "c" and modal.accelerator_of(close) == "l"
        assert close.has_focus and close.styles.border_top[1] == Color.parse(app.theme_variables["accent"])
        await pilot.press("l")
        await wait_for(pilot, lambda: app.results == [None], what="closed by its accelerator")
