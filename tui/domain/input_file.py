"""The toolkit input file (the spec's JSON shape) and the instantiate request built from it.

Shape:

    {
      "name": "Site Toolkit v0.5.0",
      "custom_attrs_values": {"app_objectstore_hostname": "s3.site.org", ...},
      "networks_values": [{"Public": {"id": "0"}}]
    }

`name` is a string; every input value is a string; `networks_values` is a list of single-key
objects mapping a network name to `{"id": "<network id>"}`. A file may use the 7.x key
`user_inputs_values` instead (never both); a file keeps the key it was read with, and files the
console writes for a 7.x cloud (the skeleton of `sitetk toolkit inputs`, saves from the form) use
`user_inputs_values` (oneflow-server.rb of 7.x reads that key; 6.10 reads `custom_attrs_values`). A file may leave secrets out: they are asked for at
deploy time and passed to `merge_template` as `extra_values`. Loading reports the line and
column of malformed JSON and of wrongly shaped values; duplicate keys are refused (JSON would
silently keep the last one).

The instantiate request's `merge_template` names the values `custom_attrs_values` for a 6.x
platform and `user_inputs_values` from 7.0 on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any, Collection, Mapping, Sequence

from tui.domain.bounded import BoundedInputError, load_json
from tui.domain.json_types import json_type_name
from tui.domain.naming import NamingProfile
from tui.domain.toolkit_inputs import FormField
from tui.domain.versions import ApplianceVersion, parse_version

KEY_NAME = "name"
KEY_VALUES_6 = "custom_attrs_values"
KEY_VALUES_7 = "user_inputs_values"
KEY_NETWORKS = "networks_values"
_ALLOWED = (KEY_NAME, KEY_VALUES_6, KEY_VALUES_7, KEY_NETWORKS)


class InputFileError(ValueError):
    """A malformed or wrongly shaped input file; `line`/`column` (1-based) when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        where = f"line {line}, column {column}: " if line is not None and column is not None else ""
        super().__init__(f"{where}{message}")
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True)
class InputFile:
    name: str
    #: input name -> value, in file order
    values: tuple[tuple[str, str], ...] = ()
    #: network name -> network id, in file order
    networks: tuple[tuple[str, str], ...] = ()
    #: the key the values are written under: 6.x `custom_attrs_values`, 7.x `user_inputs_values`
    values_key: str = KEY_VALUES_6

    def value_map(self) -> dict[str, str]:
        return dict(self.values)

    def with_values(self, values: Mapping[str, str]) -> InputFile:
        """A copy whose values are `values` (order: existing names first, then new ones)."""
        merged = {**self.value_map(), **values}
        return replace(self, values=tuple(merged.items()))

    def for_platform(self, platform_version: str) -> InputFile:
        """A copy written with the platform's key (`values_key`); unchanged when the version is unknown."""
        try:
            return replace(self, values_key=values_key(platform_version))
        except ValueError:
            return self


