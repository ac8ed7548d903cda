"""Remote text made safe for a terminal: control characters shown as escapes, never obeyed.

Names, versions and descriptions come from marketplaces, VM and image names from the cloud's
users, template values from anywhere. Written raw to a terminal, `ESC ] 0 ; ... BEL` retitles the
window, `ESC [ 2 J` clears the screen, a carriage return overwrites what was printed, and
bidirectional overrides reorder what the operator reads. `escape_controls` replaces each such
character by a visible escape (`\\x1b`, `\\r`, `\\u202e`) and keeps tabs and newlines. Every CLI
printer goes through it (`tui.cli.common.EscapingStream` wraps stdout and stderr).
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional embeddings, overrides
# and isolates (U+202A-U+202E, U+2066-U+2069) plus the line/paragraph separators
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\x08": "\\b", "\x07": "\\a", "\x00": "\\0"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """`text` with every terminal control character replaced by a visible escape."""
    if text.isprintable():  # the common case, in C: no control, format or separator character
        return text
    return _UNSAFE.sub(_escape, text)


def has_controls(text: str) -> bool:
    """Whether `text` holds a character `escape_controls` would replace."""
    return _UNSAFE.search(text) is not None
