"""The VM list: every VM of the site with its state, host, addresses, service and role.

The list is a `VirtualTable` (only visible rows are painted, so 50,000 VMs stay smooth). `/`
filters live over name, IPs, host and state; `esc` clears. Shift+letter (or a header click)
sorts. Moving the cursor loads the VM's full record (debounced) into the detail panel. The list
refreshes itself every `refresh_interval` seconds; a refresh never overlaps another, pauses while
a modal is open or another screen is shown, and keeps the cursor on the same VM. When the site
cannot be reached the screen says so (and keeps the last data it had); it recovers on its own
when the site answers again.
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Sequence

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Button, Label, Static
from textual.worker import Worker

from tui.domain.attributes import Attributes
from tui.domain.printable import escape_controls
from tui.domain.vms import VmSummary
from tui.errors import SiteError
from tui.procedures.inventory import list_vms, vm_detail
from tui.screens.base import SiteScreen
from tui.screens.table_filter import TableFilter
from widgets.state_cell import StateLook, StatePalette
from widgets.virtual_table import Column, TableRow, VirtualTable

if TYPE_CHECKING:  # pragma: no cover
    # the detail's models are imported with its first read (tui.adapters.cloud_parse), after the
    # list's first rows (issue 24)
    from tui.domain.vm_detail import VmDetail

#: look of a VM by its coarse state class (`VmSummary.kind`); the word is the CLI short name
VM_STATE_PALETTE = StatePalette(
    {
        "running": StateLook("green", "●"),
        "transient": StateLook("yellow", "◐"),
        "off": StateLook("blue", "○"),
        "failed": StateLook("bold red", "✘"),
        "done": StateLook("dim", "✔"),
        "unknown": StateLook("magenta", "?"),
    },
    default=StateLook("magenta", "?"),
)

COLUMNS: tuple[Column, ...] = (
    Column("id", "ID", 6, align="right"),
    Column("name", "NAME", 22, flex=True),
    Column("owner", "OWNER", 10),
    Column("state", "STATE", 7),
    Column("host", "HOST", 16),
    Column("ips", "IPS", 15, flex=True),
    Column("cpu", "CPU", 4, align="right"),
    Column("memory", "MEM", 7, align="right"),
    Column("service", "SERVICE", 9, align="right"),
    Column("role", "ROLE", 12),
)

#: seconds the cursor must rest on a VM before its full record is fetched
DETAIL_DEBOUNCE = 0.2
#: the young generation's collection threshold during a refresh (see `_refresh_worker`)
REFRESH_GC_YOUNG = 100_000


def format_memory(mb: int) -> str:
    if mb >= 1024 and mb % 1024 == 0:
        return f"{mb // 1024}G"
    if mb >= 1024:
        return f"{mb / 1024:.1f}G"
    return f"{mb}M"


def format_cpu(cpu: float) -> str:
    return f"{cpu:g}"


def vm_rows(vms: Sequence[VmSummary]) -> list[TableRow]:
    """Table rows for VMs: plain string cells (cheap), one shared state `Text` per state, a search
    string over name, IPs, host and state, and sort values per column. What depends only on the
    state codes (the state cell, the state words of the search string), the CPU or the memory is
    made once per distinct value: a site's VMs share a few of each (about 40% of the time this
    took at 10,000 VMs)."""
    looks: dict[tuple[int, int], tuple[Text, str]] = {}
    cpus: dict[float, str] = {}
    memories: dict[int, str] = {}
    rows: list[TableRow] = []
    append = rows.append
    for vm in vms:
        look = looks.get((vm.state, vm.lcm_state))
        if look is None:  # the state name, long name and kind are functions of the two codes
            look = looks[(vm.state, vm.lcm_state)] = (VM_STATE_PALETTE.text(vm.state_name, vm.kind),
                                                      f" {vm.state_name} {vm.status}")
        state, state_words = look
        cpu = cpus.get(vm.cpu)
        if cpu is None:
            cpu = cpus[vm.cpu] = format_cpu(vm.cpu)
        memory = memories.get(vm.memory_mb)
        if memory is None:
            memory = memories[vm.memory_mb] = format_memory(vm.memory_mb)
        ips = ",".join(vm.ips)
        name, service_id = vm.name, vm.service_id
        append(TableRow(
            vm.id,
            (str(vm.id), name, vm.owner, state, vm.host, ips, cpu, memory,
             "" if service_id is None else str(service_id), vm.role_name),
            f"{name} {ips} {vm.host}{state_words}".lower(),
            (vm.id, name.lower(), vm.owner, vm.state_name, vm.host, vm.ips, vm.cpu, vm.memory_mb,
             -1 if service_id is None else service_id, vm.role_name),
        ))
    return rows


#: words in an attribute name that mark its value as a secret (masked in the detail panel)
SECRET_WORDS: tuple[str, ...] = ("PASSWORD", "PASSWD", "TOKEN", "SECRET", "PRIVATE", "CREDENTIAL")
MASK = "••••••"


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def masked(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Attribute pairs with secret values masked (a VM's context carries generated passwords)."""
    return [(k, MASK if v and is_secret_name(k) else v) for k, v in pairs]


