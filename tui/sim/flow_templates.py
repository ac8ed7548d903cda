"""OneFlow's service template validation and pre-7.0 conversion, as the platform's library does it.

OneFlow validates a service template body when it is created (`POST /service_template`, and the
CLI's `ServiceTemplate#allocate`, which `onemarketapp export` uses) and again when it is
instantiated (`ServiceTemplate#instantiate`). Upstream, OpenNebula/one
`src/oca/ruby/opennebula/flow/service_template.rb` (`self.validate`, `self.validate_role`,
`self.validate_values`) and `validator.rb`:

- 7.0 and later (release-7.0.x / 7.4.0, service_template.rb lines 531-551): a body is "old
  format" when every role has `vm_template` or `vm_template_contents` (`self.old_format?`, lines
  799-803); such a body is converted first (`self.convert_template`, lines 809-842):
  `template_id = vm_template.to_i` (so 0 when `vm_template` is absent), `type = 'vm'`,
  `vm_template_contents` becomes the object `template_contents` (`upgrade_template_contents`,
  lines 850-898), `custom_attrs` become `user_inputs`. Then `SCHEMA` and, per role,
  `VM_ROLE_SCHEMA` (`type` and `template_id` mandatory) apply.
- 6.10 (release-6.10.x, service_template.rb lines 471-481): no conversion; `ROLE_SCHEMA` needs the
  integer `vm_template`.

The validator fills defaults (`cardinality` 0, `deployment` "none", `description` ""), turns
integer strings into integers, and its messages differ between the two generations
(validator.rb: 7.x "Mandatory document key 'x (integer)' is missing from {...}", 6.10 "KEY: 'x'
is required;"). Not followed: the elasticity expression grammar and cron recurrences of
`elasticity_policies` / `scheduled_policies` are not parsed.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any


class TemplateInvalid(Exception):
    """A body the platform's validator refuses (`Validator::ParseException`): its message."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def is_7x(one_version: str) -> bool:
    head = one_version.split(".", 1)[0]
    return head.isdigit() and int(head) >= 7


# -- the pre-7.0 conversion (service_template.rb 799-898, release-7.0.x and 7.4.0) ---------------
def old_format(body: Any) -> bool:
    """`ServiceTemplate.old_format?`: every role has `vm_template` or `vm_template_contents`."""
    roles = body.get("roles") if isinstance(body, dict) else None
    if not isinstance(body, dict) or "roles" not in body:
        return False
    if not isinstance(roles, list):
        return False
    return all(isinstance(r, dict) and ("vm_template" in r or "vm_template_contents" in r) for r in roles)


def _ruby_to_i(value: Any) -> int:
    """Ruby's `to_i`: nil and non-numbers are 0, a string is read up to its first non-digit."""
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    match = re.match(r"\s*([+-]?\d+)", str(value))
    return int(match.group(1)) if match else 0


def upgrade_template_contents(text: Any) -> dict[str, Any]:
    """`ServiceTemplate.upgrade_template_contents`: `KEY = VAL` text as the 7.x object.

    Lines are split on newlines outside brackets; quotes are dropped; `KEY = [ A = x, B = y ]`
    becomes `[{"A": "x", "B": "y"}]`; a repeated key collects its values in a list.
    """
    if not isinstance(text, str) or not text:
        return {}
    result: dict[str, Any] = {}
    for line in re.split(r"\n(?![^\[]*\])", text):
        if "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        value = value.replace('"', "")
        item: Any
        if value.startswith("[") and value.endswith("]"):
            vector: dict[str, Any] = {}
            for element in re.split(r"\s*,\s*", value[1:-1]):
                sub_key, _, sub_value = element.partition("=")
                vector[sub_key.strip()] = sub_value.strip() if _ else None
            item = vector
        else:
            item = value
        if key in result:
            if isinstance(result[key], list):
                result[key].append(item)
            else:
                result[key] = [result[key], item]
        else:
            result[key] = item
    return {key: [value] if isinstance(value, dict) else value for key, value in result.items()}


def convert_template(body: dict[str, Any]) -> None:
    """`ServiceTemplate.convert_template`, in place (service_template.rb 809-842)."""
    for role in body["roles"]:
        role["template_id"] = _ruby_to_i(role.get("vm_template"))
        role["type"] = "vm"
        if role.get("custom_attrs"):
            role["user_inputs"] = role["custom_attrs"]
        if body.get("custom_attrs_values"):  # sic: tests the body, copies the role's
            body["user_inputs_values"] = role.get("custom_attrs_values")
        if role.get("vm_template_contents"):
            role["template_contents"] = upgrade_template_contents(role["vm_template_contents"])
        role.pop("vm_template", None)
        for key in ("vm_template_contents", "custom_attrs", "custom_attrs_values"):
            if role.get(key):
                del role[key]
    if body.get("custom_attrs"):
        body["user_inputs"] = body["custom_attrs"]
    if body.get("custom_attrs_values"):
        body["user_inputs_values"] = body["custom_attrs_values"]
    for key in ("custom_attrs", "custom_attrs_values"):
        if body.get(key):
            del body[key]


