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
from typing import ClassVar, Iterable

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Input, Label, Static

from tui.domain.printable import escape_controls as shown
from tui.errors import SiteError
from tui.procedures.market.attributes import (
    FAILED,
    UNCHANGED,
    UPDATED,
    AttachAttributes,
    Attached,
    AttachLedger,
    AttachPlan,
    ImageResult,
    OutputFileExists,
    attribute_text,
    default_file_name,
    default_targets,
    tag_for_record,
    write_attribute_file,
)
from tui.procedures.market.marketplaces import CatalogEntry
from tui.procedures.preview import Preview
from tui.screens.error_text import error_text
from tui.screens.operation_modal import OperationModal
from widgets.confirm_modal import ConfirmModal

_IDS = re.compile(r"^\s*\d+(\s*[, ]\s*\d+)*\s*$")
RESULT_LOOKS = {UPDATED: ("✔ updated", "green"), UNCHANGED: ("↷ unchanged", "cyan"), FAILED: ("✘ failed", "bold red")}


def parse_ids(text: str) -> tuple[int, ...]:
    """`"3, 4 5"` -> (3, 4, 5); raises ValueError on anything else."""
    if not text.strip():
        return ()
    if not _IDS.match(text):
        raise ValueError("image IDs are numbers separated by commas or spaces")
    return tuple(dict.fromkeys(int(part) for part in re.split(r"[,\s]+", text.strip()) if part))


class AttributesModal(OperationModal[AttachPlan, Attached]):
    """Attach an appliance's marketplace attributes to images (see the module docstring)."""

    PREFIX = "at"
    RUN_BUTTON = "apply"
    AUTO_FOCUS = "#at-images"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close", id="attributes.close")]
    DEFAULT_CSS = """
    AttributesModal > Vertical { width: 100; height: 90%; }
    AttributesModal #at-title { text-style: bold; width: 1fr; }
    AttributesModal .at-label { margin: 1 0 0 0; text-style: bold; }
    AttributesModal #at-file { border: round $panel-lighten-2; padding: 0 1; width: 1fr; height: auto; }
    AttributesModal #at-body { height: 1fr; }
    AttributesModal #at-images-error { color: $text-error; height: auto; width: 1fr; }
    AttributesModal #at-preview, AttributesModal #at-results { width: 1fr; height: auto; margin: 1 0 0 0; }
    AttributesModal #at-write { height: auto; margin: 1 0 0 0; }
    AttributesModal #at-path { width: 1fr; }
    AttributesModal #at-write Button { margin: 0 0 0 2; }
    """

    def __init__(self, entry: CatalogEntry, *, read_only: bool = False) -> None:
        super().__init__()
        self.entry = entry
        self.read_only = read_only
        self.tag = tag_for_record(entry.record)

    def compose(self) -> ComposeResult:
        record = self.entry.record
        naming = self.shell.site.naming
        text = attribute_text(self.tag, naming)
        targets = default_targets(self.entry.status)
        with Vertical():
            yield Label(Content(shown(f"Marketplace attributes of {record.name} {record.parsed_version.label}")),
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
            with Horizontal(id="at-buttons", classes="op-buttons"):
                yield Button("Close", id="at-close")
                yield Button("Review", id="at-review", variant="primary")
                yield Button("Apply", id="at-apply", variant="success")

    def on_mount(self) -> None:
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
        ids = self._ids()
        if isinstance(self.operation, AttachAttributes) and ids == self.operation.image_ids:
            return  # the same images (the field announcing its first value): the plan holds
        self.invalidate()

    @on(Input.Submitted, "#at-images")
    @on(Button.Pressed, "#at-review")
    def review(self) -> None:
        ids = self._ids()
        if not ids:
            if ids == ():
                self.query_one("#at-images-error", Label).update(Content("Type at least one image ID."))
            return
        self.show_preview_text(Text("Reading the images…", style="dim"))
        self.plan_operation(AttachAttributes(self.tag, ids, self.query_one("#at-path", Input).value))

    def apply(self) -> None:
        """Apply the reviewed plan (the Apply button)."""
        self.start()

    def paint_buttons(self, phase: str) -> None:
        apply = self.query_one("#at-apply", Button)
        apply.display = not self.read_only
        apply.disabled = self.read_only or phase != "ready" or self.plan is None or not self.plan.to_update

    def show_plan(self, plan: AttachPlan, preview: Preview) -> None:
        self.show_preview_text(Text(preview.as_text()))
        self.paint_buttons(self.phase)

    # ------------------------------------------------------------------ apply

    def run_started(self, plan: AttachPlan) -> None:
        self.show_result_text(Text("Applying…", style="dim"))

    def show_result(self, result: Attached) -> None:
        self.show_result_text(results_table(result.images))
        self.query_one("#at-close", Button).focus()

    def show_failure(self, error: SiteError) -> None:
        """The images the run reached (its `AttachLedger`: a failure returns no `Attached`), then the error."""
        ledger = self.change.context.kept(AttachLedger) if self.change is not None else None
        self.show_result_text(_stack(results_table(ledger.images if ledger is not None else ()), error_text(error)))
        self.query_one("#at-close", Button).focus()

    def show_result_text(self, renderable: object) -> None:
        self.query_one("#at-results", Static).update(renderable)  # type: ignore[arg-type]

    def close_while_running(self) -> None:
        """Closing waits for the images being updated (each update is one platform call)."""

    # ------------------------------------------------------------------ file

    @on(Button.Pressed, "#at-write-file")
    @on(Input.Submitted, "#at-path")
    def write_file(self) -> None:
        self._write_file(force=False)

    def _write_file(self, force: bool) -> None:
        """Write the attribute file; an existing file or a symlink is replaced only once confirmed."""
        path = self.query_one("#at-path", Input).value.strip()
        text = attribute_text(self.tag, self.shell.site.naming)
        try:
            written = write_attribute_file(text, path, force=force)
        except OutputFileExists as exists:
            what = "the symbolic link" if exists.symlink else "the file"

            def answered(replace: bool | None) -> None:
                if replace:
                    self._write_file(force=True)

            self.app.push_screen(ConfirmModal("Replace", str(exists.path),
                                              detail=f"{exists.path} exists: replace {what} with the attribute file "
                                              "(atomically; a link is replaced, not followed)?"), answered)
            return
        except SiteError as error:
            self.app.notify(error.detail, title=error.title, severity="error", markup=False)
            return
        self.app.notify(str(written), title="Attribute file written", markup=False)

def results_table(images: Iterable[ImageResult]) -> Table:
    """One row per image: its ID, name and what the run did to it (the error of a failed one)."""
    table = Table("IMAGE", "NAME", "RESULT", box=None, padding=(0, 1), header_style="bold")
    for image in images:
        word, style = RESULT_LOOKS[image.result]
        detail = f"  {image.error}" if image.error else ""
        table.add_row(Text(str(image.image_id)), Text(image.name), Text(word + detail, style=style))
    return table


def _stack(*parts: object) -> Table:
    grid = Table.grid()
    for part in parts:
        grid.add_row(part)  # type: ignore[arg-type]
    return grid
