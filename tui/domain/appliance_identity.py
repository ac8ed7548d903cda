"""Whether the IDs in a component's site variables are that component's appliance (pure; no I/O).

An ID that merely exists is not enough: the template's `template_id: 0` / `image_id: 0` exist on
every frontend (a base Ubuntu image and template) and are not the bastion. A component's
`image_id` / `template_id` / `service_template_id` is its appliance when
- the image carries the appliance's marketplace attributes: `<PREFIX>_MARKETPLACE_APPLIANCE_NAME`
  equal to the marketplace record name of an appliance named in the component's public.yaml
  (the attribute the spec's operation 1 attaches and the download attaches by itself);
- a VM template uses such an image (one of its DISKs);
- a service template has a role whose VM template uses such an image;
- or the operator confirmed that object for that variable explicitly (`Confirmation`, kept in the
  console's state directory and audit-logged; the finding stays visible as a warning).

`ApplianceFacts` holds what the procedures read (images with their attributes, templates with
their disks, service templates with their roles' templates, the record names each component
expects); `check_appliance_ids(config, definitions, facts)` gives findings that say what was
checked, what was found (names and attributes) and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from tui.domain.components import ComponentDefinition
from tui.domain.findings import Finding
from tui.domain.severity import Severity
from tui.domain.site_config import SiteConfig, lookup

#: site-variable leaf suffixes that hold the ID of an appliance's object, longest first
ID_KINDS: tuple[tuple[str, str], ...] = (
    ("service_template_id", "service template"),
    ("template_id", "VM template"),
    ("image_id", "image"),
)


@dataclass(frozen=True)
class ImageFacts:
    id: int
    name: str
    #: <PREFIX>_MARKETPLACE_APPLIANCE_NAME, "" when the image has none
    appliance_name: str = ""
    #: the build stamp and software version attributes ("" when absent)
    appliance_version: str = ""
    software_version: str = ""

    def describe(self) -> str:
        if not self.appliance_name:
            return f"image {self.id} {self.name!r} (no marketplace attributes)"
        version = " ".join(v for v in (self.software_version, self.appliance_version) if v)
        return f"image {self.id} {self.name!r} (marketplace appliance {self.appliance_name!r}{' ' + version if version else ''})"


@dataclass(frozen=True)
class TemplateFacts:
    id: int
    name: str
    image_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class ServiceTemplateFacts:
    id: int
    name: str
    template_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Confirmation:
    """The operator's explicit word that `kind` `object_id` (named `object_name`) is right for `path`."""

    path: str
    kind: str
    object_id: int
    object_name: str
    reason: str
    confirmed_at: str = ""
    confirmed_by: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "object_id": self.object_id, "object_name": self.object_name,
                "reason": self.reason, "confirmed_at": self.confirmed_at, "confirmed_by": self.confirmed_by}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Confirmation":
        """Raises ValueError (naming the field) for anything but the shape `as_json` writes."""
        def text(key: str) -> str:
            value = data.get(key, "")
            if not isinstance(value, str):
                raise ValueError(f"confirmation field {key!r} must be text")
            return value

        object_id = data.get("object_id")
        if isinstance(object_id, bool) or not isinstance(object_id, int):
            raise ValueError("confirmation field 'object_id' must be a whole number")
        return cls(text("path"), text("kind"), object_id, text("object_name"), text("reason"),
                   text("confirmed_at"), text("confirmed_by"))


@dataclass(frozen=True)
class ApplianceFacts:
    """What the cloud and the marketplaces say, for the identity check."""

    images: Mapping[int, ImageFacts] = field(default_factory=dict)
    templates: Mapping[int, TemplateFacts] = field(default_factory=dict)
    service_templates: Mapping[int, ServiceTemplateFacts] = field(default_factory=dict)
    #: component -> marketplace record names of its appliances; a component missing here has
    #: records that could not be read (its IDs cannot be verified)
    expected: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: why a component's expected names are unknown (component -> reason)
    unknown: Mapping[str, str] = field(default_factory=dict)
    confirmations: tuple[Confirmation, ...] = ()

    def confirmation(self, path: str, kind: str, object_id: int, object_name: str) -> Confirmation | None:
        """The confirmation of exactly this object for this variable (same ID and same name)."""
        return next((c for c in reversed(self.confirmations)
                     if c.path == path and c.kind == kind and c.object_id == object_id and c.object_name == object_name), None)


def id_kind(leaf: str) -> str | None:
    """"VM template" for `template_id` / `collector_template_id` / `129.template_id`, None for others."""
    last = leaf.rsplit(".", 1)[-1].lower()
    for suffix, kind in ID_KINDS:
        if last == suffix or last.endswith(f"_{suffix}"):
            return kind
    return None


