"""Marketplace appliance records: the JSON a marketplace serves, parsed into frozen values.

Required fields are the ones the spec's record table names and the console cannot work without:
`_id.$oid` (identity), `name` (what the image attributes record), `version` (what upgrades
compare; an empty or non-conforming string is allowed and flagged, see `versions`) and
`links.download.href` (where the download starts). `publisher` is in the spec's table too but is
only shown, so a record without it is kept with an empty publisher and a warning.

Every other field (marketplace.md lists them) is optional: when absent it takes an empty value;
when present with the wrong shape it is ignored and named in `warnings`, so one odd field never
hides a record. Unknown fields are kept in `extra`. A record missing a required field, or with
one of the wrong type, raises `RecordError`, which names the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from tui.domain.bounded import BoundedInputError, load_json
from tui.domain.json_types import json_type_name
from tui.domain.versions import ApplianceVersion, parse_version

# Wire keys of the marketplace record (the platform's own spelling, read only here).
KEY_ID = "_id"
KEY_OID = "$oid"
KEY_LINKS = "links"
KEY_PLATFORM_VERSIONS = "opennebula_version"
KEY_TEMPLATE = "opennebula_template"

_KNOWN_KEYS = frozenset(
    {
        KEY_ID, KEY_LINKS, "name", "version", "publisher", "description", "short_description",
        "tags", "format", "creation_time", "os-id", "os-release", "os-arch", "hypervisor",
        KEY_PLATFORM_VERSIONS, KEY_TEMPLATE, "logo", "type", "roles", "disks", "files",
    }
)


class RecordError(ValueError):
    """A marketplace record lacks a required field or has one of the wrong type."""

    def __init__(self, message: str, *, field: str, record_id: str = "") -> None:
        where = f"appliance record {record_id!r}" if record_id else "appliance record"
        super().__init__(f"{where}: {message}")
        self.field = field
        self.record_id = record_id


class ApplianceType(str, Enum):
    """What exporting the appliance creates; a record without `type` is an image."""

    IMAGE = "IMAGE"
    VMTEMPLATE = "VMTEMPLATE"
    SERVICE_TEMPLATE = "SERVICE_TEMPLATE"


@dataclass(frozen=True)
class ApplianceFile:
    """One downloadable file of a record (`files` entry)."""

    name: str
    url: str
    type: str = ""
    dev_prefix: str = ""
    driver: str = ""
    size: int | None = None
    md5: str = ""
    sha256: str = ""


@dataclass(frozen=True)
class ApplianceRecord:
    id: str
    name: str
    version: str
    download_url: str
    marketplace_url: str
    publisher: str = ""
    description: str = ""
    short_description: str = ""
    tags: tuple[str, ...] = ()
    format: str = ""
    creation_time: int | None = None
    os_id: str = ""
    os_release: str = ""
    os_arch: str = ""
    hypervisor: str = ""
    platform_versions: tuple[str, ...] = ()
    #: decoded `opennebula_template`: VM template (image, VM template) or service template body
    template: Mapping[str, Any] | None = field(default=None, hash=False)
    type: ApplianceType = ApplianceType.IMAGE
    #: services: role name -> name of the VM-template record
    roles: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: VM templates: names of the image records
    disks: tuple[str, ...] = ()
    files: tuple[ApplianceFile, ...] = ()
    logo: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)
    #: optional fields that were present but ignored because of their shape
    warnings: tuple[str, ...] = ()

    @property
    def parsed_version(self) -> ApplianceVersion:
        return parse_version(self.version)

    @property
    def size(self) -> int | None:
        """Total size of the files in bytes, when every file states it."""
        sizes = [f.size for f in self.files]
        if not sizes or any(s is None for s in sizes):
            return None
        return sum(s for s in sizes if s is not None)

    def supports_platform(self, platform_version: str) -> bool:
        """Whether the record lists the platform's `X.Y` (a record listing none fits any)."""
        if not self.platform_versions:
            return True
        return platform_series(platform_version) in self.platform_versions


@dataclass(frozen=True)
class Listing:
    """The records of a marketplace listing, and the ones that could not be read."""

    records: tuple[ApplianceRecord, ...]
    errors: tuple[RecordError, ...]