def load_input_file(text: str) -> InputFile:
    """Parse and shape-check an input file; raises InputFileError with line and column."""
    try:
        data = load_json(text, "the input file", object_pairs_hook=_no_duplicates)
    except BoundedInputError as exc:
        raise InputFileError(exc.message, exc.line, exc.column) from None
    except json.JSONDecodeError as exc:
        raise InputFileError(f"not valid JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except _DuplicateKey as exc:
        line, column = _locate(text, exc.key, occurrence=2)
        raise InputFileError(f"key {exc.key!r} appears twice", line, column) from None
    if not isinstance(data, dict):
        raise InputFileError("the file must hold one JSON object {\"name\": ..., ...}", 1, 1)
    unknown = [key for key in data if key not in _ALLOWED]
    if unknown:
        line, column = _locate(text, unknown[0])
        raise InputFileError(
            f"unknown key {unknown[0]!r}; expected {KEY_NAME}, {KEY_VALUES_6} (or {KEY_VALUES_7}) and {KEY_NETWORKS}",
            line, column
        )
    if KEY_VALUES_6 in data and KEY_VALUES_7 in data:
        line, column = _locate(text, KEY_VALUES_7)
        raise InputFileError(f"give the values once: either {KEY_VALUES_6} or {KEY_VALUES_7}", line, column)
    name = data.get(KEY_NAME)
    if not isinstance(name, str):
        line, column = _locate(text, KEY_NAME) if KEY_NAME in data else (None, None)
        raise InputFileError(f"{KEY_NAME!r} must be a string (the service instance name)", line, column)
    key = KEY_VALUES_7 if KEY_VALUES_7 in data else KEY_VALUES_6
    return InputFile(name=name, values=_values(data, text), networks=_networks(data.get(KEY_NETWORKS, []), text),
                     values_key=key)


def _values(data: Mapping[str, Any], text: str) -> tuple[tuple[str, str], ...]:
    key = KEY_VALUES_7 if KEY_VALUES_7 in data else KEY_VALUES_6
    raw = data.get(key, {})
    if not isinstance(raw, dict):
        line, column = _locate(text, key)
        raise InputFileError(f"{key!r} must be an object of input name to string value", line, column)
    for name, value in raw.items():
        if not isinstance(value, str):
            line, column = _locate(text, name)
            raise InputFileError(
                f"the value of {name!r} must be a string (write it in double quotes), got {json_type_name(value)}",
                line,
                column,
            )
    return tuple(raw.items())


def _networks(raw: object, text: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list):
        line, column = _locate(text, KEY_NETWORKS)
        raise InputFileError(f"{KEY_NETWORKS!r} must be a list like [{{\"Public\": {{\"id\": \"0\"}}}}]", line, column)
    out: list[tuple[str, str]] = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or len(entry) != 1:
            line, column = _locate(text, KEY_NETWORKS)
            raise InputFileError(
                f"{KEY_NETWORKS}[{index}] must be one object with a single network name, like {{\"Public\": {{\"id\": \"0\"}}}}",
                line,
                column,
            )
        (network, target), = entry.items()
        if not isinstance(target, dict) or set(target) != {"id"} or not isinstance(target["id"], str):
            line, column = _locate(text, network)
            raise InputFileError(
                f"network {network!r} must map to {{\"id\": \"<network id>\"}} with the id as a string", line, column
            )
        if not target["id"].strip().isdigit():
            line, column = _locate(text, network)
            raise InputFileError(f"network {network!r}: id {target['id']!r} is not a network ID (a number)", line, column)
        out.append((network, target["id"].strip()))
    return tuple(out)


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _locate(text: str, key: str, occurrence: int = 1) -> tuple[int | None, int | None]:
    """Line and column of the `occurrence`-th `"key":` in the text (best effort)."""
    pattern = re.compile(re.escape(json.dumps(key)) + r"\s*:")
    matches = list(pattern.finditer(text))
    if len(matches) < occurrence:
        return None, None
    pos = matches[occurrence - 1].start()
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, column


def render_input_file(file: InputFile, *, omit: Collection[str] = ()) -> str:
    """The file in the spec's shape, the values under the file's key (`custom_attrs_values` for
    6.x, `user_inputs_values` for 7.x, see `InputFile.for_platform`), values named in `omit` left out."""
    data = {
        KEY_NAME: file.name,
        file.values_key: {name: value for name, value in file.values if name not in omit},
        KEY_NETWORKS: [{network: {"id": ident}} for network, ident in file.networks],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def values_key(platform_version: str) -> str:
    """`custom_attrs_values` for a 6.x platform, `user_inputs_values` from 7.0 on."""
    head = platform_version.strip().split(".")[0]
    if not head.isdigit():
        raise ValueError(f"platform version {platform_version!r} does not start with a major number")
    return KEY_VALUES_7 if int(head) >= 7 else KEY_VALUES_6


def missing_values(
    file: InputFile, fields: Sequence[FormField], extra_values: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """Mandatory inputs with no value in the file nor in `extra_values` (e.g. secrets left out)."""
    have = {**file.value_map(), **(extra_values or {})}
    return tuple(f.name for f in fields if f.mandatory and not have.get(f.name, ""))


def merge_template(
    file: InputFile,
    platform_version: str,
    *,
    fields: Sequence[FormField] = (),
    extra_values: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The instantiate `merge_template` for the platform version.

    `extra_values` (secrets asked at deploy time) override the file's values. With `fields`,
    every field gets a key (optional ones "" when absent, since the service requires a value
    for every input) and a missing mandatory value raises InputFileError.
    """
    values = {**file.value_map(), **(extra_values or {})}
    missing = missing_values(file, fields, extra_values)
    if missing:
        raise InputFileError(f"no value for {', '.join(missing)}")
    for f in fields:
        values.setdefault(f.name, "")
    return {
        KEY_NAME: file.name,
        values_key(platform_version): values,
        KEY_NETWORKS: [{network: {"id": ident}} for network, ident in file.networks],
    }


def skeleton_input_file(
    fields: Sequence[FormField], name: str, networks: Sequence[tuple[str, str]] = (("Public", "0"),)
) -> InputFile:
    """A file to fill in: every field with its default (or empty)."""
    return InputFile(name=name, values=tuple((f.name, f.default) for f in fields), networks=tuple(networks))


def suggested_instance_name(version: str | ApplianceVersion, naming: NamingProfile) -> str:
    """`Site Toolkit v0.5.0`: the toolkit's name with its software version, as the spec advises."""
    parsed = version if isinstance(version, ApplianceVersion) else parse_version(version)
    software = parsed.software.strip()
    return f"{naming.toolkit_appliance_name} {software}" if software else naming.toolkit_appliance_name
