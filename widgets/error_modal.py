"""A modal that shows a failure in full: a title, a scrollable read-only text and a copy button.

The detail sits in a read-only `TextArea`, so long tracebacks or server messages scroll and can be
selected; "Copy" puts the whole text on the clipboard through the terminal (OSC 52).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Label, TextArea

from widgets.dialog import Dialog


class ErrorModal(Dialog[None]):
    """Show `title` and `detail`; escape or Close dismisses it."""

    AUTO_FOCUS = "#error-close"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="error.close"),
        Binding("c", "copy", "Copy", id="error.copy"),
    ]

    DEFAULT_CSS = """
    ErrorModal { align: center middle; }
    ErrorModal > Vertical {
        width: 90; max-width: 95%; height: auto; max-height: 90%;
        border: thick $error; background: $surface; padding: 1 2;
    }
    ErrorModal #error-title { text-style: bold; color: $text-error; width: 1fr; }
    ErrorModal TextArea { height: auto; max-height: 20; min-height: 3; margin: 1 0 0 0; }
    ErrorModal Horizontal { height: auto; margin: 1 0 0 0; align: right middle; }
    ErrorModal Button { margin: 0 0 0 2; }
    """

    def __init__(self, title: str, detail: str) -> None:
        super().__init__()
        self.error_title = title
        self.detail = detail

    @property
    def copy_text(self) -> str:
        return f"{self.error_title}\n\n{self.detail}" if self.detail else self.error_title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content(self.error_title), id="error-title")
            yield TextArea(self.detail, read_only=True, soft_wrap=True, id="error-detail", classes="dialog-body")
            with Horizontal(classes="dialog-buttons"):  # docked: in sight under a long detail (80x24)
                yield Button("Copy", id="error-copy")
                yield Button("Close", id="error-close", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "error-copy":
            self.action_copy()
        else:
            self.dismiss(None)

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.copy_text)
        self.notify("Error text copied to the clipboard", timeout=2)

    def action_close(self) -> None:
        self.dismiss(None)
