"""Edit OpenNebula's daemon configuration files (oned.conf, monitord.conf, sched.conf) as text.

The files are attribute lists: `NAME = value` at the top level, a value being a bare word, a
double-quoted string (which may span lines) or a vector `[ KEY = value, ... ]`; `#` starts a
comment outside strings. `ConfText` finds the top-level entries without disturbing anything else:
an edit rewrites only the span of the entry it changes (in a canonical form), and every other
byte, comments included, stays as the installed file has it, so a diff against the stock file
shows exactly what the harness changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ConfError(ValueError):
    """The text is not the attribute list this module understands (unbalanced quote or bracket)."""


@dataclass(frozen=True)
class Entry:
    """One top-level `NAME = value`: its span in the text and its value (raw text of a scalar,
    unquoted; or the attributes of a vector, in order, names upper-cased)."""

    name: str
    start: int
    end: int
    scalar: str | None
    vector: tuple[tuple[str, str], ...] | None

    def get(self, key: str, default: str = "") -> str:
        """A vector attribute's value ("" or `default` when absent, or for a scalar entry)."""
        for name, value in self.vector or ():
            if name == key.upper():
                return value
        return default


def _skip_string(text: str, i: int) -> int:
    """The index after the closing quote of the string opening at `text[i]`."""
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return j + 1
        j += 1
    raise ConfError(f"unterminated string starting at offset {i}")


