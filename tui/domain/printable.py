"""Remote text made safe for a terminal: control characters shown as escapes, never obeyed.

Names, versions and descriptions come from marketplaces, VM and image names from the cloud's
users, template values from anywhere. Written raw to a terminal, `ESC ] 0 ; ... BEL` retitles the
window, `ESC [ 2 J` clears the screen, a carriage return overwrites what was printed,
bidirectional overrides reorder what the operator reads, and zero-width characters (U+200B
zero-width space, U+2060 word joiner, U+FEFF) make two different names look the same.
`escape_controls` replaces each such character by a visible escape (`\\x1b`, `\\r`, `\\u202e`,
`\\u200b`) and keeps tabs and newlines. Every CLI printer goes through it
(`tui.cli.common.EscapingStream` wraps stdout and stderr).
"""

from __future__ import annotations

import re

#: the characters a name looks the same without (Unicode format characters that draw nothing):
#: zero-width space, non-joiner and joiner (U+200B-U+200D), the left-to-right and right-to-left
#: marks (U+200E, U+200F) and the Arabic letter mark (U+061C), the bidirectional embeddings,
#: overrides and isolates (U+202A-U+202E, U+2066-U+2069), the word joiner and invisible operators
#: (U+2060-U+2064), the zero-width no-break space / byte order mark (U+FEFF)
INVISIBLE = "\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
# C0 controls but tab and newline, DEL, C1 controls (NEL U+0085 among them), the line/paragraph
# separators, and the invisible characters above
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{INVISIBLE}]")
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
