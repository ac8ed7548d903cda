"""Input descriptions of a multi-VM service template: `M|O|type|description|params|default`.

A service template declares its inputs as description strings, in `custom_attrs` (6.x) or
`user_inputs` (7.x), e.g. `"M|password|Admin password (min 8 chars)"` or
`"O|range|Replicas|1..5|2"`. Fields: `M` mandatory or `O` optional; the type (text, text64,
password, boolean with YES/NO, number, number-float, range, range-float, list, list-multiple);
a description; params (`min..max` for ranges, `a,b,c` for lists); a default. Trailing fields may
be missing; the default is the rest of the string (so it may contain `|`). Some 7.x templates
give `user_inputs` as a list of objects (`name`, `type`, `mandatory`, `description`, `options`
or `min`/`max`, `default`): those are read too.

Length rules: a description or params may state a length rule in words, and the console enforces
it. Recognised, case-insensitive (N a whole number):
- minimum: `min N chars`, `min. N characters`, `minimum N chars`, `at least N characters`,
  `min length N`, `minimum length: N`, `N+ chars`;
- maximum: `max N chars`, `maximum N characters`, `at most N characters`, `max length N`,
  `up to N characters`.
A unit word (char, chars, character, characters) or the word `length` is required, so
`minimum 3 replicas` is not a length rule.

Networks are described as `M|network|description||id:<vnet>` (also `template_id:` and
`reserve_from:`); `NetworkSpec` reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Mapping


class InputSpecError(ValueError):
    """An input description string that does not follow `M|O|type|description|params|default`."""


class InputType(str, Enum):
    TEXT = "text"
    TEXT64 = "text64"
    PASSWORD = "password"
    BOOLEAN = "boolean"
    NUMBER = "number"
    NUMBER_FLOAT = "number-float"
    RANGE = "range"
    RANGE_FLOAT = "range-float"
    LIST = "list"
    LIST_MULTIPLE = "list-multiple"


@dataclass(frozen=True)
class LengthRule:
    min_length: int | None = None
    max_length: int | None = None

    def check(self, value: str) -> str | None:
        """A message when a non-empty value breaks the rule, else None."""
        if not value:
            return None
        if self.min_length is not None and len(value) < self.min_length:
            return f"must be at least {self.min_length} characters (has {len(value)})"
        if self.max_length is not None and len(value) > self.max_length:
            return f"must be at most {self.max_length} characters (has {len(value)})"
        return None


@dataclass(frozen=True)
class InputSpec:
    name: str
    mandatory: bool
    type: InputType
    description: str = ""
    params: str = ""
    default: str = ""
    #: the description string as the template gave it ("" when built from an object or a default)
    raw: str = ""
    #: why the template's description was not usable as given ("" when it was)
    problem: str = ""

    @property
    def options(self) -> tuple[str, ...]:
        """List choices (`a,b,c`)."""
        if self.type not in (InputType.LIST, InputType.LIST_MULTIPLE):
            return ()
        return tuple(option.strip() for option in self.params.split(",") if option.strip())

    @property
    def bounds(self) -> tuple[float, float] | None:
        """`(min, max)` of a range, None when params do not say `min..max`."""
        if self.type not in (InputType.RANGE, InputType.RANGE_FLOAT):
            return None
        low, sep, high = self.params.partition("..")
        try:
            return (float(low), float(high)) if sep else None
        except ValueError:
            return None

    @property
    def length_rule(self) -> LengthRule:
        return parse_length_rule(f"{self.description} {self.params}")

    @property
    def secret(self) -> bool:
        return self.type is InputType.PASSWORD


@dataclass(frozen=True)
class NetworkSpec:
    name: str
    mandatory: bool
    description: str = ""
    #: `id`, `template_id` or `reserve_from` ("" when the description names none)
    kind: str = ""
    #: the network (or template) ID given after the kind, "" when none
    default_id: str = ""


_UNIT = r"(?:chars?|characters?)\b"
_MIN_PATTERNS = (
    re.compile(rf"\b(?:min(?:imum)?\.?|at\s+least)\s*(?:length\s*)?(?:of\s*)?[:=]?\s*(\d+)\s*{_UNIT}", re.I),
    re.compile(r"\bmin(?:imum)?\.?\s*length\s*(?:of\s*)?[:=]?\s*(\d+)", re.I),
    re.compile(rf"\b(\d+)\s*\+\s*{_UNIT}", re.I),
)
_MAX_PATTERNS = (
    re.compile(rf"\b(?:max(?:imum)?\.?|at\s+most|up\s+to)\s*(?:length\s*)?(?:of\s*)?[:=]?\s*(\d+)\s*{_UNIT}", re.I),
    re.compile(r"\bmax(?:imum)?\.?\s*length\s*(?:of\s*)?[:=]?\s*(\d+)", re.I),
)


def parse_length_rule(text: str) -> LengthRule:
    """The length rule stated in `text` (see the module docstring for the recognised forms)."""

    def first(patterns: tuple[re.Pattern[str], ...]) -> int | None:
        for pattern in patterns:
            match = pattern.search(text)
            if match:
                return int(match.group(1))
        return None

    return LengthRule(first(_MIN_PATTERNS), first(_MAX_PATTERNS))


def parse_input_description(name: str, description: str) -> InputSpec:
    """Parse one `M|O|type|description|params|default` string; raises InputSpecError."""
    if not isinstance(description, str):
        raise InputSpecError(f"input {name}: the description must be a string")
    parts = description.split("|", 4)
    flag = parts[0].strip().upper()
    if flag not in ("M", "O"):
        raise InputSpecError(f"input {name}: {description!r} must start with M (mandatory) or O (optional)")
    if len(parts) < 2 or not parts[1].strip():
        raise InputSpecError(f"input {name}: {description!r} names no type (M|type|description|params|default)")
    type_word = parts[1].strip().lower()
    try:
        input_type = InputType(type_word)
    except ValueError:
        known = ", ".join(t.value for t in InputType)
        raise InputSpecError(f"input {name}: unknown type {type_word!r} (known: {known})") from None
    rest = parts[2:] + [""] * (5 - len(parts))
    spec = InputSpec(
        name=name,
        mandatory=flag == "M",
        type=input_type,
        description=rest[0].strip(),
        params=rest[1].strip(),
        default=rest[2].strip(),
        raw=description,
    )
    if input_type in (InputType.RANGE, InputType.RANGE_FLOAT) and spec.bounds is None:
        raise InputSpecError(f"input {name}: a range needs params min..max, got {spec.params!r}")
    if input_type in (InputType.LIST, InputType.LIST_MULTIPLE) and not spec.options:
        raise InputSpecError(f"input {name}: a list needs params a,b,c, got {spec.params!r}")
    return spec


def input_from_object(item: Mapping[str, Any]) -> InputSpec:
    """A 7.x object-form input (`name`, `type`, `mandatory`, `description`, ...)."""
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise InputSpecError("an input object has no 'name'")
    type_word = str(item.get("type", "text")).strip().lower()
    try:
        input_type = InputType(type_word)
    except ValueError:
        raise InputSpecError(f"input {name}: unknown type {type_word!r}") from None
    params = item.get("params", item.get("options", ""))
    if isinstance(params, list):
        params = ",".join(str(p) for p in params)
    if not params and ("min" in item or "max" in item):
        params = f"{item.get('min', '')}..{item.get('max', '')}"
    default = item.get("default", "")
    mandatory = item.get("mandatory", True)
    return InputSpec(
        name=name,
        mandatory=mandatory if isinstance(mandatory, bool) else str(mandatory).upper() in ("M", "YES", "TRUE"),
        type=input_type,
        description=str(item.get("description", "")),
        params=str(params),
        default="" if default is None else str(default),
    )


def fallback_spec(name: str, problem: str) -> InputSpec:
    """A mandatory text input standing in for one whose description could not be read."""
    return InputSpec(name=name, mandatory=True, type=InputType.TEXT, problem=problem)


def template_inputs(body: Mapping[str, Any]) -> tuple[InputSpec, ...]:
    """The inputs of a service template body (7.x `user_inputs` or 6.x `custom_attrs`).

    Never raises: an unreadable description becomes a mandatory text input whose `problem`
    says why, so the form still shows a field for it.
    """
    raw = body.get("user_inputs")
    if raw is None:
        raw = body.get("custom_attrs")
    specs: list[InputSpec] = []
    if isinstance(raw, Mapping):
        for name, description in raw.items():
            try:
                specs.append(parse_input_description(str(name), description))
            except InputSpecError as exc:
                specs.append(fallback_spec(str(name), str(exc)))
    elif isinstance(raw, list):
        for index, item in enumerate(raw):
            if not isinstance(item, Mapping):
                continue
            try:
                specs.append(input_from_object(item))
            except InputSpecError as exc:
                specs.append(fallback_spec(str(item.get("name") or f"input_{index}"), str(exc)))
    return tuple(specs)


def parse_network_description(name: str, description: str) -> NetworkSpec:
    """`M|network|Public||id:0` -> NetworkSpec; raises InputSpecError."""
    parts = (description.split("|", 4) + [""] * 5)[:5] if isinstance(description, str) else []
    if not parts or parts[0].strip().upper() not in ("M", "O") or parts[1].strip().lower() != "network":
        raise InputSpecError(f"network {name}: {description!r} is not M|network|description||id:<vnet>")
    kind, _, default_id = parts[4].strip().partition(":")
    return NetworkSpec(
        name=name,
        mandatory=parts[0].strip().upper() == "M",
        description=parts[2].strip(),
        kind=kind.strip(),
        default_id=default_id.strip(),
    )


def template_networks(body: Mapping[str, Any]) -> tuple[NetworkSpec, ...]:
    """The networks a service template asks for; unreadable descriptions become mandatory ones."""
    raw = body.get("networks")
    if not isinstance(raw, Mapping):
        return ()
    out: list[NetworkSpec] = []
    for name, description in raw.items():
        try:
            out.append(parse_network_description(str(name), description))
        except InputSpecError:
            out.append(NetworkSpec(name=str(name), mandatory=True))
    return tuple(out)
