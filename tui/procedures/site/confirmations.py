"""The operator's explicit confirmations that an appliance ID in core.yaml is right after all.

The identity check (`domain.appliance_identity`) says an ID is not its component's appliance when
the object carries no matching marketplace attributes. An operator who built their own bastion
image can say "this one is right" with a reason: `confirm_appliance_id` records which object
(kind, ID and name at the time) for which variable, who and when, in a file beside the site
record (`<state_dir>/toolkit/<endpoint>.confirmations.json`, mode 0600, one per cloud endpoint),
and writes an audit entry. A confirmation is not kept in core.yaml (anyone editing the file
could add one unseen); it applies only while the variable points at the same object with the
same name, and the check keeps showing it as a warning naming the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.domain.appliance_identity import (
    Confirmation,
)
from tui.domain.bounded import BoundedInputError, load_json, read_text_file
from tui.errors import SiteError
from tui.procedures.site_record import site_record_path
from tui.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    pass

FORMAT_VERSION = 1
#: a reason is one line of text an auditor can read
MAX_REASON = 500


def confirmations_path(settings: Settings) -> Any:
    record = site_record_path(settings)
    return record.with_name(record.stem + ".confirmations.json")


def load_confirmations(settings: Settings) -> tuple[Confirmation, ...]:
    """Every confirmation recorded for the settings' endpoint; () when none. Raises SiteError when unreadable."""
    path = confirmations_path(settings)
    try:
        text = read_text_file(path, str(path))
    except FileNotFoundError:
        return ()
    except (OSError, BoundedInputError) as exc:
        raise SiteError("The confirmations cannot be read", f"{path}: {exc}. Move the file away; the checks then count none.") from None
    try:
        data = load_json(text, str(path))
        if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION or not isinstance(data.get("confirmations"), list):
            raise ValueError(f"expected {{'format': {FORMAT_VERSION}, 'confirmations': [...]}}")
        return tuple(Confirmation.from_json(item) for item in data["confirmations"] if isinstance(item, dict))
    except (ValueError, RecursionError) as exc:
        raise SiteError("The confirmations cannot be read", f"{path}: {exc}. Move the file away; the checks then count none.") from None


def check_reason(reason: str | None) -> str:
    """The reason, stripped; SiteError when empty, too long or not one line."""
    text = (reason or "").strip()
    if not text:
        raise SiteError("A reason is needed", "Say why this object is right (it goes into the audit log).")
    if len(text) > MAX_REASON or any(ch in text for ch in "\r\n") or not text.isprintable():
        raise SiteError("The reason must be one line of plain text", f"At most {MAX_REASON} characters, no line breaks or control characters.")
    return text
