"""VirtualTable behaviour at 50,000 rows: filter, sort, cursor by key, data replacement, markup."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.segment import Segment
from rich.text import Text
from textual.app import App, ComposeResult

from widgets.field_input import FieldInput
from widgets.virtual_table import Column, TableRow, VirtualTable, _fitted_plain

N = 50_000
COLUMNS = [Column("id", "ID", 6, align="right"), Column("name", "NAME", 20, flex=True), Column("host", "HOST", 10)]


def make_rows(n: int, *, names: dict[int, str] | None = None) -> list[TableRow]:
    rows = []
    for i in range(n):
        name = (names or {}).get(i, f"vm-{i:05d}")
        host = f"host{i % 7}"
        rows.append(TableRow(i, (Text(str(i)), Text(name), Text(host)), f"{name} {host}".lower(), (i, name, host)))
    return rows


class TableApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[object] = []
        self.selected: list[object] = []

    def compose(self) -> ComposeResult:
        yield VirtualTable(COLUMNS, id="t")

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        self.highlighted.append(event.key)

    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        self.selected.append(event.key)


async def test_fifty_thousand_rows_filter_sort_and_cursor() -> None:
    app = TableApp()
    async with app.run_test(size=(80, 24)) as pilot:
        table = app.query_one(VirtualTable)
        table.set_rows(make_rows(N))
        table.focus()
        await pilot.pause()
        assert table.row_count == N and table.visible_count == N
        assert table.virtual_size.height == N + 1  # header + rows, yet only the visible ones render

        await pilot.press("down", "down", "down")
        assert table.cursor_key == 3

        # Filter narrows incrementally and the cursor stays on its row while it is visible.
        table.set_filter("vm-0000")
        assert table.visible_count == 10
        assert table.cursor_key == 3
        table.set_filter("vm-00003")
        assert [r.key for r in table.visible_rows] == [3]
        table.set_filter("vm-000")  # widening re-filters from the full data
        assert table.visible_count == 100 and table.cursor_key == 3
        table.set_filter("host3 vm-0001")  # every term must match
        assert {r.key for r in table.visible_rows} == {10, 17}
        assert table.cursor_key in (10, 17)  # row 3 is filtered out: the cursor is on a visible row
        table.set_filter("")
        assert table.visible_count == N and table.cursor_key == 3  # ... and returns when it shows
        await pilot.press(*["down"] * 7)
        assert table.cursor_key == 10

        # Sort descending by id: the cursor follows row 10 to its new index.
        table.sort_by("id", reverse=True)
        assert table.visible_rows[0].key == N - 1
        assert table.cursor_key == 10 and table.cursor_row == N - 11
        table.sort_by("id")  # toggles back to ascending
        assert table.sort_reverse is False and table.visible_rows[0].key == 0

        # Replacing the data keeps the cursor on the same key.
        table.set_rows(list(reversed(make_rows(N))))
        assert table.cursor_key == 10
        # The cursor's object disappears: the cursor stays at the same position.
        row_before = table.cursor_row
        table.set_rows([r for r in make_rows(N) if r.key != 10])
        assert table.cursor_key != 10 and table.cursor_row == row_before

        await pilot.press("end")
        assert table.cursor_row == table.visible_count - 1
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == [table.cursor_key]
        assert app.highlighted[-1] == table.cursor_key


async def test_header_click_sorts_and_markup_is_shown_as_is() -> None:
    app = TableApp()
    async with app.run_test(size=(80, 10)) as pilot:
        table = app.query_one(VirtualTable)
        table.set_rows(make_rows(5, names={2: "a[/]b", 3: "[bold]x[/bold]"}))
        await pilot.pause()
        lines = [table.render_line(y).text for y in range(7)]
        assert any("a[/]b" in line for line in lines)
        assert any("[bold]x[/bold]" in line for line in lines)
        assert await pilot.click(VirtualTable, offset=(10, 0)), "the click on the NAME header missed"
        await pilot.pause()
        assert table.sort_column == "name"
        assert "NAME ▲" in table.render_line(0).text


async def test_empty_view_shows_placeholder() -> None:
    app = TableApp()
    async with app.run_test(size=(60, 8)) as pilot:
        table = app.query_one(VirtualTable)
        table.placeholder = "Nothing here"
        table.set_rows([])
        await pilot.pause()
        assert "Nothing here" in table.render_line(2).text
        assert table.cursor_key is None and table.cursor_table_row is None


async def test_setting_the_rows_shown_already_changes_nothing() -> None:
    """The same row objects again (a list read in one page: its first page, then the whole) keep
    the table as it is, cached lines included; a list that differs in one row replaces them."""
    app = TableApp()
    async with app.run_test(size=(60, 8)) as pilot:
        table = app.query_one(VirtualTable)
        rows = make_rows(5)
        table.set_rows(rows)
        await pilot.pause()
        generation = table._generation
        table.set_rows(list(rows))
        assert table._generation == generation and table._row_cache
        changed = [*rows[:4], make_rows(5, names={4: "renamed"})[4]]
        table.set_rows(changed)
        assert table._generation == generation + 1
        await pilot.pause()
        assert "renamed" in "".join(table.render_line(y).text for y in range(1, 7))


class FilterApp(App[None]):
    def compose(self) -> ComposeResult:
        yield FieldInput(id="f")
        yield VirtualTable(COLUMNS, id="t")

    def on_input_changed(self, event: FieldInput.Changed) -> None:
        self.query_one(VirtualTable).set_filter(event.value)


async def test_filter_keystrokes_repaint_without_laying_out_the_screen() -> None:
    """Typing into the filter changes the field's text width and the table's row count; neither
    asks for a layout of the screen (`_layout_updates` counts a widget's requests), which with
    50,000 rows was a third of a keystroke's CPU. The scrollbar still follows the row count, the
    scroll offset stays within the rows left, and a scrollbar that goes still lays out."""
    app = FilterApp()
    async with app.run_test(size=(80, 24)) as pilot:
        table, field = app.query_one(VirtualTable), app.query_one(FieldInput)
        table.set_rows(make_rows(1_000))
        await pilot.pause()
        table.scroll_to(y=900, animate=False, immediate=True)
        field.focus()
        await pilot.pause()
        layouts = (table._layout_updates, field._layout_updates)
        await pilot.press("4")
        shown = table.visible_count
        assert table.filter_text == "4" and 100 < shown < 1_000
        assert table.virtual_size.height == shown + 1
        assert table.show_vertical_scrollbar and table.vertical_scrollbar.window_virtual_size == shown + 1
        assert table.scroll_y <= table.max_scroll_y
        assert (table._layout_updates, field._layout_updates) == layouts
        await pilot.press("2", "1")  # vm-00421 alone: no scrollbar any more, which lays the table out
        await pilot.pause()
        assert table.visible_count == 1 and not table.show_vertical_scrollbar
        assert table._layout_updates > layouts[0]


@given(st.text(max_size=40), st.integers(min_value=0, max_value=30), st.sampled_from(["left", "right"]))
def test_a_plain_cell_renders_as_the_text_it_stands_for(value: str, width: int, align: str) -> None:
    """`_fitted_plain` (a plain string cell, painted without a `Text`) gives the one segment that
    `Text(value)` truncated with an ellipsis and padded to the column's width renders: the same
    characters, control codes dropped, wide characters counted as two cells."""
    cell = Text(value)
    cell.truncate(width, overflow="ellipsis")
    pad = width - cell.cell_len
    if pad > 0:
        if align == "right":
            cell.pad_left(pad)
        else:
            cell.pad_right(pad)
    assert [Segment(_fitted_plain(value, width, align))] == list(cell.render(Console(), end=""))
