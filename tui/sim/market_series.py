"""Which records the embedded marketplace server answers a User-Agent: appmarket-simple's series rule.

`GET /appliance` filters records by the `OpenNebula X.Y` at the start of the User-Agent; an
unknown or missing series gets the latest series' list (appmarket-simple
`src/controllers/appmarket-server.rb`, `src/models/appliances.rb`).
"""

from __future__ import annotations

import re
from typing import Any


def cloud_version_label(one_version: str) -> str:
    """`7.0.0` -> `7.0`: the platform series a User-Agent names."""
    parts = one_version.split(".")
    return ".".join(parts[:2])


def lists_version(record: dict[str, Any], label: str) -> bool:
    """Whether a record's `opennebula_version` list contains `label` (e.g. "7.0")."""
    listed = str(record.get("opennebula_version", ""))
    return label in {v.strip() for v in listed.split(",")}


#: appmarket-simple `src/controllers/appmarket-server.rb` (`get '/appliance/?'`): anchored at the start
_UA_SERIES = re.compile(r"^OpenNebula (\d+\.\d+)")


def listed_series(records: list[dict[str, Any]]) -> set[str]:
    """Every series some record lists (the server's per-version cache, `models/appliances.rb`)."""
    return {v.strip() for r in records for v in str(r.get("opennebula_version", "")).split(",") if v.strip()}


def served_series(records: list[dict[str, Any]], user_agent: str) -> str | None:
    """The series whose list the server answers: the User-Agent's `OpenNebula X.Y` when some record
    lists it, else the latest series any record lists (`latest_one_version`, compared number by
    number); None when no record lists any (then the server answers every record)."""
    known = listed_series(records)
    match = _UA_SERIES.match(user_agent)
    if match and match.group(1) in known:
        return match.group(1)
    if not known:
        return None
    return max(known, key=lambda v: [int(p) if p.isdigit() else 0 for p in v.split(".")])


def served_for(records: list[dict[str, Any]], user_agent: str) -> list[dict[str, Any]]:
    """The records `GET /appliance` answers to this User-Agent (appmarket-simple's rule)."""
    series = served_series(records, user_agent)
    return list(records) if series is None else [r for r in records if lists_version(r, series)]
