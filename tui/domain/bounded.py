"""Bounded reading: every file and document the console reads has a size, an encoding, a nesting
depth and a number length it must keep to, and breaking one gives a clear message.

Without these bounds, hostile or broken input reaches a traceback: a JSON or YAML document nested
a few thousand levels deep raises RecursionError inside the parser, a 5,000-digit integer raises
ValueError (Python refuses to convert more than 4,300 digits), a file that is not UTF-8 raises
UnicodeDecodeError, and a huge file is read whole into memory. Every reader goes through here:

- `read_text_file(path, what)`: the file's text, at most `max_bytes`, strict UTF-8 (a UTF-8 byte
  order mark is dropped); `BoundedInputError` names the file and the byte where decoding failed;
  only a regular file is read (`read_regular_file`: `/dev/zero` or a FIFO is refused at once);
- `decode_text(data, what)`: the same for bytes read elsewhere (a decrypted vault, a response);
- `load_json(text, what)`: `json.loads` after a scan of the nesting depth (strings skipped), with
  integers and decimals of at most `MAX_NUMBER_DIGITS` digits;
- `guard(what)`: a context manager around any other parser (YAML, TOML) that turns RecursionError
  and the digit-limit ValueError into `BoundedInputError`; `check_tree(value, what)` then checks
  the parsed value's depth and number lengths without recursion; `yaml_loader(yaml, what)` has a
  YAML parser refuse deep flow collections as it meets them (the parser alone takes seconds first).

`BoundedInputError` is a ValueError; callers wrap it in their own error type (SiteError,
InputFileError, SiteConfigError), which keeps the message.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Iterator, Mapping

#: the largest file the console reads (a core.yaml or an input file is a few KiB)
MAX_FILE_BYTES = 4 * 1024 * 1024
#: deepest nesting of objects/arrays or mappings/sequences (real files stay under 10)
MAX_DEPTH = 64
#: longest number (digits); Python itself refuses integers over 4,300 digits
MAX_NUMBER_DIGITS = 1000
#: most values (mappings, sequences, scalars, aliases counted as expanded) in one parsed document
MAX_TREE_VALUES = 200_000
#: the largest HTTP answer read (a marketplace's listing or a OneFlow pool is a few MiB)
MAX_RESPONSE_BYTES = 64 * 1024 * 1024

_UTF8_BOM = b"\xef\xbb\xbf"


class BoundedInputError(ValueError):
    """Input that breaks one of the bounds (or is not text); the message says which and how."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def decode_text(data: bytes, what: str) -> str:
    """`data` as UTF-8 text (a byte order mark dropped); a clear error naming the first bad byte."""
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise BoundedInputError(
            f"{what} is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, column {column} (byte offset "
            f"{exc.start}); save it as UTF-8", line, column) from None


def read_text_file(path: str | os.PathLike[str], what: str = "", max_bytes: int = MAX_FILE_BYTES) -> str:
    """The text of a file, at most `max_bytes` long and UTF-8. OSError (missing, unreadable) is
    left to the caller, which knows what to suggest; `BoundedInputError` for the bounds."""
    file = Path(path)
    label = what or str(file)
    data = read_regular_file(file, label, max_bytes)
    if len(data) > max_bytes:
        raise BoundedInputError(f"{label} is larger than {_size(max_bytes)}; this cannot be the right file")
    return decode_text(data, label)


