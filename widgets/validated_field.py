"""A form field: a label, an input (plain or secret) and the reason it is invalid, next to it.

`ValidatedField(label, check=...)` runs `check(value) -> reason | None` on every change and shows
the reason beside the input. A form blocks submission with `first_invalid(form)` (validate every
field, focus the first invalid one, return it) so the operator lands on what to fix.
`CheckedField` is what every such field shares (the check, the reason shown in a `.field-reason`
label, the `-invalid` class); a field with another kind of input (a multi-line one) derives
from it and provides `value`. A form that checks its fields together (the toolkit form: the TLS
pair, the insecure flag against the endpoints) builds them with `validate_on_change=False`, checks
the whole form once per keystroke and hands each field its reason (`show_reason`): each field
checking itself asked the form for every problem once more per keystroke.

`show_text(label, content)` changes a label's text and lays the screen out again only when the
label's height changes: a reason that appears, changes or goes at the same number of lines repaints
the label alone (a layout of the toolkit form is some 180 widgets, then a second one for the sizes
it changed). A reason label is at least the input's height (`min-height: 3`): a reason of one or
two lines never lays out. An error that changes while the operator types (a URL's host, then its
port: 5 lines, then 4 beside the input at 80x24), or goes while the field has the focus, keeps
the height it had until the field is left (`show_text(..., hold=True)`, `fit_text`): the form does
not jump at each key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.dom import DOMNode
from textual.message import Message
from textual.widgets import Input, Label, Static

from widgets.field_input import FieldInput
from widgets.secret_input import SecretInput

Check = Callable[[str], "str | None"]


def _always_valid(_: str) -> str | None:
    return None


class FieldHead(Label):
    """A field's name in bold and, under it, its help in the muted colour: one label where there
    were two (a form's layout, its focus chain and each key a pilot test presses walk every widget
    of the screen). The help's colour is the CSS `$text-muted` over the field's background."""

    COMPONENT_CLASSES = {"field-head--help"}
    DEFAULT_CSS = """
    FieldHead { width: 1fr; }
    FieldHead > .field-head--help { color: $text-muted; }
    """

    def __init__(self, label: str, help: str = "", *, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self._label = label
        self._help = help

    def render(self) -> Content:
        head = Content(self._label).stylize("bold")
        if not self._help:
            return head
        return Content.assemble(head, "\n", Content(self._help).stylize(self.get_visual_style("field-head--help")))


def show_text(label: Static, content: Content, *, hold: bool = False) -> bool:
    """Show `content` in `label`; lay the screen out again only when the label's height changes
    (its width never depends on its text here: every caller's is set by CSS). `hold`: a shorter
    text keeps the label's height (blank lines under it) rather than lay the screen out; returns
    True when the label is left taller than its text (`fit_text` later gives it its own height)."""
    size = label.content_size if label.is_mounted else None
    if size is None or size.width <= 0 or label.styles.max_height is not None:
        label.update(content, layout=True)
        return False
    rules: Any = label.styles  # what Textual's layout measures a label's text with (Widget.get_content_height)
    lines = content.get_height(rules, size.width)
    floor = label.styles.min_height  # a reason label reserves its input's height (min-height: 3)
    if floor is not None and floor.is_cells:
        lines = max(lines, int(floor.value) - label.styles.gutter.height)
    held = hold and lines < size.height
    label.update(content, layout=not held and lines != size.height)
    return held


def fit_text(label: Static) -> None:
    """Give a label left taller than its text by `show_text(..., hold=True)` its own height."""
    if label.is_mounted:
        label.refresh(layout=True)


class CheckedField(Vertical):
    """A field whose `value` is checked by `check(value) -> reason | None`; the reason is shown in
    its `.field-reason` label and the field has the class `-invalid` while there is one."""

    def __init__(self, check: Check | None = None, *, id: str | None = None, classes: str | None = None,
                 validate_on_change: bool = True) -> None:
        super().__init__(id=id, classes=classes)
        self._check: Check = check or _always_valid
        #: False: the form that holds the field checks it at each change (`show_reason`)
        self._validate_on_change = validate_on_change
        self._reason: str | None = None
        #: the reason its label shows: a form checks every touched field at each keystroke, and
        #: painting the same reason again laid the whole form out again
        self._shown = ""
        #: the reason label is taller than its reason (kept while the operator types; `show_reason`)
        self._held = False

    @property
    def value(self) -> str:
        raise NotImplementedError

    @property
    def reason(self) -> str | None:
        """The reason of the last validation (None: valid)."""
        return self._reason

    @property
    def is_valid(self) -> bool:
        return self._check(self.value) is None

    def validate(self) -> bool:
        """Check the value now, show the reason (or clear it) and return validity."""
        return self.show_reason(self._check(self.value))

    def show_reason(self, reason: str | None) -> bool:
        """Show `reason` (None: valid) as the field's own, found by the form that checks its fields
        together; return validity."""
        self._reason = reason
        if self.is_mounted:
            if (reason or "") != self._shown:
                # an error that changes or goes as the operator types (a URL's host, then its port,
                # then valid, ...) keeps the height it had until the field is left: the form does not
                # jump at each key (nor lay out and redraw its ~180 widgets, the whole screen over SSH)
                hold = bool(self._shown) and (reason is not None or self.has_focus_within)
                self._shown = reason or ""
                self._held = show_text(self._reason_label(), Content(self._shown), hold=hold)
            self.set_class(reason is not None, "-invalid")
        return reason is None

    def _reason_label(self) -> Label:
        return self.query_one(".field-reason", Label)

    def on_descendant_blur(self, _: events.DescendantBlur) -> None:
        """Leaving the field: an error kept taller than its text (`show_reason`) gets its own height."""
        if self._held:
            self._held = False
            fit_text(self._reason_label())

    def _checked(self) -> bool:
        """Validity after a change: checked now, or the last reason when the form checks it."""
        return self.validate() if self._validate_on_change else self._reason is None


class ValidatedField(CheckedField):
    """Label, input and reason. `is_valid` and `reason` reflect the last validation."""

    DEFAULT_CSS = """
    ValidatedField { height: auto; width: 1fr; margin: 0 0 1 0; }
    ValidatedField > .field-label { width: 1fr; }
    ValidatedField > Horizontal { height: auto; width: 1fr; }
    ValidatedField > Horizontal > Input, ValidatedField > Horizontal > SecretInput { width: 2fr; }
    ValidatedField > Horizontal > .field-reason { width: 1fr; color: $text-error; padding: 1 0 0 1; min-height: 3; }
    ValidatedField.-invalid > Horizontal > Input { border: tall $error; }
    """

    @dataclass
    class Changed(Message):
        """The value changed and was validated."""
        field: "ValidatedField"
        valid: bool

        @property
        def control(self) -> "ValidatedField":
            return self.field

    def __init__(self, label: str, value: str = "", *, check: Check | None = None, secret: bool = False,
                 placeholder: str = "", help: str = "", id: str | None = None, classes: str | None = None,
                 validate_initial: bool = False, validate_on_change: bool = True) -> None:
        super().__init__(check, id=id, classes=classes, validate_on_change=validate_on_change)
        self.label = label
        self._initial = value
        self._secret = secret
        self._placeholder = placeholder
        self._help = help
        self._validate_initial = validate_initial
        self._touched = False
        #: the input, once composed (`value` reads it at every keystroke of the form: no query)
        self._control: FieldInput | SecretInput | None = None

    def compose(self) -> ComposeResult:
        yield FieldHead(self.label, self._help, classes="field-label")
        with Horizontal():
            if self._secret:
                self._control = SecretInput(self._initial, placeholder=self._placeholder, classes="field-input")
            else:
                self._control = FieldInput(self._initial, placeholder=self._placeholder, classes="field-input")
            yield self._control
            yield Label("", classes="field-reason")

    def on_mount(self) -> None:
        if self._validate_initial:
            self.validate()

    @property
    def value(self) -> str:
        return self._control.value if self._control is not None and self.is_mounted else self._initial

    @value.setter
    def value(self, new: str) -> None:
        if self._control is not None and self.is_mounted:
            self._control.value = new
        else:
            self._initial = new

    def focus(self, scroll_visible: bool = True) -> "ValidatedField":
        if self._control is not None:
            self._control.focus(scroll_visible)
        return self

    def _changed(self) -> None:
        self._touched = True
        valid = self._checked()
        self.post_message(self.Changed(self, valid))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._changed()

    def on_secret_input_changed(self, event: SecretInput.Changed) -> None:
        event.stop()
        self._changed()


def first_invalid(form: DOMNode, *, focus: bool = True) -> ValidatedField | None:
    """Validate every field under `form`; focus and return the first invalid one (None: all valid)."""
    first: ValidatedField | None = None
    for field in form.query(ValidatedField):
        if not field.validate() and first is None:
            first = field
    if first is not None and focus:
        first.focus()
    return first
