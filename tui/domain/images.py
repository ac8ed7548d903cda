"""Images: state table and `ImageInfo`, the record of one image in a datastore.

The marketplace appliance attributes (`<PREFIX>_MARKETPLACE_APPLIANCE_NAME`, ...) live in the
image's TEMPLATE (`attributes`); an image in ERROR carries the reason in TEMPLATE/ERROR.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.object_header import Owned
from tui.domain.one_states import IMAGE_STATES, IMAGE_TYPES, ImageState
from tui.domain.permissions import Permissions


def image_state_names(state: int) -> tuple[str, str]:
    return IMAGE_STATES.get(state, (f"STATE_{state}", f"?{state}"))


@dataclass(frozen=True)
class ImageInfo(Owned):
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
        return self.state in (ImageState.READY, ImageState.USED)

    @property
    def error(self) -> str:
        """TEMPLATE/ERROR: why an image is in ERROR; "" otherwise."""
        return self.attributes.get("ERROR")
