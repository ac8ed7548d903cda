"""A one-line bar of labelled facts (where am I, as whom, how healthy), shown on every screen.

The bar knows nothing of what the facts are: the app declares the slots (key and label) and sets
their values. Values are plain text (never markup) with a variant that picks a theme colour:
"normal", "ok", "warning", "error", "muted" or "badge" (a reversed tag such as READ-ONLY). An empty
value hides its slot.
"""

from __future__ import annotations

from typing import Literal, Sequence

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Label

Variant = Literal["normal", "ok", "warning", "error", "muted", "badge"]
VARIANTS: tuple[str, ...] = ("normal", "ok", "warning", "error", "muted", "badge")


class ContextBar(Horizontal):
    """Slots `key -> "label value"` in a fixed order."""

    DEFAULT_CSS = """
    ContextBar {
        dock: top;
        height: 1;
        width: 1fr;
        background: $panel;
        color: $foreground;
        & > Label { width: auto; height: 1; padding: 0 1 0 0; }
        & > Label.-hidden { display: none; }
        & > Label.-ok { color: $text-success; }
        & > Label.-warning { color: $text-warning; }
        & > Label.-error { color: $text-error; text-style: bold; }
        & > Label.-muted { color: $text-muted; }
        & > Label.-badge { background: $warning; color: $background; text-style: bold; padding: 0 1; }
    }
    """

    def __init__(self, slots: Sequence[tuple[str, str]], *, id: str | None = None, classes: str | None = None) -> None:
        """`slots` is `(key, label)` in display order; a label of "" shows the bare value."""
        super().__init__(id=id, classes=classes)
        self._slots = tuple(slots)
        self._values: dict[str, tuple[str, str]] = {}

    def compose(self) -> ComposeResult:
        for key, _label in self._slots:
            yield Label("", id=f"ctx-{key}", classes="-hidden")

    def value(self, key: str) -> str:
        """The value currently shown in a slot ("" when hidden)."""
        return self._values.get(key, ("", "normal"))[0]

    def set_item(self, key: str, value: str, variant: Variant = "normal") -> None:
        """Show `value` in slot `key` (empty hides it)."""
        labels = dict(self._slots)
        if key not in labels:
            raise KeyError(key)
        if self._values.get(key) == (value, variant):
            return
        self._values[key] = (value, variant)
        if self.is_mounted:
            self._paint(key)

    def _paint(self, key: str) -> None:
        labels = dict(self._slots)
        value, variant = self._values.get(key, ("", "normal"))
        widget = self.query_one(f"#ctx-{key}", Label)
        prefix = f"{labels[key]} " if labels[key] else ""
        widget.update(Content(f"{prefix}{value}"))
        widget.set_class(not value, "-hidden")
        for name in VARIANTS:
            widget.set_class(name == variant and name != "normal", f"-{name}")

    def on_mount(self) -> None:
        for key in self._values:
            self._paint(key)
