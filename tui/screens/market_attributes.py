"""The attributes flow (operation 1) as a modal: the file, the images, review, apply, results.

It shows the attribute file exactly as it will be applied (three `KEY="value"` lines), the image
IDs it goes to (prefilled with the images that look like the appliance and carry no attributes,
plus those already tagged with this version), and after a review the preview: per image, what
it carries now and the equivalent `oneimage update <id> <file> --append`. Apply updates each
image that needs it (merge mode; the others are reported unchanged) and lists a result per
image. The file can be written to disk (no extension) at any time, read-only mode included;
applying is hidden in read-only mode. Returns True when it changed the cloud.
"""

from __future__ import annotations

import re
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from tui.errors import SiteError
from tui.procedures.attach_attributes import (
    FAILED,
    UNCHANGED,
    UPDATED,
    AttachPlan,
    attach_attributes,
    attribute_text,
    default_file_name,
    default_targets,
    plan_attach,
    tag_for_record,
    write_attribute_file,
)
from tui.procedures.marketplace import CatalogEntry
from tui.procedures.progress import Progress
from tui.screens.error_text import error_text

_IDS = re.compile(r"^\s*\d+(\s*[, ]\s*\d+)*\s*$")
RESULT_LOOKS = {UPDATED: ("✔ updated", "green"), UNCHANGED: ("↷ unchanged", "cyan"), FAILED: ("✘ failed", "bold red")}


def parse_ids(text: str) -> tuple[int, ...]:
    """`"3, 4 5"` -> (3, 4, 5); raises ValueError on anything else."""
    if not text.strip():
        return ()
    if not _IDS.match(text):
        raise ValueError("image IDs are numbers separated by commas or spaces")
    return tuple(dict.fromkeys(int(part) for part in re.split(r"[,\s]+", text.strip()) if part))


