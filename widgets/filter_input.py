"""`FilterInput`: the text field of a table's filter bar, whose keystrokes repaint it and never lay
the screen out again.

Textual's `Input` sets its virtual size to its text's width on every change, and a widget's
`virtual_size` asks for a layout of the whole screen when it changes: with a 50,000-row table
beside it that layout and the repaint it brings were about a third of a filter keystroke's CPU
(issue 24). The field's own size comes from its CSS (a share of the bar's width, one line), so its
virtual size only bounds its horizontal scrolling, which reads it when it scrolls: a repaint is
enough. `Input` still asks for a layout itself when its CSS sizes it by its content (`auto`).
"""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input


class FilterInput(Input):
    """An `Input` whose text changes never lay out the screen (see the module docstring)."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)
