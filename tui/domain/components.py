"""The component library: each component's public.yaml (descriptions, site variables, appliances).

The library is a git repository; each top-level non-hidden directory is a component and its
`public.yaml` sits in a hidden manager directory inside it (the directory name is a naming
setting). A public.yaml has `metadata` (maintainers, short/long description, hypervisors, optional
`appliances`: marketplace record URLs, possibly written with a `{marketplace_url}` placeholder),
`site_variables` (variable -> description, possibly nested, e.g. one entry per version) and
`input` (per-deployment inputs). This module turns that text into frozen values; it does no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from tui.domain.bounded import BoundedInputError, check_size, check_tree, guard, yaml_loader

MARKETPLACE_PLACEHOLDER = "{marketplace_url}"

_RECORD_URL = re.compile(r"/appliance/(?P<id>[^/?#]+)/?(?:download(?:/\d+)?)?/?$")
_RECORD_ID = re.compile(r"^[A-Za-z0-9_.\-]+$")


class ComponentDefinitionError(ValueError):
    """A public.yaml could not be understood; the message names the component and the place."""

    def __init__(self, component: str, message: str, line: int | None = None, column: int | None = None) -> None:
        where = f" (line {line}, column {column})" if line is not None else ""
        super().__init__(f"component {component!r}: {message}{where}")
        self.component = component
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True)
class VariableSpec:
    """One site variable a component needs; `children` is set for a nested group (no description then)."""

    name: str
    description: str = ""
    children: tuple["VariableSpec", ...] = ()

    @property
    def is_group(self) -> bool:
        return bool(self.children)


@dataclass(frozen=True)
class ComponentInput:
    """One per-deployment input of a component (shown for information; trial networks set them)."""

    name: str
    description: str = ""
    type: str = ""
    default_value: Any = None
    choices: tuple[Any, ...] = ()
    required_when: Any = None


@dataclass(frozen=True)
class ComponentDefinition:
    name: str
    short_description: str = ""
    long_description: str = ""
    maintainers: tuple[str, ...] = ()
    hypervisors: tuple[str, ...] = ()
    #: marketplace record URLs (maybe with the `{marketplace_url}` placeholder) or bare record ids
    appliances: tuple[str, ...] = ()
    site_variables: tuple[VariableSpec, ...] = ()
    inputs: tuple[ComponentInput, ...] = ()

    @property
    def has_site_variables(self) -> bool:
        return bool(self.site_variables)

    def variable_paths(self) -> tuple[tuple[str, str], ...]:
        """Every leaf variable as (dotted path inside the component, description), in file order."""
        return tuple(_leaves(self.site_variables, ""))

    def version_groups(self) -> tuple[str, ...]:
        """Groups keyed by a version (`"129"`, `"131"`: one entry per supported version of the
        component's appliance); a site lists the versions it offers, not necessarily all."""
        return tuple(spec.name for spec in self.site_variables if spec.children and spec.name.isdigit())

    def skeleton(self) -> dict[str, Any] | None:
        """The component's entry for `site_variables` with every variable present and unset."""
        if not self.site_variables:
            return None
        return _skeleton(self.site_variables)

    def appliance_record_ids(self) -> tuple[str, ...]:
        """The marketplace record id of each appliance (the last path part of its record URL)."""
        return tuple(appliance_record_id(ref) for ref in self.appliances)

    def appliance_urls(self, marketplace_url: str) -> tuple[str, ...]:
        """The record URLs with the placeholder (or a bare id) resolved against `marketplace_url`."""
        base = marketplace_url.rstrip("/")
        urls = []
        for ref in self.appliances:
            if MARKETPLACE_PLACEHOLDER in ref:
                urls.append(ref.replace(MARKETPLACE_PLACEHOLDER, base))
            elif "://" in ref:
                urls.append(ref)
            else:
                urls.append(f"{base}/appliance/{ref}")
        return tuple(urls)


def appliance_record_id(ref: str) -> str:
    """`{marketplace_url}/appliance/service_bastion` (or a bare `service_bastion`) -> `service_bastion`."""
    match = _RECORD_URL.search(ref)
    if match:
        return match.group("id")
    if _RECORD_ID.match(ref):
        return ref
    raise ValueError(f"not a marketplace record URL or id: {ref!r}")


def _leaves(specs: tuple[VariableSpec, ...], prefix: str) -> Iterator[tuple[str, str]]:
    for spec in specs:
        path = f"{prefix}{spec.name}"
        if spec.children:
            yield from _leaves(spec.children, f"{path}.")
        else:
            yield path, spec.description


def _skeleton(specs: tuple[VariableSpec, ...]) -> dict[str, Any]:
    return {spec.name: (_skeleton(spec.children) if spec.children else None) for spec in specs}


def parse_public_yaml(component: str, text: str) -> ComponentDefinition:
    """Parse one component's public.yaml; raise ComponentDefinitionError saying what is wrong."""
    yaml = yaml_loader(YAML(typ="safe", pure=True), "public.yaml")
    try:
        check_size(text, "public.yaml")
        with guard("public.yaml"):
            data = yaml.load(text)
        check_tree(data, "public.yaml")
    except BoundedInputError as exc:
        raise ComponentDefinitionError(component, exc.message) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        raise ComponentDefinitionError(component, f"public.yaml is not valid YAML: {exc.problem or exc}", line, column) from exc
    except YAMLError as exc:
        raise ComponentDefinitionError(component, f"public.yaml is not valid YAML: {exc}") from exc
    if data is None:
        raise ComponentDefinitionError(component, "public.yaml is empty")
    if not isinstance(data, dict):
        raise ComponentDefinitionError(component, "public.yaml must be a mapping with metadata and site_variables")
    metadata = data.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ComponentDefinitionError(component, "metadata must be a mapping")
    return ComponentDefinition(
        name=component,
        short_description=_text(component, metadata, "short_description"),
        long_description=_text(component, metadata, "long_description"),
        maintainers=_strings(component, metadata, "maintainers"),
        hypervisors=_strings(component, metadata, "hypervisors"),
        appliances=_appliances(component, metadata),
        site_variables=_variables(component, data.get("site_variables"), "site_variables"),
        inputs=_inputs(component, data.get("input")),
    )


def _text(component: str, mapping: Mapping[str, Any], key: str) -> str:
    value = mapping.get(key)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise ComponentDefinitionError(component, f"metadata.{key} must be text")
    return str(value).strip()


def _strings(component: str, mapping: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = mapping.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or any(isinstance(item, (dict, list)) for item in value):
        raise ComponentDefinitionError(component, f"metadata.{key} must be a list of text")
    return tuple(str(item) for item in value)


def _appliances(component: str, metadata: Mapping[str, Any]) -> tuple[str, ...]:
    refs = _strings(component, metadata, "appliances")
    for ref in refs:
        try:
            appliance_record_id(ref)
        except ValueError as exc:
            raise ComponentDefinitionError(component, f"metadata.appliances: {exc}") from exc
    return refs


def _variables(component: str, value: Any, where: str) -> tuple[VariableSpec, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ComponentDefinitionError(component, f"{where} must be a mapping of variable -> description")
    specs = []
    for name, item in value.items():
        if isinstance(item, dict):
            children = _variables(component, item, f"{where}.{name}")
            if not children:
                raise ComponentDefinitionError(component, f"{where}.{name} is an empty group")
            specs.append(VariableSpec(str(name), "", children))
        elif isinstance(item, list):
            raise ComponentDefinitionError(component, f"{where}.{name} must be a description or a mapping, not a list")
        else:
            specs.append(VariableSpec(str(name), "" if item is None else str(item).strip()))
    return tuple(specs)


def _inputs(component: str, value: Any) -> tuple[ComponentInput, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ComponentDefinitionError(component, "input must be a mapping of input name -> settings")
    inputs = []
    for name, item in value.items():
        item = item or {}
        if not isinstance(item, dict):
            raise ComponentDefinitionError(component, f"input.{name} must be a mapping")
        choices = item.get("choices") or ()
        inputs.append(
            ComponentInput(
                name=str(name),
                description=str(item.get("description") or "").strip(),
                type=str(item.get("type") or ""),
                default_value=item.get("default_value"),
                choices=tuple(choices) if isinstance(choices, list) else (choices,),
                required_when=item.get("required_when"),
            )
        )
    return tuple(inputs)


@dataclass(frozen=True)
class ComponentLibrary:
    """The parsed library: the good definitions, and one message for each component that failed."""

    definitions: tuple[ComponentDefinition, ...] = ()
    problems: tuple[str, ...] = ()

    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.definitions)

    def get(self, name: str) -> ComponentDefinition | None:
        return next((d for d in self.definitions if d.name == name), None)

    def as_mapping(self) -> dict[str, ComponentDefinition]:
        return {d.name: d for d in self.definitions}
