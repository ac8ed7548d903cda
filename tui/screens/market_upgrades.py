"""The upgrade plan as a modal: `Software | Previous | New`, the ordered steps, and applying them.

The table lists the installed appliances with a newer version, as release announcements do. The
steps follow the spec's upgrade rules in order (attributes before update, download new, remove
old only after confirmation, then the core.yaml IDs to change); blocked appliances and notes
(the manager's own upgrade instructions) are shown above. Applying needs an IMAGE datastore; each
removal opens a confirmation naming the old version (default Cancel) with the equivalent CLI.
At the end the modal lists every ID core.yaml must change, old -> new, then reads the site branch's
core.yaml (decrypted in memory, tui.procedures.site.follow_upgrade.preview_site_ids) and shows it
per key as the CLI's `market upgrades --apply` previews it (key, old -> new, the appliance), the
new site variables the upgraded components need and core.yaml lacks (they are asked for when the
IDs are written), and the commands that write them; what it could not read is said. Applying is
hidden in read-only mode. Returns True when it changed the cloud.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, DataTable, Label, Select, Static

from tui.domain.datastores import Datastore
from tui.domain.upgrades import UPGRADE_TABLE_HEADER, UpgradePlan
from tui.errors import SiteError
from tui.procedures.market.download import list_image_datastores
from tui.procedures.market.marketplaces import MarketCatalog
from tui.procedures.market.upgrades import ApplyUpgrades, IdChange, Upgraded
from tui.procedures.preview import Preview
from tui.procedures.site.follow_upgrade import SiteIdsPreview, preview_site_ids
from tui.procedures.toolkit.service import site_branch
from tui.screens.error_text import error_text
from tui.screens.market_download import datastore_label
from tui.screens.operation_modal import OperationModal
from widgets.progress_panel import ProgressPanel

STEP_GLYPHS = {True: ("✔", "green"), False: ("·", "dim")}


def steps_renderable(plan: UpgradePlan) -> RenderableType:
    """The plan's steps, numbered, with blocked appliances and notes first."""
    parts: list[RenderableType] = []
    for blocked in plan.blocked:
        parts.append(Text(f"✘ blocked: {blocked}", style="bold red"))
    for note in plan.notes:
        parts.append(Text(f"! {note}", style="yellow"))
    for n, step in enumerate(plan.steps, start=1):
        glyph, style = STEP_GLYPHS[step.done]
        extra = "  (asks first)" if step.needs_confirmation else ""
        parts.append(Text.assemble((f"{glyph} ", style), (f"{n}. {step.kind.value}", "bold"), ": ", step.summary,
                                   (extra, "yellow")))
    if not plan.steps:
        parts.append(Text("Every installed appliance is up to date.", style="green"))
    return Group(*parts)


def core_yaml_renderable(changes: tuple[IdChange, ...]) -> RenderableType:
    table = Table("APPLIANCE", "KIND", "OLD ID", "NEW ID", "WAS", box=None, padding=(0, 1), header_style="bold",
                  title="IDs core.yaml must change", title_justify="left", title_style="bold")
    for change in changes:
        old = "-" if change.old < 0 else str(change.old)
        new = "(none)" if change.new is None else str(change.new)
        table.add_row(Text(change.appliance), Text(change.kind), Text(old), Text(new), Text(change.label))
    return Group(table, Text("Add any new site variables of the upgraded components too.", style="dim"))


