"""Appliance versions: `vX.X.X-YYYYMMDD-HHMM` split into software version and build stamp.

The spec's convention is a software version (`v1.0.0`) then a build date and time stamp
(`20250915-1622`), joined by `-`. Marketplaces also list versions that break it (`v1.29`,
`1.31.3-6.10.0-3-20251118-1327`, `v4.3.0.23-20250919-1159`, `7.4.0-0-20260714`, even empty
strings). `parse_version` never raises: such versions come back with `conforming=False` and a
reason, split best-effort at the first `-` (the part before is the software version, the rest the
stamp), which is also how the image attribute file records them.

Ordering: versions sort by software version numerically (a leading `v` and trailing `.0`
parts ignored, so `v1.29` equals `1.29.0` here), then by the build time found in the stamp (the
last `YYYYMMDD[-HHMM]` in it; no build time sorts first), then by the raw text, so that `sorted`
gives a total order even over garbage. `newer_than` / `compare` answer "is this a newer build",
which is what upgrade decisions need: they ignore the raw-text tie-break, and when either side
has no build time (a bare `v1.29`) they compare the software versions only.

Image attributes hold the two parts (`attribute_parts`): the software version and the build
stamp. A part the version does not have (no `-`, so no stamp; or nothing before the first `-`) is
written as `NO_PART` ("none"), never as an empty value, and `version_from_parts` reads it back as
absent, so the attributes of every version join back to the same version (`canonical_version`:
surrounding whitespace and a dangling final `-` dropped). A version whose real stamp or software
part is the word "none" reads back without it (no marketplace serves one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache, total_ordering

_CONFORMING = re.compile(r"v([0-9]+)\.([0-9]+)\.([0-9]+)-([0-9]{8})-([0-9]{4})")
_STAMP = re.compile(r"([0-9]{8})-([0-9]{4})")
# the last date (optionally with a time) inside a non-conforming stamp; digits must not run on
_LOOSE_STAMP = re.compile(r"(?<![0-9])([0-9]{8})(?:-([0-9]{4}))?(?![0-9])")
_LEADING_DIGITS = re.compile(r"[0-9]+")
# longer numbers are not versions (and int() refuses over 4300 digits)
_MAX_DIGITS = 100
#: what an image attribute holds for a part the version does not have (never an empty value)
NO_PART = "none"


@total_ordering
@dataclass(frozen=True, eq=False)
class ApplianceVersion:
    """One appliance version string, parsed.

    `software` is the part before the first `-` (`v1.0.0`), `stamp` the rest (`20250915-1622`,
    empty when there is no `-`). `numbers` are the software version's numeric parts, `build`
    the build time read from the stamp (None when none could be found).
    """

    raw: str
    software: str
    stamp: str
    numbers: tuple[int, ...]
    build: datetime | None
    conforming: bool
    reason: str = ""

    @property
    def label(self) -> str:
        """The raw text, or a placeholder for an empty version (for tables)."""
        return self.raw if self.raw.strip() else "(no version)"

    def semantic_key(self) -> tuple[object, ...]:
        """Software numbers (trailing zeros dropped), then build time: "how new is this build"."""
        numbers = list(self.numbers)
        while numbers and numbers[-1] == 0:
            numbers.pop()
        build = (1, self.build) if self.build is not None else (0, datetime.min)
        # garbage (no numbers at all) sorts below every real version
        return (1 if self.numbers else 0, tuple(numbers), build)

    def compare(self, other: ApplianceVersion) -> int:
        """-1, 0 or 1 as this version is older than, as new as, or newer than `other`.

        Where either side has no build time, only the software versions are compared: `v1.29`
        and `v1.29.0-20250101-0000` are the same release, `v1.29` is older than `1.31.3-...`.
        """
        mine, theirs = self.semantic_key(), other.semantic_key()
        if self.build is None or other.build is None:
            mine, theirs = mine[:2], theirs[:2]
        return (mine > theirs) - (mine < theirs)

    def newer_than(self, other: ApplianceVersion) -> bool:
        return self.compare(other) > 0

    def same_release(self, other: ApplianceVersion) -> bool:
        """Same software version and build time (the raw spelling may differ)."""
        return self.compare(other) == 0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ApplianceVersion):
            return NotImplemented
        return self.raw == other.raw

    def __hash__(self) -> int:
        return hash(self.raw)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ApplianceVersion):
            return NotImplemented
        return (self.semantic_key(), self.raw) < (other.semantic_key(), other.raw)

    def __str__(self) -> str:
        return self.raw


@lru_cache(maxsize=4096)
def parse_version(raw: str) -> ApplianceVersion:
    """Parse a version string; never raises (non-conforming forms are flagged with a reason).

    Kept by the text (an ApplianceVersion is immutable): every pass parses each marketplace app's
    version again, 1,204 parses of ~50 us in one setup run-status-rerun, most of them the same
    few dozen texts."""
    text = raw.strip()
    reasons: list[str] = []
    if text != raw:
        reasons.append("surrounding whitespace")
    if not text:
        return ApplianceVersion(raw, "", "", (), None, False, "the version is empty")

    software, sep, stamp = text.partition("-")
    numbers = _numbers(software)
    match = _CONFORMING.fullmatch(text)
    build: datetime | None = None
    if match:
        build = _stamp_time(match.group(4), match.group(5))
        if build is None:
            reasons.append(f"build stamp {stamp!r} is not a real date and time (YYYYMMDD-HHMM)")
        if len(numbers) != 3:
            reasons.append(f"software version numbers longer than {_MAX_DIGITS} digits")
    else:
        reasons.extend(_software_problems(software))
        if not sep:
            reasons.append("no build stamp after the software version")
        elif not _STAMP.fullmatch(stamp):
            reasons.append(f"build stamp {stamp!r} is not YYYYMMDD-HHMM")
        build = _loose_build(stamp)
    conforming = not reasons
    reason = "; ".join(reasons)
    if reason:
        reason = f"{reason} (expected vX.X.X-YYYYMMDD-HHMM)"
    return ApplianceVersion(raw, software, stamp, numbers, build, conforming, reason)


def canonical_version(raw: str) -> str:
    """The version text the attributes record: surrounding whitespace and a dangling `-` dropped."""
    text = raw.strip()
    software, sep, stamp = text.partition("-")
    return software if sep and not stamp else text


def attribute_parts(raw: str) -> tuple[str, str]:
    """(software version, build stamp) as the image attributes hold them: split at the first `-`,
    a missing part written as `NO_PART`; `version_from_parts` joins them back."""
    version = parse_version(raw)
    return (version.software or NO_PART, version.stamp or NO_PART)


def version_from_parts(software: str, stamp: str) -> ApplianceVersion:
    """The version an image's attributes describe: software version and stamp joined by `-`.

    An empty part or `NO_PART` is absent (images tagged before `NO_PART` existed carry an empty
    stamp for a version without one).
    """
    software = "" if software.strip() == NO_PART else software
    stamp = "" if stamp.strip() == NO_PART else stamp
    return parse_version(f"{software}-{stamp}" if stamp else software)


def newest(versions: list[ApplianceVersion] | tuple[ApplianceVersion, ...]) -> ApplianceVersion | None:
    """The newest build of `versions` (by `semantic_key`, raw text breaking ties), or None."""
    if not versions:
        return None
    return max(versions, key=lambda v: (v.semantic_key(), v.raw))


def _numbers(software: str) -> tuple[int, ...]:
    """Numeric parts of `v1.2.3`; stops at the first part that does not start with a digit."""
    body = software[1:] if software[:1] in ("v", "V") else software
    out: list[int] = []
    for part in body.split("."):
        match = _LEADING_DIGITS.match(part)
        if not match or len(match.group(0)) > _MAX_DIGITS:
            break
        out.append(int(match.group(0)))
        if match.end() != len(part):
            break
    return tuple(out)


def _software_problems(software: str) -> list[str]:
    problems: list[str] = []
    if not software.startswith("v"):
        problems.append(f"software version {software!r} has no leading 'v'")
    body = software[1:] if software[:1] in ("v", "V") else software
    parts = body.split(".")
    if not all(p.isdigit() and p.isascii() for p in parts):
        problems.append(f"software version {software!r} is not numbers separated by dots")
    elif len(parts) != 3:
        problems.append(f"software version {software!r} has {len(parts)} numbers, not 3 (X.X.X)")
    return problems


def _stamp_time(date: str, clock: str | None) -> datetime | None:
    try:
        return datetime.strptime(date + (clock or "0000"), "%Y%m%d%H%M")
    except ValueError:
        return None


def _loose_build(stamp: str) -> datetime | None:
    for match in reversed(list(_LOOSE_STAMP.finditer(stamp))):
        when = _stamp_time(match.group(1), match.group(2))
        if when is not None:
            return when
    return None
