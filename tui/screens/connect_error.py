"""The start-up failure screen: the site could not be reached or refused the credentials.

It says what failed, what was tried (endpoint, credential source, config file, secrets redacted)
and how to fix it (the platform CLI's variables: ONE_XMLRPC, ONE_AUTH, ...), with Retry and Quit.
It is shown instead of a traceback whenever `SiteConnection.connect()` raises `SiteError`.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Button, Label, Static

from tui.errors import SiteError
from tui.screens.base import CONTEXT_SLOTS
from tui.screens.shell import Shell
from widgets.context_bar import ContextBar
from widgets.key_bar import KeyBar


class ConnectErrorScreen(Screen[None]):
    """What failed at start-up, what was tried and how to fix it; retry or quit."""

    TITLE = "Not connected"
    # here, not in app.tcss: parsed only when a start fails
    DEFAULT_CSS = """
    #connect-body {
        padding: 1 2;
    }
    #connect-title {
        text-style: bold;
        color: $text-error;
        width: 1fr;
    }
    #connect-detail {
        margin: 1 0;
        width: 1fr;
    }
    .connect-heading {
        text-style: bold underline;
        margin: 1 0 0 0;
    }
    #connect-tried {
        margin: 0 0 1 2;
    }
    #connect-attempts {
        color: $text-muted;
    }
    #connect-buttons {
        height: auto;
        margin: 1 0 0 0;
    }
    #connect-buttons Button {
        margin: 0 2 0 0;
    }
    """
    HELP_GROUP = "Connection failed"
    AUTO_FOCUS = "#connect-retry"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "retry", "Retry", id="connect.retry"),
        Binding("c", "copy", "Copy error", id="connect.copy"),
        Binding("q", "app.quit", "Quit", id="connect.quit"),
    ]

    def __init__(self, error: SiteError, tried: Sequence[tuple[str, str]]) -> None:
        super().__init__(id="connect-error")
        self.error = error
        self.tried = tuple(tried)
        self.attempts = 1

    def compose(self) -> ComposeResult:
        yield ContextBar(CONTEXT_SLOTS, id="context-bar")
        with VerticalScroll(id="connect-body"):
            yield Label(Content(self.error.title), id="connect-title")
            yield Static(Content(self.error.detail), id="connect-detail")
            yield Label("Settings in use", classes="connect-heading")
            yield Static(self._tried_table(), id="connect-tried")
            yield Label("", id="connect-attempts")
            with Horizontal(id="connect-buttons"):
                yield Button("Retry", id="connect-retry", variant="primary")
                yield Button("Quit", id="connect-quit")
        yield KeyBar()

    def _tried_table(self) -> Table:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for label, value in self.tried:
            table.add_row(Text(label), Text(value))
        return table

    def on_mount(self) -> None:
        app = self.app
        if isinstance(app, Shell):
            app.paint_context(self)

    def show_error(self, error: SiteError, tried: Sequence[tuple[str, str]] | None = None) -> None:
        """A retry failed again: show the new error (and settings) and count the attempt."""
        self.error = error
        self.attempts += 1
        if tried is not None:
            self.tried = tuple(tried)
            self.query_one("#connect-tried", Static).update(self._tried_table())
        self.query_one("#connect-title", Label).update(Content(error.title))
        self.query_one("#connect-detail", Static).update(Content(error.detail))
        self.query_one("#connect-attempts", Label).update(Content(f"Attempts so far: {self.attempts}"))
        retry = self.query_one("#connect-retry", Button)
        retry.disabled = False
        retry.focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "connect-retry":
            self.action_retry()
        else:
            self.app.exit(1)

    def action_retry(self) -> None:
        app = self.app
        self.query_one("#connect-retry", Button).disabled = True
        self.query_one("#connect-attempts", Label).update(Content("Retrying…"))
        if isinstance(app, Shell):
            app.connect()

    def action_copy(self) -> None:
        lines = [self.error.title, "", self.error.detail, "", *(f"{k}: {v}" for k, v in self.tried)]
        self.app.copy_to_clipboard("\n".join(lines))
        self.notify("Copied to the clipboard", timeout=2)
