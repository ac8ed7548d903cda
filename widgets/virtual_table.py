"""A table that renders only its visible rows, for lists of tens of thousands of objects.

`VirtualTable` is a Line-API `ScrollView`: it keeps a list of `TableRow`s (a key, one rich `Text`
per column, a precomputed lowercase search string and precomputed sort values) and paints the
rows that are on screen, nothing else. Replacing the data, filtering and sorting are list
operations on plain Python objects, so a filter keystroke over 50,000 rows costs one pass of
substring tests. The cursor follows a row *key*: it stays on the same object when the data is
replaced, re-sorted or filtered, and only moves when that object disappears from view.

Cells are `rich.text.Text`, never markup strings: remote text such as a VM named `a[/]b` is shown
as is.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Hashable, Iterable, Literal, Sequence

from rich.cells import cell_len, set_cell_size
from rich.control import strip_control_codes
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

Align = Literal["left", "right"]


def _fitted_plain(value: str, width: int, align: str) -> str:
    """A plain cell as `Text(value)` truncated with an ellipsis and padded to `width` renders it
    (one unstyled segment), without building the `Text`: most cells of a list are plain strings,
    and every row painted the first time renders all of its cells."""
    text = strip_control_codes(value)
    length = cell_len(text)
    if length > width:
        text = set_cell_size(text, width - 1) + "…"
        length = cell_len(text)
    pad = width - length
    if pad > 0:
        return " " * pad + text if align == "right" else text + " " * pad
    return text


@dataclass(frozen=True)
class Column:
    """One column: `key` names it in messages and `sort_by`, `width` is in cells.

    A `flex` column grows to absorb the width left over by the others (never below `width`).
    """

    key: str
    label: str
    width: int
    align: Align = "left"
    flex: bool = False


@dataclass(frozen=True, slots=True)
class TableRow:
    """One row. `cells` has one entry per column: a `Text`, or a `str` shown as plain text (never
    parsed as markup; cheaper to build for large lists, since cells become `Text` only when they
    are painted). `search` is lowercase text that filters match; `sort` has one comparable value
    per column (use numbers for numeric columns)."""

    key: Hashable
    cells: tuple[Text | str, ...]
    search: str
    sort: tuple[Any, ...] = field(default=())

    @classmethod
    def build(cls, key: Hashable, cells: Sequence[Text | str], sort: Sequence[Any] | None = None,
              search: str | None = None) -> "TableRow":
        """Make a row from cells; the search string defaults to all cell texts, lowercased."""
        texts = tuple(c if isinstance(c, Text) else Text(str(c)) for c in cells)
        if search is None:
            search = " ".join(t.plain for t in texts).lower()
        values = tuple(sort) if sort is not None else tuple(t.plain.lower() for t in texts)
        return cls(key, texts, search, values)


class VirtualTable(ScrollView, can_focus=True):
    """A scrollable, sortable, filterable table that paints only visible rows."""

    HELP_GROUP = "List"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor_up", "Up", show=False, id="table.cursor-up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="table.cursor-down"),
        Binding("pageup", "page_up", "Page up", show=False, id="table.page-up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="table.page-down"),
        Binding("home,g", "first", "First", show=False, id="table.first"),
        Binding("end,G", "last", "Last", show=False, id="table.last"),
        Binding("enter", "select", "Open", show=False, id="table.select"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "virtual-table--header",
        "virtual-table--header-sorted",
        "virtual-table--cursor",
        "virtual-table--placeholder",
    }

    DEFAULT_CSS = """
    VirtualTable {
        background: $surface;
        color: $foreground;
        height: 1fr;
        width: 1fr;
        & > .virtual-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .virtual-table--header-sorted {
            text-style: bold underline;
            color: $accent;
        }
        & > .virtual-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .virtual-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        & > .virtual-table--placeholder {
            color: $text-muted;
            text-style: italic;
        }
    }
    """

    # The messages are plain classes, not dataclasses: each dataclass costs ~1 ms of CPU to create
    # when the module is imported, on the console's start-up path (issue 24)
    class RowHighlighted(Message):
        """The cursor moved to another row (`key` is None when the view is empty)."""

        def __init__(self, table: "VirtualTable", key: Hashable | None, row: TableRow | None) -> None:
            super().__init__()
            self.table = table
            self.key = key
            self.row = row

        @property
        def control(self) -> "VirtualTable":
            return self.table

    class RowSelected(Message):
        """Enter (or a click on the cursor row) on a row."""

        def __init__(self, table: "VirtualTable", key: Hashable, row: TableRow) -> None:
            super().__init__()
            self.table = table
            self.key = key
            self.row = row

        @property
        def control(self) -> "VirtualTable":
            return self.table

    class SortChanged(Message):
        """The sort column or direction changed (a header was clicked or `sort_by` was called)."""

        def __init__(self, table: "VirtualTable", column: str | None, reverse: bool) -> None:
            super().__init__()
            self.table = table
            self.column = column
            self.reverse = reverse

        @property
        def control(self) -> "VirtualTable":
            return self.table

    #: text painted when there is nothing to show
    placeholder: reactive[str] = reactive("No rows", layout=False)

    def __init__(self, columns: Sequence[Column], *, name: str | None = None, id: str | None = None,
                 classes: str | None = None, text_filter: Callable[[str], str] | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._columns: tuple[Column, ...] = tuple(columns)
        #: applied to plain-string cells when they are painted (only visible rows pay for it),
        #: e.g. to make the control characters of remote text visible instead of obeyed
        self._text_filter = text_filter
        self._all: list[TableRow] = []
        self._sorted: list[TableRow] = []
        self._view: list[TableRow] = []
        self._filter: str = ""
        self._terms: tuple[str, ...] = ()
        self._sort_column: str | None = None
        self._sort_reverse: bool = False
        self._cursor: int = 0
        self._cursor_key: Hashable | None = None
        # The row the operator chose: the cursor returns to it when a filter that hid it is
        # cleared or a refresh brings it back. Only cursor moves change it.
        self._anchor_key: Hashable | None = None
        self._announced_key: Hashable | None = None
        self._announced_any: bool = False
        self._generation: int = 0
        self._widths: tuple[int, ...] = tuple(c.width for c in self._columns)
        self._layout_width = -1
        self._row_cache: LRUCache[tuple[Any, ...], list[Segment]] = LRUCache(1024)
        #: the widget's rich style while `render_lines` paints a batch of lines (None otherwise)
        self._paint_style: Style | None = None
        #: a row of data has been painted (rendered for the screen) at least once
        self.rows_painted = False
        self._painted_waiters: list[Callable[[], object]] = []

    # ----------------------------------------------------------------- public data API

    @property
    def columns(self) -> tuple[Column, ...]:
        return self._columns

    @property
    def row_count(self) -> int:
        """Rows in the data (before filtering)."""
        return len(self._all)

    @property
    def visible_count(self) -> int:
        """Rows that pass the filter."""
        return len(self._view)

    @property
    def visible_rows(self) -> Sequence[TableRow]:
        """The rows that pass the filter, in display order."""
        return self._view

    @property
    def filter_text(self) -> str:
        return self._filter

    @property
    def sort_column(self) -> str | None:
        return self._sort_column

    @property
    def sort_reverse(self) -> bool:
        return self._sort_reverse

    @property
    def cursor_row(self) -> int:
        """Index of the cursor in the filtered view (0 when empty)."""
        return self._cursor

    @property
    def cursor_key(self) -> Hashable | None:
        return self._cursor_key

    @property
    def cursor_table_row(self) -> TableRow | None:
        return self._view[self._cursor] if self._view else None

    def set_rows(self, rows: Iterable[TableRow]) -> None:
        """Replace every row; sort and filter are re-applied and the cursor follows its key. The
        very rows shown already (the same objects, in the same order) change nothing: a list read
        in one page is set from its first page, then whole."""
        new = list(rows)
        if len(new) == len(self._all) and all(map(operator.is_, new, self._all)):
            return
        self._all = new
        self._generation += 1
        self._row_cache.clear()
        self._resort()
        self._refilter(self._view_source_for(self._filter, incremental=False))

    def set_filter(self, text: str) -> None:
        """Show only rows whose search string contains every whitespace-separated term."""
        text = text.strip().lower()
        if text == self._filter:
            return
        # Typing one more character only narrows: filter the current view, not everything.
        incremental = bool(self._filter) and text.startswith(self._filter) and " " not in text[len(self._filter):]
        self._filter = text
        self._terms = tuple(text.split())
        self._refilter(self._view_source_for(text, incremental=incremental))

    def sort_by(self, column: str | None, reverse: bool | None = None) -> None:
        """Sort by a column key (None: data order). `reverse=None` toggles when the column is the
        current one and otherwise sorts ascending."""
        if column is not None and column not in self._column_index():
            raise KeyError(column)
        if reverse is None:
            reverse = (not self._sort_reverse) if column == self._sort_column and column is not None else False
        self._sort_column = column
        self._sort_reverse = reverse
        self._resort()
        self._refilter(self._view_source_for(self._filter, incremental=False))
        self.post_message(self.SortChanged(self, column, reverse))

    def move_cursor_to_key(self, key: Hashable) -> bool:
        """Put the cursor on the row with this key if it is in view; True when found."""
        index = self._index_of(key)
        if index is None:
            return False
        self._set_cursor(index)
        return True

    def move_cursor(self, index: int) -> None:
        """Put the cursor on a view index (clamped)."""
        self._set_cursor(index)

    # ----------------------------------------------------------------- internals: data

    def _column_index(self) -> dict[str, int]:
        return {c.key: i for i, c in enumerate(self._columns)}

    def _resort(self) -> None:
        if self._sort_column is None:
            self._sorted = self._all
            return
        index = self._column_index()[self._sort_column]
        # Rows without a value for the column sort first; ties keep data order (stable sort).
        self._sorted = sorted(
            self._all,
            key=lambda r: (len(r.sort) > index, r.sort[index] if len(r.sort) > index else 0),
            reverse=self._sort_reverse,
        )

    def _view_source_for(self, text: str, *, incremental: bool) -> list[TableRow]:
        return self._view if incremental else self._sorted

    def _refilter(self, source: list[TableRow]) -> None:
        terms = self._terms
        if not terms:
            view = source if source is self._sorted else list(source)
        elif len(terms) == 1:
            term = terms[0]
            view = [r for r in source if term in r.search]
        else:
            view = [r for r in source if all(t in r.search for t in terms)]
        self._view = view
        self._after_view_change()

    def _index_of(self, key: Hashable) -> int | None:
        for i, row in enumerate(self._view):
            if row.key == key:
                return i
        return None

    def _after_view_change(self) -> None:
        index: int | None = None
        if self._anchor_key is not None:
            index = self._index_of(self._anchor_key)
        if index is None and self._cursor_key is not None:
            index = self._index_of(self._cursor_key)
        if index is None:
            # The object went away (or was filtered out): stay at the same position.
            index = min(self._cursor, max(0, len(self._view) - 1))
        self._cursor = index
        self._cursor_key = self._view[index].key if self._view else None
        self._update_virtual_size()
        self._scroll_cursor_into_view()
        self._announce()
        self.refresh()

    def _announce(self) -> None:
        if self._announced_any and self._announced_key == self._cursor_key:
            return
        self._announced_any = True
        self._announced_key = self._cursor_key
        self.post_message(self.RowHighlighted(self, self._cursor_key, self.cursor_table_row))

    def _set_cursor(self, index: int) -> None:
        if not self._view:
            return
        index = max(0, min(index, len(self._view) - 1))
        old = self._cursor
        self._cursor = index
        self._cursor_key = self._anchor_key = self._view[index].key
        self._scroll_cursor_into_view()
        self.refresh_line(old + 1)
        self.refresh_line(index + 1)
        self._announce()

    # ----------------------------------------------------------------- internals: geometry

    def _layout_widths(self, width: int) -> tuple[int, ...]:
        widths = [c.width for c in self._columns]
        used = sum(widths) + max(0, len(widths) - 1)
        spare = width - used
        flex = [i for i, c in enumerate(self._columns) if c.flex]
        if spare > 0 and flex:
            share, extra = divmod(spare, len(flex))
            for n, i in enumerate(flex):
                widths[i] += share + (1 if n < extra else 0)
        return tuple(widths)

    def _update_virtual_size(self, fit: bool = True) -> None:
        self._layout_width = self.scrollable_content_region.width
        widths = self._layout_widths(self._layout_width)
        if widths != self._widths:
            self._widths = widths
            self._row_cache.clear()
        total = sum(widths) + max(0, len(widths) - 1)
        size = Size(total, len(self._view) + 1)
        if size == self.virtual_size:
            return
        if self.styles.auto_dimensions:  # the table's own size follows its rows: lay the screen out
            self.virtual_size = size
            return
        # The table's region does not depend on its rows (its CSS sizes it): a new row count moves
        # only the scrollbars, so no layout of the whole screen (Textual's `virtual_size` asks for
        # one, ~30% of the CPU of a filter keystroke over 50,000 rows). `_scroll_update` resizes the
        # scrollbars and clamps the scroll offset; a scrollbar that appears or goes still asks for a
        # layout (`show_vertical_scrollbar` does).
        self.set_reactive(VirtualTable.virtual_size, size)
        self._scroll_update(size)
        if self.scrollable_content_region.width != self._layout_width and fit:
            # a vertical scrollbar came or went: fit the columns to the new width now, before the
            # cursor is scrolled into view (else the width the scrollbar took came back as a
            # horizontal scrollbar for a moment, and the cursor was scrolled by its row)
            self._update_virtual_size(fit=False)
            return
        self.refresh()

    @property
    def _page_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self) -> None:
        top = round(self.scroll_y)
        page = self._page_rows
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, force=True)
        elif self._cursor >= top + page:
            self.scroll_to(y=self._cursor - page + 1, animate=False, force=True)

    def on_resize(self, event: events.Resize) -> None:
        self._update_virtual_size()
        self._scroll_cursor_into_view()

    def on_mount(self) -> None:
        self._update_virtual_size()

    # ----------------------------------------------------------------- rendering

    def _render_cells(self, cells: Sequence[Text | str], style: Style | None = None) -> list[Segment]:
        console = self.app.console
        segments: list[Segment] = []
        sep = Segment(" ", style)
        for n, (column, width) in enumerate(zip(self._columns, self._widths, strict=True)):
            if n:
                segments.append(sep)
            value = cells[n] if n < len(cells) else ""
            if isinstance(value, str) and style is None:
                segments.append(Segment(_fitted_plain(
                    self._text_filter(value) if self._text_filter is not None else value, width, column.align)))
                continue
            if isinstance(value, Text):
                cell = value.copy()
            else:
                cell = Text(self._text_filter(value) if self._text_filter is not None else value)
            cell.no_wrap = True
            cell.end = ""
            if style is not None:
                cell.stylize(style)
            cell.truncate(width, overflow="ellipsis")
            pad = width - cell.cell_len
            if pad > 0:
                if column.align == "right":
                    cell.pad_left(pad)
                else:
                    cell.pad_right(pad)
            segments.extend(cell.render(console, end=""))
        return segments

    def _header_segments(self) -> list[Segment]:
        sorted_style = self.get_component_rich_style("virtual-table--header-sorted", partial=True)
        cells: list[Text] = []
        for column in self._columns:
            label = column.label
            style = Style()
            if column.key == self._sort_column:
                label = f"{label} {'▼' if self._sort_reverse else '▲'}"
                style = sorted_style
            cells.append(Text(label, style=style))
        return self._render_cells(cells, None)

    def render_lines(self, crop: Region) -> list[Strip]:
        # `rich_style` walks the ancestors' styles on every call: once per batch of lines painted,
        # not once per line (a filter keystroke repaints every visible line)
        self._paint_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._paint_style = None

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        if width != self._layout_width:
            # a scrollbar came or went without a resize: lay the columns out again
            self._update_virtual_size()
        scroll_x, scroll_y = self.scroll_offset
        base = self._paint_style if self._paint_style is not None else self.rich_style
        if y == 0:
            header_style = self.get_component_rich_style("virtual-table--header")
            strip = Strip(self._header_segments()).crop(scroll_x, scroll_x + width)
            return strip.adjust_cell_length(width, base + header_style).apply_style(base + header_style)
        index = y - 1 + scroll_y
        if not self._view:
            if y == 2:
                text = Text(f"  {self.placeholder}", style=self.get_component_rich_style("virtual-table--placeholder"))
                line = list(text.render(self.app.console, end=""))
                return Strip(line).crop(0, width).adjust_cell_length(width, base).apply_style(base)
            return Strip.blank(width, base)
        if index >= len(self._view):
            return Strip.blank(width, base)
        row = self._view[index]
        if not self.rows_painted:
            self._first_row_painted()
        cache_key = (self._generation, row.key, self._widths)
        segments = self._row_cache.get(cache_key)
        if segments is None:
            segments = self._render_cells(row.cells)
            self._row_cache[cache_key] = segments
        strip = Strip(segments).crop(scroll_x, scroll_x + width).adjust_cell_length(width)
        if index == self._cursor:
            cursor_style = self.get_component_rich_style("virtual-table--cursor")
            strip = Strip(Segment.apply_style(strip, None, cursor_style))
        return strip.apply_style(base)

    def call_after_rows_painted(self, callback: Callable[[], object]) -> None:
        """Call `callback` once a frame has painted a row of data (at once after the next refresh
        if one already has). After `set_rows` the rows reach the terminal only in a later frame: a
        callback after the next refresh alone may run before it, when the screen had nothing to
        repaint yet (each widget asks for its repaint from its own message queue)."""
        if self.rows_painted:
            self.call_after_refresh(callback)
        else:
            self._painted_waiters.append(callback)

    def _first_row_painted(self) -> None:
        self.rows_painted = True
        waiters, self._painted_waiters = self._painted_waiters, []
        for callback in waiters:
            self.call_after_refresh(callback)  # once this frame is on the terminal

    def watch_placeholder(self) -> None:
        if not self._view:
            self.refresh()

    # ----------------------------------------------------------------- input

    def action_cursor_up(self) -> None:
        self._set_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self._set_cursor(self._cursor + 1)

    def action_page_up(self) -> None:
        self._set_cursor(self._cursor - self._page_rows)

    def action_page_down(self) -> None:
        self._set_cursor(self._cursor + self._page_rows)

    def action_first(self) -> None:
        self._set_cursor(0)

    def action_last(self) -> None:
        self._set_cursor(len(self._view) - 1)

    def action_select(self) -> None:
        row = self.cursor_table_row
        if row is not None:
            self.post_message(self.RowSelected(self, row.key, row))

    def _column_at(self, x: int) -> str | None:
        position = 0
        for column, width in zip(self._columns, self._widths, strict=True):
            if position <= x < position + width + 1:
                return column.key
            position += width + 1
        return None

    async def _on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        if offset.y == 0:
            column = self._column_at(offset.x + round(self.scroll_x))
            if column is not None:
                self.sort_by(column)
            return
        index = offset.y - 1 + round(self.scroll_y)
        if 0 <= index < len(self._view):
            if index == self._cursor and event.chain >= 2:
                self.action_select()
            self._set_cursor(index)
