"""Operations 3 and 4 against the embedded site: the form from the template, instantiation with the
version's key names, following to RUNNING, recording the VMs by their service nodes, failures,
cancel, timeout, and two deployments side by side."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from functools import partial
from urllib.parse import urlsplit

import pytest

from tests.procedure_run import collect
from tests.toolkit.conftest import FAST, ToolkitSite, eventually, filled
from tui.adapters.cloud import json_document_template
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.domain.secret_names import MASK
from tui.domain.severity import Severity
from tui.domain.ssh_keys import parse_public_key
from tui.errors import SiteError
from tui.procedures.operation import RunContext, run_operation
from tui.procedures.progress import Progress
from tui.procedures.site_record import load_site_record, load_site_records, site_record_path
from tui.procedures.toolkit.instantiate import (
    DeploymentFailed,
    DeployToolkit,
    InvalidInputs,
    KeyNotPublished,
    capture_automation_key,
    deploy_toolkit,
    follow_deployment,
    plan_deploy,
)
from tui.procedures.toolkit.service import find_toolkit_template, load_form, toolkit_vms


async def test_form_is_generated_from_the_template_and_prefilled(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    assert len(form.fields) == 23 and not form.missing_inputs
    assert [group for group, _ in form.groups()] == ["Object store", "Automation server", "Trial-network manager",
                                                    "Time-series database"]
    values = form.values
    # the console talks to the embedded site over loopback: the form offers the endpoints as the VMs
    # reach the frontend (the host of ONEGATE_ENDPOINT, 10.11.28.1), on the platform's ports
    rpc_port, flow_port = urlsplit(server.xmlrpc_url).port, urlsplit(server.flow_url).port
    assert urlsplit(server.xmlrpc_url).hostname == "127.0.0.1"
    assert form.frontend_host == "10.11.28.1"
    assert values["app_automation_cloud_endpoint"] == f"http://10.11.28.1:{rpc_port}/RPC2"
    assert values["app_automation_cloud_flow_endpoint"] == f"http://10.11.28.1:{flow_port}"
    assert values["app_automation_cloud_username"] == ""  # never the console's own user (oneadmin)
    assert values["app_automation_cloud_insecure"] == "YES"
    assert all(values[name] == "" for name in form.secrets)
    assert form.suggested_name == "Site Toolkit v0.5.0"
    assert form.network_defaults == {"Public": "0"}  # the site's only bridged network, the OAM /24
    assert [c.name for c in form.choices] == ["oam", "trial-vxlan"]
    assert not [p for p in form.problems(form.suggested_name, values, {"Public": "0"})
                if p.name.startswith("app_automation_cloud_") and p.name.endswith("endpoint")]
    # loopback endpoints are errors: the automation VM would reach itself; the fix names the address
    for name, url in (("app_automation_cloud_endpoint", server.xmlrpc_url),
                      ("app_automation_cloud_flow_endpoint", "http://localhost:2474")):
        problems = form.problems(form.suggested_name, {**values, name: url}, {"Public": "0"})
        found = [p for p in problems if p.name == name]
        assert [p.severity for p in found] == [Severity.ERROR], found
        suggested = f"http://10.11.28.1:{urlsplit(url).port}" + ("/RPC2" if url.endswith("/RPC2") else "")
        assert "loopback address of the frontend" in found[0].message and f"use {suggested} " in found[0].message
    skeleton = form.skeleton().value_map()
    assert skeleton["app_automation_cloud_endpoint"] == f"http://10.11.28.1:{rpc_port}/RPC2"
    assert skeleton["app_automation_cloud_username"] == ""
    # a control character in the service name: refused (the platform's XML answers could not carry it)
    escaped = [p for p in form.problems("tk\x1b[2J", values, {"Public": "0"}) if p.name == "name"]
    assert [p.severity for p in escaped] == [Severity.ERROR] and "U+001B" in escaped[0].message
    skeleton = form.skeleton()
    assert skeleton.name == "Site Toolkit v0.5.0" and skeleton.networks == (("Public", "0"),)


async def test_a_template_with_an_unknown_extra_input_gets_a_field(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    body = json.loads(json.dumps(dict(template.body)))
    body["name"] = "Site Toolkit v0.6.0"
    body["user_inputs"]["app_manager_log_level"] = "M|list|Log level of the manager|debug,info,warning|info"
    body["user_inputs"]["site_region"] = "M|text|Region label (max 8 chars)"
    new_id = await site.cloud.document_allocate(json_document_template(body, body["name"]), SERVICE_TEMPLATE_DOCUMENT)
    extended = await find_toolkit_template(site)  # the newest toolkit template
    assert extended.id == new_id
    form = await load_form(site, extended)
    assert len(form.fields) == 25
    log_level = form.field("app_manager_log_level")
    region = form.field("site_region")
    assert log_level is not None and log_level.group == "Trial-network manager" and log_level.default == "info"
    assert region is not None and region.group == "Other" and "Region label" in region.help
    assert form.suggested_name == "Site Toolkit v0.6.0"

    file, _ = filled(form, app_manager_log_level="trace", site_region="far-too-long")
    with pytest.raises(InvalidInputs) as caught:
        plan_deploy(form, file)
    bad = {p.name: p.message for p in caught.value.problems if p.severity is Severity.ERROR}
    assert "debug, info, warning" in bad["app_manager_log_level"]
    assert "at most 8" in bad["site_region"]

    file, _ = filled(form, app_manager_log_level="debug", site_region="north")
    events = await collect(partial(deploy_toolkit, site, plan_deploy(form, file), wait=False))
    record = load_site_record(site.settings, events[-1].data["service_id"])
    service = await site.flow.get_service(record.service_id)
    assert service.input_values["app_manager_log_level"] == "debug"
    assert service.input_values["site_region"] == "north"


@pytest.mark.parametrize(("one_version", "values_key"), [("7.0.0", "user_inputs_values"),
                                                         ("6.10.0", "custom_attrs_values")])
async def test_deploy_follows_the_service_to_running_and_records_the_vms(
        toolkit_site: ToolkitSite, one_version: str, values_key: str) -> None:
    server, site, template = await toolkit_site(one_version)
    form = await load_form(site, template)
    assert template.legacy_inputs is (one_version.startswith("6"))
    file, secret_values = filled(form)
    plan = plan_deploy(form, file)
    assert plan.values_key == values_key
    assert plan.preview().changes[0].cli == f"oneflow-template instantiate {template.id} <input file>"
    events = await collect(partial(deploy_toolkit, site, plan, **FAST))

    assert events[0].data["values_key"] == values_key
    service_id = events[1].data["service_id"]
    service = await site.flow.get_service(service_id)
    assert service.state_name == "RUNNING"
    assert values_key in service.body  # the server stored the key of its version
    # roles were followed live, each up to RUNNING, then the VMs recorded and the key captured
    role_events = [e for e in events if e.step.startswith("role ")]
    assert {e.step for e in role_events if e.state == "done"} == {f"role {r}" for r in plan.role_names}
    assert events[-1].step == "deployment" and events[-1].state == "done"

    record = load_site_record(site.settings)
    assert record is not None and record.service_id == service_id and record.state == "RUNNING"
    assert record.template_id == template.id and record.platform_version == one_version
    assert record.cloud_username == "tkauto"
    for role in service.roles:
        recorded = record.role(role.name)
        assert recorded is not None and recorded.vm_ids == role.vm_ids
        for vm in recorded.vms:
            detail = await site.cloud.vm_info(vm.vm_id)
            assert detail.user_template.get("SERVICE_ID") == str(service_id)
            assert vm.name == detail.name and vm.ips == detail.summary.ips and vm.ips
    key = parse_public_key(record.automation_public_key)
    automation = await site.cloud.vm_info(record.automation_vm.vm_id)
    assert automation.user_template.get(site.naming.automation_key_attribute).startswith(key.body)

    path = site_record_path(site.settings)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    assert not any(secret in text for secret in secret_values.values())
    vms = await toolkit_vms(site, record)
    assert {vm.role for vm in vms} == set(plan.role_names) and all(vm.state == "runn" and vm.ready for vm in vms)


async def test_a_failing_role_ends_the_follow_with_the_service_log(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    server.site.faults.fail_role = "automation"
    form = await load_form(site, template)
    file, _ = filled(form)
    events: list = []
    with pytest.raises(DeploymentFailed) as caught:
        await collect(partial(deploy_toolkit, site, plan_deploy(form, file), **FAST), on_event=events.append)
    error = caught.value
    assert error.state == "FAILED_DEPLOYING"
    assert any("Role automation" in line and "[E]" in line for line in error.log)
    assert "Role automation" in error.detail and f"oneflow recover {error.service_id}" in error.detail
    failed = events[-1]
    assert failed.state == "failed" and failed.data["log"] == list(error.log)
    assert any(e.step == "role automation" and e.state == "failed" for e in events)
    record = load_site_record(site.settings)
    assert record.state == "FAILED_DEPLOYING" and record.role("automation").vm_ids
    # the follow changed nothing: the service stays failed, its VMs in place
    service = await site.flow.get_service(error.service_id)
    assert service.state_name == "FAILED_DEPLOYING" and service.role("automation").vm_ids


async def test_two_deployments_side_by_side_do_not_mix(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    first, _ = filled(form, name="toolkit A")
    second, _ = filled(form, name="toolkit B")
    runs = await asyncio.gather(collect(partial(deploy_toolkit, site, plan_deploy(form, first), **FAST)),
                                collect(partial(deploy_toolkit, site, plan_deploy(form, second), **FAST)))
    ids = [events[1].data["service_id"] for events in runs]
    records = {r.service_id: r for r in load_site_records(site.settings)}
    assert set(records) == set(ids) and ids[0] != ids[1]
    seen: set[int] = set()
    for service_id in ids:
        record = records[service_id]
        assert record.service_name == ("toolkit A" if service_id == ids[0] else "toolkit B")
        assert not seen & set(record.vm_ids)
        seen |= set(record.vm_ids)
        for role in record.roles:
            for vm in role.vms:
                detail = await site.cloud.vm_info(vm.vm_id)
                assert detail.user_template.get("SERVICE_ID") == str(service_id)
                assert detail.user_template.get("ROLE_NAME") == role.name
        assert record.automation_public_key
    assert records[ids[0]].automation_public_key != records[ids[1]].automation_public_key
    assert load_site_record(site.settings).service_id == max(ids, key=lambda i: (records[i].created, i))


async def test_cancel_stops_waiting_and_leaves_the_service_alone(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    file, _ = filled(form)
    cancel = asyncio.Event()

    def cancel_at_service(event: Progress) -> None:
        if event.step == "service" and event.state == "running":
            cancel.set()

    events = await collect(partial(deploy_toolkit, site, plan_deploy(form, file), **FAST), cancel=cancel,
                           on_event=cancel_at_service)
    assert events[-1].state == "skipped" and events[-1].data["cancelled"] is True
    service_id = events[-1].data["service_id"]
    # nothing was undone: the service goes on deploying by itself and reaches RUNNING
    async def running() -> bool:
        return (await site.flow.get_service(service_id)).state_name == "RUNNING"

    await eventually(running, "the service to reach RUNNING on its own")
    # following again picks it up where it is
    resumed = await collect(partial(follow_deployment, site, load_site_record(site.settings), **FAST))
    assert resumed[-1].step == "deployment" and resumed[-1].state == "done"


async def test_timeout_says_which_role_is_stuck_and_why(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site(compatible_only=False)
    form = await load_form(site, template)
    file, _ = filled(form)
    events = await collect(partial(deploy_toolkit, site, plan_deploy(form, file), wait=False))
    record = load_site_record(site.settings, events[-1].data["service_id"])

    async def manager_up_but_not_ready() -> bool:
        service = await site.flow.get_service(record.service_id)
        ids = service.role("manager").vm_ids
        vms = [await site.cloud.vm_info(i) for i in ids]
        return bool(vms) and all(vm.summary.running and not vm.ready and vm.user_template.get("DB_ERROR") for vm in vms)

    await eventually(manager_up_but_not_ready, "the manager VM running on an incompatible host")
    with pytest.raises(SiteError) as caught:
        await collect(partial(follow_deployment, site, record, timeout=0, key_timeout=1, poll_interval=0.05))
    assert "not RUNNING after" in caught.value.title
    assert "role manager" in caught.value.detail and "READY=YES" in caught.value.detail
    service = await site.flow.get_service(record.service_id)
    assert service.state_name == "DEPLOYING"  # untouched


async def test_invalid_inputs_are_refused_before_anything_is_sent(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    file, _ = filled(form, app_automation_cloud_endpoint="http://10.0.0.1:2633", app_objectstore_tls_cert="x")
    with pytest.raises(InvalidInputs) as caught:
        plan_deploy(form, file.with_values({}))
    names = {p.name for p in caught.value.problems if p.severity is Severity.ERROR}
    assert {"app_automation_cloud_endpoint", "app_objectstore_tls_key"} <= names  # a certificate needs its key
    assert await site.flow.list_services() == ()
    # a secret left out of the file and not given is an error too
    file, secret_values = filled(form)
    without = type(file)(file.name, tuple((k, v) for k, v in file.values if k not in secret_values), file.networks)
    with pytest.raises(InvalidInputs):
        plan_deploy(form, without)
    plan = plan_deploy(form, without, extra_values=secret_values)  # asked at deploy time
    assert plan.merge[plan.values_key]["app_automation_password"] == secret_values["app_automation_password"]


def _deploy_records(site) -> list[dict]:
    return [e for e in site.audit.entries() if e["action"] == "toolkit.instantiate"]


async def test_a_refused_instantiation_is_reported_and_audited(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    file, secret_values = filled(form)
    plan = plan_deploy(form, file)
    values = dict(plan.merge[plan.values_key])
    values.pop("app_timeseries_bucket")
    broken = type(plan)(**{**plan.__dict__, "merge": {**plan.merge, plan.values_key: values}})
    with pytest.raises(SiteError) as caught:
        await run_operation(site, DeployToolkit(form, file, **FAST), broken, RunContext(lambda event: None))
    assert caught.value.title.startswith("Instantiation refused")
    assert "User Input" in caught.value.detail
    # the operation's one record (run_operation): failed, what was asked, no service, no secret
    [entry] = _deploy_records(site)
    assert site.audit.entries()[-1] == entry
    assert entry["outcome"] == "failed" and entry["target"] == f"service template {template.id}"
    assert entry["details"]["error"] == caught.value.title and "User Input" in entry["details"]["detail"]
    assert entry["details"]["steps_done"] == [] and "service_id" not in entry["details"]
    assert "app_automation_password" in entry["details"]["inputs"]
    # a key name, not a credential: the record says which (issue 22 item 8; it was masked)
    assert entry["details"]["values_key"] == plan.values_key != MASK
    assert not any(secret in site.audit.path.read_text() for secret in secret_values.values())
    assert load_site_record(site.settings) is None


async def test_a_deployment_is_audited_once_and_a_rerun_as_reused(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    file, _ = filled(form)
    operation = DeployToolkit(form, file, wait=False)
    first = await run_operation(site, operation, await operation.plan(site), RunContext(lambda event: None))
    again = await run_operation(site, operation, await operation.plan(site), RunContext(lambda event: None))
    assert again.reused and not first.reused and again.service_id == first.service_id
    made, followed = _deploy_records(site)
    assert made["outcome"] == "ok" and made["details"]["service_id"] == first.service_id
    assert "reused" not in made["details"] and made["details"]["name"] == file.name
    assert followed["outcome"] == "ok" and followed["details"]["reused"] is True
    assert followed["details"]["service_id"] == first.service_id and "same inputs" in followed["details"]["reason"]
    assert len(await site.flow.list_services()) == 1


async def test_a_deployment_failing_after_the_instantiation_leaves_one_failed_record(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    server.site.faults.fail_role = "automation"
    form = await load_form(site, template)
    file, _ = filled(form)
    operation = DeployToolkit(form, file, **FAST)
    with pytest.raises(DeploymentFailed) as caught:
        await run_operation(site, operation, await operation.plan(site), RunContext(lambda event: None))
    [entry] = _deploy_records(site)
    assert entry["outcome"] == "failed" and entry["details"]["service_id"] == caught.value.service_id
    assert "instantiate" in entry["details"]["steps_done"] and entry["details"]["reused"] is False


async def test_key_capture_reports_a_key_that_never_appears(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    file, _ = filled(form)
    events = await collect(partial(deploy_toolkit, site, plan_deploy(form, file), wait=False))
    record = load_site_record(site.settings, events[-1].data["service_id"])
    # right after instantiation the automation role waits for the object store: no VM, no key
    with pytest.raises(KeyNotPublished) as caught:
        await collect(partial(capture_automation_key, site, record, timeout=0, poll_interval=0.05))
    assert "AUTOMATION_SSH_PUBLIC_KEY" in caught.value.detail and "sitetk toolkit key" in caught.value.detail
    # later it is captured
    events = await collect(partial(capture_automation_key, site, record, timeout=60, poll_interval=0.05))
    assert events[-1].state == "done"
    assert parse_public_key(load_site_record(site.settings).automation_public_key)


async def test_an_invalid_published_key_is_refused(toolkit_site: ToolkitSite) -> None:
    server, site, template = await toolkit_site()
    form = await load_form(site, template)
    file, _ = filled(form)
    events = await collect(partial(deploy_toolkit, site, plan_deploy(form, file), wait=False))
    service_id = events[-1].data["service_id"]

    async def automation_vm() -> tuple[int, ...]:
        return (await site.flow.get_service(service_id)).role("automation").vm_ids

    vm_id = (await eventually(automation_vm, "the automation VM"))[0]
    await site.cloud.vm_update(vm_id, 'AUTOMATION_SSH_PUBLIC_KEY = "ssh-ed25519 AAAAB3NzaC1yc2E= broken"', 1)
    with pytest.raises(SiteError) as caught:
        await collect(partial(capture_automation_key, site, load_site_record(site.settings), timeout=60, poll_interval=0.05))
    assert caught.value.title == "The automation VM published an invalid public key"
    assert "ssh-rsa" in caught.value.detail  # the blob says ssh-rsa, the line says ssh-ed25519