def site_ids_renderable(changes: tuple[IdChange, ...], preview: SiteIdsPreview | None) -> RenderableType:
    """The IDs the upgrade replaced, then core.yaml's keys they change (or why it was not read)."""
    if preview is None:
        return Group(core_yaml_renderable(changes), Text("Reading the site's core.yaml…", style="dim"))
    if preview.reason:
        return Group(core_yaml_renderable(changes), Text(f"core.yaml not read: {preview.reason}", style="yellow"))
    where = f"{preview.site_dir}/core.yaml on {preview.branch}"
    if not preview.edits:
        return Group(core_yaml_renderable(changes), Text(f"{where} holds none of the replaced IDs: nothing to change.",
                                                         style="green"))
    table = Table("KEY", "OLD", "", "NEW", "APPLIANCE", box=None, padding=(0, 1), header_style="bold",
                  title=f"{where} (read decrypted): {len(preview.edits)} key(s) to change", title_justify="left",
                  title_style="bold")
    for edit in preview.edits:
        table.add_row(Text(edit.path), Text(str(edit.old)), Text("->", style="dim"), Text(str(edit.new), style="green"),
                      Text(f"{edit.appliance} {edit.kind}"))
    parts: list[RenderableType] = [table]
    if preview.missing:
        parts.append(Text("New site variables the upgraded components need (asked when the IDs are written):",
                          style="bold yellow"))
        parts.extend(Text.assemble("  ", (path, "bold"), f"  {about}") for path, about in preview.missing)
    parts.append(Text("Write them with (CORE_YAML: the path `sitetk site open` prints):", style="dim"))
    parts.extend(Text(f"  {command}", style="dim") for command in preview.commands)
    return Group(*parts)


