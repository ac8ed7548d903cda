"""Generic documents (DOCUMENT objects): OneFlow keeps services (type 100) and service templates
(type 101) as documents whose TEMPLATE/BODY is JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tui.domain.bounded import load_json
from tui.domain.object_header import Owned
from tui.domain.permissions import Permissions

SERVICE_DOCUMENT = 100
SERVICE_TEMPLATE_DOCUMENT = 101


def parse_body(text: str) -> dict[str, Any] | None:
    """A document body as a JSON object, or None when it is not one."""
    try:
        value = load_json(text, "a document body", scan=False)
    except (ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Document(Owned):
    type: int
    permissions: Permissions
    #: TEMPLATE/BODY as sent by the server
    body_text: str
    #: the body as a JSON object, None when it is not JSON (documents of other kinds)
    body: dict[str, Any] | None
