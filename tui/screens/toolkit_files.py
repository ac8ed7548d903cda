"""The load / save dialog of the toolkit input file (the toolkit form's and the setup screen's).

`InputFileModal("load" | "save", path, help=...)` asks for a path (and, when saving, whether to
leave the secrets out: they are then asked for at deploy time, by the form or by `sitetk toolkit
deploy`); `help` replaces the line under the title (the setup screen says where secrets left out
are asked for there). Its result is a `FileChoice`, or None when cancelled. Saving over an existing file or a symlink is
confirmed by name first, Cancel being the default (the safe writer then replaces it atomically,
never writing through the link).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Checkbox, Input, Label, Static

from tui.screens.site_modal import SiteModal
from widgets.confirm_modal import ConfirmModal
from widgets.field_input import FieldInput

Mode = Literal["load", "save"]


@dataclass(frozen=True)
class FileChoice:
    path: str
    omit_secrets: bool = True


class InputFileModal(SiteModal["FileChoice | None"]):
    """Ask for the input file's path (see the module docstring)."""

    AUTO_FOCUS = "#file-path"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="input-file.cancel")]

    DEFAULT_CSS = """
    InputFileModal { align: center middle; }
    InputFileModal > Vertical {
        width: 84; max-width: 95%; height: auto; max-height: 95%; border: thick $primary; background: $surface;
        padding: 1 2;
    }
    InputFileModal #file-title { text-style: bold; width: 1fr; }
    InputFileModal #file-help { color: $text-muted; width: 1fr; margin: 0 0 1 0; }
    InputFileModal #file-error { color: $text-error; width: 1fr; height: auto; }
    InputFileModal .dialog-buttons { margin: 1 0 0 0; align: right middle; }
    InputFileModal Button { margin: 0 0 0 2; }
    """

    def __init__(self, mode: Mode, path: str = "", help: str = "") -> None:
        super().__init__()
        self.mode = mode
        self._path = path
        self._help = help

    def compose(self) -> ComposeResult:
        saving = self.mode == "save"
        with Vertical():
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="file-cancel")
                yield Button("Save" if saving else "Load", id="file-ok", variant="primary")
            with VerticalScroll(classes="dialog-body"):
                yield from self._fields(saving)

    def _fields(self, saving: bool) -> ComposeResult:
        yield Label("Save the input file" if saving else "Load an input file", id="file-title")
        default_help = (
            "The spec's JSON shape (name, custom_attrs_values, networks_values), written mode 0600."
            if saving else
            "A file in the spec's JSON shape. Secrets it leaves out stay empty: type them in the form.")
        yield Static(Content(self._help or default_help), id="file-help")
        yield FieldInput(self._path, placeholder="path/to/toolkit-inputs.json", id="file-path")
        if saving:
            yield Checkbox("Leave the secrets out (asked for when a step needs them)", True, id="file-omit")
        yield Static("", id="file-error")

    def _choice(self) -> FileChoice | None:
        path = self.query_one("#file-path", Input).value.strip()
        if not path:
            self.query_one("#file-error", Static).update("Give a path.")
            return None
        omit = self.query_one("#file-omit", Checkbox).value if self.mode == "save" else True
        return FileChoice(path, omit)

    def _submit(self) -> None:
        choice = self._choice()
        if choice is None:
            return
        target = Path(choice.path).expanduser()
        if self.mode == "save" and (target.is_symlink() or target.exists()) and not target.is_dir():
            link = target.is_symlink()

            def answered(confirmed: bool | None) -> None:
                if confirmed:
                    self.dismiss(choice)

            detail = ("It is a symbolic link; saving replaces the link with the file (the file it points at is "
                      "left as it is)." if link else "The file exists; saving replaces its content.")
            self.app.push_screen(ConfirmModal("Overwrite", str(target), detail=detail), answered)
            return
        self.dismiss(choice)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "file-ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
