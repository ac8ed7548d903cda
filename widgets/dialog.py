"""`Dialog`: the base of every console dialog: accelerator keys on its buttons, a focus that shows.

- **Accelerators.** When a dialog is mounted, each of its buttons gets a letter of its label (the
  first one free, the first letter of the label when it can): the letter is underlined, and
  pressing it presses the button (a disabled one rings the bell and says what enables it, its
  `tooltip`). While the focus is in a text field the letter is typed there: alt+letter presses
  the button, as does tab to the buttons and the letter. A subclass lists letters its own
  bindings use in `RESERVED_KEYS`.
- **Focus.** The focused button is framed in the accent colour and its label underlined, not only
  shown in reverse video (which some terminals and themes barely show).
- **Fit.** A subclass that may hold more than a screenful puts its text in a `VerticalScroll` of
  class `dialog-body` and its buttons in a row of class `dialog-buttons`: the row is docked at the
  bottom of the dialog's frame, so the buttons stay in sight and the text scrolls (80x24 and up).
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

from textual import events
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, TextArea

ResultType = TypeVar("ResultType")

#: keys no accelerator takes (navigation and the console's own keys in dialogs)
_NEVER = frozenset("jkq")


def accelerated(label: str, key: str) -> Content:
    """`label` with the letter `key` underlined (its first occurrence, either case)."""
    at = label.lower().find(key)
    if at < 0:
        return Content(label)
    return Content.assemble(label[:at], (label[at], "underline"), label[at + 1:])


def plain(label: object) -> str:
    """A button label's text (Content, Rich Text or str)."""
    return label if isinstance(label, str) else str(getattr(label, "plain", label))


def choose_keys(labels: list[str], reserved: frozenset[str] = frozenset()) -> list[str]:
    """One letter per label ("" when none is free): the first letter when free, else the next free
    letter of the label, in order."""
    taken = set(reserved) | set(_NEVER)
    keys: list[str] = []
    for label in labels:
        key = next((c for c in label.lower() if c.isascii() and c.isalpha() and c not in taken), "")
        if key:
            taken.add(key)
        keys.append(key)
    return keys


class Dialog(ModalScreen[ResultType]):
    """A modal with accelerator keys and a visible focus (see the module docstring)."""

    #: letters the dialog's own bindings use (never given to a button)
    RESERVED_KEYS: ClassVar[frozenset[str]] = frozenset()

    DEFAULT_CSS = """
    Dialog Button:focus, Dialog Button.-style-default:focus {
        text-style: bold underline;
        border-top: tall $accent;
        border-bottom: tall $accent;
    }
    Dialog Button.-textual-compact:focus { background: $accent; color: $text; }
    Dialog .dialog-buttons { dock: bottom; height: auto; }
    Dialog .dialog-body { height: auto; max-height: 100%; }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: accelerator letter -> button id (or the button itself when it has none)
        self.accelerators: dict[str, Button] = {}

    def on_mount(self) -> None:
        self.assign_accelerators()

    def assign_accelerators(self) -> None:
        """Give each button a letter and underline it (again, after buttons were added)."""
        buttons = list(self.query(Button))
        labels = [plain(button.label) for button in buttons]
        self.accelerators = {}
        for button, label, key in zip(buttons, labels, choose_keys(labels, self.RESERVED_KEYS), strict=True):
            if key:
                self.accelerators[key] = button
                # set_reactive: a Content equal in text (spans aside) would not count as a change
                button.set_reactive(Button.label, accelerated(label, key))
                button.refresh(layout=True)

    def accelerator_of(self, button: Button) -> str:
        return next((key for key, b in self.accelerators.items() if b is button), "")

    #: keys that scroll the dialog's text while the focus is on a button
    SCROLL_KEYS: ClassVar[dict[str, str]] = {"up": "scroll_up", "down": "scroll_down", "pageup": "scroll_page_up",
                                              "pagedown": "scroll_page_down", "home": "scroll_home",
                                              "end": "scroll_end"}

    def on_key(self, event: events.Key) -> None:
        key = event.key
        if key in self.SCROLL_KEYS and isinstance(self.focused, Button):
            bodies = self.query(".dialog-body")
            if bodies:
                getattr(bodies.first(), self.SCROLL_KEYS[key])()
                event.stop()
                return
        typing = isinstance(self.focused, (Input, TextArea))
        if key.startswith("alt+"):
            key = key[4:]
        elif typing:
            return
        button = self.accelerators.get(key)
        if button is None or not button.is_mounted or not button.display or not button.region.area:
            return
        event.stop()
        event.prevent_default()
        if button.disabled:
            self.app.bell()
            why = button.tooltip if isinstance(button.tooltip, str) else ""
            self.notify(why or f"{plain(button.label)} is not available now", severity="warning", markup=False)
            return
        button.focus()
        button.press()