def read_regular_file(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """At most `max_bytes + 1` bytes of a regular file. A FIFO, a device (`/dev/zero`), a socket or
    a directory is refused before anything is read (checked with stat first, then opened with
    O_NONBLOCK so a FIFO swapped in meanwhile cannot block, and checked again on the open file)."""
    label = what or str(path)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise BoundedInputError(f"{label} is not a regular file (a directory, device, FIFO or socket); give the "
                                "path of a file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BoundedInputError(f"{label} is not a regular file; give the path of a file")
        return handle.read(max_bytes + 1)


def read_tail(path: str | os.PathLike[str], what: str, max_bytes: int) -> bytes:
    """The last `max_bytes` of a regular file (a log that grows: its newest part), whole lines
    only when it was cut; the same refusals as `read_regular_file`."""
    label = what or str(path)
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise BoundedInputError(f"{label} is not a regular file; give the path of a file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BoundedInputError(f"{label} is not a regular file; give the path of a file")
        if info.st_size <= max_bytes:
            return handle.read(max_bytes)
        handle.seek(info.st_size - max_bytes)
        data = handle.read(max_bytes)
    return data[data.find(b"\n") + 1:]


def check_size(text: str | bytes, what: str, max_bytes: int = MAX_FILE_BYTES) -> None:
    """Refuse text (or bytes) longer than `max_bytes` (UTF-8 bytes for text)."""
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", errors="surrogatepass"))
    if size > max_bytes:
        raise BoundedInputError(f"{what} is larger than {_size(max_bytes)}")


# a JSON string (skipped whole) or a bracket
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)


def json_depth(text: str, limit: int = MAX_DEPTH) -> tuple[int, int]:
    """(deepest nesting of `[`/`{` with strings skipped, offset of the first bracket past `limit`
    or -1)."""
    depth = deepest = 0
    beyond = -1
    for match in _JSON_TOKEN.finditer(text):
        token = match.group(0)
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth == limit + 1:
                    beyond = match.start()
        else:
            depth -= 1
    return deepest, beyond


def _line_column(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _number(kind: type, what: str) -> Any:
    def parse(token: str) -> Any:
        digits = sum(ch.isdigit() for ch in token)
        if digits > MAX_NUMBER_DIGITS:
            raise BoundedInputError(f"{what} holds a number of {digits:,} digits; numbers are limited to "
                                    f"{MAX_NUMBER_DIGITS:,} digits")
        return kind(token)

    return parse


def load_json(text: str | bytes, what: str, *, max_depth: int = MAX_DEPTH, scan: bool = True,
              **kwargs: Any) -> Any:
    """`json.loads(text, **kwargs)` within the bounds; json.JSONDecodeError passes through (with
    its line and column) for the caller to word. `scan=False` (large answers of a server) skips
    the depth scan that locates the deepest point: the parser's own recursion limit still ends
    in `BoundedInputError`, not a traceback."""
    if isinstance(text, bytes):
        text = decode_text(text, what)
    depth, where = json_depth(text, max_depth) if scan else (0, -1)
    if depth > max_depth:
        line, column = _line_column(text, where)
        raise BoundedInputError(f"{what} is nested {depth:,} levels deep at line {line}, column {column}; "
                                f"at most {max_depth} levels are accepted", line, column)
    kwargs.setdefault("parse_int", _number(int, what))
    kwargs.setdefault("parse_float", _number(float, what))
    with guard(what):
        return json.loads(text, **kwargs)


@contextlib.contextmanager
def guard(what: str, max_depth: int = MAX_DEPTH) -> Iterator[None]:
    """Around a parser: RecursionError and the integer digit limit become `BoundedInputError`."""
    try:
        yield
    except RecursionError:
        raise BoundedInputError(f"{what} is nested too deeply to read; at most {max_depth} levels are "
                                "accepted") from None
    except ValueError as exc:
        if isinstance(exc, BoundedInputError) or not is_number_limit(exc):
            raise
        raise BoundedInputError(f"{what} holds a number longer than Python reads (over 4,300 digits); numbers "
                                f"are limited to {MAX_NUMBER_DIGITS:,} digits") from None


def yaml_loader(yaml: Any, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """`yaml` (a pure-Python ruamel.yaml `YAML`) with a scanner that refuses a flow collection
    (`[...]`, `{...}`) nested more than `max_depth` deep as soon as it meets it.

    Without it a hostile `[[[[...` thousands of levels deep ends in the parser's RecursionError
    (`guard`), but only after the scanner has read every level ahead and, at each token, looked at
    the possible keys of all of them (quadratic: 8 s of CPU for 5,000 levels, before any node)."""
    import ruamel.yaml.scanner

    base = yaml.Scanner or ruamel.yaml.scanner.Scanner

    class DepthBoundedScanner(base):  # type: ignore[misc, valid-type]
        def fetch_flow_collection_start(self, TokenClass: Any, to_push: str) -> None:
            if len(self.flow_context) >= max_depth:
                mark = self.reader.get_mark()
                line, column = mark.line + 1, mark.column + 1
                raise BoundedInputError(f"{what} is nested more than {max_depth} levels deep at line {line}, column "
                                        f"{column}", line, column)
            super().fetch_flow_collection_start(TokenClass, to_push)

    yaml.Scanner = DepthBoundedScanner
    return yaml


def is_number_limit(exc: BaseException) -> bool:
    """Whether `exc` is Python's refusal of an integer of more than 4,300 digits (`int()`, the
    JSON and XML-RPC parsers): its text ("Exceeds the limit (4300 digits) for integer string
    conversion ... sys.set_int_max_str_digits()") is never an operator's message."""
    text = str(exc)
    return isinstance(exc, ValueError) and "digits" in text and "limit" in text


def check_tree(value: Any, what: str, max_depth: int = MAX_DEPTH) -> None:
    """Depth, number lengths and size of a parsed document (mappings, sequences, scalars),
    iteratively. The size counts every value as reached from the top: YAML aliases share one
    object, so an alias bomb (a few lines whose aliases expand to billions of values) stops here
    at `MAX_TREE_VALUES` instead of in whoever walks it next."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_TREE_VALUES:
            raise BoundedInputError(f"{what} expands to more than {MAX_TREE_VALUES:,} values (YAML aliases that "
                                    "repeat other parts?); a real file is far smaller")
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            if item.bit_length() > MAX_NUMBER_DIGITS * 3.33:
                raise BoundedInputError(f"{what} holds a number of more than {MAX_NUMBER_DIGITS:,} digits")
            continue
        if isinstance(item, Mapping):
            children: Any = list(item.keys()) + list(item.values())
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > max_depth:
            raise BoundedInputError(f"{what} is nested more than {max_depth} levels deep")
        stack.extend((child, depth + 1) for child in children)


def size_text(count: int) -> str:
    """A byte count for a message: `4 MiB`, `512 KiB`."""
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count // 1024} KiB"


_size = size_text
