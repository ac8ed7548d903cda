"""The header an object of the platform begins with: its ID and NAME, its owner and group (UID,
GID, UNAME, GNAME), then PERMISSIONS (`tui.domain.permissions`). These are `PoolObjectSQL`'s fields
(`include/PoolObjectSQL.h`), written first by each object's `to_xml` (e.g. `src/image/Image.cc`,
`src/document/Document.cc`); OneFlow's documents carry the same names."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Owned:
    """The header fields a record of an owned object keeps (images, networks, VM templates,
    documents, services and their templates)."""
    id: int
    name: str
    uid: int
    gid: int
    uname: str
    gname: str


#: the names of `Owned`'s fields, in order
OWNED_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Owned))
