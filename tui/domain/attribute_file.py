"""The image attribute file: which marketplace appliance, and which version, an image came from.

The spec's file has no extension and three `KEY="value"` lines, in this order:

    <PREFIX>_MARKETPLACE_APPLIANCE_NAME="<record name, unchanged>"
    <PREFIX>_MARKETPLACE_APPLIANCE_VERSION="<YYYYMMDD-HHMM, the second part of the version>"
    <PREFIX>_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION="<vX.X.X, the first part of the version>"

The names come from the naming profile. A version that breaks the convention is split at its
first `-` (see `versions`), so the attributes always join back to the record's version. A part the
version lacks is written as `none` (`versions.NO_PART`): a bare `v1.29` gets
`..._VERSION="none"` and `..._SOFTWARE_VERSION="v1.29"`, never an empty value. Values
are written with the platform's template quoting (`\\"` and `\\\\`), so any record name survives
the platform's parser; the file ends with a newline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from tui.domain.appliances import ApplianceRecord
from tui.domain.attributes import Attributes
from tui.domain.naming import NamingProfile
from tui.domain.template_text import TemplateSyntaxError, parse_template, quote
from tui.domain.versions import ApplianceVersion, attribute_parts, version_from_parts

AttributePairs = tuple[tuple[str, str], ...]


class AttributeFileError(ValueError):
    """An attribute file (or value) that cannot be written or read back as the spec says."""


@dataclass(frozen=True)
class ApplianceTag:
    """What the three attributes say: appliance name, build stamp and software version."""

    name: str
    stamp: str
    software_version: str

    @property
    def version(self) -> ApplianceVersion:
        """The appliance version these attributes describe (software and stamp joined by `-`)."""
        return version_from_parts(self.software_version, self.stamp)

    @property
    def complete(self) -> bool:
        """The attributes name the appliance and say which version it is.

        An empty stamp beside a software version (what taggers wrote for a version without a
        stamp before `none` was used) still says which version it is: `v1.29`.
        """
        return bool(self.name.strip() and (self.stamp.strip() or self.software_version.strip()))

    def same_version(self, other: "ApplianceTag") -> bool:
        """Same appliance name and the same version text (`none` and an empty part alike)."""
        return self.name == other.name and self.version.raw == other.version.raw

    def pairs(self, naming: NamingProfile) -> AttributePairs:
        """The attributes in the spec's order."""
        return (
            (naming.appliance_name_attribute, self.name),
            (naming.appliance_version_attribute, self.stamp),
            (naming.appliance_software_version_attribute, self.software_version),
        )


def tag_from_version(name: str, version: str) -> ApplianceTag:
    """The attributes of appliance `name` at `version` (a missing part written as `none`)."""
    software, stamp = attribute_parts(version)
    return ApplianceTag(name=name, stamp=stamp, software_version=software)


def tag_for(record: ApplianceRecord) -> ApplianceTag:
    """The attributes an image exported from `record` must carry."""
    return tag_from_version(record.name, record.version)


def attributes_for(record: ApplianceRecord, naming: NamingProfile) -> AttributePairs:
    """`(KEY, value)` pairs for `record`, in the spec's order."""
    return tag_for(record).pairs(naming)


def render_attribute_file(pairs: Iterable[tuple[str, str]]) -> str:
    """`KEY="value"` lines, one per pair, each ending with a newline."""
    lines: list[str] = []
    for key, value in pairs:
        if not key or not all(ch.isalnum() or ch == "_" for ch in key):
            raise AttributeFileError(f"attribute name {key!r} is not letters, digits and '_'")
        if "]]>" in value:
            raise AttributeFileError(f"the value of {key} contains ']]>', which the platform rejects")
        lines.append(f"{key}={quote(value)}\n")
    return "".join(lines)


def attribute_file_text(record: ApplianceRecord, naming: NamingProfile) -> str:
    """The whole attribute file for `record`, byte for byte as the spec shows it."""
    return render_attribute_file(attributes_for(record, naming))


def parse_attribute_pairs(text: str) -> AttributePairs:
    """Every `KEY="value"` of an attribute file, in order (vectors are refused)."""
    try:
        template = parse_template(text)
    except TemplateSyntaxError as exc:
        raise AttributeFileError(f"not an attribute file: {exc}") from exc
    pairs: list[tuple[str, str]] = []
    for key, value in template:
        if not isinstance(value, str):
            raise AttributeFileError(f"{key} is a vector; an attribute file holds only KEY=\"value\" lines")
        pairs.append((key, value))
    return tuple(pairs)


def parse_attribute_file(text: str, naming: NamingProfile) -> ApplianceTag:
    """Read an attribute file back; each of the three attributes must appear exactly once."""
    pairs = parse_attribute_pairs(text)
    # the platform upper-cases attribute names, and so does the parser
    expected = (
        naming.appliance_name_attribute.upper(),
        naming.appliance_version_attribute.upper(),
        naming.appliance_software_version_attribute.upper(),
    )
    unknown = [key for key, _ in pairs if key not in expected]
    if unknown:
        raise AttributeFileError(
            f"unexpected attribute {unknown[0]}; an attribute file holds only {', '.join(expected)}"
        )
    found: dict[str, str] = {}
    for key, value in pairs:
        if key in found:
            raise AttributeFileError(f"{key} appears more than once")
        found[key] = value
    missing = [key for key in expected if key not in found]
    if missing:
        raise AttributeFileError(f"missing {', '.join(missing)}")
    return ApplianceTag(name=found[expected[0]], stamp=found[expected[1]], software_version=found[expected[2]])


def installed_version_from_image_template(
    attrs: Attributes | Iterable[tuple[str, object]], naming: NamingProfile
) -> ApplianceTag | None:
    """The tag an image carries in its TEMPLATE, or None when it has no appliance name attribute.

    A partial tag (name but no version attributes) comes back with empty parts, so callers can
    tell "tagged, version unknown" (`complete` is False) from "not tagged".
    """
    scalars: dict[str, str] = {}
    for key, value in attrs:
        if isinstance(value, str):
            scalars.setdefault(key.upper(), value)
    name = scalars.get(naming.appliance_name_attribute.upper(), "")
    if not name.strip():
        return None
    return ApplianceTag(
        name=name,
        stamp=scalars.get(naming.appliance_version_attribute.upper(), ""),
        software_version=scalars.get(naming.appliance_software_version_attribute.upper(), ""),
    )


def is_tagged_with(attrs: Attributes | Iterable[tuple[str, object]], tag: ApplianceTag, naming: NamingProfile) -> bool:
    """Whether an image already carries exactly these attributes (attaching again changes nothing)."""
    return installed_version_from_image_template(attrs, naming) == tag
