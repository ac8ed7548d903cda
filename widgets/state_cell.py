"""State shown by word, colour and glyph together, never by colour alone.

`StatePalette` maps a state word to a `StateLook` (a Rich style and a glyph); `palette.text(word)`
gives a `Text` for table cells and `StateCell` is the same as a one-line widget. Which states exist
and how they look is the caller's business: this module knows no product's states.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

from rich.text import Text
from textual.widgets import Static


# A named tuple and a plain class, not frozen dataclasses: a frozen dataclass costs ~1 ms of CPU to
# create at import, and the VM list's palette is on the console's start-up path (issue 24)
class StateLook(NamedTuple):
    """How one state looks: a Rich style (colour) and a glyph that carries meaning without it."""

    style: str
    glyph: str


#: the look of a word a palette does not know, unless the palette says otherwise
UNKNOWN_LOOK = StateLook("", "?")


class StatePalette:
    """State word -> look, with a fallback for words the caller did not foresee."""

    __slots__ = ("looks", "default")

    def __init__(self, looks: Mapping[str, StateLook] | None = None, default: StateLook = UNKNOWN_LOOK) -> None:
        self.looks: Mapping[str, StateLook] = looks if looks is not None else {}
        self.default = default

    def look(self, word: str) -> StateLook:
        return self.looks.get(word, self.default)

    def text(self, word: str, look_as: str | None = None) -> Text:
        """`● runn` with the state's style; the word is plain text (never markup).

        `look_as` picks the look by another key (e.g. a coarse state class) while showing `word`.
        """
        look = self.look(look_as if look_as is not None else word)
        return Text.assemble((look.glyph, look.style), " ", (word, look.style))


class StateCell(Static):
    """A one-line widget showing a state with its glyph and colour."""

    DEFAULT_CSS = """
    StateCell { width: auto; height: 1; }
    """

    def __init__(self, word: str, palette: StatePalette, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(palette.text(word), id=id, classes=classes)
        self._palette = palette
        self._word = word

    @property
    def word(self) -> str:
        return self._word

    def set_state(self, word: str) -> None:
        self._word = word
        self.update(self._palette.text(word))
