"""The upgrade plan as a modal: `Software | Previous | New`, the ordered steps, and applying them.

The table lists the installed appliances with a newer version, as release announcements do. The
steps follow the spec's upgrade rules in order (attributes before update, download new, remove
old only after confirmation, then the core.yaml IDs to change); blocked appliances and notes
(the manager's own upgrade instructions) are shown above. Applying needs an IMAGE datastore; each
removal opens a confirmation naming the old version (default Cancel) with the equivalent CLI.
At the end the modal lists every ID core.yaml must change, old -> new. Applying is hidden in
read-only mode. Returns True when it changed the cloud.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Label, Select, Static

from tui.domain.datastores import Datastore
from tui.domain.upgrades import UPGRADE_TABLE_HEADER, UpgradePlan
from tui.errors import SiteError
from tui.procedures.download_appliance import list_image_datastores
from tui.procedures.marketplace import MarketCatalog
from tui.procedures.progress import Progress
from tui.procedures.upgrades import Removal, apply_upgrade_plan, load_upgrade_plan
from tui.screens.error_text import error_text
from tui.screens.market_download import datastore_label
from widgets.confirm_modal import ConfirmModal
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


def core_yaml_renderable(changes: list[dict[str, Any]]) -> RenderableType:
    table = Table("APPLIANCE", "KIND", "OLD ID", "NEW ID", "WAS", box=None, padding=(0, 1), header_style="bold",
                  title="IDs core.yaml must change", title_justify="left", title_style="bold")
    for change in changes:
        old = "-" if change["old"] < 0 else str(change["old"])
        new = "(none)" if change["new"] is None else str(change["new"])
        table.add_row(Text(change["appliance"]), Text(change["kind"]), Text(old), Text(new), Text(change["label"]))
    return Group(table, Text("Add any new site variables of the upgraded components too.", style="dim"))


class UpgradePlanModal(ModalScreen[bool]):
    """The upgrade plan of the site's appliances (see the module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="upgrades.close")]
    DEFAULT_CSS = """
    UpgradePlanModal { align: center middle; }
    UpgradePlanModal > Vertical {
        width: 110; max-width: 95%; height: 90%;
        border: thick $primary; background: $surface; padding: 1 2;
    }
    UpgradePlanModal #up-title { text-style: bold; width: 1fr; }
    UpgradePlanModal #up-body { height: 1fr; }
    UpgradePlanModal #up-table { height: auto; max-height: 10; margin: 1 0 0 0; }
    UpgradePlanModal #up-steps, UpgradePlanModal #up-result { width: 1fr; height: auto; margin: 1 0 0 0; }
    UpgradePlanModal #up-apply-bar { height: auto; margin: 1 0 0 0; }
    UpgradePlanModal #up-datastore { width: 1fr; }
    UpgradePlanModal #up-progress { display: none; margin: 1 0 0 0; }
    UpgradePlanModal.-running #up-progress, UpgradePlanModal.-finished #up-progress { display: block; }
    UpgradePlanModal #up-buttons { height: auto; margin: 1 0 0 0; align: right middle; }
    UpgradePlanModal #up-buttons Button, UpgradePlanModal #up-apply-bar Button { margin: 0 0 0 2; }
    """

    class Planned(Message):
        def __init__(self, plan: UpgradePlan | None, datastores: tuple[Datastore, ...], error: SiteError | None) -> None:
            super().__init__()
            self.plan = plan
            self.datastores = datastores
            self.error = error

    class Stepped(Message):
        def __init__(self, event: Progress) -> None:
            super().__init__()
            self.event = event

    class Finished(Message):
        def __init__(self, error: SiteError | None) -> None:
            super().__init__()
            self.error = error

    def __init__(self, catalog: MarketCatalog, *, read_only: bool = False) -> None:
        super().__init__()
        self.catalog = catalog
        self.read_only = read_only
        self.plan: UpgradePlan | None = None
        self.running = False
        self.changed = False
        self.core_yaml: list[dict[str, Any]] = []

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
                yield ProgressPanel(id="up-progress")
                yield Static("", id="up-result")
            with Horizontal(id="up-buttons"):
                yield Button("Close", id="up-close")

    def on_mount(self) -> None:
        table = self.query_one("#up-table", DataTable)
        for label in UPGRADE_TABLE_HEADER:
            table.add_column(label, key=label.lower())
        self.query_one("#up-apply-bar").display = False
        self._plan_worker()

    @work(exclusive=True, group="upgrades-plan", exit_on_error=False)
    async def _plan_worker(self) -> None:
        site = self.app.site  # type: ignore[attr-defined]
        try:
            plan = await load_upgrade_plan(site, self.catalog)
            datastores = await list_image_datastores(site) if plan.rows and not self.read_only else ()
        except SiteError as error:
            self.post_message(self.Planned(None, (), error))
            return
        self.post_message(self.Planned(plan, tuple(datastores), None))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        steps = self.query_one("#up-steps", Static)
        if message.error is not None:
            steps.update(error_text(message.error))
            return
        assert message.plan is not None
        plan = self.plan = message.plan
        table = self.query_one("#up-table", DataTable)
        table.clear()
        for row in plan.rows:
            table.add_row(*(Text(cell) for cell in row.cells()), key=row.software)
        steps.update(steps_renderable(plan))
        can_apply = not self.read_only and not plan.empty and plan.ready
        bar = self.query_one("#up-apply-bar")
        bar.display = can_apply
        if can_apply:
            select = self.query_one("#up-datastore", Select)
            select.set_options([(datastore_label(ds), ds.id) for ds in message.datastores])
            if len(message.datastores) == 1:
                select.value = message.datastores[0].id
            self._refresh_apply()

    @on(Select.Changed, "#up-datastore")
    def _refresh_apply(self) -> None:
        self.query_one("#up-apply", Button).disabled = self.running or \
            self.query_one("#up-datastore", Select).value is Select.NULL

    # ------------------------------------------------------------------ applying

    @on(Button.Pressed, "#up-apply")
    def apply(self) -> None:
        value = self.query_one("#up-datastore", Select).value
        if self.plan is None or self.running or value is Select.NULL or self.read_only:
            return
        self.running = True
        self.changed = True
        self.set_class(True, "-running")
        self.query_one("#up-apply-bar").display = False
        self.query_one("#up-progress", ProgressPanel).set_steps(
            [f"{s.kind.value}" + (f": {s.appliance}" if s.appliance else "") for s in self.plan.steps])
        self._apply_worker(self.plan, int(value))  # type: ignore[arg-type]

    async def _confirm_removal(self, removal: Removal) -> bool:
        detail = f"Deletes {removal.describe()}. VMs already deployed from them are not touched."
        modal = ConfirmModal("Remove the old version", removal.target, detail=detail, command=removal.cli())
        return bool(await self.app.push_screen_wait(modal))  # type: ignore[arg-type]  # App[object] wants Screen[object]

    @work(exclusive=True, group="upgrades-apply", exit_on_error=False)
    async def _apply_worker(self, plan: UpgradePlan, datastore_id: int) -> None:
        try:
            async for event in apply_upgrade_plan(self.app.site, plan, datastore_id=datastore_id,  # type: ignore[attr-defined]
                                                  confirm_removal=self._confirm_removal):
                self.post_message(self.Stepped(event))
        except SiteError as error:
            self.post_message(self.Finished(error))
            return
        self.post_message(self.Finished(None))

    @on(Stepped)
    def _stepped(self, message: Stepped) -> None:
        event = message.event
        self.query_one("#up-progress", ProgressPanel).update_step(event.step, event.state, event.message,
                                                                  done=event.done, total=event.total)
        if "core_yaml" in event.data:
            self.core_yaml = list(event.data["core_yaml"])

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self.running = False
        self.set_class(False, "-running")
        self.set_class(True, "-finished")
        result = self.query_one("#up-result", Static)
        if message.error is not None:
            result.update(error_text(message.error))
        elif self.core_yaml:
            result.update(core_yaml_renderable(self.core_yaml))
        else:
            result.update(Text("✔ Done.", style="bold green"))
        self.query_one("#up-close", Button).focus()

    @on(Button.Pressed, "#up-close")
    def action_close(self) -> None:
        if self.running:
            self.app.notify("The upgrade is running; wait for it to finish", severity="warning")
            return
        self.dismiss(self.changed)

