"""What screens may ask of the app: a typed accessor, so no screen imports `tui.app`.

`shell_of(app)` gives the running console app as a `Shell` (the protocol below), which
`tui.app.SiteToolkitApp` implements. Screens and modals reach the site, the read-only flag and the
one error path (`report_error`: a toast for a short `SiteError`, the error modal otherwise)
through it; the app imports the screens, never the other way round.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App
    from textual.screen import Screen

    from tui.procedures.connection import SiteConnection
    from widgets.virtual_table import VirtualTable


@runtime_checkable
class Shell(Protocol):
    """The console app as screens see it."""

    site: "SiteConnection"
    read_only: bool
    #: the toolkit input file of this session: named on the setup screen, or saved / loaded by the
    #: toolkit form ("" none yet); the setup screen takes the newest one when it is shown
    input_file: str
    #: the local time (the app's clock)
    now: Callable[[], datetime]

    def report_error(self, error: BaseException) -> None:
        """The one error path of every worker failure: toast or error modal, never silence."""

    def toast(self, message: str, *, title: str = "", severity: str = "information",
              timeout: float | None = None) -> None:
        """A short notification shown as plain text."""

    def connect(self) -> Any:
        """Connect (again) to the site."""

    async def wait_connected(self) -> None:
        """Return once the start-up check has passed."""

    def paint_context(self, screen: "Screen[Any]", only: str | None = None) -> None:
        """Fill a screen's context bar."""

    def mark_refreshed(self) -> None:
        """A poll succeeded."""

    def mark_unreachable(self, error: Any) -> None:
        """A poll failed: the site does not answer."""

    def rows_shown(self, table: "VirtualTable") -> None:
        """A list screen put rows of data in its table."""

    def open_screen(self, name: str) -> None:
        """Open a registered screen by name or alias."""


def shell_of(app: "App[Any]") -> Shell:
    """The app as a `Shell`; a screen mounted in any other app is a programming error."""
    if not isinstance(app, Shell):
        raise TypeError(f"{type(app).__name__} is not the console app (tui.screens.shell.Shell)")
    return app
