"""Key help generated from the bindings that are active where `?` was pressed.

`HelpScreen.for_screen(screen)` reads `screen.active_bindings` (the focused widget's, the screen's
and the app's bindings, as Textual resolves them), groups them by where they are defined and
lists key and description. Nothing is written by hand, so the help cannot drift from the keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

from rich.columns import Columns
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Label, Static

from widgets.dialog import Dialog


@dataclass(frozen=True)
class HelpEntry:
    """One key: where it is defined (group), the key as displayed, what it does."""

    group: str
    key: str
    description: str
    enabled: bool = True


def _group_name(node: object) -> str:
    title = getattr(node, "HELP_GROUP", None) or getattr(node, "TITLE", None)
    if isinstance(title, str) and title:
        return title
    return type(node).__name__


def entries_for(screen: Screen[Any]) -> list[HelpEntry]:
    """The active bindings of `screen`, one entry per action (keys sharing an action are joined)."""
    app = screen.app
    merged: dict[tuple[str, str], HelpEntry] = {}
    order: list[tuple[str, str]] = []
    for active in screen.active_bindings.values():
        binding = active.binding
        if not binding.description:
            continue
        group = _group_name(active.node)
        ident = (group, binding.action)
        key = app.get_key_display(binding)
        if ident in merged:
            old = merged[ident]
            if key not in old.key.split("/"):
                merged[ident] = HelpEntry(group, f"{old.key}/{key}", old.description, old.enabled)
            continue
        merged[ident] = HelpEntry(group, key, binding.description, active.enabled)
        order.append(ident)
    return [merged[i] for i in order]


class HelpScreen(Dialog[None]):
    """A modal listing keys by group."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "close", "Close help", id="help.close"),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Vertical {
        width: 110; max-width: 95%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    HelpScreen #help-title { text-style: bold; width: 1fr; padding: 0 0 1 0; }
    HelpScreen #help-intro { width: 1fr; padding: 0 0 1 0; }
    HelpScreen VerticalScroll { height: auto; }
    """

    def __init__(self, entries: Sequence[HelpEntry], title: str = "Keys", intro: str = "") -> None:
        super().__init__()
        self.entries = tuple(entries)
        self.help_title = title
        self.intro = intro

    @classmethod
    def for_screen(cls, screen: Screen[Any], title: str | None = None) -> "HelpScreen":
        """The keys of `screen`, after its `HELP_INTRO` (what the screen is for, the path) if any."""
        intro = getattr(screen, "HELP_INTRO", "")
        return cls(entries_for(screen), title or f"Keys: {_group_name(screen)}", intro if isinstance(intro, str) else "")

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content(self.help_title), id="help-title")
            if self.intro:
                yield Static(Content(self.intro), id="help-intro")
            with VerticalScroll():
                yield Static(self._table(), id="help-table")

    def _table(self) -> Columns:
        """One small table per group, laid side by side as the width allows."""
        groups: dict[str, list[HelpEntry]] = {}
        for entry in self.entries:
            groups.setdefault(entry.group, []).append(entry)
        tables = []
        for group, entries in groups.items():
            table = Table.grid(padding=(0, 2))
            table.add_column(no_wrap=True)
            table.add_column()
            table.add_row(Text(group, style="bold underline"), "")
            for entry in entries:
                style = "" if entry.enabled else "dim"
                table.add_row(Text(entry.key, style=style or "bold"), Text(entry.description, style=style))
            tables.append(table)
        return Columns(tables, padding=(1, 4))

    def action_close(self) -> None:
        self.dismiss(None)