# -- the schemas (service_template.rb SCHEMA, VM_ROLE_SCHEMA, ROLE_SCHEMA) -----------------------
_POLICIES = {"type": "array", "items": {}}
_SHUTDOWN = {"type": "string", "enum": ["terminate", "terminate-hard", "shutdown", "shutdown-hard"]}
_OBJECT = {"type": "object", "properties": {}}

_ROLE_COMMON: dict[str, Any] = {
    "name": {"type": "string", "required": True, "regex": r"^\w+$"},
    "cardinality": {"type": "integer", "default": 0, "minimum": 0},
    "parents": {"type": "array", "items": {"type": "string"}},
    "shutdown_action": _SHUTDOWN,
    "min_vms": {"type": "integer", "minimum": 0},
    "max_vms": {"type": "integer", "minimum": 0},
    "cooldown": {"type": "integer", "minimum": 0},
    "on_hold": {"type": "boolean"},
    "elasticity_policies": _POLICIES,
    "scheduled_policies": _POLICIES,
}
#: release-7.x VM_ROLE_SCHEMA (service_template.rb 25-183)
VM_ROLE_SCHEMA_7: dict[str, Any] = {"type": "object", "properties": {
    "name": _ROLE_COMMON["name"],
    "type": {"type": "string", "enum": ["vm"], "required": True},
    "cardinality": _ROLE_COMMON["cardinality"],
    "template_id": {"type": "integer", "required": True},
    "template_contents": _OBJECT,
    "user_inputs": _OBJECT,
    "user_inputs_values": _OBJECT,
    **{k: v for k, v in _ROLE_COMMON.items() if k not in ("name", "cardinality")},
}}
#: release-7.x VR_ROLE_SCHEMA (service_template.rb 185-235)
VR_ROLE_SCHEMA_7: dict[str, Any] = {"type": "object", "properties": {
    "name": _ROLE_COMMON["name"],
    "type": {"type": "string", "enum": ["vr"], "required": True},
    "template_id": {"type": "integer", "required": True},
    "cardinality": _ROLE_COMMON["cardinality"],
    "template_contents": _OBJECT,
    "user_inputs": _OBJECT,
    "user_inputs_values": _OBJECT,
    "on_hold": {"type": "boolean"},
    "parents": _ROLE_COMMON["parents"],
}}
#: release-6.10.x ROLE_SCHEMA (service_template.rb 24-170)
ROLE_SCHEMA_6: dict[str, Any] = {"type": "object", "properties": {
    "name": _ROLE_COMMON["name"],
    "cardinality": _ROLE_COMMON["cardinality"],
    "vm_template": {"type": "integer", "required": True},
    "vm_template_contents": {"type": "string"},
    "custom_attrs": _OBJECT,
    "custom_attrs_values": _OBJECT,
    **{k: v for k, v in _ROLE_COMMON.items() if k not in ("name", "cardinality")},
}}


def _schema(seven: bool) -> dict[str, Any]:
    """SCHEMA (7.x: roles unchecked here, each role by validate_role; 6.10: roles by ROLE_SCHEMA)."""
    inputs = ("user_inputs", "user_inputs_values") if seven else ("custom_attrs", "custom_attrs_values")
    return {"type": "object", "properties": {
        "name": {"type": "string", "required": True},
        "deployment": {"type": "string", "enum": ["none", "straight"], "default": "none"},
        "description": {"type": "string", "default": ""},
        "shutdown_action": _SHUTDOWN,
        "roles": {"type": "array", "items": {} if seven else ROLE_SCHEMA_6, "required": True},
        inputs[0]: _OBJECT,
        inputs[1]: _OBJECT,
        "ready_status_gate": {"type": "boolean"},
        "automatic_deletion": {"type": "boolean"},
        "networks": _OBJECT,
        "networks_values": {"type": "array", "items": _OBJECT},
        "on_hold": {"type": "boolean"},
    }}


