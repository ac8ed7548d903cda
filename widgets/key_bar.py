"""`KeyBar`: the bottom line of every screen, the keys the screen offers now and what they do.

It shows what Textual's `Footer` shows (the screen's active bindings with `show=True`, one per
action, disabled ones dimmed, the command palette key on the right) and a click on a key presses
it, but it is one widget that repaints a line of text when the bindings change. `Footer` mounts
a widget per key and mounts them all again on every change (a focus move, a modal closing), which
cost the console about 30 ms on each screen switch and at start-up.

When the line is too narrow for every key (80 columns), the app's own keys (quit, go to, help)
and the palette key (without its description) keep their place on the right; the screen's keys
come first with their descriptions while they fit, then as keys alone, then `…` (`?` lists them
all).
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
    #: an app-wide key (quit, go to, help): kept when the line is too narrow
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

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen: Screen[object]) -> None:
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
        entries, palette = self._entries()
        text = Text(no_wrap=True, overflow="crop", end="")
        slots: list[KeySlot] = []
        width = self.size.width
        needed = sum(e.width() for e in entries) + (palette.width() if palette is not None else 0)
        if needed > width and width > 0:
            if palette is not None:  # the palette's key alone: its place is known (rightmost)
                palette = palette._replace(description="")
            entries = self._fitted(entries, width - (palette.width() if palette is not None else 0))
        for entry in entries:
            if entry.key == "…":
                text.append(" … ", styles[1])
                continue
            slots.append(_append(text, entry, *styles))
        if palette is not None:
            gap = self.size.width - text.cell_len - palette.width()
            if gap > 0:  # right-aligned, when it fits
                text.append(" " * gap, styles[1])
                slots.append(_append(text, palette, *styles))
        self.slots = tuple(slots)
        return text

    @staticmethod
    def _fitted(entries: list[_Entry], width: int) -> list[_Entry]:
        """The entries that fit in `width` cells: the app's keys always; the screen's with their
        description while they fit, then as keys alone, then `…`."""
        kept = [e for e in entries if e.app_level]
        room = width - sum(e.width() for e in kept) - 3  # 3: the `…`
        shown: list[_Entry] = []
        screen_keys = [e for e in entries if not e.app_level]
        for n, entry in enumerate(screen_keys):
            rest = len(screen_keys) - n - 1
            if rest == 0:
                room += 3  # the last key: no `…` can follow it
            if entry.width() <= room and (rest == 0 or entry.width() + 3 * rest <= room or not shown):
                shown.append(entry)
                room -= entry.width()
            elif entry.width(described=False) <= room:
                shown.append(entry._replace(description=""))
                room -= entry.width(described=False)
            else:
                shown.append(_Entry("…", "", "…", False))
                break
        return shown + kept

    def on_mouse_down(self, event: events.MouseDown) -> None:
        for slot in self.slots:
            if slot.start <= event.x < slot.end:
                if slot.enabled:
                    self.app.simulate_key(slot.key)
                else:
                    self.app.bell()
                return
