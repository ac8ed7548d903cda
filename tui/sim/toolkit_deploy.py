"""The toolkit deployment of the `deployed` scenario, done as an operator would have done it.

1. Export the toolkit service app while the site's marketplace still serves the release before
   (`catalog.TOOLKIT_OLD_VERSION`; the marketplace then publishes the current one and the cloud
   rebuilds the same apps in place, so an upgrade plan has work) as `onemarketapp export` does
   (marketplaceapp_ext.rb, names from `tui.domain.market_export`): child apps found by name, one
   VM template per role `<name>-<role>-<idx>` from its app's APPTEMPLATE64 with its own images
   `<template>-<APP>-<disk>-<idx>` (allocated from their marketplace apps, with the spec's
   PLATFORM_MARKETPLACE_APPLIANCE_* attributes attached), and the service template: the app's
   body as it is with each role's `vm_template`, validated (and on 7.x converted) as
   `ServiceTemplate#allocate` does.
2. Instantiate it through OneFlow's own engine with plausible inputs (generated passwords and
   tokens, held in memory only) on the site's default network.
3. Fast-forward simulated time until every role is up, placing the manager VM with the
   equivalent of `onevm deploy` on an x86_64 host WITHOUT avx, so the CPU screen has work.

Choice: the toolkit template keeps `ready_status_gate: true`, as the appliance's own template
does. The manager's document database cannot start on that host, so its VM runs but never
reports READY=YES (it publishes DB_ERROR instead) and the service stays DEPLOYING with the
manager role DEPLOYING while every other role is RUNNING. That is the state a real site shows in
this situation; moving the manager to a compatible host lets it report READY and the service
reach RUNNING.
"""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any, Callable
from urllib.parse import urlsplit

from tui.domain.market_export import child_name, exported_children, service_body
from tui.domain.one_states import DatastoreType, HostState, LcmState, VmState
from tui.domain.template_text import Template, parse_template, scalar
from tui.domain.versions import attribute_parts, parse_version
from tui.sim import catalog, flow_engine, flow_templates
from tui.sim.appliances import DB_ERROR_ATTRIBUTE
from tui.sim.images import allocate_image
from tui.sim.lifecycle import deploy_vm
from tui.sim.market_monitor import monitor_all
from tui.sim.state import SimDocument, SimHost, SimImage, SimMarketApp, SimSite, SimVm, SimVmTemplate

#: events run at most while fast-forwarding (the service keeps re-evaluating while DEPLOYING)
_EVENT_LIMIT = 20_000


class DeployError(RuntimeError):
    """The site lacks what the deployment needs (an image datastore, a network, the record)."""


def deploy_toolkit_now(site: SimSite) -> SimDocument:
    """Export and instantiate the toolkit, then fast-forward; returns the service document.

    The export happens while the site's marketplace serves the release before
    (`catalog.TOOLKIT_OLD_VERSION`); then the marketplace publishes the current one and the
    cloud's next monitoring rebuilds the same apps in place (`tui.sim.market_monitor`): the state
    of a site that deployed a release and has an upgrade waiting."""
    with site.lock:
        catalog.seed_records(site, catalog.TOOLKIT_OLD_VERSION)
        monitor_all(site)
        template = export_toolkit(site)
        catalog.seed_records(site)
        monitor_all(site)
        _run_until(site, lambda: all(site.images[i].state != 4 for i in _image_ids(site, template)))
        admin = site.users[0]
        service = flow_engine.instantiate(site, template, _merge_template(site, template), admin)
        flow_engine.deploy_nets(site, service)
        target = _host_without_avx(site)
        manager = site.naming.role_manager

        def place_manager() -> None:
            if target is None:
                return
            for vm in flow_engine.role_nodes(site, service, manager):
                if vm.state == VmState.PENDING and not vm.history:  # not yet dispatched
                    deploy_vm(site, vm.id, target.id)

        _run_until(site, lambda: _settled(site, service), before_each=place_manager)
        flow_engine.evaluate(site, service)
        return service


