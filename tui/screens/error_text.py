"""How screens show a failed procedure inline: a red "✘ title" line, then the detail."""

from __future__ import annotations

from rich.text import Text

from tui.errors import SiteError


def error_text(error: SiteError) -> Text:
    """The error as rich Text (never markup-parsed, so remote text shows as is)."""
    return Text.assemble(("✘ ", "bold red"), (error.title, "bold red"), "\n", error.detail)