class _Validator:
    """`Validator::Validator` with default values and extra properties allowed (validator.rb)."""

    def __init__(self, seven: bool) -> None:
        self.seven = seven

    def validate(self, body: Any, schema: dict[str, Any], key: str = "") -> Any:
        kind = schema.get("type")
        if kind == "object":
            return self._object(body, schema, key)
        if kind == "array":
            return self._array(body, schema, key)
        if kind == "string":
            return self._string(body, schema, key)
        if kind == "integer":
            return self._integer(body, schema, key)
        if kind == "boolean":
            if body is not True and body is not False:
                raise TemplateInvalid(f"KEY: '{key}' is not allowed in {schema};")
            return body
        return body

    def _object(self, body: Any, schema: dict[str, Any], key: str) -> Any:
        if not isinstance(body, dict):
            raise TemplateInvalid(f"KEY: '{key}' must be an Object;" if self.seven
                                  else f"KEY: {key} must be a Hash; SCHEMA:")
        for name, sub in schema.get("properties", {}).items():
            value = body.get(name)
            if value is not None and value is not False:  # Ruby: nil and false read as absent
                body[name] = self.validate(value, sub, name)
            elif sub.get("required"):
                if self.seven:
                    raise TemplateInvalid(f"Mandatory document key '{name} ({sub['type']})' is missing from "
                                          f"{json.dumps(body, separators=(',', ':'))}")
                raise TemplateInvalid(f"KEY: '{name}' is required;")
            elif "default" in sub and name not in body:
                body[name] = copy.deepcopy(sub["default"])
        return body

    def _array(self, body: Any, schema: dict[str, Any], key: str) -> Any:
        if not isinstance(body, list):
            raise TemplateInvalid(f"KEY: '{key}' must be an Array;")
        items = schema.get("items") or {}
        if not items:
            return body
        return [self.validate(item, items, key) for item in body]

    def _string(self, body: Any, schema: dict[str, Any], key: str) -> Any:
        if not isinstance(body, str):
            raise TemplateInvalid(f"KEY: '{key}' must be a String;")
        if "enum" in schema and body not in schema["enum"]:
            raise TemplateInvalid(f"KEY: '{key}' must be one of {', '.join(schema['enum'])};")
        if "regex" in schema and not re.search(schema["regex"], body):
            raise TemplateInvalid(f"KEY: '{key}' must match regexp /{schema['regex']}/;")
        return body

    def _integer(self, body: Any, schema: dict[str, Any], key: str) -> int:
        if isinstance(body, bool):
            raise TemplateInvalid(f"KEY: '{key}' must be an Integer;")
        if isinstance(body, (int, float)):
            value = int(body)
        elif isinstance(body, str) and re.fullmatch(r"\s*[+-]?\d+\s*", body):
            value = int(body)
        else:
            raise TemplateInvalid(f"KEY: '{key}' must be an Integer;")
        if "minimum" in schema and value < schema["minimum"]:
            raise TemplateInvalid(f"KEY: '{key}' must be greater than or equal to {schema['minimum']};")
        return value


def _validate_values(body: dict[str, Any], seven: bool) -> None:
    """`ServiceTemplate.validate_values`: unique role names, cardinality within min/max."""
    roles = body["roles"]
    for index, role in enumerate(roles):
        for other in roles[index + 1:]:
            if role.get("name") == other.get("name"):
                raise TemplateInvalid(f"Role name '{role.get('name')}' is repeated")
        if seven and role.get("type") not in ("vm", "vr"):
            raise TemplateInvalid(f'Unsupported role type "{body.get("type")}"')
        if role.get("type", "vm") == "vr":
            continue
        cardinality = _ruby_to_i(role.get("cardinality"))
        if role.get("min_vms") is not None and _ruby_to_i(role["min_vms"]) > cardinality:
            raise TemplateInvalid(f"Role '{role.get('name')}' 'cardinality' must be greater than or equal to 'min_vms'")
        if role.get("max_vms") is not None and _ruby_to_i(role["max_vms"]) < cardinality:
            raise TemplateInvalid(f"Role '{role.get('name')}' 'cardinality' must be lower than or equal to 'max_vms'")


def validate(one_version: str, body: Any) -> dict[str, Any]:
    """`ServiceTemplate.validate` of this platform version; returns the body as the platform
    stores it (converted, defaults filled), raises `TemplateInvalid` with the platform's text."""
    seven = is_7x(one_version)
    body = copy.deepcopy(body)
    if seven and old_format(body):
        try:
            convert_template(body)
        except (TypeError, AttributeError, KeyError) as exc:
            raise TemplateInvalid(
                "An old service template format (OpenNebula v6.x) was detected and could not be automatically "
                f"converted. Update it manually to the new format. Error: {exc}") from None
    checker = _Validator(seven)
    body = checker.validate(body, _schema(seven))
    if seven:
        for index, role in enumerate(body["roles"]):
            kind = role.get("type", "vm") if isinstance(role, dict) else "vm"
            if kind not in ("vm", "vr"):
                raise TemplateInvalid(f'Unsupported role type "{kind}"')
            body["roles"][index] = checker.validate(role, VM_ROLE_SCHEMA_7 if kind == "vm" else VR_ROLE_SCHEMA_7)
    _validate_values(body, seven)
    return body


def role_template_id(role: dict[str, Any]) -> int | None:
    """The VM template a validated role deploys: 7.x `template_id`, 6.10 `vm_template`."""
    value = role.get("template_id", role.get("vm_template"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None
