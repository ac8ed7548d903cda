"""Cloud groups.

Apart from tui.domain.users: the console's start-up reads its user, never a group, and a frozen
dataclass costs ~1.3 ms of CPU to create at import (issue 24).
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes


@dataclass(frozen=True)
class Group:
    id: int
    name: str
    user_ids: tuple[int, ...]
    admin_ids: tuple[int, ...]
    template: Attributes = EMPTY_ATTRIBUTES
