"""Re-runs find their own work: the service an earlier deployment with the same inputs created.

Instantiating a service template is not idempotent on the platform: each call makes a new service
(and its VMs). A deployment that failed or was interrupted, run again, must follow the service it
already made instead of creating another. A service is recognised as "ours with the same inputs"
from what OneFlow keeps of the request: `ServiceTemplate#instantiate` deep-merges the instantiate
request's merge template into the template body and stores the result as the service's body
(src/oca/ruby/opennebula/flow/service_template.rb `instantiate`, release-7.0.0 lines 571-598;
the name becomes the document's name, `Service#allocate` in src/flow/lib/models/service.rb). So a
live service (not DONE) whose name, input values (`user_inputs_values`, or `custom_attrs_values`
as 6.x keeps them; 7.x renames the latter on arrival, oneflow-server.rb `instantiate`) and, when
the request names them, network values are the request's, with the template's roles, is one an
earlier run made from the same inputs. A different name, or any other value, is another
deployment and gets its own service. Nothing is added to the request to mark it: the template's
schema has no place for it (the body is validated by `ServiceTemplate.validate`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from tui.domain.services import Service
from tui.errors import SiteError

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection



class ServiceRequest(Protocol):
    """What an instantiation asks for, as far as finding its service goes (`toolkit.instantiate.DeployPlan`)."""

    @property
    def service_name(self) -> str: ...
    @property
    def values_key(self) -> str: ...
    @property
    def merge(self) -> Mapping[str, Any]: ...
    @property
    def role_names(self) -> tuple[str, ...]: ...


#: service states in which a service is gone (OneFlow deletes the document soon after)
_GONE = frozenset({"DONE"})


def _values(values: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in values.items()} if isinstance(values, Mapping) else {}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def same_request(service: Service, plan: ServiceRequest) -> bool:
    """Whether `service` was made by an instantiation with the plan's name and inputs."""
    if service.name != plan.service_name or service.state_name in _GONE:
        return False
    if _values(service.input_values) != _values(plan.merge.get(plan.values_key, {})):
        return False
    networks = plan.merge.get("networks_values")
    if networks and _canonical(list(service.networks_values)) != _canonical(list(networks)):
        return False
    return not plan.role_names or {role.name for role in service.roles} == set(plan.role_names)


def live_toolkits(services: "tuple[Service, ...] | list[Service]", naming: Any) -> tuple[Service, ...]:
    """The services not DONE that have the toolkit's roles (object store, automation, manager)."""
    roles = {naming.role_objectstore, naming.role_automation, naming.role_manager}
    return tuple(s for s in services if s.state_name not in _GONE and roles <= {r.name for r in s.roles})


class SecondToolkitRefused(SiteError):
    """A deployment refused because the site has a live toolkit made from other inputs."""


def second_toolkit_refusal(plan: ServiceRequest, others: "tuple[Service, ...]", wanted: Mapping[str, str], naming: Any,
                           another: str | None) -> str | None:
    """Why deploying `plan` beside the live toolkits `others` (not made from its inputs) is refused
    (None: it is not). A second toolkit is made only when asked for by name (`another` equal to
    the plan's service name), and never under a name a live service already has."""
    from tui.domain.deployed_inputs import input_differences

    if not others:
        return None
    described = []
    for service in others:
        differences = input_differences(service.input_values, wanted, naming)
        said = "; ".join(d.text() for d in differences) or "other values (secrets or other inputs)"
        described.append(f"service {service.id} {service.name!r} ({service.state_name}), deployed with {said}")
    listing = "\n".join(described)
    same_name = [s for s in others if s.name == plan.service_name]
    if another is not None and another == plan.service_name:
        if same_name:
            return (f"A live toolkit is already named {plan.service_name!r}:\n{listing}\nTwo services of one name "
                    "cannot be told apart: give the second toolkit another name in the input file.")
        return None
    return (f"The site has a toolkit already, not deployed from this input file:\n{listing}\n"
            "Nothing was created. Remove it first (`oneflow delete <id>`, its VMs go with it) to deploy from this "
            "file, use the input file it was deployed with, or ask for a second toolkit by its name: "
            f"--another {plan.service_name!r}.")


async def find_own_services(site: "SiteConnection", plan: ServiceRequest) -> tuple[Service, ...]:
    """Every live service made from the plan's name and inputs, newest first."""
    services = await site.flow.list_services()
    return tuple(sorted((s for s in services if same_request(s, plan)), key=lambda s: s.id, reverse=True))
