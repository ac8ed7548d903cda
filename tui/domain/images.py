"""Images: state table and `ImageInfo`, the record of one image in a datastore.

The marketplace appliance attributes (`<PREFIX>_MARKETPLACE_APPLIANCE_NAME`, ...) live in the
image's TEMPLATE (`attributes`); an image in ERROR carries the reason in TEMPLATE/ERROR.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.permissions import Permissions

#: IMAGE STATE code -> (name, CLI short name)
IMAGE_STATES: dict[int, tuple[str, str]] = {
    0: ("INIT", "init"),
    1: ("READY", "rdy"),
    2: ("USED", "used"),
    3: ("DISABLED", "disa"),
    4: ("LOCKED", "lock"),
    5: ("ERROR", "err"),
    6: ("CLONE", "clon"),
    7: ("DELETE", "dele"),
    8: ("USED_PERS", "used"),
    9: ("LOCKED_USED", "lock"),
    10: ("LOCKED_USED_PERS", "lock"),
}

READY, USED, LOCKED, ERROR, USED_PERS = 1, 2, 4, 5, 8
#: the image is being removed (the datastore driver deletes its file, then the image goes)
IMAGE_DELETE = 7

#: IMAGE TYPE code -> name
IMAGE_TYPES: dict[int, str] = {
    0: "OS", 1: "CDROM", 2: "DATABLOCK", 3: "KERNEL", 4: "RAMDISK", 5: "CONTEXT", 6: "FILESYSTEM",
}


def image_state_names(state: int) -> tuple[str, str]:
    return IMAGE_STATES.get(state, (f"STATE_{state}", f"?{state}"))


@dataclass(frozen=True)
class ImageInfo:
    id: int
    name: str
    uid: int
    gid: int
    uname: str
    gname: str
    state: int
    #: long name (READY, LOCKED, ...)
    status: str
    #: the platform CLI's short name (rdy, lock, err, ...)
    state_name: str
    type: int
    persistent: bool
    datastore_id: int
    datastore: str
    size_mb: int
    format: str
    source: str
    path: str
    regtime: int
    running_vms: int
    vm_ids: tuple[int, ...]
    permissions: Permissions
    attributes: Attributes = EMPTY_ATTRIBUTES

    @property
    def type_name(self) -> str:
        return IMAGE_TYPES.get(self.type, f"TYPE_{self.type}")

    @property
    def usable(self) -> bool:
        """Ready for a VM (READY, or USED by others for a non-persistent image)."""
        return self.state in (READY, USED)

    @property
    def error(self) -> str:
        """TEMPLATE/ERROR: why an image is in ERROR; "" otherwise."""
        return self.attributes.get("ERROR")
