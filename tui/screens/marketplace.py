"""The marketplace screen: every appliance of the marketplaces, what the site has, and the actions.

The list (a `VirtualTable`) shows each record of every marketplace the cloud has registered or
the settings name, with its install status read from the images' marketplace attributes (glyph
and word: `- not downloaded`, `= up to date`, `^ update available`, `< older build`, `? untagged
image found`; a service's parts follow the service).
`/` filters live over name, version, publisher, type, status and tags; shift+letter sorts. The
detail pane shows the record: the version split into software version and build stamp (a
version that breaks `vX.X.X-YYYYMMDD-HHMM` is flagged with the reason), publisher, type, roles or
disks, platform versions, the download address, the images found, and the Markdown description
rendered.

Actions: `d` downloads the appliance (operation 2, `market_download`), `a` attaches its
attributes to images (operation 1, `market_attributes`), `u` opens the upgrade plan
(`market_upgrades`), `r` reloads. In read-only mode the download is hidden and the other two
open without their mutating buttons. A marketplace that cannot be read is named in the status
line and never hides the others.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar, Iterable, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, Markdown, Static

from tui.domain.printable import escape_controls as shown
from tui.errors import SiteError
from tui.procedures.market.marketplaces import CatalogEntry, MarketCatalog, load_catalog
from tui.screens.base import ReloadingScreen
from tui.screens.table_filter import TableFilter
from widgets.field_input import FieldInput
from widgets.state_cell import StateLook, StatePalette
from widgets.virtual_table import Column, TableRow, VirtualTable

#: install states: colour and glyph (never colour alone)
MARKET_STATE_PALETTE = StatePalette(
    {
        "not downloaded": StateLook("dim", "-"),
        "up to date": StateLook("green", "="),
        "update available": StateLook("bold yellow", "^"),
        "untagged image found": StateLook("magenta", "?"),
        "older build": StateLook("dim", "<"),
        "newer build listed": StateLook("yellow", "~"),
    },
    default=StateLook("", " "),
)

COLUMNS: tuple[Column, ...] = (
    Column("name", "NAME", 18, flex=True),
    Column("version", "VERSION", 21),
    Column("type", "TYPE", 7),
    Column("status", "STATUS", 22),
    Column("market", "MARKETPLACE", 12, flex=True),
)

TYPE_LABELS = {"IMAGE": "image", "VMTEMPLATE": "VM tmpl", "SERVICE_TEMPLATE": "service"}
NONCONFORMING_GLYPH = "!"
#: seconds the cursor must rest on a row before the detail pane follows it
DETAIL_DEBOUNCE = 0.1


def entry_rows(entries: Sequence[CatalogEntry]) -> list[TableRow]:
    """Table rows: plain text cells (remote text never parsed as markup), search text, sort values."""
    rows: list[TableRow] = []
    state_texts: dict[str, Text] = {}
    for entry in entries:
        record = entry.record
        version = record.parsed_version
        state = entry.state.value
        status = state_texts.get(state)
        if status is None:
            status = state_texts[state] = MARKET_STATE_PALETTE.text(state)
        version_cell: Text | str = shown(version.label)
        if not version.conforming:
            version_cell = Text.assemble((f"{NONCONFORMING_GLYPH} ", "yellow"), (shown(version.label), "yellow"))
        type_label = TYPE_LABELS.get(record.type.value, record.type.value)
        search = " ".join((record.name, record.version, record.publisher, record.type.value, type_label, state,
                           record.id, " ".join(record.tags))).lower()
        rows.append(TableRow(
            entry.key,
            (record.name, version_cell, type_label, status, entry.source.name),
            search,
            (record.name.lower(), (version.semantic_key(), version.raw), type_label, state,
             entry.source.name.lower()),
        ))
    return rows


def _pairs(pairs: Iterable[tuple[str, str]], flagged: frozenset[str] = frozenset()) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in pairs:
        table.add_row(Text(key), Text(shown(value), style="yellow" if key in flagged else ""))
    return table


def detail_renderable(entry: CatalogEntry) -> RenderableType:
    """The detail pane's head: title, state and every field (plain `Text`, never markup)."""
    record = entry.record
    version = record.parsed_version
    title = Text.assemble((shown(record.name), "bold"), "  ", MARKET_STATE_PALETTE.text(entry.state.value))
    parts: list[RenderableType] = [title]
    if not version.conforming:
        parts.append(Text(f"{NONCONFORMING_GLYPH} non-conforming version: {shown(version.reason)}", style="yellow"))
    if entry.status.label != entry.state.value:
        parts.append(Text(shown(entry.status.label), style="dim"))
    # the name and the status are in the title, the version problem right under it
    rows = [(k, v) for k, v in entry.detail_rows() if k not in ("name", "status", "version problem")]
    parts.append(_pairs(rows, frozenset({"version problem", "record warning"})))
    if record.short_description:
        parts.append(Text(f"\n{shown(record.short_description)}", style="italic"))
    return Group(*parts)


