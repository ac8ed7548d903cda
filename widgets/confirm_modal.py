"""A confirmation that names the object it acts on and defaults to Cancel.

`ConfirmModal(action="Terminate", object_name="VM 12 web-1", detail=..., command=...)` is a modal
screen whose result is True only when the operator presses the action button. Cancel has the
focus when it opens, and escape cancels, so a stray enter never destroys anything. Its text scrolls
and its buttons stay in sight at any size (80x24 and up); each button has its accelerator key
(`widgets.dialog`: c cancels, the action's first letter confirms).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Button, Label, Static

from widgets.dialog import Dialog


class ConfirmModal(Dialog[bool]):
    """Ask "<action> <object>?"; True when confirmed."""

    AUTO_FOCUS = "#cancel"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="confirm.cancel")]

    DEFAULT_CSS = """
    ConfirmModal { align: center middle; }
    ConfirmModal > Vertical {
        width: 72; max-width: 90%; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ConfirmModal #confirm-title { text-style: bold; width: 1fr; }
    ConfirmModal #confirm-object { color: $text-warning; text-style: bold; margin: 1 0 0 0; width: 1fr; }
    ConfirmModal #confirm-detail { margin: 1 0 0 0; width: 1fr; }
    ConfirmModal #confirm-command { margin: 1 0 0 0; color: $text-muted; width: 1fr; }
    ConfirmModal #confirm-buttons { margin: 1 0 0 0; align: right middle; }
    ConfirmModal Button { margin: 0 0 0 2; }
    """

    def __init__(self, action: str, object_name: str, *, detail: str = "", command: str = "",
                 destructive: bool = True) -> None:
        """`action` is the verb on the button ("Terminate"); `object_name` names the target
        exactly as the operator knows it; `command` is the equivalent platform CLI command."""
        super().__init__()
        self.action_label = action
        self.object_name = object_name
        self.detail = detail
        self.command = command
        self.destructive = destructive

    def compose(self) -> ComposeResult:
        with Vertical():
            with Horizontal(id="confirm-buttons", classes="dialog-buttons"):
                yield Button("Cancel", id="cancel", variant="default")
                yield Button(Content(self.action_label), id="confirm",
                             variant="error" if self.destructive else "primary")
            with VerticalScroll(id="confirm-body", classes="dialog-body"):
                yield Label(Content(f"{self.action_label}?"), id="confirm-title")
                yield Label(Content(self.object_name), id="confirm-object")
                if self.detail:
                    yield Static(Content(self.detail), id="confirm-detail")
                if self.command:
                    yield Static(Content(f"$ {self.command}"), id="confirm-command")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm")

    def action_cancel(self) -> None:
        self.dismiss(False)