def platform_series(platform_version: str) -> str:
    """`7.3.80` -> `7.3` (what records list in their platform versions)."""
    return ".".join(platform_version.strip().split(".")[:2])


def parse_record(data: object, marketplace_url: str) -> ApplianceRecord:
    """Parse one marketplace record; raises `RecordError` naming a missing or wrong field."""
    if not isinstance(data, Mapping):
        raise RecordError(f"expected a JSON object, got {json_type_name(data)}", field="")
    record_id = _record_id(data)
    reader = _Reader(data, record_id)
    name = reader.required_str("name")
    version = reader.required_str("version")
    download_url = _download_url(data, record_id)
    return ApplianceRecord(
        id=record_id,
        name=name,
        version=version,
        download_url=download_url,
        marketplace_url=marketplace_url,
        publisher=reader.optional_str("publisher", missing_warning=True),
        description=reader.optional_str("description"),
        short_description=reader.optional_str("short_description"),
        tags=reader.str_tuple("tags", split=","),
        format=reader.optional_str("format"),
        creation_time=reader.optional_int("creation_time"),
        os_id=reader.optional_str("os-id"),
        os_release=reader.optional_str("os-release"),
        os_arch=reader.optional_str("os-arch"),
        hypervisor=reader.optional_str("hypervisor"),
        platform_versions=reader.str_tuple(KEY_PLATFORM_VERSIONS, split=","),
        template=reader.template(),
        type=_appliance_type(data, record_id),
        roles=reader.roles(),
        disks=reader.str_tuple("disks"),
        files=reader.files(),
        logo=reader.optional_str("logo"),
        extra={k: v for k, v in data.items() if k not in _KNOWN_KEYS},
        warnings=tuple(reader.warnings),
    )


def parse_listing(data: object, marketplace_url: str) -> Listing:
    """Parse a listing (`{"appliances": [...]}` or a bare list); bad records land in `errors`."""
    items: object = data.get("appliances") if isinstance(data, Mapping) else data
    if not isinstance(items, list):
        raise RecordError(
            f"a listing is an object with an 'appliances' array, got {json_type_name(data)}", field="appliances"
        )
    records: list[ApplianceRecord] = []
    errors: list[RecordError] = []
    for index, item in enumerate(items):
        try:
            records.append(parse_record(item, marketplace_url))
        except RecordError as exc:
            errors.append(RecordError(f"entry {index}: {exc}", field=exc.field, record_id=exc.record_id))
    return Listing(tuple(records), tuple(errors))


def _record_id(data: Mapping[str, Any]) -> str:
    if KEY_ID not in data:
        raise RecordError("required field '_id' is missing", field=KEY_ID)
    ident = data[KEY_ID]
    if not isinstance(ident, Mapping) or not isinstance(ident.get(KEY_OID), str):
        raise RecordError(
            f"field '_id' must be an object {{\"$oid\": \"<id>\"}}, got {json_type_name(ident)}", field="_id.$oid"
        )
    value = str(ident[KEY_OID]).strip()
    if not value:
        raise RecordError("field '_id.$oid' is empty", field="_id.$oid")
    return value


def _download_url(data: Mapping[str, Any], record_id: str) -> str:
    links = data.get(KEY_LINKS)
    download = links.get("download") if isinstance(links, Mapping) else None
    href = download.get("href") if isinstance(download, Mapping) else None
    if href is None:
        raise RecordError("required field 'links.download.href' is missing", field="links.download.href", record_id=record_id)
    if not isinstance(href, str) or not href.strip():
        raise RecordError(
            f"field 'links.download.href' must be a URL string, got {json_type_name(href)}",
            field="links.download.href",
            record_id=record_id,
        )
    return href.strip()


def _appliance_type(data: Mapping[str, Any], record_id: str) -> ApplianceType:
    value = data.get("type")
    if value is None or value == "":
        return ApplianceType.IMAGE
    if isinstance(value, str):
        for kind in ApplianceType:
            if value.upper() == kind.value:
                return kind
    raise RecordError(
        f"field 'type' is {value!r}; expected VMTEMPLATE, SERVICE_TEMPLATE, or no type for an image",
        field="type",
        record_id=record_id,
    )


