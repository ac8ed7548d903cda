"""The toolkit form's field widgets: one line inputs (`ValidatedField`) and multi-line ones.

`MultilineField` is the multi-line sibling of `widgets.validated_field.ValidatedField` for the TLS
certificate and key: a label, the meaning as help, a `TextArea` and the reason it is invalid. A
secret one (the TLS key) is masked: the text area stays hidden behind a one-line summary until
the operator reveals it (the Show button or ctrl+r inside the field), so a key never shows by
accident in a shared terminal or a screenshot.

`field_widget(...)` picks the widget for a form field; `FieldWidget` is what both have in common
(value, validate, reason, focus), which is all the form screen uses; `field_help(field)` is the
help line under a field (the spec's meaning, then the template's own description).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Union

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Label, Static, TextArea

from tui.domain.toolkit_inputs import FormField
from widgets.secret_input import SecretInput
from widgets.validated_field import Check, CheckedField, FieldHead, ValidatedField

FieldWidget = Union[ValidatedField, "MultilineField"]

_ID_SAFE = re.compile(r"[^A-Za-z0-9_-]")


def widget_id(name: str) -> str:
    """A widget id for an input name (template input names may hold any character)."""
    return "in-" + _ID_SAFE.sub(lambda m: f"_{ord(m.group(0)):x}_", name)


class MultilineField(CheckedField):
    """Label, help, a multi-line text area (masked when secret) and the reason it is invalid."""

    DEFAULT_CSS = """
    MultilineField { height: auto; width: 1fr; margin: 0 0 1 0; }
    MultilineField > .field-label { width: 1fr; }
    MultilineField > Horizontal { height: auto; width: 1fr; }
    MultilineField > Horizontal > .field-box { width: 2fr; height: auto; }
    MultilineField > Horizontal > .field-box > TextArea { height: 5; width: 1fr; }
    MultilineField > Horizontal > .field-box > .field-masked { height: 3; width: 1fr; border: tall $border-blurred;
        padding: 0 1; color: $text-muted; }
    MultilineField > Horizontal > .field-box > Button { min-width: 8; width: 8; }
    MultilineField > Horizontal > .field-reason { width: 1fr; color: $text-error; padding: 1 0 0 1; min-height: 3; }
    MultilineField.-invalid > Horizontal > .field-box > TextArea { border: tall $error; }
    MultilineField.-invalid > Horizontal > .field-box > .field-masked { border: tall $error; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+r", "toggle_reveal", "Show/hide secret", id="secret.toggle-reveal")]

    revealed: reactive[bool] = reactive(False)

    @dataclass
    class Changed(Message):
        """The text changed and was validated (the message does not carry the value)."""
        field: "MultilineField"
        valid: bool

        @property
        def control(self) -> "MultilineField":
            return self.field

    def __init__(self, label: str, value: str = "", *, check: Check | None = None, secret: bool = False,
                 help: str = "", placeholder: str = "", id: str | None = None, classes: str | None = None,
                 validate_on_change: bool = True) -> None:
        super().__init__(check, id=id, classes=classes, validate_on_change=validate_on_change)
        self.label = label
        self._initial = value
        self._secret = secret
        self._help = help
        self._placeholder = placeholder

    def compose(self) -> ComposeResult:
        yield FieldHead(self.label, self._help, classes="field-label")
        with Horizontal():
            with Horizontal(classes="field-box"):
                yield TextArea(self._initial, soft_wrap=True, show_line_numbers=False, classes="field-input",
                               placeholder=self._placeholder)
                if self._secret:
                    yield Static(self._summary(self._initial), classes="field-masked")
                    yield Button("Show", classes="field-reveal", compact=True)
            yield Label("", classes="field-reason")

    def on_mount(self) -> None:
        self._show_masked(mounting=True)

    @staticmethod
    def _summary(value: str) -> Content:
        if not value:
            return Content("(empty: masked secret)")
        lines = len(value.splitlines()) or 1
        return Content(f"●●●●●●●● masked ({lines} line{'s' if lines != 1 else ''}, {len(value)} characters)")

    def _show_masked(self, mounting: bool = False) -> None:
        if not self._secret or not (mounting or self.is_mounted):
            return
        area = self.query_one(TextArea)
        area.display = self.revealed
        masked = self.query_one(".field-masked", Static)
        masked.display = not self.revealed
        masked.update(self._summary(area.text))
        self.query_one(".field-reveal", Button).label = "Hide" if self.revealed else "Show"

    def watch_revealed(self, _: bool) -> None:
        self._show_masked()

    def action_toggle_reveal(self) -> None:
        if self._secret:
            self.revealed = not self.revealed
            if self.revealed:
                self.query_one(TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.has_class("field-reveal"):
            event.stop()
            self.action_toggle_reveal()

    @property
    def value(self) -> str:
        return self.query_one(TextArea).text if self.is_mounted else self._initial

    @value.setter
    def value(self, new: str) -> None:
        if self.is_mounted:
            self.query_one(TextArea).load_text(new)
            self._show_masked()
        else:
            self._initial = new

    def focus(self, scroll_visible: bool = True) -> "MultilineField":
        if self._secret and not self.revealed:
            self.query_one(".field-reveal", Button).focus(scroll_visible)
        else:
            self.query_one(TextArea).focus(scroll_visible)
        return self

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        valid = self._checked()
        self.post_message(self.Changed(self, valid))


def field_widget(label: str, value: str, *, check: Check, secret: bool, multiline: bool, help: str,
                 id: str, placeholder: str = "") -> FieldWidget:
    """The form's widget for a field; the form checks its fields together at each change."""
    if multiline:
        return MultilineField(label, value, check=check, secret=secret, help=help, id=id, placeholder=placeholder,
                              validate_on_change=False)
    return ValidatedField(label, value, check=check, secret=secret, help=help, id=id, placeholder=placeholder,
                          validate_on_change=False)


def secret_revealed(widget: FieldWidget) -> bool:
    """Whether a secret field currently shows its value."""
    if isinstance(widget, MultilineField):
        return widget.revealed
    found = widget.query(SecretInput)
    return bool(found) and found.first().revealed


def field_help(field: FormField) -> str:
    """The spec's meaning, then the template's own description when it says something else."""
    def norm(text: str) -> str:
        return " ".join(text.lower().rstrip(".").split())

    meaning = field.meaning.meaning if field.meaning else ""
    described = field.spec.description
    parts = [meaning] if meaning else []
    if described and norm(described) not in norm(meaning):
        parts.append(f"Template: {described.rstrip('.')}." if meaning else described)
    if field.spec.problem:
        parts.append(f"(the template's description is unreadable: {field.spec.problem})")
    return " ".join(parts) or field.name
