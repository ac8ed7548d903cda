"""UUID text as the standard library's `uuid` module writes it, without importing that module.

`import uuid` imports `platform` (and `_uuid`): about 30 ms of the embedded site's start-up on a
loaded machine, on the path of `sitetk --demo`'s first rows (the console waits for its demo
site's endpoints). The site needs only two things of it, reimplemented here bit for bit (RFC 4122
section 4.1.3 version bits, 4.1.1 variant bits; 4.3 name-based SHA-1): tests/sim/test_uuids.py
checks both against `uuid`.
"""

from __future__ import annotations

import hashlib


def _text(value: int, version: int) -> str:
    value &= ~(0xC000 << 48)  # the variant: RFC 4122
    value |= 0x8000 << 48
    value &= ~(0xF000 << 64)  # the version
    value |= version << 76
    digits = f"{value:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def uuid4_text(bits: int) -> str:
    """`str(uuid.UUID(int=bits, version=4))` for 128 random bits."""
    return _text(bits, 4)


def uuid5_text(namespace: str, name: str) -> str:
    """`str(uuid.uuid5(uuid.UUID(namespace), name))`: the name-based (SHA-1) UUID."""
    space = int(namespace.replace("-", ""), 16).to_bytes(16, "big")
    digest = hashlib.sha1(space + name.encode("utf-8"), usedforsecurity=False).digest()
    return _text(int.from_bytes(digest[:16], "big"), 5)
