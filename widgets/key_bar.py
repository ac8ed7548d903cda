"""`KeyBar`: the bottom line of every screen, the keys the screen offers now and what they do.

It shows what Textual's `Footer` shows (the screen's active bindings with `show=True`, one per
action, disabled ones dimmed, the command palette key on the right) and a click on a key presses
it, but it is one widget that repaints a line of text when the bindings change. `Footer` mounts
a widget per key and mounts them all again on every change (a focus move, a modal closing), which
cost the console about 30 ms on each screen switch and at start-up.

When the line is too narrow for every key (80 columns), the descriptions an operator knows by
heart go first, so that the screen's own keys keep theirs: the palette's, then those of the app's
keys (quit, go to, help), which keep their place on the right as keys alone. Only if the line is
still too narrow do the screen's keys, which come first, lose theirs: each keeps its description
while the keys after it still fit alone; when not even every key alone fits, the last ones give
way to `…` (`?` lists them all). `fit` is that rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events
from textual.widget import Widget

if TYPE_CHECKING:  # pragma: no cover
    from textual.screen import Screen


class KeySlot(NamedTuple):
    """One key as painted: its cells on the line, the key to press, whether it is enabled."""

    start: int
    end: int
    key: str
    enabled: bool


class _Entry(NamedTuple):
    display: str
    description: str
    key: str
    enabled: bool
    #: an app-wide key (quit, go to, help): kept, as a key alone, when the line is too narrow
    app_level: bool = False

    def width(self, described: bool = True) -> int:
        return len(self.display) + 2 + (len(self.description) + 1 if described and self.description else 0)


def _append(text: Text, entry: _Entry, key_style: Style, description_style: Style, dim: Style) -> KeySlot:
    start = text.cell_len
    extra = Style() if entry.enabled else dim
    text.append(f" {entry.display} ", key_style + extra)
    if entry.description:
        text.append(f"{entry.description} ", description_style + extra)
    return KeySlot(start, text.cell_len, entry.key, entry.enabled)


class KeyBar(Widget):
    """The active keys of the screen, on one line (see the module docstring)."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-bar--key", "key-bar--description", "key-bar--disabled"}
    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        width: 1fr;
        background: $footer-background;
        .key-bar--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .key-bar--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .key-bar--disabled {
            text-style: dim;
        }
    }
    """

    def __init__(self, *, show_command_palette: bool = True, id: str | None = None) -> None:
        super().__init__(id=id)
        self.show_command_palette = show_command_palette
        self.slots: tuple[KeySlot, ...] = ()
        #: the keys of the last bindings change (`_bindings_changed`)
        self._shown: tuple[list[_Entry], _Entry | None] | None = None

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen: Screen[object]) -> None:
        # the signal comes with every focus change and bindings refresh, most of which change no
        # key shown: repainted only when the keys differ (a render is ~1 ms, several a start-up)
        shown = self._entries()
        if shown != self._shown:
            self._shown = shown
            self.refresh()

    def keys(self) -> list[tuple[str, str, bool]]:
        """(key as displayed, description, enabled) of every key shown, left to right, the
        command palette's last."""
        entries, palette = self._entries()
        return [(e.display, e.description, e.enabled) for e in (*entries, *([palette] if palette else []))]

    def _entries(self) -> tuple[list[_Entry], _Entry | None]:
        """The screen's shown keys (the first key of each action), and the palette's key."""
        app = self.app
        active = self.screen.active_bindings
        palette_key = app.COMMAND_PALETTE_BINDING if self.show_command_palette and app.ENABLE_COMMAND_PALETTE else None
        entries: list[_Entry] = []
        actions: set[str] = set()
        for key, (node, binding, enabled, _tooltip) in active.items():
            if not binding.show or binding.action in actions or key == palette_key:
                continue
            actions.add(binding.action)
            entries.append(_Entry(app.get_key_display(binding), binding.description, binding.key, enabled,
                                  app_level=node is app))
        palette: _Entry | None = None
        if palette_key is not None and palette_key in active:
            _node, binding, enabled, _tooltip = active[palette_key]
            palette = _Entry(app.get_key_display(binding), binding.description or "palette", binding.key, enabled)
        return entries, palette

    def render(self) -> Text:
        styles = (self.get_component_rich_style("key-bar--key"), self.get_component_rich_style("key-bar--description"),
                  self.get_component_rich_style("key-bar--disabled"))
        entries, palette = fit(*self._entries(), self.size.width)
        text = Text(no_wrap=True, overflow="crop", end="")
        slots: list[KeySlot] = []
        for entry in entries:
            if entry.key == "…":
                text.append(" … ", styles[1])
                continue
            slots.append(_append(text, entry, *styles))
        if palette is not None:
            gap = self.size.width - text.cell_len - palette.width()
            if gap >= 0:  # right-aligned, when it fits
                text.append(" " * gap, styles[1])
                slots.append(_append(text, palette, *styles))
        self.slots = tuple(slots)
        return text

    def on_mouse_down(self, event: events.MouseDown) -> None:
        for slot in self.slots:
            if slot.start <= event.x < slot.end:
                if slot.enabled:
                    self.app.simulate_key(slot.key)
                else:
                    self.app.bell()
                return


def _needed(entries: list[_Entry], palette: _Entry | None) -> int:
    return sum(e.width() for e in entries) + (palette.width() if palette is not None else 0)


def _bare(entry: _Entry) -> _Entry:
    return entry._replace(description="")


def fit(entries: list[_Entry], palette: _Entry | None, width: int) -> tuple[list[_Entry], _Entry | None]:
    """The keys as painted on `width` cells: every key described when they all fit; else, step by
    step until they fit, the palette's key alone, then the app's keys alone one by one from the
    right (the screen's keys first, the app's after them), then the screen's keys fitted by
    `_fitted_screen_keys`."""
    if width <= 0 or _needed(entries, palette) <= width:
        return entries, palette
    if palette is not None:  # the palette's key alone: its place is known (rightmost)
        palette = _bare(palette)
    screen_keys = [e for e in entries if not e.app_level]
    app_keys = [e for e in entries if e.app_level]
    # the app's keys lose their descriptions one at a time, from the right (help, go to, quit)
    for kept in range(len(app_keys), -1, -1):
        shown = app_keys[:kept] + [_bare(e) for e in app_keys[kept:]]
        if _needed(screen_keys + shown, palette) <= width:
            return screen_keys + shown, palette
    app_keys = shown  # every one alone
    room = width - _needed(app_keys, palette)
    return _fitted_screen_keys(screen_keys, room) + app_keys, palette


def _fitted_screen_keys(entries: list[_Entry], room: int) -> list[_Entry]:
    """The screen's keys in `room` cells: each with its description while the keys after it still
    fit alone, else alone; when not even every key alone fits, keys alone, then `…`."""
    shown: list[_Entry] = []
    for n, entry in enumerate(entries):
        rest = sum(e.width(described=False) for e in entries[n + 1:])
        fitting = next((e for e in (entry, _bare(entry)) if e.width() + rest <= room), None)
        if fitting is None:
            break
        shown.append(fitting)
        room -= fitting.width()
    else:
        return shown
    room -= 3  # 3: the `…`
    for entry in entries[len(shown):]:
        if entry.width(described=False) > room:
            break
        shown.append(_bare(entry))
        room -= entry.width(described=False)
    return [*shown, _Entry("…", "", "…", False)]
