"""VM templates (the platform's VMTEMPLATE objects)."""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.object_header import Owned
from tui.domain.permissions import Permissions


@dataclass(frozen=True)
class VmTemplate(Owned):
    regtime: int
    permissions: Permissions
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def image_ids(self) -> tuple[int, ...]:
        """IMAGE_ID of every DISK that names one."""
        ids: list[int] = []
        for disk in self.template.vectors("DISK"):
            value = disk.get("IMAGE_ID", "")
            if value.isdigit():
                ids.append(int(value))
        return tuple(ids)
