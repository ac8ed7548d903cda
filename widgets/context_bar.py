"""A one-line bar of labelled facts (where am I, as whom, how healthy), shown on every screen.

The bar knows nothing of what the facts are: the app declares the slots (key and label) and sets
their values. Values are plain text (never markup) with a variant that picks a theme colour:
"normal", "ok", "warning", "error", "muted" or "badge" (a reversed tag such as READ-ONLY). An empty
value hides its slot.
"""

from __future__ import annotations

from typing import Literal, Sequence

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

Variant = Literal["normal", "ok", "warning", "error", "muted", "badge"]
VARIANTS: tuple[str, ...] = ("normal", "ok", "warning", "error", "muted", "badge")


class ContextBar(Widget):
    """Slots `key -> "label value"` in a fixed order.

    One widget painting one line of text, with a component class per variant: the bar changes
    several times while the console starts and on every refresh, and a label per slot with a CSS
    class per variant made each change a style recalculation (about 1 ms each).
    """

    COMPONENT_CLASSES = {f"context-bar--{name}" for name in VARIANTS}
    DEFAULT_CSS = """
    ContextBar {
        dock: top;
        height: 1;
        width: 1fr;
        background: $panel;
        color: $foreground;
        .context-bar--normal { color: $foreground; }
        .context-bar--ok { color: $text-success; }
        .context-bar--warning { color: $text-warning; }
        .context-bar--error { color: $text-error; text-style: bold; }
        .context-bar--muted { color: $text-muted; }
        .context-bar--badge { background: $warning; color: $background; text-style: bold; }
    }
    """

    def __init__(self, slots: Sequence[tuple[str, str]], *, id: str | None = None, classes: str | None = None) -> None:
        """`slots` is `(key, label)` in display order; a label of "" shows the bare value."""
        super().__init__(id=id, classes=classes)
        self._slots = tuple(slots)
        self._labels = dict(self._slots)
        self._values: dict[str, tuple[str, Variant]] = {}

    def value(self, key: str) -> str:
        """The value currently shown in a slot ("" when hidden)."""
        return self._values.get(key, ("", "normal"))[0]

    def variant(self, key: str) -> Variant:
        """The variant of a slot's value ("normal" when unset)."""
        return self._values.get(key, ("", "normal"))[1]

    def set_item(self, key: str, value: str, variant: Variant = "normal") -> None:
        """Show `value` in slot `key` (empty hides it)."""
        if key not in self._labels:
            raise KeyError(key)
        if self._values.get(key) == (value, variant):
            return
        self._values[key] = (value, variant)
        self.refresh()

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for key, label in self._slots:
            value, variant = self._values.get(key, ("", "normal"))
            if not value:
                continue
            style: Style = self.get_component_rich_style(f"context-bar--{variant}")
            shown = f"{label} {value}" if label else value
            text.append(f" {shown} " if variant == "badge" else shown, style)
            text.append(" ")
        return text