def _app_named(site: SimSite, name: str) -> SimMarketApp:
    """The first app of that name in the pool, as `export_recursive` finds a child
    (`pool.find {|p| p['NAME'] == app }`, marketplaceapp_ext.rb line 422 at release-7.0.2)."""
    app = next((a for a in sorted(site.marketapps.values(), key=lambda a: a.id) if a.name == name), None)
    if app is None:
        raise DeployError(f"App `{name}` not found")
    return app


def _vectors(app: SimMarketApp, kind: str) -> list[tuple[str, str]]:
    """(NAME, APP) of the app's ROLE or DISK vectors, in order."""
    return [(dict(v).get("NAME", ""), dict(v).get("APP", "")) for k, v in app.template if k == kind and isinstance(v, list)]


def export_toolkit(site: SimSite) -> SimDocument:
    """What `onemarketapp export <toolkit app> "<name> <software version>"` creates
    (marketplaceapp_ext.rb at release-7.0.2: `export_service_template` 248-268, `export_recursive`
    386-481, `create_vm_template` 277-339, `create_service_template` 343-379, `export_image`
    106-216), with the spec's appliance attributes attached to each image as the console's
    download does; returns the service template."""
    datastore = min((ds.id for ds in site.datastores.values() if ds.type == DatastoreType.IMAGE_DS), default=None)
    if datastore is None:
        raise DeployError("the site has no image datastore")
    service_app = _app_named(site, site.naming.toolkit_appliance_name)
    name = f"{service_app.name} {parse_version(service_app.version).software}"
    naming = site.naming
    software, stamp = attribute_parts(service_app.version)
    attributes: Template = [
        (naming.appliance_name_attribute, service_app.name),
        (naming.appliance_version_attribute, stamp),
        (naming.appliance_software_version_attribute, software),
    ]
    template_ids: dict[str, int] = {}
    for app_name, role_names, idx in exported_children(_vectors(service_app, "ROLE")):
        vm_app = _app_named(site, app_name)
        template_name = child_name(name, None, role_names[0], idx)
        images = [_export_image(site, _app_named(site, disk_app),
                                child_name(template_name, disk_app, disk_names[0], disk_idx), datastore, attributes)
                  for disk_app, disk_names, disk_idx in exported_children(_vectors(vm_app, "DISK"))]
        text = scalar(vm_app.template, "APPTEMPLATE64", "")
        if not text:
            raise DeployError(f"Missing APPTEMPLATE64 for App {vm_app.id}")
        attrs = [a for a in parse_template(base64.b64decode(text).decode()) if a[0] != "NAME"]
        attrs += [("DISK", [("IMAGE_ID", str(image.id))]) for image in images]
        vm_template = SimVmTemplate(id=site.next_id("template"), name=template_name, uid=0, gid=0, template=attrs)
        site.templates[vm_template.id] = vm_template
        template_ids.update({role: vm_template.id for role in role_names})
    text = scalar(service_app.template, "APPTEMPLATE64", "")
    if not text:
        raise DeployError(f"Missing APPTEMPLATE64 for App {service_app.id}")
    body = service_body(json.loads(base64.b64decode(text)), name, template_ids)
    body = flow_templates.validate(site.config.one_version, body)
    doc = SimDocument(id=site.next_id("document"), name=name, uid=0, gid=0, type=flow_engine.TEMPLATE_TYPE, body=body)
    site.documents[doc.id] = doc
    return doc


def _export_image(site: SimSite, app: SimMarketApp, image_name: str, datastore: int, attributes: Template) -> SimImage:
    """`export_image`: the app's APPTEMPLATE64, NAME and FROM_APP (and the appliance attributes)."""
    attrs: Template = parse_template(base64.b64decode(app.apptemplate64).decode()) if app.apptemplate64 else []
    attrs += [("NAME", image_name), ("FROM_APP", str(app.id))]
    return allocate_image(site, attrs + attributes, datastore, 0, 0)


