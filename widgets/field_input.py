"""`FieldInput`: Textual's `Input`, but a keystroke repaints the input alone instead of laying the
whole screen out again. Every text field the console sizes by CSS uses it: the toolkit form's
fields and secrets, the dialogs' fields, the tables' filter bars.

Textual's `Input` sets its `virtual_size` (its text's width, which its scrolling inside the field
reads) at every change of its value, and `Widget.virtual_size` is a reactive that asks for a layout
of the whole screen. In the toolkit form (some 300 widgets) that layout was about 35 ms of CPU a
keystroke, a third of the keys-only first run's CPU; beside a 50,000-row table, that layout and the
repaint it brought were about a third of a filter keystroke's CPU (issue 24). Here `virtual_size`
only repaints: an input sized by CSS does not change size when its text does, and its scrolling
reads `virtual_size` when it scrolls. An input with `width: auto` still lays out:
`Input._watch_value` asks for that itself.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input


class FieldInput(Input):
    """An `Input` whose typing does not lay the screen out (see the module docstring)."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False)
