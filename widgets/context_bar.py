"""A one-line bar of labelled facts (where am I, as whom, how healthy), shown on every screen.

The bar knows nothing of what the facts are: the app declares the slots (key and label) and sets
their values. Values are plain text (never markup) with a variant that picks a theme colour:
"normal", "ok", "warning", "error", "muted" or "badge" (a reversed tag such as READ-ONLY). An empty
value hides its slot.

A line wider than the bar is fitted, so that the slots at its end (the health and the time of the
last refresh) stay whole: first each slot shows its compact value where it has one (`set_item`'s
`compact`: an endpoint's address without its scheme and path), then the labels go, and only then is
the line cut, with an ellipsis.
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
        self._values: dict[str, tuple[str, Variant, str]] = {}

    def value(self, key: str) -> str:
        """The value currently shown in a slot ("" when hidden)."""
        return self._values.get(key, ("", "normal", ""))[0]

    def variant(self, key: str) -> Variant:
        """The variant of a slot's value ("normal" when unset)."""
        return self._values.get(key, ("", "normal", ""))[1]

    def set_item(self, key: str, value: str, variant: Variant = "normal", *, compact: str = "") -> None:
        """Show `value` in slot `key` (empty hides it); `compact`, when given, is shown instead
        while the whole line does not fit."""
        if key not in self._labels:
            raise KeyError(key)
        if self._values.get(key) == (value, variant, compact):
            return
        self._values[key] = (value, variant, compact)
        self.refresh()

    def render(self) -> Text:
        width = self.size.width
        for compact, labels in ((False, True), (True, True), (True, False)):
            text = self._line(compact, labels)
            if width <= 0 or text.cell_len <= width:
                return text
            if text.cell_len == width + 1:  # only the space after the last slot is beyond the bar
                text.right_crop(1)
                return text
        return text

    def _line(self, compact: bool, labels: bool) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for key, label in self._slots:
            value, variant, short = self._values.get(key, ("", "normal", ""))
            if not value:
                continue
            if compact and short:
                value = short
            style: Style = self.get_component_rich_style(f"context-bar--{variant}")
            shown = f"{label} {value}" if label and labels else value
            text.append(f" {shown} " if variant == "badge" else shown, style)
            text.append(" ")
        return text