class AttributesModal(ModalScreen[bool]):
    """Attach an appliance's marketplace attributes to images (see the module docstring)."""

    AUTO_FOCUS = "#at-images"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="attributes.close")]
    DEFAULT_CSS = """
    AttributesModal { align: center middle; }
    AttributesModal > Vertical {
        width: 100; max-width: 95%; height: 90%;
        border: thick $primary; background: $surface; padding: 1 2;
    }
    AttributesModal #at-title { text-style: bold; width: 1fr; }
    AttributesModal .at-label { margin: 1 0 0 0; text-style: bold; }
    AttributesModal #at-file { border: round $panel-lighten-2; padding: 0 1; width: 1fr; height: auto; }
    AttributesModal #at-body { height: 1fr; }
    AttributesModal #at-images-error { color: $text-error; height: auto; width: 1fr; }
    AttributesModal #at-preview, AttributesModal #at-results { width: 1fr; height: auto; margin: 1 0 0 0; }
    AttributesModal #at-write { height: auto; margin: 1 0 0 0; }
    AttributesModal #at-path { width: 1fr; }
    AttributesModal #at-buttons { height: auto; margin: 1 0 0 0; align: right middle; }
    AttributesModal #at-buttons Button, AttributesModal #at-write Button { margin: 0 0 0 2; }
    """

    class Planned(Message):
        def __init__(self, plan: AttachPlan | None, error: SiteError | None) -> None:
            super().__init__()
            self.plan = plan
            self.error = error

    class Applied(Message):
        def __init__(self, events: list[Progress], error: SiteError | None) -> None:
            super().__init__()
            self.events = events
            self.error = error

    def __init__(self, entry: CatalogEntry, *, read_only: bool = False) -> None:
        super().__init__()
        self.entry = entry
        self.read_only = read_only
        self.tag = tag_for_record(entry.record)
        self.plan: AttachPlan | None = None
        self.changed = False
        self.busy = False

    def compose(self) -> ComposeResult:
        record = self.entry.record
        naming = self.app.site.naming  # type: ignore[attr-defined]
        text = attribute_text(self.tag, naming)
        targets = default_targets(self.entry.status)
        with Vertical():
            yield Label(Content(f"Marketplace attributes of {record.name} {record.parsed_version.label}"),
                        id="at-title")
            with VerticalScroll(id="at-body"):
                yield Label("Attribute file (no extension; applied in merge mode)", classes="at-label")
                yield Static(Text(text.rstrip("\n")), id="at-file")
                yield Label("Image IDs", classes="at-label")
                yield Input(", ".join(map(str, targets)), placeholder="image IDs, e.g. 12, 13", id="at-images")
                yield Label("", id="at-images-error")
                yield Static("", id="at-preview")
                yield Static("", id="at-results")
                with Horizontal(id="at-write"):
                    yield Input(default_file_name(self.tag), placeholder="path of the file to write", id="at-path")
                    yield Button("Write file", id="at-write-file")
            with Horizontal(id="at-buttons"):
                yield Button("Close", id="at-close")
                yield Button("Review", id="at-review", variant="primary")
                yield Button("Apply", id="at-apply", variant="success")

    def on_mount(self) -> None:
        apply = self.query_one("#at-apply", Button)
        apply.disabled = True
        apply.display = not self.read_only
        if not default_targets(self.entry.status):
            self.query_one("#at-preview", Static).update(Text(
                "No image of this appliance was found: download it first, or type the IDs of the images "
                "it was downloaded into.", style="dim"))
        else:
            self.review()

    # ------------------------------------------------------------------ review

    def _ids(self) -> tuple[int, ...] | None:
        try:
            ids = parse_ids(self.query_one("#at-images", Input).value)
        except ValueError as exc:
            self.query_one("#at-images-error", Label).update(Content(str(exc)))
            return None
        self.query_one("#at-images-error", Label).update(Content(""))
        return ids

    @on(Input.Changed, "#at-images")
    def _images_changed(self) -> None:
        self.plan = None
        self.query_one("#at-apply", Button).disabled = True
        self._ids()

    @on(Input.Submitted, "#at-images")
    @on(Button.Pressed, "#at-review")
    def review(self) -> None:
        ids = self._ids()
        if not ids:
            if ids == ():
                self.query_one("#at-images-error", Label).update(Content("Type at least one image ID."))
            return
        self.query_one("#at-preview", Static).update(Text("Reading the images…", style="dim"))
        self._plan_worker(ids)

    @work(exclusive=True, group="attributes-plan", exit_on_error=False)
    async def _plan_worker(self, ids: tuple[int, ...]) -> None:
        try:
            plan = await plan_attach(self.app.site, self.tag, ids)  # type: ignore[attr-defined]
        except SiteError as error:
            self.post_message(self.Planned(None, error))
            return
        self.post_message(self.Planned(plan, None))

    @on(Planned)
    def _planned(self, message: Planned) -> None:
        preview = self.query_one("#at-preview", Static)
        if message.error is not None:
            preview.update(error_text(message.error))
            return
        assert message.plan is not None
        self.plan = message.plan
        preview.update(Text(message.plan.preview(self.query_one("#at-path", Input).value).as_text()))
        apply = self.query_one("#at-apply", Button)
        apply.disabled = self.read_only or not message.plan.to_update
        if not apply.disabled:
            apply.focus()

    # ------------------------------------------------------------------ apply

    @on(Button.Pressed, "#at-apply")
    def apply(self) -> None:
        if self.plan is None or self.read_only or self.busy:
            return
        self.busy = True
        self.query_one("#at-apply", Button).disabled = True
        self.query_one("#at-results", Static).update(Text("Applying…", style="dim"))
        self.changed = True
        self._apply_worker(self.plan)

    @work(exclusive=True, group="attributes-apply", exit_on_error=False)
    async def _apply_worker(self, plan: AttachPlan) -> None:
        events: list[Progress] = []
        try:
            async for event in attach_attributes(self.app.site, plan):  # type: ignore[attr-defined]
                events.append(event)
        except SiteError as error:
            self.post_message(self.Applied(events, error))
            return
        self.post_message(self.Applied(events, None))

    @on(Applied)
    def _applied(self, message: Applied) -> None:
        self.busy = False
        table = Table("IMAGE", "NAME", "RESULT", box=None, padding=(0, 1), header_style="bold")
        names = {t.image_id: t.name for t in (self.plan.targets if self.plan else ())}
        for event in message.events:
            outcome = event.data.get("result")
            if outcome not in RESULT_LOOKS:
                continue
            word, style = RESULT_LOOKS[outcome]
            image_id = int(event.data.get("image_id", -1))
            detail = f"  {event.data['error']}" if event.data.get("error") else ""
            table.add_row(Text(str(image_id)), Text(names.get(image_id, "")), Text(word + detail, style=style))
        results = self.query_one("#at-results", Static)
        if message.error is not None:
            results.update(_stack(table, error_text(message.error)))
        else:
            results.update(table)
        self.query_one("#at-close", Button).focus()

    # ------------------------------------------------------------------ file

    @on(Button.Pressed, "#at-write-file")
    @on(Input.Submitted, "#at-path")
    def write_file(self) -> None:
        path = self.query_one("#at-path", Input).value.strip()
        text = attribute_text(self.tag, self.app.site.naming)  # type: ignore[attr-defined]
        try:
            written = write_attribute_file(text, path)
        except SiteError as error:
            self.app.notify(error.detail, title=error.title, severity="error", markup=False)
            return
        self.app.notify(str(written), title="Attribute file written", markup=False)

    @on(Button.Pressed, "#at-close")
    def action_close(self) -> None:
        if self.busy:
            return
        self.dismiss(self.changed)


def _stack(*parts: object) -> Table:
    grid = Table.grid()
    for part in parts:
        grid.add_row(part)  # type: ignore[arg-type]
    return grid
