"""What a live toolkit service was deployed with, compared with what an input file asks for.

OneFlow keeps the instantiation's input values in the service's body (`user_inputs_values`, 6.x
`custom_attrs_values`: `Service.input_values`), so a toolkit deployed earlier can be compared with
an input file: the automation cloud user, the sites branch and directory, and the endpoints the
automation server reaches the cloud at. A toolkit deployed with other values is another toolkit,
not the one the file describes: it must not count as done, and a second deployment must not be
made beside it silently. Secrets are never compared (they are not shown anywhere either).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

#: the inputs compared, as (component role attribute of the naming profile, suffix)
COMPARED = (
    ("role_automation", "cloud_username"),
    ("role_manager", "sites_branch"),
    ("role_manager", "deployment_site"),
    ("role_automation", "cloud_endpoint"),
    ("role_automation", "cloud_flow_endpoint"),
)


@dataclass(frozen=True)
class InputDifference:
    name: str
    deployed: str
    wanted: str

    def text(self) -> str:
        return f"{self.name} = {self.deployed or '(empty)'!r} (the input file: {self.wanted!r})"


def compared_inputs(naming: Any) -> tuple[str, ...]:
    return tuple(naming.input_name(f"{getattr(naming, role)}_{suffix}") for role, suffix in COMPARED)


def _norm(name: str, value: Any) -> str:
    text = str(value if value is not None else "").strip()
    return text.rstrip("/") if name.endswith("endpoint") else text


def input_differences(deployed: Mapping[str, Any], wanted: Mapping[str, str], naming: Any) -> tuple[InputDifference, ...]:
    """The compared inputs the file gives whose value differs from the deployed one."""
    out = []
    for name in compared_inputs(naming):
        want = _norm(name, wanted.get(name, ""))
        if not want:
            continue
        have = _norm(name, deployed.get(name, ""))
        if have != want:
            out.append(InputDifference(name, have, want))
    return tuple(out)