def as_object_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def appliance_id_leaves(config: SiteConfig, definitions: Mapping[str, ComponentDefinition]) -> Iterator[tuple[ComponentDefinition, str, str, str, int]]:
    """(definition, leaf, dotted path, kind, id) of every set appliance ID of the listed components."""
    key = config.variables_key
    for component in config.components():
        definition = definitions.get(component)
        if definition is None or not definition.appliances:
            continue
        current = config.component_variables(component)
        if not isinstance(current, Mapping):
            continue
        for leaf, _description in definition.variable_paths():
            kind = id_kind(leaf)
            if kind is None:
                continue
            number = as_object_id(lookup(current, leaf))
            if number is not None:
                yield definition, leaf, f"{key}.{component}.{leaf}", kind, number


def _matching_images(facts: ApplianceFacts, image_ids: Sequence[int], names: Sequence[str]) -> list[ImageFacts]:
    wanted = {n.casefold() for n in names}
    return [facts.images[i] for i in image_ids if i in facts.images and facts.images[i].appliance_name.casefold() in wanted]


def _images_of(facts: ApplianceFacts, kind: str, object_id: int) -> tuple[str, list[int]] | None:
    """(the object's name, the image IDs it uses) or None when the object is not known."""
    if kind == "image":
        image = facts.images.get(object_id)
        return (image.name, [object_id]) if image is not None else None
    if kind == "VM template":
        template = facts.templates.get(object_id)
        return (template.name, list(template.image_ids)) if template is not None else None
    service = facts.service_templates.get(object_id)
    if service is None:
        return None
    images: list[int] = []
    for template_id in service.template_ids:
        template = facts.templates.get(template_id)
        if template is not None:
            images += [i for i in template.image_ids if i not in images]
    return service.name, images


def _found(facts: ApplianceFacts, kind: str, object_id: int, name: str, image_ids: Sequence[int]) -> str:
    """What the object is, in words: its name and its images' marketplace attributes."""
    if kind == "image":
        return facts.images[object_id].describe()
    images = [facts.images[i].describe() for i in image_ids if i in facts.images]
    uses = "; uses " + ", ".join(images) if images else "; uses no image"
    return f"{kind} {object_id} {name!r}{uses}"


def check_appliance_ids(
    config: SiteConfig,
    definitions: Mapping[str, ComponentDefinition],
    facts: ApplianceFacts,
    *,
    name_attribute: str = "PLATFORM_MARKETPLACE_APPLIANCE_NAME",
) -> list[Finding]:
    """Every set appliance ID of every listed component checked to be that component's appliance."""
    findings: list[Finding] = []
    for definition, _leaf, path, kind, object_id in appliance_id_leaves(config, definitions):
        component = definition.name
        known = _images_of(facts, kind, object_id)
        if known is None:
            continue  # a missing object is the existence check's error
        name, image_ids = known
        expected = facts.expected.get(component)
        if expected is None:
            reason = facts.unknown.get(component, "its marketplace records could not be read")
            findings.append(Finding(Severity.WARNING, path, (
                f"not verified as {component}'s appliance: {reason}. Found {_found(facts, kind, object_id, name, image_ids)}. "
                f"Fix: make the marketplace readable and check again (sitetk site check --cloud).")))
            continue
        if _matching_images(facts, image_ids, expected):
            continue
        wanted = " or ".join(repr(n) for n in expected)
        found = _found(facts, kind, object_id, name, image_ids)
        confirmed = facts.confirmation(path, kind, object_id, name)
        if confirmed is not None:
            by = f" by {confirmed.confirmed_by}" if confirmed.confirmed_by else ""
            at = f" on {confirmed.confirmed_at}" if confirmed.confirmed_at else ""
            findings.append(Finding(Severity.WARNING, path, (
                f"{found} is not marked as {wanted}, but the operator confirmed it{by}{at}: {confirmed.reason}")))
            continue
        checked = "its disks' images" if kind != "image" else "the image"
        findings.append(Finding(Severity.ERROR, path, (
            f"{kind} {object_id} is not {component}'s appliance: checked {checked} for {name_attribute} = {wanted} "
            f"(the appliance {', '.join(definition.appliance_record_ids())} in {component}'s public.yaml); found {found}. "
            f"Fix: download the appliance (ctrl+n, or sitetk site enable {component}) and fill the IDs (ctrl+f, or "
            f"sitetk site fill), or confirm this {kind} explicitly (sitetk site confirm {path} --reason TEXT).")))
    return findings


def unverified_appliance_ids(config: SiteConfig, definitions: Mapping[str, ComponentDefinition]) -> list[Finding]:
    """Without the cloud: the template's placeholder 0 said for what it is, other IDs left unverified."""
    findings: list[Finding] = []
    for definition, _leaf, path, kind, object_id in appliance_id_leaves(config, definitions):
        if object_id == 0:
            findings.append(Finding(Severity.WARNING, path, (
                f"{kind} 0 is the template's placeholder and was not checked against the cloud; it is usually the base "
                f"image, not {definition.name}'s appliance. Fix: sitetk site check --cloud, then fill the IDs (sitetk site fill).")))
    return findings
