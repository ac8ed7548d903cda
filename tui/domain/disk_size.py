"""Disk sizes as the operator writes them (`30G`, `30720`, `1.5T`) and as the platform keeps them (MB).

`parse_size_mb` reads a size the way the platform's CLI does for `onevm disk-resize`
(`OpenNebulaHelper.size_in_mb`, src/cli/one_helper.rb 1546-1566 at release-7.0.2): a number,
optionally with a fraction, then an optional unit m/mb, g/gb or t/tb in any case (no unit: MB),
rounded up to whole MB. Anything else is refused with the reason.
"""

from __future__ import annotations

import math
import re

#: the object store's data disk after the existing installer's resize: 30 GB
DEFAULT_OBJECTSTORE_DISK_MB = 30 * 1024
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)(t|tb|m|mb|g|gb)?$", re.IGNORECASE)
_UNITS = {"t": 1024 * 1024, "g": 1024, "m": 1}


class SizeError(ValueError):
    """A size the platform's CLI would refuse as malformed (the message says why)."""


def parse_size_mb(text: str) -> int:
    """`30G` -> 30720; raises SizeError for a malformed or zero size."""
    found = _SIZE.match(text.strip())
    if found is None:
        raise SizeError(f"{text.strip()!r} is not a size: give a number of MB, or one with a unit M, G or T (30G)")
    unit = (found.group(2) or "m")[0].lower()
    size = math.ceil(float(found.group(1)) * _UNITS[unit])
    if size <= 0:
        raise SizeError(f"{text.strip()!r} is not a size a disk can grow to: give more than 0")
    return size


def format_mb(size_mb: int) -> str:
    """30720 -> `30G`, 3072 -> `3G`, 2500 -> `2500M` (what `onevm disk-resize` reads back)."""
    if size_mb >= 1024 * 1024 and size_mb % (1024 * 1024) == 0:
        return f"{size_mb // (1024 * 1024)}T"
    if size_mb >= 1024 and size_mb % 1024 == 0:
        return f"{size_mb // 1024}G"
    return f"{size_mb}M"


def human_mb(size_mb: int) -> str:
    """30720 -> `30.0 GB (30720 MB)`: for messages."""
    return f"{size_mb / 1024:.1f} GB ({size_mb} MB)"
