"""A masked input with a reveal toggle, for passwords and tokens.

The value is masked by default; the eye button (or ctrl+r while the input has focus) shows it
until toggled again. The widget never logs or echoes the value anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Input

from widgets.field_input import FieldInput


class SecretInput(Horizontal):
    """An `Input(password=True)` plus a Show/Hide button."""

    DEFAULT_CSS = """
    SecretInput { height: auto; width: 1fr; }
    SecretInput > Input { width: 1fr; }
    SecretInput > Button { min-width: 8; width: 8; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+r", "toggle_reveal", "Show/hide secret", id="secret.toggle-reveal")]

    revealed: reactive[bool] = reactive(False)

    @dataclass
    class Changed(Message):
        """The secret changed (the message does not carry the value; read `secret_input.value`)."""
        secret_input: "SecretInput"

        @property
        def control(self) -> "SecretInput":
            return self.secret_input

    def __init__(self, value: str = "", *, placeholder: str = "", id: str | None = None,
                 classes: str | None = None, disabled: bool = False) -> None:
        super().__init__(id=id, classes=classes, disabled=disabled)
        self._initial = value
        self._placeholder = placeholder

    def compose(self) -> ComposeResult:
        yield FieldInput(self._initial, placeholder=self._placeholder, password=True, id="secret-value")
        yield Button("Show", id="secret-reveal", compact=True)

    @property
    def input(self) -> Input:
        return self.query_one("#secret-value", Input)

    @property
    def value(self) -> str:
        return self.input.value if self.is_mounted else self._initial

    @value.setter
    def value(self, new: str) -> None:
        if self.is_mounted:
            self.input.value = new
        else:
            self._initial = new

    def focus(self, scroll_visible: bool = True) -> "SecretInput":
        self.input.focus(scroll_visible)
        return self

    def watch_revealed(self, revealed: bool) -> None:
        if not self.is_mounted:
            return
        self.input.password = not revealed
        self.query_one("#secret-reveal", Button).label = "Hide" if revealed else "Show"

    def action_toggle_reveal(self) -> None:
        self.revealed = not self.revealed

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "secret-reveal":
            event.stop()
            self.action_toggle_reveal()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self))
