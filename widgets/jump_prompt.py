"""A small modal prompt that picks one of a few named choices, narrowing as you type (k9s `:`).

`JumpPrompt(choices)` returns the chosen `Choice.value` (or None on escape). Typing filters by
name, alias and title; enter takes the highlighted choice (or the only match); an unknown name
says so instead of closing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from widgets.dialog import Dialog


@dataclass(frozen=True)
class Choice:
    """One destination: `value` is returned, `name` is what the operator types."""

    value: str
    name: str
    title: str
    aliases: tuple[str, ...] = ()

    def matches(self, text: str) -> bool:
        text = text.strip().lower()
        if not text:
            return True
        words = (self.name, *self.aliases, self.title)
        return any(text in w.lower() for w in words)

    def exact(self, text: str) -> bool:
        text = text.strip().lower()
        return text == self.name.lower() or text in (a.lower() for a in self.aliases)


class JumpPrompt(Dialog["str | None"]):
    """`:` prompt: type a screen name, enter to jump."""

    AUTO_FOCUS = "#jump-input"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="jump.cancel"),
        Binding("down", "next", "Next", show=False, id="jump.next"),
        Binding("up", "previous", "Previous", show=False, id="jump.previous"),
    ]

    DEFAULT_CSS = """
    JumpPrompt { align: center top; }
    JumpPrompt > Vertical {
        width: 60; max-width: 95%; height: auto; margin: 3 0 0 0;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    JumpPrompt #jump-title { color: $text-muted; }
    JumpPrompt OptionList { height: auto; max-height: 14; border: none; }
    JumpPrompt #jump-reason { color: $text-error; height: auto; }
    """

    def __init__(self, choices: Sequence[Choice], *, title: str = "Go to screen") -> None:
        super().__init__()
        self.choices = tuple(choices)
        self.prompt_title = title
        self._shown: list[Choice] = list(self.choices)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Content(self.prompt_title), id="jump-title")
            yield Input(placeholder=":", id="jump-input")
            yield OptionList(*self._options(self.choices), id="jump-options")
            yield Label("", id="jump-reason")

    @staticmethod
    def _options(choices: Sequence[Choice]) -> list[Option]:
        options = []
        for choice in choices:
            label = Text.assemble((choice.name, "bold"), "  ", (choice.title, "dim"))
            if choice.aliases:
                label.append(f"  ({', '.join(choice.aliases)})", "dim")
            options.append(Option(label, id=choice.value))
        return options

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self._shown:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._shown = [c for c in self.choices if c.matches(event.value)]
        options = self.query_one(OptionList)
        options.clear_options()
        options.add_options(self._options(self._shown))
        if self._shown:
            options.highlighted = 0
        self.query_one("#jump-reason", Label).update(
            "" if self._shown else Content(f"No screen named {event.value.strip()!r}")
        )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        exact = [c for c in self.choices if c.exact(event.value)]
        if exact:
            self.dismiss(exact[0].value)
            return
        options = self.query_one(OptionList)
        if self._shown and options.highlighted is not None:
            self.dismiss(self._shown[options.highlighted].value)
            return
        self.app.bell()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(event.option.id)

    def action_next(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_previous(self) -> None:
        self.query_one(OptionList).action_cursor_up()

    def action_cancel(self) -> None:
        self.dismiss(None)
