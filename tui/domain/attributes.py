"""Template attributes as an immutable value: the TEMPLATE / USER_TEMPLATE of any cloud object.

The platform keeps template attributes as an ordered list where names repeat (several DISK, NIC)
and a value is either a string or a vector of `NAME = value` pairs. pyone hands these back as
dicts whose repeated keys are lists and single ones dicts; here they are always the same shape,
whatever the count: `Attributes.items` is a tuple of `(NAME, value)` with value a `str` or a
tuple of `(NAME, str)` pairs. `to_template()` converts to the list form of `template_text` for
rendering and merging.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Union

from tui.domain.template_text import Template, render_template

VectorPairs = tuple[tuple[str, str], ...]
AttrValue = Union[str, VectorPairs]
AttrItem = tuple[str, AttrValue]


@dataclass(frozen=True)
class Attributes:
    """An ordered, immutable template: `(NAME, str | ((NAME, str), ...))` items."""

    items: tuple[AttrItem, ...] = ()

    @classmethod
    def from_template(cls, template: Iterable[tuple[str, object]]) -> "Attributes":
        """From `template_text`'s list form (vector values as lists of pairs)."""
        items: list[AttrItem] = []
        for name, value in template:
            if isinstance(value, str):
                items.append((name, value))
            else:
                items.append((name, tuple((str(k), str(v)) for k, v in value)))  # type: ignore[attr-defined]
        return cls(tuple(items))

    def __iter__(self) -> Iterator[AttrItem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, name: object) -> bool:
        return any(key == name for key, _ in self.items)

    def names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(key for key, _ in self.items))

    def get(self, name: str, default: str = "") -> str:
        """The first scalar value of `name`, or `default` (vectors are skipped)."""
        for key, value in self.items:
            if key == name and isinstance(value, str):
                return value
        return default

    def vectors(self, name: str) -> tuple[dict[str, str], ...]:
        """Every vector value of `name` as a dict (first occurrence of a repeated sub-name wins)."""
        out: list[dict[str, str]] = []
        for key, value in self.items:
            if key == name and not isinstance(value, str):
                entry: dict[str, str] = {}
                for sub, sub_value in value:
                    entry.setdefault(sub, sub_value)
                out.append(entry)
        return tuple(out)

    def vector(self, name: str) -> dict[str, str]:
        """The first vector value of `name` as a dict, or an empty dict."""
        found = self.vectors(name)
        return found[0] if found else {}

    def scalars(self) -> dict[str, str]:
        """Every scalar attribute, first occurrence of each name."""
        out: dict[str, str] = {}
        for key, value in self.items:
            if isinstance(value, str):
                out.setdefault(key, value)
        return out

    def to_template(self) -> Template:
        """The list form `template_text` renders and merges."""
        return [(key, value if isinstance(value, str) else list(value)) for key, value in self.items]

    def to_text(self) -> str:
        """Template text the platform (and `template_text.parse_template`) read back."""
        return render_template(self.to_template())


EMPTY_ATTRIBUTES = Attributes()
