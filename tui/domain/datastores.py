"""Datastores: image, system and file stores with their capacity."""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.one_states import DATASTORE_STATES, DATASTORE_TYPES


@dataclass(frozen=True)
class Datastore:
    id: int
    name: str
    uname: str
    gname: str
    type: int
    state: int
    ds_mad: str
    tm_mad: str
    total_mb: int
    free_mb: int
    used_mb: int
    cluster_ids: tuple[int, ...]
    image_ids: tuple[int, ...]
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def type_name(self) -> str:
        return DATASTORE_TYPES.get(self.type, f"TYPE_{self.type}")

    @property
    def state_name(self) -> str:
        return DATASTORE_STATES.get(self.state, f"STATE_{self.state}")
