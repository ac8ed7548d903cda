"""The `/` filter bar of a table screen (the VM list, the marketplace), written once.

A screen mixes `TableFilter` in before its base screen and names its field (`FILTER_ID`, the bar
being `#<FILTER_ID>-bar`); it has a `table` (a `VirtualTable` with a text filter) and a
`_paint_status()`. `/` shows the bar and focuses the field (mounted on first use unless the screen
composes it), typing filters the table live, enter keeps the filter and goes back to the table
(an empty one also hides the bar), escape clears it.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from textual.css.query import DOMQuery
from textual.widget import Widget
from textual.widgets import Input

from widgets.virtual_table import VirtualTable


class _FilteredScreen(Protocol):
    FILTER_ID: ClassVar[str]
    FILTER_PLACEHOLDER: ClassVar[str]

    @property
    def table(self) -> VirtualTable: ...

    def query(self, selector: str) -> DOMQuery[Widget]: ...

    def query_one(self, selector: str) -> Widget: ...

    def _paint_status(self) -> None: ...

    async def filter_field(self) -> Input: ...


class TableFilter:
    """The filter bar's actions and handlers (see the module docstring)."""

    #: the filter field's id; the bar is `#<FILTER_ID>-bar`
    FILTER_ID: ClassVar[str] = ""
    #: the field's placeholder when it is mounted on first use
    FILTER_PLACEHOLDER: ClassVar[str] = "filter (esc clears)"

    async def filter_field(self: _FilteredScreen) -> Input:
        """The filter field, mounted the first time it is needed."""
        found = self.query(f"#{self.FILTER_ID}")
        if found:
            return found.first(Input)
        from widgets.field_input import FieldInput  # on first use: not on the start-up path

        field = FieldInput(placeholder=self.FILTER_PLACEHOLDER, id=self.FILTER_ID)
        await self.query_one(f"#{self.FILTER_ID}-bar").mount(field)
        return field

    async def action_filter(self: _FilteredScreen) -> None:
        self.query_one(f"#{self.FILTER_ID}-bar").set_class(True, "-active")
        (await self.filter_field()).focus()

    async def action_clear_filter(self: _FilteredScreen) -> None:
        bar = self.query_one(f"#{self.FILTER_ID}-bar")
        if not bar.has_class("-active") and not self.table.filter_text:
            return
        (await self.filter_field()).value = ""
        self.table.set_filter("")
        bar.set_class(False, "-active")
        self.table.focus()
        self._paint_status()

    def on_input_changed(self: _FilteredScreen, event: Input.Changed) -> None:
        if event.input.id == self.FILTER_ID:
            self.table.set_filter(event.value)
            self._paint_status()

    def on_input_submitted(self: _FilteredScreen, event: Input.Submitted) -> None:
        if event.input.id != self.FILTER_ID:
            return
        if not event.value.strip():
            self.query_one(f"#{self.FILTER_ID}-bar").set_class(False, "-active")
        self.table.focus()