def _skip_comment(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _vector_end(text: str, i: int) -> int:
    """The index after the `]` closing the vector opening at `text[i]` ('[')."""
    j = i + 1
    while j < len(text):
        char = text[j]
        if char == '"':
            j = _skip_string(text, j)
            continue
        if char == "#":
            j = _skip_comment(text, j)
            continue
        if char == "]":
            return j + 1
        if char == "[":
            raise ConfError(f"nested vector at offset {j}")
        j += 1
    raise ConfError(f"unterminated vector starting at offset {i}")


def _unquote(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return raw[1:-1].replace('\\"', '"')
    return raw


def _vector_pairs(body: str) -> tuple[tuple[str, str], ...]:
    """`KEY = value, KEY2 = "v, w"` (comments allowed) as ordered pairs."""
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char in " \t\r\n,":
            i += 1
            continue
        if char == "#":
            i = _skip_comment(body, i)
            continue
        match = _NAME.match(body, i)
        if match is None:
            raise ConfError(f"expected an attribute name in vector at {body[i:i + 20]!r}")
        name = match.group(0).upper()
        i = match.end()
        while i < len(body) and body[i] in " \t":
            i += 1
        if i >= len(body) or body[i] != "=":
            raise ConfError(f"expected '=' after {name} in vector")
        i += 1
        while i < len(body) and body[i] in " \t\r\n":
            i += 1
        if i < len(body) and body[i] == '"':
            end = _skip_string(body, i)
            value = _unquote(body[i:end])
        else:
            end = i
            while end < len(body) and body[end] not in ",\n#":
                end += 1
            value = body[i:end].strip()
        pairs.append((name, value))
        i = end
    return tuple(pairs)


def parse_entries(text: str) -> list[Entry]:
    """Every top-level entry of `text`, in order."""
    entries: list[Entry] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in " \t\r\n":
            i += 1
            continue
        if char == "#":
            i = _skip_comment(text, i)
            continue
        match = _NAME.match(text, i)
        if match is None:
            raise ConfError(f"unexpected text at offset {i}: {text[i:i + 30]!r}")
        name = match.group(0)
        j = match.end()
        while j < len(text) and text[j] in " \t":
            j += 1
        if j >= len(text) or text[j] != "=":
            raise ConfError(f"expected '=' after {name} at offset {j}")
        j += 1
        while j < len(text) and text[j] in " \t\r\n":
            j += 1
        if j < len(text) and text[j] == "[":
            end = _vector_end(text, j)
            entries.append(Entry(name.upper(), i, end, None, _vector_pairs(text[j + 1:end - 1])))
        elif j < len(text) and text[j] == '"':
            end = _skip_string(text, j)
            entries.append(Entry(name.upper(), i, end, _unquote(text[j:end]), None))
        else:
            end = j
            while end < len(text) and text[end] not in "\n#":
                end += 1
            entries.append(Entry(name.upper(), i, end, text[j:end].strip(), None))
        i = end
    return entries


def quote(value: str) -> str:
    """A value as a quoted string of the format: the platform's template parser knows `\\"` as
    its only escape (`unescape` in `src/parsers/template_syntax.y` at release-7.0.2)."""
    if value.endswith("\\"):
        raise ConfError(f"a value cannot end with a backslash: {value!r}")
    return '"' + value.replace('"', '\\"') + '"'


def render_vector(name: str, attrs: list[tuple[str, str]] | tuple[tuple[str, str], ...]) -> str:
    inner = ",\n".join(f"    {key} = {quote(value)}" for key, value in attrs)
    return f"{name} = [\n{inner}\n]"


VectorMatch = Callable[[Entry], bool]


class ConfText:
    """A configuration file's text and the edits made to it (`text` is always current)."""

    def __init__(self, text: str) -> None:
        self.text = text
        parse_entries(text)  # refuse what cannot be edited safely, up front

    def entries(self, name: str | None = None) -> list[Entry]:
        found = parse_entries(self.text)
        return [e for e in found if name is None or e.name == name.upper()]

    def scalar(self, name: str) -> str | None:
        """The last value given to a top-level scalar (the daemons keep the last), None when unset."""
        values = [e.scalar for e in self.entries(name) if e.scalar is not None]
        return values[-1] if values else None

    def _replace(self, entry: Entry, new: str) -> None:
        self.text = self.text[:entry.start] + new + self.text[entry.end:]

    def _append(self, new: str) -> None:
        self.text = self.text.rstrip("\n") + "\n\n" + new + "\n"

    def set_scalar(self, name: str, value: str, *, quoted: bool = False) -> None:
        """`NAME = value`: every existing entry of that name is replaced by one (the first keeps its
        place, the others go), or the entry is appended."""
        rendered = f"{name} = {quote(value) if quoted else value}"
        found = [e for e in self.entries(name) if e.scalar is not None]
        if not found:
            self._append(rendered)
            return
        for entry in reversed(found[1:]):
            self._replace(entry, "")
        self._replace(found[0], rendered)

    def vectors(self, name: str, match: VectorMatch | None = None) -> list[Entry]:
        return [e for e in self.entries(name) if e.vector is not None and (match is None or match(e))]

    def set_vector(self, name: str, attrs: list[tuple[str, str]], match: VectorMatch | None = None) -> None:
        """Replace the vectors `match` selects (all of `name` when None) by one with `attrs` (in the
        first one's place), or append it when none matches."""
        found = self.vectors(name, match)
        rendered = render_vector(name, attrs)
        if not found:
            self._append(rendered)
            return
        for entry in reversed(found[1:]):
            self._replace(entry, "")
        self._replace(found[0], rendered)

    def update_vector(self, name: str, changes: dict[str, str], match: VectorMatch | None = None) -> int:
        """Set attributes in every vector `match` selects, keeping the others; returns how many
        vectors changed (0 when none matched: the caller decides whether that is an error)."""
        found = self.vectors(name, match)
        for entry in reversed(found):
            attrs = list(entry.vector or ())
            for key, value in changes.items():
                key = key.upper()
                index = next((k for k, (n, _) in enumerate(attrs) if n == key), None)
                if index is None:
                    attrs.append((key, value))
                else:
                    attrs[index] = (key, value)
            self._replace(entry, render_vector(name, attrs))
        return len(found)

    def remove(self, name: str, match: VectorMatch | None = None) -> int:
        found = [e for e in self.entries(name) if match is None or match(e)]
        for entry in reversed(found):
            self._replace(entry, "")
        return len(found)