class UpgradePlanModal(OperationModal[UpgradePlan, Upgraded]):
    """The upgrade plan of the site's appliances (see the module docstring)."""

    PREFIX = "up"
    RUN_BUTTON = "apply"
    FOCUS_START_WHEN_READY = False
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="upgrades.close")]
    DEFAULT_CSS = """
    UpgradePlanModal > Vertical { width: 110; height: 90%; }
    UpgradePlanModal #up-title { text-style: bold; width: 1fr; }
    UpgradePlanModal #up-body { height: 1fr; }
    UpgradePlanModal #up-table { height: auto; max-height: 10; margin: 1 0 0 0; }
    UpgradePlanModal #up-steps, UpgradePlanModal #up-result { width: 1fr; height: auto; margin: 1 0 0 0; }
    UpgradePlanModal #up-apply-bar { height: auto; margin: 1 0 0 0; }
    UpgradePlanModal #up-datastore { width: 1fr; }
    UpgradePlanModal #up-progress { margin: 1 0 0 0; }
    UpgradePlanModal #up-apply-bar Button { margin: 0 0 0 2; }
    """

    @dataclass
    class DatastoresRead(Message):
        datastores: tuple[Datastore, ...]

    @dataclass
    class SiteIdsRead(Message):
        preview: SiteIdsPreview

    def __init__(self, catalog: MarketCatalog, *, read_only: bool = False) -> None:
        super().__init__()
        self.catalog = catalog
        self.read_only = read_only
        #: core.yaml's keys the applied upgrade changes, once read
        self.site_ids: SiteIdsPreview | None = None

    @property
    def core_yaml(self) -> tuple[IdChange, ...]:
        """The IDs core.yaml must change, once the plan was applied."""
        return self.result.core_yaml if self.result is not None else ()

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Upgrade plan", id="up-title")
            with VerticalScroll(id="up-body"):
                table: DataTable[Text] = DataTable(id="up-table", cursor_type="row", zebra_stripes=True)
                yield table
                yield Static(Text("Reading the images and the marketplaces…", style="dim"), id="up-steps")
                with Horizontal(id="up-apply-bar"):
                    yield Select[int]([], prompt="IMAGE datastore for the new versions", id="up-datastore")
                    yield Button("Apply plan", id="up-apply", variant="warning")
                yield ProgressPanel(id="up-progress", classes="op-progress")
                yield Static("", id="up-result")
            with Horizontal(id="up-buttons", classes="op-buttons"):
                yield Button("Close", id="up-close")

    def on_mount(self) -> None:
        table = self.query_one("#up-table", DataTable)
        for label in UPGRADE_TABLE_HEADER:
            table.add_column(label, key=label.lower())
        self.query_one("#up-apply-bar").display = False
        self.plan_operation(ApplyUpgrades(self.catalog))

    def paint_buttons(self, phase: str) -> None:
        self._refresh_apply()

    def show_plan_failure(self, error: SiteError, resuming: bool) -> None:
        self.query_one("#up-steps", Static).update(error_text(error))

    def show_plan(self, plan: UpgradePlan, preview: Preview) -> None:
        table = self.query_one("#up-table", DataTable)
        table.clear()
        for row in plan.rows:
            table.add_row(*(Text(cell) for cell in row.cells()), key=row.software)
        self.query_one("#up-steps", Static).update(steps_renderable(plan))
        if not self.read_only and not plan.empty and plan.ready:
            self._datastores_worker()

    @work(exclusive=True, group="upgrades-datastores", exit_on_error=False)
    async def _datastores_worker(self) -> None:
        self.post_message(self.DatastoresRead(tuple(await list_image_datastores(self.shell.site))))

    @on(DatastoresRead)
    def _datastores_read(self, message: DatastoresRead) -> None:
        self.query_one("#up-apply-bar").display = True
        select = self.query_one("#up-datastore", Select)
        select.set_options([(datastore_label(ds), ds.id) for ds in message.datastores])
        if len(message.datastores) == 1:
            select.value = message.datastores[0].id
        self._refresh_apply()

    @on(Select.Changed, "#up-datastore")
    def _refresh_apply(self) -> None:
        self.query_one("#up-apply", Button).disabled = self.phase != "ready" or \
            self.query_one("#up-datastore", Select).value is Select.NULL

    # ------------------------------------------------------------------ applying

    def start(self) -> None:
        """Apply: into the chosen IMAGE datastore (each removal asks on its own)."""
        value = self.query_one("#up-datastore", Select).value
        if self.read_only or value is Select.NULL or not isinstance(self.operation, ApplyUpgrades):
            return
        self.operation = replace(self.operation, datastore_id=int(value))  # type: ignore[arg-type]
        super().start()

    def apply(self) -> None:
        self.start()

    def run_started(self, plan: UpgradePlan) -> None:
        self.query_one("#up-apply-bar").display = False
        self.query_one("#up-progress", ProgressPanel).set_steps(
            [f"{s.kind.value}" + (f": {s.appliance}" if s.appliance else "") for s in plan.steps])

    def show_result(self, result: Upgraded) -> None:
        changes = tuple(c for c in result.core_yaml if c.old >= 0 and c.new is not None)
        self.show_result_text(site_ids_renderable(result.core_yaml, None) if changes
                              else core_yaml_renderable(result.core_yaml) if result.core_yaml
                              else Text("✔ Done.", style="bold green"))
        self.query_one("#up-close", Button).focus()
        if changes:
            self._site_ids_worker(changes)

    @work(exclusive=True, group="upgrades-site-ids", exit_on_error=False)
    async def _site_ids_worker(self, changes: tuple[IdChange, ...]) -> None:
        records = tuple(s.record.id for s in self.plan.steps if s.record is not None) if self.plan is not None else ()
        try:
            branch, site_dir = await site_branch(self.shell.site)
            preview = await preview_site_ids(self.shell.site, branch, site_dir, changes, records)
        except SiteError as error:
            preview = SiteIdsPreview(reason=f"{error.title}: {error.detail}")
        self.post_message(self.SiteIdsRead(preview))

    @on(SiteIdsRead)
    def _site_ids_read(self, message: SiteIdsRead) -> None:
        self.site_ids = message.preview
        if self.result is not None:
            self.show_result_text(site_ids_renderable(self.result.core_yaml, message.preview))
            # the preview is what is left to do: in sight below the steps and their progress
            self.call_after_refresh(self.query_one("#up-result").scroll_visible, animate=False, top=True)

    def show_failure(self, error: SiteError) -> None:
        self.show_result_text(error_text(error))
        self.query_one("#up-close", Button).focus()

    def close_while_running(self) -> None:
        self.app.notify("The upgrade is running; wait for it to finish", severity="warning")