class _Reader:
    """Reads optional fields, collecting a warning for each one of the wrong shape."""

    def __init__(self, data: Mapping[str, Any], record_id: str) -> None:
        self.data = data
        self.record_id = record_id
        self.warnings: list[str] = []

    def _ignored(self, key: str, expected: str) -> None:
        self.warnings.append(f"field {key!r} ignored: expected {expected}, got {json_type_name(self.data[key])}")

    def required_str(self, key: str) -> str:
        if key not in self.data:
            raise RecordError(f"required field {key!r} is missing", field=key, record_id=self.record_id)
        value = self.data[key]
        if not isinstance(value, str):
            raise RecordError(
                f"field {key!r} must be a string, got {json_type_name(value)}", field=key, record_id=self.record_id
            )
        return value

    def optional_str(self, key: str, *, missing_warning: bool = False) -> str:
        value = self.data.get(key)
        if value is None:
            if missing_warning:
                self.warnings.append(f"field {key!r} is missing")
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        self._ignored(key, "a string")
        return ""

    def optional_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().isdigit():
            return int(value.strip())
        self._ignored(key, "a whole number")
        return None

    def str_tuple(self, key: str, *, split: str | None = None) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        if isinstance(value, str) and split is not None:
            return tuple(part.strip() for part in value.split(split) if part.strip())
        if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
            return tuple(str(v).strip() for v in value if str(v).strip())
        self._ignored(key, "a list of strings")
        return ()

    def template(self) -> Mapping[str, Any] | None:
        value = self.data.get(KEY_TEMPLATE)
        if value is None or value == "":
            return None
        if isinstance(value, Mapping):  # some servers send it already decoded
            return dict(value)
        if not isinstance(value, str):
            self._ignored(KEY_TEMPLATE, "a JSON-encoded string")
            return None
        try:
            decoded = load_json(value, f"field {KEY_TEMPLATE!r}")
        except BoundedInputError as exc:
            self.warnings.append(f"field {KEY_TEMPLATE!r} ignored: {exc.message}")
            return None
        except json.JSONDecodeError as exc:
            self.warnings.append(f"field {KEY_TEMPLATE!r} ignored: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})")
            return None
        if not isinstance(decoded, dict):
            self.warnings.append(f"field {KEY_TEMPLATE!r} ignored: it decodes to {json_type_name(decoded)}, not an object")
            return None
        return decoded

    def roles(self) -> dict[str, str]:
        value = self.data.get("roles")
        if value is None:
            return {}
        if isinstance(value, Mapping) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            return dict(value)
        self._ignored("roles", "an object of role name to record name")
        return {}

    def files(self) -> tuple[ApplianceFile, ...]:
        value = self.data.get("files")
        if value is None:
            return ()
        if not isinstance(value, list):
            self._ignored("files", "an array")
            return ()
        out: list[ApplianceFile] = []
        for index, item in enumerate(value):
            parsed = _file(item)
            if parsed is None:
                self.warnings.append(f"files[{index}] ignored: expected an object with string 'name' and 'url'")
            else:
                out.append(parsed)
        return tuple(out)


def _file(item: object) -> ApplianceFile | None:
    if not isinstance(item, Mapping):
        return None
    name, url = item.get("name"), item.get("url")
    if not isinstance(name, str) or not isinstance(url, str):
        return None
    size = item.get("size")
    if isinstance(size, str) and size.strip().isdigit():
        size = int(size.strip())
    checksum = item.get("checksum")
    checksum = checksum if isinstance(checksum, Mapping) else {}

    def text(value: object) -> str:
        return value if isinstance(value, str) else ""

    return ApplianceFile(
        name=name,
        url=url,
        type=text(item.get("type")),
        dev_prefix=text(item.get("dev_prefix")),
        driver=text(item.get("driver")),
        size=size if isinstance(size, int) and not isinstance(size, bool) else None,
        md5=text(checksum.get("md5")),
        sha256=text(checksum.get("sha256")),
    )
