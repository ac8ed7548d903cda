"""The platform's template text: parse, write and merge `NAME = value` documents.

Syntax (as the platform's own parser accepts it):
- `NAME = value` or `NAME = "value"`, `\\"` escaping a quote inside quotes, quoted values may span
  lines; `#` starts a comment outside quotes;
- vectors `NAME = [ A = "1", B = "x" ]`, possibly over several lines;
- names are upper-cased; repeated names are kept in order (several DISK, NIC);
- the XML form (`<ANY><NAME>value</NAME><VEC><A>1</A></VEC></ANY>`) is accepted too and the
  root element's name is ignored;
- a value containing `]]>` is rejected, since it could not live in the XML CDATA.

A template is a list of `(NAME, value)` pairs where value is a `str` or, for a vector, a list of
`(NAME, str)` pairs.
"""

from __future__ import annotations

import re
from typing import Iterable, Union

Vector = list[tuple[str, str]]
Value = Union[str, Vector]
Attr = tuple[str, Value]
Template = list[Attr]

_NAME = re.compile(r"[A-Za-z0-9_\-.:/]+")


class TemplateSyntaxError(ValueError):
    """The template text could not be parsed; the message names the position."""


def parse_template(text: str) -> Template:
    """Parse template text (or its XML form) into an ordered list of attributes."""
    stripped = text.lstrip()
    if stripped.startswith("<"):
        return _parse_xml(stripped)
    return _Parser(text).parse()


def _parse_xml(text: str) -> Template:
    from lxml import etree  # on first use: the embedded site's process starts without it (~15 ms)

    try:
        root = etree.fromstring(text.encode())
    except etree.XMLSyntaxError as exc:
        raise TemplateSyntaxError(f"malformed XML template: {exc}") from exc
    result: Template = []
    for child in root:
        if not isinstance(child.tag, str):
            continue
        if len(child):
            vector: Vector = [(sub.tag.upper(), _check_value(sub.text or "")) for sub in child if isinstance(sub.tag, str)]
            result.append((child.tag.upper(), vector))
        else:
            result.append((child.tag.upper(), _check_value(child.text or "")))
    return result


def _check_value(value: str) -> str:
    if "]]>" in value:
        raise TemplateSyntaxError("a value may not contain ']]>'")
    return value


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def _where(self) -> str:
        line = self.text.count("\n", 0, self.pos) + 1
        col = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        return f"line {line}, column {col}"

    def _skip(self, newlines: bool = True) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif ch in " \t\r" or (newlines and ch == "\n"):
                self.pos += 1
            else:
                break

    def _name(self) -> str:
        match = _NAME.match(self.text, self.pos)
        if not match:
            raise TemplateSyntaxError(f"expected an attribute name at {self._where()}")
        self.pos = match.end()
        return match.group(0).upper()

    def _expect(self, ch: str) -> None:
        if self.pos >= len(self.text) or self.text[self.pos] != ch:
            raise TemplateSyntaxError(f"expected '{ch}' at {self._where()}")
        self.pos += 1

    def _quoted(self) -> str:
        self.pos += 1  # opening quote
        out: list[str] = []
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch == "\\" and self.pos + 1 < len(text) and text[self.pos + 1] in "\"\\":
                out.append(text[self.pos + 1])
                self.pos += 2
            elif ch == '"':
                self.pos += 1
                return _check_value("".join(out))
            else:
                out.append(ch)
                self.pos += 1
        raise TemplateSyntaxError(f"unterminated quoted value at {self._where()}")

    def _bare(self, stops: str) -> str:
        start = self.pos
        text = self.text
        while self.pos < len(text) and text[self.pos] not in stops:
            self.pos += 1
        return _check_value(text[start : self.pos].strip())

    def _value(self, in_vector: bool) -> str:
        self._skip(newlines=in_vector)
        if self.pos < len(self.text) and self.text[self.pos] == '"':
            return self._quoted()
        return self._bare(",]\n#" if in_vector else "\n#")

    def _vector(self) -> Vector:
        self.pos += 1  # [
        vector: Vector = []
        while True:
            self._skip()
            if self.pos >= len(self.text):
                raise TemplateSyntaxError(f"unterminated vector at {self._where()}")
            if self.text[self.pos] == "]":
                self.pos += 1
                return vector
            name = self._name()
            self._skip()
            self._expect("=")
            vector.append((name, self._value(in_vector=True)))
            self._skip()
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                self.pos += 1

    def parse(self) -> Template:
        result: Template = []
        while True:
            self._skip()
            if self.pos >= len(self.text):
                return result
            name = self._name()
            self._skip(newlines=False)
            self._expect("=")
            self._skip(newlines=False)
            if self.pos < len(self.text) and self.text[self.pos] == "[":
                result.append((name, self._vector()))
            else:
                result.append((name, self._value(in_vector=False)))


def quote(value: str) -> str:
    """Quote a value for template text: backslashes and quotes escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_template(attrs: Iterable[Attr]) -> str:
    """Write attributes as template text that `parse_template` (and the platform) read back."""
    lines: list[str] = []
    for name, value in attrs:
        if isinstance(value, list):
            inner = ",\n  ".join(f"{k} = {quote(v)}" for k, v in value)
            lines.append(f"{name} = [\n  {inner} ]")
        else:
            lines.append(f"{name} = {quote(value)}")
    return "\n".join(lines) + ("\n" if lines else "")


def merge_template(existing: Template, new: Template) -> Template:
    """`update(..., append=1)`: attributes named in `new` replace every existing one of that name."""
    replaced = {name for name, _ in new}
    return [attr for attr in existing if attr[0] not in replaced] + list(new)


def first(attrs: Iterable[Attr], name: str) -> Value | None:
    """The first value of `name`, or None."""
    for key, value in attrs:
        if key == name:
            return value
    return None


def scalar(attrs: Iterable[Attr], name: str, default: str = "") -> str:
    """The first scalar value of `name`, or `default`."""
    value = first(attrs, name)
    return value if isinstance(value, str) else default