def _image_ids(site: SimSite, template: SimDocument) -> set[int]:
    ids: set[int] = set()
    for role in template.body.get("roles", []):
        vm_template = site.templates.get(int(role.get("template_id", role.get("vm_template", -1))))
        if vm_template is None:
            continue
        for name, value in vm_template.template:
            if name == "DISK" and isinstance(value, list):
                ids.update(int(v) for k, v in value if k == "IMAGE_ID" and v.isdigit() and int(v) in site.images)
    return ids


def _merge_template(site: SimSite, template: SimDocument) -> dict[str, Any]:
    """The instantiate request: every input with a plausible value, the default network."""
    naming = site.naming
    obj, aut, man, _ = naming.roles
    # the site's first ordinary (non-oneadmin-group) user plays the automation's cloud account
    automation_user = next(
        (u for u in sorted(site.users.values(), key=lambda u: u.id) if u.gid != 0 and 0 not in u.groups),
        site.users[0],
    )
    # the endpoints as an operator gives them: the frontend's address the VMs reach (the host of the
    # platform's ONEGATE_ENDPOINT) on the platform's ports (oned.conf PORT, OneFlow's 2474), never
    # the loopback address the console itself may use
    gate_host = urlsplit(site.system_config.get("ONEGATE_ENDPOINT", "")).hostname or "localhost"
    rpc_endpoint = f"http://{gate_host}:{site.system_config.get('PORT', '2633')}/RPC2"
    flow_endpoint = f"http://{gate_host}:2474"
    values: dict[str, str] = {}
    for item in catalog.toolkit_inputs(naming):
        kind = item.type
        values[item.name] = secrets.token_urlsafe(18) if kind == "password" else item.default
    i = naming.input_name
    values.update({
        i(f"{obj}_hostname"): f"{obj}.site.internal,{obj}-console.site.internal",
        i(f"{obj}_tls_cert"): "",
        i(f"{obj}_tls_key"): "",
        i(f"{aut}_cloud_endpoint"): rpc_endpoint,
        i(f"{aut}_cloud_flow_endpoint"): flow_endpoint,
        i(f"{aut}_cloud_username"): automation_user.name,
        i(f"{aut}_cloud_password"): automation_user.password,
        i(f"{man}_sites_branch"): "demo-site",
        i(f"{man}_deployment_site"): "demo-site",
    })
    network = _default_network(site)
    _, values_key = flow_engine.input_keys(site)
    return {
        "name": template.name,
        values_key: values,
        "networks_values": [{"Public": {"id": str(network)}}],
    }


def _default_network(site: SimSite) -> int:
    bridged = sorted(v.id for v in site.vnets.values() if v.vn_mad == "bridge")
    if bridged:
        return bridged[0]
    if site.vnets:
        return min(site.vnets)
    raise DeployError("the site has no virtual network")


def _host_without_avx(site: SimSite) -> SimHost | None:
    for host in sorted(site.hosts.values(), key=lambda h: h.id):
        reported = scalar(host.template, "KVM_CPU_FEATURES", "")
        features = {f.strip().lower() for f in reported.split(",")}
        if host.state == HostState.MONITORED and scalar(host.template, "ARCH", "") == "x86_64" and reported and "avx" not in features:
            return host
    return None


def _settled(site: SimSite, service: SimDocument) -> bool:
    """Every role up, except that the manager may have given up on READY (DB_ERROR)."""
    flow_engine.evaluate(site, service)
    body = service.body
    if body.get("state") in (flow_engine.RUNNING, flow_engine.FAILED_DEPLOYING):
        return True
    roles = [r for r in body.get("roles", []) if isinstance(r, dict)]
    for role in roles:
        if role.get("state") == flow_engine.RUNNING:
            continue
        vms: list[SimVm] = flow_engine.role_nodes(site, service, str(role.get("name")))
        if not vms or not all(vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.RUNNING
                                   and scalar(vm.user_template, DB_ERROR_ATTRIBUTE) for vm in vms):
            return False
    return True


def _run_until(site: SimSite, done: Callable[[], bool], before_each: Callable[[], None] | None = None) -> None:
    for _ in range(_EVENT_LIMIT):
        if before_each is not None:
            before_each()
        if done() or not site.run_next_event():
            return
