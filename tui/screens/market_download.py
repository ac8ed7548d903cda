"""The download flow (operation 2) as a modal: datastore, final name, review, progress, cancel.

1. The form: an IMAGE datastore (a `Select`, empty until chosen) and the final name (prefilled
   with the appliance name and software version, validated inline).
2. Review (`enter` or the button): the procedure plans the export and the modal shows the preview:
   every object it will create and the equivalent platform CLI command. Changing the form
   invalidates the review.
3. Download: the progress view lists every step (create each image, template and service
   template, follow each image LOCKED -> READY, attach the attributes). Cancel (or `escape`)
   stops it and the procedure deletes what it had created; so does a failure (an image in
   ERROR shows the platform's reason).

The modal returns True when it changed the cloud (so the list reloads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static

from tui.domain.datastores import Datastore
from tui.domain.marketapps import MarketApp
from tui.domain.printable import escape_controls as shown
from tui.errors import SiteError
from tui.procedures.market.attributes import tag_for_record
from tui.procedures.market.download import (
    DownloadAppliance,
    DownloadCancelled,
    DownloadPlan,
    DownloadResult,
    check_name,
    default_download_name,
    find_market_app,
    list_image_datastores,
)
from tui.procedures.market.marketplaces import CatalogEntry
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress
from tui.screens.operation_modal import OperationModal
from widgets.progress_panel import ProgressPanel


def _mib(mb: int) -> str:
    return f"{mb / 1024:.1f} GiB" if mb >= 1024 else f"{mb} MiB"


def datastore_label(ds: Datastore) -> str:
    return f"{ds.id} {ds.name} ({_mib(ds.free_mb)} free of {_mib(ds.total_mb)})"


class DownloadModal(OperationModal[DownloadPlan, DownloadResult]):
    """Download one appliance into an IMAGE datastore (see the module docstring)."""

    PREFIX = "dl"
    AUTO_FOCUS = "#dl-datastore"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Cancel / close", id="download.close"),
    ]
    DEFAULT_CSS = """
    DownloadModal > Vertical { width: 100; height: 90%; }
    DownloadModal #dl-title { text-style: bold; width: 1fr; }
    DownloadModal #dl-info { color: $text-muted; width: 1fr; margin: 0 0 1 0; }
    DownloadModal .dl-label { margin: 1 0 0 0; text-style: bold; }
    DownloadModal #dl-name-error { color: $text-error; height: auto; width: 1fr; }
    DownloadModal #dl-body { height: 1fr; }
    DownloadModal #dl-form { height: auto; }
    DownloadModal #dl-preview { width: 1fr; height: auto; margin: 1 0 0 0; }
    DownloadModal.-running #dl-form, DownloadModal.-finished #dl-form { display: none; }
    DownloadModal #dl-result { width: 1fr; height: auto; margin: 1 0 0 0; }
    """

    @dataclass
    class Prepared(Message):
        market_app: MarketApp | None
        datastores: tuple[Datastore, ...]
        error: SiteError | None

    def __init__(self, entry: CatalogEntry) -> None:
        super().__init__()
        self.entry = entry
        self.market_app: MarketApp | None = None
        self.datastores: tuple[Datastore, ...] = ()

    def compose(self) -> ComposeResult:
        record = self.entry.record
        with Vertical():
            yield Label(Content(shown(f"Download {record.name} {record.parsed_version.label}")), id="dl-title")
            yield Label(Content(f"{record.type.value} from {self.entry.source.name} · looking up the cloud's app…"),
                        id="dl-info")
            with VerticalScroll(id="dl-body"):
                with Vertical(id="dl-form"):
                    yield Label("IMAGE datastore", classes="dl-label")
                    yield Select[int]([], prompt="Choose an IMAGE datastore", id="dl-datastore")
                    yield Label("Final name", classes="dl-label")
                    yield Input(default_download_name(record.name, record.version), id="dl-name")
                    yield Label("", id="dl-name-error")
                    yield Static("", id="dl-preview")
                yield ProgressPanel(id="dl-progress", classes="op-progress")
                yield Static("", id="dl-result")
            with Horizontal(id="dl-buttons", classes="op-buttons"):
                yield Button("Close", id="dl-close")
                yield Button("Cancel download", id="dl-cancel", variant="error")
                yield Button("Review", id="dl-review", variant="primary")
                yield Button("Download", id="dl-start", variant="success")

    def on_mount(self) -> None:
        self.query_one("#dl-review", Button).disabled = True
        self._prepare()

    # ------------------------------------------------------------------ preparing

    @work(exclusive=True, group="download-prepare", exit_on_error=False)
    async def _prepare(self) -> None:
        site = self.shell.site
        try:
            datastores = await list_image_datastores(site)
            app_ = await find_market_app(site, self.entry.record)
        except SiteError as error:
            self.post_message(self.Prepared(None, (), error))
            return
        self.post_message(self.Prepared(app_, datastores, None))

    @on(Prepared)
    def _prepared(self, message: Prepared) -> None:
        info = self.query_one("#dl-info", Label)
        record = self.entry.record
        if message.error is not None:
            info.update(Content(f"{record.type.value} from {self.entry.source.name}"))
            self.show_result_text(Text.assemble(("✘ Cannot download: ", "bold red"), message.error.title, "\n",
                                                (message.error.detail, "dim")))
            self.query_one("#dl-form").display = False
            return
        assert message.market_app is not None
        self.market_app = message.market_app
        self.datastores = message.datastores
        app_ = message.market_app
        info.update(Content(f"{record.type.value} · cloud app {app_.id} in {app_.marketplace} · "
                            f"{_mib(app_.size_mb) if app_.size_mb else 'size in its parts'}"))
        select = self.query_one("#dl-datastore", Select)
        select.set_options([(datastore_label(ds), ds.id) for ds in self.datastores])
        if len(self.datastores) == 1:
            select.value = self.datastores[0].id
        if not self.datastores:
            self.show_result_text(Text("✘ The cloud has no IMAGE datastore to download into.", style="bold red"))
        self._form_changed()

    # ------------------------------------------------------------------ form and review

    def _datastore_id(self) -> int | None:
        value = self.query_one("#dl-datastore", Select).value
        return None if value is Select.NULL else int(value)  # type: ignore[arg-type]

    def _name_problem(self) -> str:
        try:
            check_name(self.query_one("#dl-name", Input).value)
        except SiteError as error:
            return f"{error.title}: {error.detail}"
        return ""

    @on(Select.Changed, "#dl-datastore")
    @on(Input.Changed, "#dl-name")
    def _form_changed(self) -> None:
        if self.operation is None or self._operation_of_form() != self.operation:
            self.invalidate()  # a change event that changes nothing (a Select set to its value) keeps the plan
        problem = self._name_problem()
        self.query_one("#dl-name-error", Label).update(Content(problem))
        ready = self.market_app is not None and self._datastore_id() is not None and not problem
        self.query_one("#dl-review", Button).disabled = not ready or self.running
        hint = "" if ready else ("Choose the IMAGE datastore." if self._datastore_id() is None else "")
        self.show_preview_text(Text(hint, style="dim"))

    @on(Input.Submitted, "#dl-name")
    def _name_submitted(self) -> None:
        if not self.query_one("#dl-review", Button).disabled:
            self.review()

    @on(Button.Pressed, "#dl-review")
    def review(self) -> None:
        operation = self._operation_of_form()
        if operation is None:
            return
        self.show_preview_text(Text("Planning…", style="dim"))
        self.plan_operation(operation)

    def _operation_of_form(self) -> DownloadAppliance | None:
        """The download the form describes now (None while it is incomplete or invalid)."""
        ds_id = self._datastore_id()
        if self.market_app is None or ds_id is None or self._name_problem():
            return None
        return DownloadAppliance(self.market_app.id, ds_id, self.query_one("#dl-name", Input).value,
                                 tag_for_record(self.entry.record))

    def show_plan(self, plan: DownloadPlan, preview: Preview) -> None:
        self.show_preview_text(Text(preview.as_text()))

    # ------------------------------------------------------------------ running

    def show_step(self, event: Progress) -> None:
        known = self.plan is not None and event.step in self.plan.step_names
        if known or event.step.startswith("rollback"):
            super().show_step(event)

    def show_result(self, result: DownloadResult) -> None:
        ids = ", ".join(str(i) for i in result.image_ids)
        text = Text.assemble(("✔ Downloaded ", "bold green"), (result.name, "bold"), f": image(s) {ids}")
        if result.template_ids:
            text.append(f", VM template(s) {', '.join(map(str, result.template_ids))}")
        if result.service_template_id is not None:
            text.append(f", service template {result.service_template_id}")
        text.append(". The marketplace attributes are attached.")
        self.show_result_text(text)

    def show_failure(self, error: SiteError) -> None:
        word = "Cancelled" if isinstance(error, DownloadCancelled) else "Failed"
        self.show_result_text(Text.assemble((f"✘ {word}: ", "bold red"), (error.title, "bold"), "\n",
                                            (error.detail, "")))

    def cancelling(self) -> None:
        self.show_result_text(Text("Cancelling: deleting what was created…", style="bold yellow"))