def attribute_pairs(attributes: Attributes) -> list[tuple[str, str]]:
    """Every attribute as (name, shown value); vectors read `SUB=value, ...`; secrets masked."""
    pairs: list[tuple[str, str]] = []
    for name, value in attributes:
        if isinstance(value, str):
            pairs.append((name, MASK if value and is_secret_name(name) else value))
        else:
            inner = masked(value)
            pairs.append((name, "[ " + ", ".join(f"{k}={v}" for k, v in inner) + " ]"))
    return pairs


def _section(title: str) -> Text:
    return Text(f"\n{title}", style="bold underline")


def _pairs(pairs: Iterable[tuple[str, str]]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in pairs:
        table.add_row(Text(key), Text(value))
    return table


def detail_renderable(detail: VmDetail) -> RenderableType:
    """The detail panel's content for one VM (every remote string as plain `Text`)."""
    vm = detail.summary
    parts: list[RenderableType] = []
    title = Text.assemble((f"VM {vm.id} ", "bold"), (vm.name, "bold"), "  ",
                          VM_STATE_PALETTE.text(vm.state_name, vm.kind), (f"  {vm.status}", "dim"))
    parts.append(title)
    parts.append(_pairs([
        ("Owner", f"{vm.owner} / {vm.group}"),
        ("Host", vm.host or "-"),
        ("CPU model", detail.cpu_model or "(host default)"),
        ("CPU / VCPU / memory", f"{format_cpu(vm.cpu)} / {vm.vcpu} / {format_memory(vm.memory_mb)}"),
        ("Service / role", f"{'-' if vm.service_id is None else vm.service_id} / {vm.role_name or '-'}"),
        ("Deploy id", detail.deploy_id or "-"),
        ("Permissions", detail.permissions.octal),
    ]))
    parts.append(_section(f"NICs ({len(detail.nics)})"))
    if detail.nics:
        nics = Table("NIC", "NETWORK", "IP", "MAC", "BRIDGE", box=None, padding=(0, 1), header_style="bold")
        for nic in detail.nics:
            nics.add_row(Text(str(nic.nic_id)), Text(nic.network), Text(nic.ip or nic.ip6 or "-"), Text(nic.mac),
                         Text(nic.bridge))
        parts.append(nics)
    parts.append(_section(f"Disks ({len(detail.disks)})"))
    if detail.disks:
        disks = Table("DISK", "IMAGE", "TARGET", "SIZE", "TYPE", box=None, padding=(0, 1), header_style="bold")
        for disk in detail.disks:
            size = "-" if disk.size_mb is None else format_memory(disk.size_mb)
            disks.add_row(Text(str(disk.disk_id)), Text(disk.image or "-"), Text(disk.target), Text(size),
                          Text(disk.type))
        parts.append(disks)
    parts.append(_section("Context"))
    parts.append(_pairs(masked(detail.context)) if detail.context else Text("(none)", style="dim"))
    parts.append(_section("User template"))
    user_pairs = attribute_pairs(detail.user_template)
    parts.append(_pairs(user_pairs) if user_pairs else Text("(empty)", style="dim"))
    parts.append(_section(f"History ({len(detail.history)})"))
    if detail.history:
        history = Table("SEQ", "HOST", "DS", "ACTION", box=None, padding=(0, 1), header_style="bold")
        for record in detail.history:
            history.add_row(Text(str(record.seq)), Text(record.hostname), Text(str(record.datastore_id)),
                            Text(str(record.action)))
        parts.append(history)
    return Group(*parts)


class VmListScreen(TableFilter, SiteScreen):
    """Every VM of the site; `/` filter, shift+letter sort, detail panel, auto-refresh."""

    SCREEN_NAME = "vms"
    FILTER_ID = "vm-filter"
    FILTER_PLACEHOLDER = "filter: name, IP, host or state (esc clears)"
    TITLE = "Virtual machines"
    HELP_GROUP = "Virtual machines"
    AUTO_FOCUS = "#vm-table"
    #: the first screen: shown at start, its first refresh waits for the start-up check
    SHOWN_WHILE_CONNECTING = True

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter", key_display="/", id="vms.filter"),
        Binding("escape", "clear_filter", "Clear filter", id="vms.clear-filter"),
        Binding("r", "refresh", "Refresh", id="vms.refresh"),
        Binding("d", "toggle_detail", "Detail", id="vms.detail"),
        Binding("I", "sort('id')", "Sort by ID", show=False, id="vms.sort-id"),
        Binding("N", "sort('name')", "Sort by name", show=False, id="vms.sort-name"),
        Binding("O", "sort('owner')", "Sort by owner", show=False, id="vms.sort-owner"),
        Binding("S", "sort('state')", "Sort by state", show=False, id="vms.sort-state"),
        Binding("H", "sort('host')", "Sort by host", show=False, id="vms.sort-host"),
        Binding("P", "sort('ips')", "Sort by IPs", show=False, id="vms.sort-ips"),
        Binding("C", "sort('cpu')", "Sort by CPU", show=False, id="vms.sort-cpu"),
        Binding("M", "sort('memory')", "Sort by memory", show=False, id="vms.sort-memory"),
        Binding("V", "sort('service')", "Sort by service", show=False, id="vms.sort-service"),
        Binding("R", "sort('role')", "Sort by role", show=False, id="vms.sort-role"),
    ]

    # The messages are plain classes, not dataclasses: each dataclass costs ~1 ms of CPU to
    # create when the module is imported, on the console's start-up path (issue 24)
    class Loaded(Message):
        """A refresh finished: the VMs and their rows (built off the event loop); `partial`: only
        the first page of the first refresh, shown while the rest of the pool is read."""

        def __init__(self, vms: Sequence[VmSummary], rows: list[TableRow], fetched_at: float,
                     partial: bool = False) -> None:
            super().__init__()
            self.vms = vms
            self.rows = rows
            self.fetched_at = fetched_at
            self.partial = partial

    class Failed(Message):
        def __init__(self, error: SiteError) -> None:
            super().__init__()
            self.error = error

    class DetailLoaded(Message):
        def __init__(self, vm_id: int, detail: VmDetail) -> None:
            super().__init__()
            self.vm_id = vm_id
            self.detail = detail

    class DetailFailed(Message):
        def __init__(self, vm_id: int, error: SiteError) -> None:
            super().__init__()
            self.vm_id = vm_id
            self.error = error

    def __init__(self) -> None:
        super().__init__()
        self.vms: dict[int, VmSummary] = {}
        self.loaded_once = False
        self.refreshing = False
        self.refresh_count = 0
        self.last_error: SiteError | None = None
        #: perf_counter marks of the last refresh (fetch start/end, rows built, rows shown), for bench/
        self.timings: dict[str, float] = {}
        self._last_refresh_at = 0.0
        self._loaded_at = ""
        self._detail_timer: Timer | None = None
        self._detail_summary: VmSummary | None = None
        #: the VM whose detail was last requested (shown, or on its way)
        self._detail_requested: int | None = None
        #: the VM the detail panel shows (None: none yet)
        self.detail_vm_id: int | None = None
        self._detail_visible = True
        self._poll: Timer | None = None

    # ------------------------------------------------------------------ layout

    def compose_body(self) -> ComposeResult:
        yield Label("", id="vm-banner")
        # the filter field and the retry button are mounted on first use (`filter_field`,
        # `_show_message`): an Input and a Button with their styles are ~10 ms of the first frame
        yield Horizontal(id="vm-filter-bar")
        with Vertical(id="vm-main", classes="-detail"):
            table = VirtualTable(COLUMNS, id="vm-table", text_filter=escape_controls)
            table.placeholder = "Loading virtual machines…"
            yield table
            with VerticalScroll(id="vm-detail"):
                yield Static(Text("Move the cursor to a VM to see it in full.", style="dim"), id="vm-detail-body")
        with Vertical(id="vm-message"):
            with Vertical(id="vm-message-box"):
                yield Label("", id="vm-message-title")
                yield Static("", id="vm-message-detail")
        yield Label("", id="vm-status")

    @property
    def table(self) -> VirtualTable:
        return self.query_one("#vm-table", VirtualTable)

    def on_mount(self) -> None:
        interval = max(0.2, float(self.site.settings.refresh_interval))
        self._poll = self.set_interval(interval, self._tick, name="vm-list-poll")
        self.refresh_vms()

    # ------------------------------------------------------------------ refresh

    @property
    def paused(self) -> bool:
        """Polling waits while a modal is open or another screen is shown."""
        return not self.is_active

    def _tick(self) -> None:
        if self.paused or self.refreshing:
            return
        self.refresh_vms()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        interval = float(self.site.settings.refresh_interval)
        if self.loaded_once and not self.refreshing and time.monotonic() - self._last_refresh_at >= interval:
            self.refresh_vms()

    def refresh_vms(self) -> None:
        """Start one refresh unless one is running (refreshes never overlap)."""
        if self.refreshing:
            return
        self.refreshing = True
        self._paint_status()
        self._refresh_worker()

    @work(exclusive=True, group="vm-list", exit_on_error=False)
    async def _refresh_worker(self) -> None:
        await self.shell.wait_connected()
        # the young generation's collections are put off while the rows are built: a 10,000-VM
        # refresh ran 71 of them (and 6 of the middle one) over objects that hold no cycles and
        # that reference counting frees; 890-929 against 893-1,196 ms of CPU a refresh (6 each,
        # load 6-7, issue 24's ninth pass). Only the first threshold is put back: the others may
        # have been set meanwhile (tui.app.GC_THRESHOLDS)
        young = gc.get_threshold()[0]
        gc.set_threshold(max(young, REFRESH_GC_YOUNG), *gc.get_threshold()[1:])
        try:
            await self._read_and_build()
        finally:
            gc.set_threshold(young, *gc.get_threshold()[1:])

    async def _read_and_build(self) -> None:
        timings = self.timings = {"fetch_start": time.perf_counter()}
        first_load = not self.loaded_once
        loop = asyncio.get_running_loop()
        # each page's rows are built in a thread of their own while the next page is read (its
        # wait for the site's answer would leave the interpreter idle otherwise)
        pages: list[asyncio.Future[list[TableRow]]] = []
        taken = 0

        def page_read(read: Sequence[VmSummary]) -> None:
            nonlocal first_load, taken
            page = list(read[taken:])
            taken = len(read)
            if first_load:
                # the first refresh shows its first page at once (later refreshes keep the whole
                # list on screen until the new one is read: no list shrinking for a moment)
                first_load = False
                timings["first_page"] = time.perf_counter()
                rows = vm_rows(page)
                built: asyncio.Future[list[TableRow]] = loop.create_future()
                built.set_result(rows)
                pages.append(built)
                self.post_message(self.Loaded(page, rows, time.monotonic(), partial=True))
            else:
                pages.append(loop.run_in_executor(None, vm_rows, page))
        try:
            vms = await list_vms(self.site, on_page=page_read)
        except SiteError as error:
            self.post_message(self.Failed(error))
            return
        timings["fetch_end"] = time.perf_counter()
        if taken < len(vms):  # a read that did not report its pages
            pages.append(loop.run_in_executor(None, vm_rows, list(vms[taken:])))
        rows = [row for page_rows in await asyncio.gather(*pages) for row in page_rows]
        timings["rows_built"] = time.perf_counter()
        self.post_message(self.Loaded(vms, rows, time.monotonic()))

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        if worker.group == "vm-list":
            self.refreshing = False
            self._paint_status()
        super().worker_failed(worker, error)

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        if message.partial:
            self._first_page(message)
            return
        self.refreshing = False
        self.refresh_count += 1
        self._last_refresh_at = message.fetched_at
        self._loaded_at = self.shell.now().strftime("%H:%M:%S")
        self.last_error = None
        self.loaded_once = True
        self.vms = {vm.id: vm for vm in message.vms}
        table = self.table
        table.placeholder = "No VM matches the filter (esc clears it)"
        table.set_rows(message.rows)
        self.timings["rows_shown"] = time.perf_counter()
        if message.rows:
            self.shell.rows_shown(self.table)
        self.shell.mark_refreshed()
        if not message.vms:
            self._show_message("No virtual machines", "This site has no VM yet (or none your user may see). "
                               "The list refreshes on its own.", error=False)
        else:
            self._hide_message()
        self._paint_status()
        # after the rows are painted: the detail's first load (one more request and its parse)
        # must not hold up the first frame of the list
        self.call_after_refresh(self._detail_follow_refresh)

    def _first_page(self, message: Loaded) -> None:
        """The first page of the first refresh: its rows at once, the status saying more come."""
        if self.loaded_once or not message.rows:
            return
        self.vms = {vm.id: vm for vm in message.vms}
        self.table.set_rows(message.rows)
        self.shell.rows_shown(self.table)
        self.call_after_refresh(self._first_page_painted)
        self._hide_message()
        self._paint_status()

    def _first_page_painted(self) -> None:
        self.timings.setdefault("first_page_painted", time.perf_counter())

    @on(Failed)
    def _failed(self, message: Failed) -> None:
        self.refreshing = False
        self.last_error = message.error
        self.shell.mark_unreachable(message.error)
        if not self.loaded_once:
            self._show_message(message.error.title, message.error.detail, error=True)
        self._paint_status()

    def _show_message(self, title: str, detail: str, *, error: bool) -> None:
        box = self.query_one("#vm-message")
        self.query_one("#vm-message-title", Label).update(Content(title))
        self.query_one("#vm-message-detail", Static).update(Content(detail))
        retry = self.query("#vm-retry")
        if retry:
            retry.first(Button).display = error
        elif error:
            self.query_one("#vm-message-box").mount(Button("Retry (r)", id="vm-retry", variant="primary"))
        box.set_class(True, "-active")
        box.set_class(error, "-error")
        self.query_one("#vm-main").display = False

    def _hide_message(self) -> None:
        self.query_one("#vm-message").set_class(False, "-active")
        main = self.query_one("#vm-main")
        if not main.display:  # setting it as it is asks for a layout of the screen all the same
            main.display = True

    def _paint_status(self) -> None:
        status = self.query_one("#vm-status", Label)
        table = self.table
        parts: list[str] = []
        if self.loaded_once:
            total, shown = table.row_count, table.visible_count
            parts.append(f"{total:,} VMs" if shown == total else f"{shown:,} of {total:,} VMs")
        elif table.row_count:
            parts.append(f"the first {table.row_count:,} VMs; reading the rest")
        if table.filter_text:
            parts.append(f"filter “{table.filter_text}”")
        if table.sort_column:
            label = next(c.label for c in COLUMNS if c.key == table.sort_column)
            parts.append(f"sorted by {label.lower()} {'▼' if table.sort_reverse else '▲'}")
        if self.refreshing:
            parts.append("refreshing…")
        # one fixed-size line (app.tcss): no layout pass, which would repaint the whole screen on
        # every refresh and filter keystroke
        status.update(Content(" · ".join(parts)), layout=False)
        banner = self.query_one("#vm-banner", Label)
        error = self.last_error
        if error is not None and self.loaded_once:
            every = f"{float(self.site.settings.refresh_interval):g}"
            banner.update(Content(f"✘ {error.title}. Showing the list as of {self._loaded_at}; retrying every "
                                  f"{every} s (r: retry now, e: details)"))
        banner.set_class(error is not None and self.loaded_once, "-active")

    # ------------------------------------------------------------------ detail

    @on(VirtualTable.RowHighlighted, "#vm-table")
    def _highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        if self._detail_timer is not None:
            self._detail_timer.stop()
            self._detail_timer = None
        if event.key is None or not self._detail_visible or event.key == self._detail_requested:
            return
        vm_id = int(event.key)  # type: ignore[call-overload]
        self._detail_timer = self.set_timer(DETAIL_DEBOUNCE, lambda: self._load_detail(vm_id), name="vm-detail-debounce")

    def _detail_follow_refresh(self) -> None:
        """After a refresh: load the detail of the VM under the cursor if it is not the one shown
        (or being loaded), or reload it when the VM changed."""
        key = self.table.cursor_key
        if key is None or not self._detail_visible or self._detail_timer is not None:
            return
        current = self.vms.get(int(key))  # type: ignore[call-overload]
        if current is None:
            return
        if key != self._detail_requested or current != self._detail_summary:
            self._load_detail(current.id)

    def _load_detail(self, vm_id: int) -> None:
        self._detail_timer = None
        if self.table.cursor_key != vm_id:
            return
        self._detail_requested = vm_id
        self._detail_summary = self.vms.get(vm_id)
        self._detail_worker(vm_id)

    @work(exclusive=True, group="vm-detail", exit_on_error=False)
    async def _detail_worker(self, vm_id: int) -> None:
        try:
            detail = await vm_detail(self.site, vm_id)
        except SiteError as error:
            self.post_message(self.DetailFailed(vm_id, error))
            return
        self.post_message(self.DetailLoaded(vm_id, detail))

    @on(DetailLoaded)
    def _detail_loaded(self, message: DetailLoaded) -> None:
        if self.table.cursor_key != message.vm_id:
            return
        self.detail_vm_id = message.vm_id
        self.query_one("#vm-detail-body", Static).update(detail_renderable(message.detail))

    @on(DetailFailed)
    def _detail_failed(self, message: DetailFailed) -> None:
        if self.table.cursor_key != message.vm_id:
            return
        self._detail_summary = None
        self.detail_vm_id = message.vm_id
        body = Text.assemble((f"Could not load VM {message.vm_id}\n", "bold red"), message.error.title, "\n",
                             (message.error.detail, "dim"))
        self.query_one("#vm-detail-body", Static).update(body)

    # ------------------------------------------------------------------ actions

    def action_refresh(self) -> None:
        self.refresh_vms()

    @on(Button.Pressed, "#vm-retry")
    def _retry(self) -> None:
        self.refresh_vms()

    def action_sort(self, column: str) -> None:
        self.table.sort_by(column)

    @on(VirtualTable.SortChanged, "#vm-table")
    def _sort_changed(self) -> None:
        self._paint_status()

    def action_toggle_detail(self) -> None:
        self._detail_visible = not self._detail_visible
        self.query_one("#vm-main").set_class(self._detail_visible, "-detail")
        if self._detail_visible and self.table.cursor_key is not None:
            self._load_detail(int(self.table.cursor_key))  # type: ignore[call-overload]

    @on(VirtualTable.RowSelected, "#vm-table")
    def _selected(self) -> None:
        if not self._detail_visible:
            self.action_toggle_detail()

    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("Refresh VMs", "Reload the VM list now (r)", self.action_refresh)
        yield SystemCommand("Filter VMs", "Filter by name, IP, host or state (/)", self.action_filter)
        yield SystemCommand("Toggle VM detail", "Show or hide the detail panel (d)", self.action_toggle_detail)
        for column in COLUMNS:
            yield SystemCommand(f"Sort VMs by {column.label.lower()}", "Again to reverse",
                                lambda key=column.key: self.action_sort(key))
