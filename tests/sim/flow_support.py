"""Helpers of the OneFlow tests: an authenticated client, hosts by CPU, a small service template."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tui.domain.one_states import HostState
from tui.domain.template_text import render_template, scalar
from tui.sim.flow_engine import TEMPLATE_TYPE, input_keys, is_7x
from tui.sim.server import SimServer
from tui.sim.state import SimDocument, SimHost, SimSite


def flow_client(sim: SimServer, user: str | None = None, password: str | None = None) -> httpx.Client:
    """An httpx client for the site's OneFlow with Basic auth (oneadmin unless told otherwise)."""
    admin = sim.site.users[0]
    auth = (user or admin.name, password if password is not None else admin.password)
    return httpx.Client(base_url=sim.flow_url, auth=auth, timeout=10.0)


def host_without_avx(site: SimSite) -> SimHost:
    for host in site.hosts.values():
        features = scalar(host.template, "KVM_CPU_FEATURES", "")
        if host.state == HostState.MONITORED and scalar(host.template, "ARCH") == "x86_64" and features and "avx" not in features:
            return host
    raise AssertionError("the scenario has no x86_64 host without avx")


def host_with_avx(site: SimSite) -> SimHost:
    for host in site.hosts.values():
        features = scalar(host.template, "KVM_CPU_FEATURES", "").split(",")
        if host.state == HostState.MONITORED and scalar(host.template, "ARCH") == "x86_64" and "avx" in features:
            return host
    raise AssertionError("the scenario has no x86_64 host with avx")


#: the CONTEXT of the appliances' VM templates (tui.sim.catalog) that lets the guest report READY
REPORTING_CONTEXT = {"TOKEN": "YES", "REPORT_READY": "YES"}


def add_service_template(
    site: SimSite,
    roles: list[dict[str, Any]],
    *,
    seven: bool | None = None,
    gate: bool = True,
    inputs: dict[str, str] | None = None,
    name: str = "two-tier",
) -> int:
    """A service template (DOCUMENT 101) whose roles run the scenario's base VM template, in the
    format of the site's OneFlow unless `seven` says which (7.x roles with `template_id`, 6.x roles
    with `vm_template`: the 6.10 role schema requires it, service_template.rb release-6.10.0)."""
    seven = is_7x(site) if seven is None else seven
    inputs = {"app_greeting": "M|text|Greeting||", "app_secret": "M|password|Secret||"} if inputs is None else inputs
    body: dict[str, Any] = {"name": name, "deployment": "straight", "ready_status_gate": gate,
                            "networks": {"Public": "M|network|Public||id:"}, "roles": []}
    body["user_inputs" if seven else "custom_attrs"] = inputs
    for role in roles:
        # the gate token and REPORT_READY of an appliance: without them nothing in the VM reports READY
        # (tui.sim.appliances), and a ready gate would wait for ever
        contents = {"NIC": [{"NAME": "NIC0", "NETWORK_ID": "$Public"}], "CONTEXT": dict(REPORTING_CONTEXT),
                    **role.get("contents", {})}
        entry: dict[str, Any] = {"name": role["name"], "cardinality": role.get("cardinality", 1),
                                 "parents": role.get("parents", [])}
        if seven:
            entry.update(type="vm", template_id=0, template_contents=contents)
        else:
            scalars = [(k, v) for k, v in contents.items() if isinstance(v, str)]
            nic = [("NAME", "NIC0"), ("NETWORK_ID", "$Public")]
            context = list(contents["CONTEXT"].items()) if isinstance(contents.get("CONTEXT"), dict) else []
            entry.update(vm_template=0, vm_template_contents=render_template(
                [*scalars, ("NIC", nic), *([("CONTEXT", context)] if context else [])]))
        body["roles"].append(entry)
    with site.lock:
        doc = SimDocument(id=site.next_id("document"), name=name, uid=0, gid=0, type=TEMPLATE_TYPE, body=body)
        site.documents[doc.id] = doc
    return doc.id


def values_key(sim: SimServer) -> str:
    """The merge_template key of the input values on this site's OneFlow (7.x `user_inputs_values`,
    6.x `custom_attrs_values`: oneflow-server.rb release-6.10.0 and release-7.0.0, instantiate)."""
    return input_keys(sim.site)[1]


def instantiate_body(values: dict[str, str] | None = None, *, key: str = "user_inputs_values",
                     network: str = "0", name: str = "svc") -> dict[str, Any]:
    merge: dict[str, Any] = {"name": name, "networks_values": [{"Public": {"id": network}}]}
    if values is not None:
        merge[key] = values
    return {"action": {"perform": "instantiate", "params": {"merge_template": merge}}}


def service_body(client: httpx.Client, service_id: int | str) -> dict[str, Any]:
    response = client.get(f"/service/{service_id}")
    assert response.status_code == 200, response.text
    return json.loads(response.text)["DOCUMENT"]["TEMPLATE"]["BODY"]


def roles_by_name(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {role["name"]: role for role in body["roles"]}
