"""Names of JSON value types, for messages about wrongly shaped JSON ("got a number")."""

from __future__ import annotations

from typing import Mapping


def json_type_name(value: object) -> str:
    """`None` -> "null", `True` -> "a boolean", `3` -> "a number", `[]` -> "an array", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
