"""Object names the platform accepts, and names the console builds made acceptable.

The platform checks every object name on allocate and rename (`PoolObjectSQL::name_is_valid`,
src/pool/PoolObjectSQL.cc, release-7.0.0 line 27 and 552-590): it refuses an empty name, any of
the characters `&|:\\";/'#{}$<>`, from release-6.10.4 on also tab, newline, vertical tab, form
feed and carriage return (release-6.10.0 to 6.10.3 refuse only the first set), and a name longer
than 128 bytes (`std::string::length`, so UTF-8 bytes, not characters). User names refuse space
and `:` besides (`User::INVALID_NAME_CHARS`, src/um/User.cc line 26).

The platform accepts every other control character (ESC, BEL, ...), and then answers XML that no
XML parser reads: the console refuses such names before sending (`console_name_problem`), and
`fit_name` turns a name the console builds (export names, download names) into one the platform
and its XML take. The console also refuses, in the names it creates, the characters its own
screens show as escapes (C1 controls such as NEL U+0085, the line/paragraph separators,
zero-width and bidirectional characters: `tui.domain.printable`): the platform stores them, but a
name holding one looks like another name, or reads in another order, wherever it is listed.
"""

from __future__ import annotations

import re

from tui.domain.printable import INVISIBLE

#: PoolObjectSQL::INVALID_NAME_CHARS from release-6.10.4 on (7.x too)
INVALID_NAME_CHARS = "&|:\\\";/'#{}$<>\t\n\v\f\r"
#: PoolObjectSQL::INVALID_NAME_CHARS of release-6.10.0 to 6.10.3
INVALID_NAME_CHARS_BEFORE_6_10_4 = "&|:\\\";/'#{}$<>"
#: User::INVALID_NAME_CHARS, checked on user names besides the above
USER_EXTRA_CHARS = " :\t\n\v\f\r"
MAX_NAME_BYTES = 128

#: characters XML 1.0 cannot carry (C0 controls but tab, newline and carriage return), and DEL
_XML_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: characters XML carries but a name must not hold: C1 controls (NEL U+0085 among them), the
#: line and paragraph separators, and the invisible format characters (zero-width, bidirectional)
_UNSEEN = re.compile(f"[\x80-\x9f\u2028\u2029{INVISIBLE}]")


def name_problem(name: str, invalid_chars: str = INVALID_NAME_CHARS) -> str | None:
    """The platform's refusal of `name` (its own words), or None when it accepts it."""
    if not name:
        return "Invalid NAME, it cannot be empty"
    bad = next((char for char in name if char in invalid_chars), None)
    if bad is not None:
        return f"Invalid NAME, char '{bad}' is not allowed"
    if len(name.encode()) > MAX_NAME_BYTES:
        return f"Invalid NAME, max length is {MAX_NAME_BYTES} chars"
    return None


def console_name_problem(name: str) -> str | None:
    """Why the console will not send `name`: the platform's refusal (the strictest version's), or a
    control character the platform takes but its XML answers then cannot carry."""
    return name_problem(name) or control_problem(name)


def control_problem(name: str) -> str | None:
    """Why the console will not send `name` whatever the version: a control character the
    platform's XML cannot carry, or a C1 control or invisible character it holds; None without."""
    control = _XML_UNSAFE.search(name)
    if control is not None:
        return (f"Invalid NAME, control character U+{ord(control.group(0)):04X} is not allowed "
                "(the platform stores it, but then answers XML that cannot be read)")
    unseen = _UNSEEN.search(name)
    if unseen is not None:
        code = ord(unseen.group(0))
        kind = "control" if code <= 0x9F or code in (0x2028, 0x2029) else "invisible"
        return (f"Invalid NAME, {kind} character U+{code:04X} is not allowed (the platform stores it, but "
                "the name is then listed with an escape, and looks like another name or reads in another order)")
    return None


def fit_name(name: str, replacement: str = "-") -> str:
    """`name` made acceptable: refused and control characters replaced, cut to 128 bytes (on a
    character boundary). An empty result becomes the replacement."""
    cleaned = "".join(replacement if char in INVALID_NAME_CHARS else char for char in name)
    cleaned = _UNSEEN.sub(replacement, _XML_UNSAFE.sub(replacement, cleaned))
    encoded = cleaned.encode()
    if len(encoded) > MAX_NAME_BYTES:
        cleaned = encoded[:MAX_NAME_BYTES].decode(errors="ignore")
    return cleaned or replacement