class MarketplaceScreen(TableFilter, ReloadingScreen):
    """Appliances of every marketplace with install status; detail, download, attributes, plan."""

    SCREEN_NAME = "market"
    FILTER_ID = "mk-filter"
    TITLE = "Marketplace"
    HELP_GROUP = "Marketplace"
    AUTO_FOCUS = "#mk-table"
    CSS_PATH = "marketplace.tcss"
    #: below 120 columns the detail pane goes under the list, so the list keeps its STATUS column
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    MUTATING_ACTIONS = frozenset({"download"})

    LOAD_GROUP = "market-list"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", key_display="/", id="market.filter"),
        Binding("escape", "clear_filter", "Clear filter", id="market.clear-filter"),
        Binding("r", "refresh", "Reload", id="market.refresh"),
        Binding("d", "download", "Download", id="market.download"),
        Binding("a", "attributes", "Attributes", id="market.attributes"),
        Binding("u", "upgrades", "Upgrade plan", id="market.upgrades"),
        Binding("N", "sort('name')", "Sort by name", show=False, id="market.sort-name"),
        Binding("V", "sort('version')", "Sort by version", show=False, id="market.sort-version"),
        Binding("T", "sort('type')", "Sort by type", show=False, id="market.sort-type"),
        Binding("S", "sort('status')", "Sort by status", show=False, id="market.sort-status"),
        Binding("M", "sort('market')", "Sort by marketplace", show=False, id="market.sort-market"),
    ]

    @dataclass
    class Loaded(Message):
        catalog: MarketCatalog
        rows: list[TableRow]

    def __init__(self) -> None:
        super().__init__(id="screen-market")
        self.catalog: MarketCatalog | None = None
        self.entries: dict[str, CatalogEntry] = {}
        #: perf_counter marks of the last load (fetched, rows built, rows shown), for bench/
        self.timings: dict[str, float] = {}
        #: key of the record the detail pane shows
        self.shown_key: str | None = None
        self._detail_timer: Timer | None = None
        self._pending_key: str | None = None
        #: `site.changes` when the shown statuses were read (they are read again when it moves)
        self._changes_seen = -1

    # ------------------------------------------------------------------ layout

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="mk-filter-bar"):
            yield FieldInput(placeholder="filter: name, version, publisher, type, status or tag (esc clears)",
                        id="mk-filter")
        with Horizontal(id="mk-main"):
            table = VirtualTable(COLUMNS, id="mk-table", text_filter=shown)
            table.placeholder = "Loading the marketplaces…"
            yield table
            with VerticalScroll(id="mk-detail"):
                yield Static(Text("Move the cursor to an appliance to see it in full.", style="dim"),
                             id="mk-detail-head")
                yield Markdown("", id="mk-detail-description")
        yield Label("", id="mk-status")

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#mk-table", VirtualTable)

    def on_mount(self) -> None:
        self.reload()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        # back from a dialog or another screen that changed the cloud (a download, attributes,
        # an upgrade, a component's appliances): the install statuses are stale, read them again
        if self.catalog is not None and self.site.changes != self._changes_seen:
            self.reload()

    # ------------------------------------------------------------------ loading

    def load_started(self) -> None:
        self._changes_seen = self.site.changes

    @work(exclusive=True, group="market-list", exit_on_error=False)
    async def start_load(self) -> None:
        """Read every marketplace."""
        started = time.perf_counter()
        try:
            catalog = await load_catalog(self.site)
        except SiteError as error:
            self.post_message(self.Failed(error))
            return
        fetched = time.perf_counter()
        rows = entry_rows(catalog.entries)
        self.timings = {"fetch_start": started, "fetch_end": fetched, "rows_built": time.perf_counter()}
        self.post_message(self.Loaded(catalog, rows))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        self.show_catalog(message.catalog, message.rows)

    def show_catalog(self, catalog: MarketCatalog, rows: list[TableRow] | None = None) -> None:
        """Show a catalog (rows built here when not given); the cursor stays on the same record."""
        self.load_done()
        self.catalog = catalog
        self.entries = {entry.key: entry for entry in catalog.entries}
        table = self.table
        table.placeholder = ("No appliance matches the filter (esc clears it)" if catalog.entries else
                             "No appliance: see the status line")
        table.set_rows(rows if rows is not None else entry_rows(catalog.entries))
        self.timings["rows_shown"] = time.perf_counter()
        self.shell.mark_refreshed()
        self._paint_status()
        key = table.cursor_key
        self._pending_key = str(key) if key is not None else None
        self._show_detail(self._pending_key, force=True)
        if catalog.failures:
            first = catalog.failures[0]
            self.shell.toast(f"{first.source.name}: {first.title}", title="Marketplace unreadable",
                             severity="warning")
        if self.site.changes != self._changes_seen:  # the cloud changed while this load read it
            self.reload()

    def load_failed(self, error: SiteError) -> None:
        if self.catalog is None:
            self.table.placeholder = f"✘ {error.title}: r retries"
            self.table.refresh()
        self.shell.report_error(error)

    def _paint_status(self) -> None:
        status = self.query_one("#mk-status", Label)
        table = self.table
        parts: list[str] = []
        catalog = self.catalog
        if catalog is not None:
            total, shown = table.row_count, table.visible_count
            parts.append(f"{total:,} appliances" if shown == total else f"{shown:,} of {total:,} appliances")
            readable = len(catalog.sources) - len(catalog.failures)
            parts.append(f"{readable} of {len(catalog.sources)} marketplaces" if catalog.sources else
                         "no marketplace registered or configured")
            parts.append(f"platform {catalog.platform_version}")
            if catalog.hidden_other_versions:
                parts.append(f"{catalog.hidden_other_versions} for other versions hidden")
            for name, listed in catalog.other_series:
                parts.append(f"{name} lists only {listed}")
            for failure in catalog.failures:
                parts.append(f"✘ {failure.source.name}: {failure.title}")
            if catalog.record_errors:
                parts.append(f"{len(catalog.record_errors)} unreadable record(s)")
        if table.filter_text:
            parts.append(f"filter “{table.filter_text}”")
        if table.sort_column:
            label = next(c.label for c in COLUMNS if c.key == table.sort_column)
            parts.append(f"sorted by {label.lower()} {'▼' if table.sort_reverse else '▲'}")
        if self.reloading:
            parts.append("loading…")
        if self.last_error is not None:
            parts.insert(0, f"✘ {self.last_error.title}; r retries")
        # one line of fixed height: repaint it without a layout pass of the whole screen
        status.update(Content(" · ".join(parts)), layout=False)
        status.set_class(self.last_error is not None or bool(catalog and catalog.failures), "-error")

    # ------------------------------------------------------------------ detail

    @property
    def current(self) -> CatalogEntry | None:
        key = self.table.cursor_key
        return self.entries.get(str(key)) if key is not None else None

    @on(VirtualTable.RowHighlighted, "#mk-table")
    def _highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        # Rendering a Markdown description costs more than a keystroke: while the filter is
        # being typed the detail waits (it follows on enter or when the filter loses focus), and
        # scrolling is debounced.
        if self._detail_timer is not None:
            self._detail_timer.stop()
            self._detail_timer = None
        key = str(event.key) if event.key is not None else None
        self._pending_key = key
        if self.query_one("#mk-filter", Input).has_focus:
            return
        self._detail_timer = self.set_timer(DETAIL_DEBOUNCE, self._show_pending, name="market-detail")

    def _show_pending(self) -> None:
        self._detail_timer = None
        self._show_detail(self._pending_key)

    @on(Input.Blurred, "#mk-filter")
    def _filter_blurred(self) -> None:
        self._show_pending()

    def _show_detail(self, key: str | None, force: bool = False) -> None:
        if key == self.shown_key and not force:
            return
        self.shown_key = key
        head = self.query_one("#mk-detail-head", Static)
        description = self.query_one("#mk-detail-description", Markdown)
        entry = self.entries.get(key) if key is not None else None
        if entry is None:
            head.update(Text("Move the cursor to an appliance to see it in full.", style="dim"))
            description.update("")
            return
        head.update(detail_renderable(entry))
        # Markdown, not Rich markup; its control characters made visible like everywhere else
        description.update(shown(entry.record.description) or "*No description.*")

    # ------------------------------------------------------------------ actions

    def action_refresh(self) -> None:
        self.reload()

    def action_sort(self, column: str) -> None:
        self.table.sort_by(column)

    @on(VirtualTable.SortChanged, "#mk-table")
    def _sort_changed(self) -> None:
        self._paint_status()

    def _need_entry(self) -> CatalogEntry | None:
        entry = self.current
        if entry is None:
            self.shell.toast("Move the cursor to an appliance first", severity="warning")
        return entry

    def action_download(self) -> None:
        entry = self._need_entry()
        if entry is None:
            return
        from tui.screens.market_download import DownloadModal

        self.app.push_screen(DownloadModal(entry), self._after_change)

    def action_attributes(self) -> None:
        entry = self._need_entry()
        if entry is None:
            return
        from tui.screens.market_attributes import AttributesModal

        self.app.push_screen(AttributesModal(entry, read_only=self.read_only), self._after_change)

    def action_upgrades(self) -> None:
        if self.catalog is None:
            self.shell.toast("The marketplaces are still loading", severity="warning")
            return
        from tui.screens.market_upgrades import UpgradePlanModal

        self.app.push_screen(UpgradePlanModal(self.catalog, read_only=self.read_only), self._after_change)

    def _after_change(self, changed: bool | None) -> None:
        if changed:
            self.reload()

    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("Reload marketplaces", "Read every marketplace again (r)", self.action_refresh)
        yield SystemCommand("Filter appliances", "Filter by name, version, status... (/)", self.action_filter)
        yield SystemCommand("Upgrade plan", "Installed appliances with newer versions (u)", self.action_upgrades)
        yield SystemCommand("Attach attributes", "Tag images with the appliance's version (a)",
                            self.action_attributes)
        if not self.read_only:
            yield SystemCommand("Download appliance", "Export it into an IMAGE datastore (d)", self.action_download)
        for column in COLUMNS:
            yield SystemCommand(f"Sort appliances by {column.label.lower()}", "Again to reverse",
                                lambda key=column.key: self.action_sort(key))
