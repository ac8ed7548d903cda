"""The hosts screen: which hosts can run the document database, and the VMs that run it.

Top: every host with its state, architecture, model name, KVM_CPU_MODEL (`★` marks a model
found compatible: the spec's list plus the settings' own), whether SSE4.2 and AVX are in its CPU
features (`?` when the host reports none), free CPU and memory, running VMs and the verdict
(`✔ compatible`, `✘ incompatible`, `? unknown`; a host out of service shows its state instead:
`○ disabled`, `○ offline`, `✘ error`, `◐ not monitored`, and is never a target). Bottom: every VM
that runs the document database with its host, CPU model, what its appliance reports and its
verdict (`✔ fine`, `⚠ passthrough`, `✘ lacks AVX/SSE4.2`, `? unknown`, and `? unknown, not ready`
in red: at risk, since nothing shows its database runs). The detail line explains the row under the
cursor (why a host is not a target, why a VM is at risk and where the move would take it).

Keys: `tab` switches tables, `m` moves the VM under the cursor of the VM table (operation 7; when
the hosts table has the focus, to the host under its cursor), `M` moves every flagged VM, `r`
reloads. Moves open `tui.screens.hosts_move.MoveModal` (preview, confirmation naming the VM,
progress, resume or put back). `--read-only` hides both move keys. The screen reloads every
`refresh_interval` seconds while it is shown and no modal is open, never two loads at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Label, Static

from tui.domain.cpu import HostVerdictKind, VmVerdictKind
from tui.domain.printable import escape_controls
from tui.errors import SiteError
from tui.procedures.hosts.cpu_inventory import DbVmRow, HostInventory, HostRow, load_inventory
from tui.screens.base import ReloadingScreen
from widgets.state_cell import StateLook, StatePalette
from widgets.virtual_table import Column, TableRow, VirtualTable

HOST_VERDICT_PALETTE = StatePalette(
    {
        HostVerdictKind.COMPATIBLE.value: StateLook("green", "✔"),
        HostVerdictKind.INCOMPATIBLE.value: StateLook("bold red", "✘"),
        HostVerdictKind.UNKNOWN.value: StateLook("yellow", "?"),
        # unavailable hosts show their state (tui.domain.hosts.host_unavailable)
        "disabled": StateLook("blue", "○"),
        "offline": StateLook("dim", "○"),
        "error": StateLook("bold red", "✘"),
        "not monitored": StateLook("yellow", "◐"),
    },
    default=StateLook("magenta", "○"),
)

#: VM verdict -> (short word for the table, look)
VM_VERDICT_WORDS: dict[VmVerdictKind, str] = {
    VmVerdictKind.FINE: "fine",
    VmVerdictKind.HOST_PASSTHROUGH: "passthrough",
    VmVerdictKind.MODEL_LACKS_FLAGS: "lacks AVX/SSE4.2",
    VmVerdictKind.UNKNOWN: "unknown",
}
#: an unknown verdict on a VM that is not ready (tui.procedures.hosts.cpu_inventory.DbVmRow.at_risk)
AT_RISK_UNKNOWN = "unknown, not ready"
VM_VERDICT_PALETTE = StatePalette(
    {
        "fine": StateLook("green", "✔"),
        "passthrough": StateLook("bold yellow", "⚠"),
        "lacks AVX/SSE4.2": StateLook("bold red", "✘"),
        "unknown": StateLook("yellow", "?"),
        AT_RISK_UNKNOWN: StateLook("bold red", "?"),
    },
    default=StateLook("magenta", "?"),
)
HOST_STATE_PALETTE = StatePalette(
    {"on": StateLook("green", "●"), "update": StateLook("green", "●"), "dsbl": StateLook("blue", "○"),
     "off": StateLook("dim", "○"), "err": StateLook("bold red", "✘"), "retry": StateLook("yellow", "◐"),
     "init": StateLook("yellow", "◐")},
    default=StateLook("magenta", "?"),
)
FLAG_PALETTE = StatePalette(
    {"yes": StateLook("green", "✔"), "no": StateLook("bold red", "✘"), "?": StateLook("yellow", "?")},
)
APP_PALETTE = StatePalette(
    {"ready": StateLook("green", "●"), "not ready": StateLook("bold yellow", "◐")},
    default=StateLook("blue", "○"),
)
KNOWN_GOOD_GLYPH = "★"

HOST_COLUMNS: tuple[Column, ...] = (
    Column("id", "ID", 3, align="right"),
    Column("name", "NAME", 18, flex=True),
    Column("state", "STATE", 6),
    Column("arch", "ARCH", 7),
    Column("model_name", "MODEL NAME", 14, flex=True),
    Column("kvm_model", "KVM_CPU_MODEL", 26),
    Column("sse", "SSE4.2", 6),
    Column("avx", "AVX", 5),
    Column("cpu", "FREE CPU", 8, align="right"),
    Column("mem", "FREE MEM", 8, align="right"),
    Column("vms", "VMS", 3, align="right"),
    Column("verdict", "VERDICT", 14),
)
VM_COLUMNS: tuple[Column, ...] = (
    Column("id", "ID", 4, align="right"),
    Column("name", "NAME", 22, flex=True),
    Column("why", "RUNS THE DB BY", 14),
    Column("state", "STATE", 5),
    Column("host", "HOST", 20),
    Column("model", "CPU MODEL", 24),
    Column("app", "APP", 11),
    Column("verdict", "VERDICT", 18, flex=True),
)


def _flag(value: bool | None) -> Text:
    word = "?" if value is None else ("yes" if value else "no")
    return FLAG_PALETTE.text(word)


def format_mib(mib: int) -> str:
    return f"{mib / 1024:.0f}G" if mib >= 10 * 1024 else (f"{mib / 1024:.1f}G" if mib >= 1024 else f"{mib}M")


def host_row(row: HostRow) -> TableRow:
    host = row.host
    model = Text(host.kvm_cpu_model or "?")
    if row.known_good:
        model = Text.assemble((f"{KNOWN_GOOD_GLYPH} ", "bold cyan"), (host.kvm_cpu_model, "bold"))
    verdict = row.verdict.word
    cells = (
        str(host.id), host.name, HOST_STATE_PALETTE.text(host.state_name), host.arch or "?", host.model_name,
        model, _flag(row.sse4_2), _flag(row.avx), f"{host.free_cpu / 100:g}/{host.max_cpu / 100:g}",
        format_mib(host.free_mem_mib), str(host.running_vms), HOST_VERDICT_PALETTE.text(verdict),
    )
    sort = (host.id, host.name.lower(), host.state_name, host.arch, host.model_name.lower(), host.kvm_cpu_model,
            str(row.sse4_2), str(row.avx), host.free_cpu, host.free_mem_mib, host.running_vms, verdict)
    return TableRow(host.id, cells, f"{host.name} {host.kvm_cpu_model} {host.model_name} {verdict}".lower(), sort)


def vm_word(row: DbVmRow) -> str:
    if row.at_risk and row.verdict.kind is VmVerdictKind.UNKNOWN:
        return AT_RISK_UNKNOWN
    return VM_VERDICT_WORDS.get(row.verdict.kind, row.verdict.kind.value)


def vm_row(row: DbVmRow) -> TableRow:
    word = vm_word(row)
    host = f"{row.host_id} {row.host_name}" if row.host_id is not None else "-"
    app = row.application
    cells = (str(row.id), row.name, row.identified_by, row.vm.summary.state_name, host, row.cpu_model or "(none)",
             APP_PALETTE.text(app), VM_VERDICT_PALETTE.text(word))
    sort = (row.id, row.name.lower(), row.identified_by, row.vm.summary.state_name, host, row.cpu_model, app, word)
    return TableRow(row.id, cells, f"{row.name} {host} {row.cpu_model} {word}".lower(), sort)


def host_detail(row: HostRow, inventory: HostInventory) -> Text:
    host = row.host
    text = Text.assemble((f"Host {host.id} ", "bold"), (host.name, "bold"), "  ",
                         HOST_VERDICT_PALETTE.text(row.verdict.word))
    if row.verdict.reasons:
        text.append(f": {'; '.join(row.verdict.reasons)}")
    if row.verdict.fix:
        text.append(f"\nFix: {row.verdict.fix}", style="cyan")
    features = "not reported" if host.kvm_cpu_features is None else (" ".join(host.kvm_cpu_features) or "none")
    text.append(f"\n{host.model_name or 'model name not reported'} · KVM_CPU_MODELS: "
                f"{' '.join(host.kvm_cpu_models) or '-'} · features: {features}", style="dim")
    ranked = next((r for r in inventory.ranking.eligible if r.host.id == host.id), None)
    if ranked is not None:
        position = inventory.ranking.eligible.index(ranked) + 1
        text.append(f"\nTarget #{position} for document-database VMs.", style="green")
    else:
        excluded = next((e for e in inventory.ranking.excluded if e.host.id == host.id), None)
        if excluded is not None:
            text.append(f"\nNot a target: {excluded.reason}.", style="yellow")
    return text


def vm_detail(row: DbVmRow, inventory: HostInventory, read_only: bool) -> Text:
    word = vm_word(row)
    text = Text.assemble((f"VM {row.id} ", "bold"), (row.name, "bold"), "  ", VM_VERDICT_PALETTE.text(word))
    if row.at_risk:
        text.append(" · at risk", style="bold red")
    if row.risk or row.verdict.reason:
        text.append(f": {row.risk or row.verdict.reason}")
    text.append(f"\nRuns the document database by {row.identified_by}; {row.vm.summary.status}", style="dim")
    if row.host_id is not None:
        text.append(f" on host {row.host_id} {row.host_name}", style="dim")
    text.append(f"; application {row.application}.", style="dim")
    if row.flagged:
        best = inventory.ranking.eligible[0].host if inventory.ranking.eligible else None
        if read_only:
            text.append("\nRead-only mode: moves are hidden.", style="yellow")
        elif best is not None:
            text.append(f"\nm moves it to host {best.id} {best.name} with CPU model {best.kvm_cpu_model}.",
                        style="cyan")
        else:
            text.append("\nNo compatible host with enough free capacity: m offers host-passthrough (discouraged).",
                        style="yellow")
    return text


class HostsScreen(ReloadingScreen):
    """Hosts with their CPU verdicts and the document-database VMs; move (operation 7)."""

    SCREEN_NAME = "hosts"
    TITLE = "Hosts"
    HELP_GROUP = "Hosts"
    AUTO_FOCUS = "#hosts-vms"
    CSS_PATH = "hosts.tcss"
    MUTATING_ACTIONS = frozenset({"move", "move_all"})

    LOAD_GROUP = "hosts-load"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("m", "move", "Move VM", id="hosts.move"),
        Binding("M", "move_all", "Move all flagged", id="hosts.move-all"),
        Binding("r", "refresh", "Reload", id="hosts.refresh"),
    ]

    @dataclass
    class Loaded(Message):
        inventory: HostInventory

    def __init__(self) -> None:
        super().__init__(id="screen-hosts")
        self.inventory: HostInventory | None = None
        self._poll: Timer | None = None

    # ------------------------------------------------------------------ layout

    def compose_body(self) -> ComposeResult:
        yield Label("Hosts", id="hosts-title", classes="hosts-heading")
        table = VirtualTable(HOST_COLUMNS, id="hosts-table", text_filter=escape_controls)
        table.placeholder = "Loading hosts…"
        yield table
        yield Label("Document-database VMs", id="hosts-vms-title", classes="hosts-heading")
        vms = VirtualTable(VM_COLUMNS, id="hosts-vms", text_filter=escape_controls)
        vms.placeholder = "Loading…"
        yield vms
        yield Static("", id="hosts-detail")
        yield Label("", id="hosts-status")

    @property
    def hosts_table(self) -> VirtualTable:
        return self.query_one("#hosts-table", VirtualTable)

    @property
    def vms_table(self) -> VirtualTable:
        return self.query_one("#hosts-vms", VirtualTable)

    def on_mount(self) -> None:
        interval = max(0.5, float(self.site.settings.refresh_interval))
        self._poll = self.set_interval(interval, self._tick, name="hosts-poll")
        self.reload()

    # ------------------------------------------------------------------ loading

    def _tick(self) -> None:
        if self.is_active and not self.reloading:
            self.reload()

    @work(exclusive=True, group="hosts-load", exit_on_error=False)
    async def start_load(self) -> None:
        """Read hosts and database VMs."""
        try:
            inventory = await load_inventory(self.site)
        except SiteError as error:
            self.post_message(self.Failed(error))
            return
        self.post_message(self.Loaded(inventory))

    @on(Loaded)
    def _loaded(self, message: Loaded) -> None:
        self.load_done()
        inventory = self.inventory = message.inventory
        self.hosts_table.set_rows([host_row(row) for row in inventory.hosts])
        self.hosts_table.placeholder = "This site has no host."
        vms = self.vms_table
        vms.set_rows([vm_row(row) for row in inventory.db_vms])
        roles = ", ".join(self.site.naming.document_db_roles)
        vms.placeholder = (f"No VM runs the document database (role {roles} or attribute "
                           f"{self.site.naming.document_db_attribute}).")
        targets = len(inventory.ranking.eligible)
        self.query_one("#hosts-title", Label).update(Content(
            f"Hosts · {len(inventory.hosts)} hosts, {len(inventory.compatible_hosts)} compatible, {targets} "
            f"target{'s' if targets != 1 else ''} with enough free capacity · {KNOWN_GOOD_GLYPH} known-good model"))
        at_risk = len(inventory.at_risk)
        self.query_one("#hosts-vms-title", Label).update(Content(
            f"Document-database VMs · {len(inventory.db_vms)} found, {at_risk} at risk, "
            f"{len(inventory.flagged)} flagged"))
        self.shell.mark_refreshed()
        self._paint_detail()
        self._paint_status()

    def load_failed(self, error: SiteError) -> None:
        if self.inventory is None:
            self.hosts_table.placeholder = f"✘ {error.title} (r retries)"
            self.query_one("#hosts-detail", Static).update(Text(error.detail))

    def _paint_status(self) -> None:
        parts: list[str] = []
        if self.last_error is not None:
            stale = " (showing the last data received)" if self.inventory is not None else ""
            parts.append(f"✘ {self.last_error.title}{stale}; r retries")
        if self.reloading:
            parts.append("loading…")
        if self.inventory is not None:
            parts += [f"⚠ {note}" for note in self.inventory.notes]
        if self.read_only:
            parts.append("read-only: moves hidden")
        elif self.inventory is not None and self.inventory.flagged:
            parts.append("m moves the VM under the cursor · M moves every flagged VM")
        label = self.query_one("#hosts-status", Label)
        label.update(Content(" · ".join(parts)))
        label.set_class(self.last_error is not None, "-error")

    # ------------------------------------------------------------------ detail

    @on(VirtualTable.RowHighlighted)
    def _highlighted(self) -> None:
        self._paint_detail()

    def on_descendant_focus(self) -> None:
        self._paint_detail()

    def _paint_detail(self) -> None:
        inventory = self.inventory
        if inventory is None:
            return
        detail = self.query_one("#hosts-detail", Static)
        focused = self.focused
        if focused is self.hosts_table:
            row = inventory.host(self.hosts_table.cursor_key)  # type: ignore[arg-type]
            if row is not None:
                detail.update(host_detail(row, inventory))
                return
        vm = self._cursor_vm()
        if vm is not None:
            detail.update(vm_detail(vm, inventory, self.read_only))
        elif inventory.db_vms:
            detail.update(Text("Move the cursor to a VM or a host to see why.", style="dim"))
        else:
            detail.update(Text("Nothing runs the document database yet; the verdicts above say where it could.",
                               style="dim"))

    def _cursor_vm(self) -> DbVmRow | None:
        if self.inventory is None or self.vms_table.cursor_key is None:
            return None
        return self.inventory.db_vm(int(self.vms_table.cursor_key))  # type: ignore[call-overload]

    # ------------------------------------------------------------------ actions

    def action_refresh(self) -> None:
        self.reload()

    def action_move(self) -> None:
        if self.inventory is None:
            return
        vm = self._cursor_vm()
        if vm is None:
            self.shell.toast("Put the cursor on a document-database VM first", severity="warning")
            return
        host_id: int | None = None
        if self.focused is self.hosts_table and self.hosts_table.cursor_key is not None:
            host_id = int(self.hosts_table.cursor_key)  # type: ignore[call-overload]
            excluded = next((e for e in self.inventory.ranking.excluded if e.host.id == host_id), None)
            if excluded is not None:
                self.shell.toast(f"Host {host_id} {excluded.host.name} is not a target ({excluded.reason}); "
                                 "choose among the compatible hosts", severity="warning")
                host_id = None
        from tui.screens.hosts_move import MoveModal

        self.app.push_screen(MoveModal(self.inventory, (vm.id,), host_id=host_id), self._after_move)

    def action_move_all(self) -> None:
        if self.inventory is None:
            return
        if not self.inventory.flagged:
            self.shell.toast("No flagged document-database VM: nothing to move")
            return
        from tui.screens.hosts_move import MoveModal

        self.app.push_screen(MoveModal(self.inventory, None), self._after_move)

    def _after_move(self, changed: bool | None) -> None:
        if changed:
            self.reload()

    def palette_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("Reload hosts", "Read hosts and database VMs again (r)", self.action_refresh)
        if not self.read_only:
            yield SystemCommand("Move VM to a compatible host", "Operation 7 for the VM under the cursor (m)",
                                self.action_move)
            yield SystemCommand("Move every flagged VM", "Operation 7 for each flagged database VM (M)",
                                self.action_move_all)
