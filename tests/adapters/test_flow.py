"""OneFlow adapter contract: read-only calls on the site under test (embedded or real), and on the
embedded site instantiation in both platform versions' shapes, the validation errors, service
actions, deletion and the failure modes (bad credentials, refused, slow, injected failures)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.adapters.conftest import CALL_TIMEOUT_S, SiteUnderTest, eventually
from tui.adapters.cloud import CloudClient
from tui.adapters.flow import FlowClient, document_from_envelope
from tui.domain.services import Service, ServiceTemplate
from tui.errors import SiteError

WAIT_S = 30.0


def body_7x(template_id: int, network_id: int) -> dict[str, Any]:
    return {
        "name": "contract-7x",
        "deployment": "straight",
        "ready_status_gate": False,
        "description": "two roles, one input, one network",
        "networks": {"Public": "M|network|Public network||id:"},
        "user_inputs": {"app_word": "M|text|A word", "app_secret": "M|password|A secret (min 8 chars)"},
        "roles": [
            {"name": "first", "type": "vm", "template_id": template_id, "cardinality": 1,
             "template_contents": {"NIC": [{"NAME": "NIC0", "NETWORK_ID": "$Public"}]}},
            {"name": "second", "type": "vm", "template_id": template_id, "cardinality": 2, "parents": ["first"],
             "template_contents": {"NIC": [{"NAME": "NIC0", "NETWORK_ID": "$Public"}]}},
        ],
    }


def body_6x(template_id: int, network_id: int) -> dict[str, Any]:
    return {
        "name": "contract-6x",
        "deployment": "straight",
        "networks": {"Public": f"M|network|Public network||id:{network_id}"},
        "custom_attrs": {"app_word": "M|text|A word"},
        "roles": [
            {"name": "only", "vm_template": template_id, "cardinality": 1,
             "vm_template_contents": 'NIC = [ NAME = "NIC0", NETWORK_ID = "$Public" ]\nWORD = "$app_word"'},
        ],
    }


async def _ids(cloud: CloudClient) -> tuple[int, int]:
    template = (await cloud.list_templates())[0]
    vnet = next(v for v in await cloud.list_vnets() if v.vn_mad == "bridge")
    return template.id, vnet.id


# read-only contract (embedded or real) --------------------------------------------------------------
async def test_lists_and_gets(flow: FlowClient) -> None:
    templates = await flow.list_service_templates()
    assert all(isinstance(t, ServiceTemplate) for t in templates)
    if templates:
        again = await flow.get_service_template(templates[0].id)
        assert (again.id, again.name, again.roles) == (templates[0].id, templates[0].name, templates[0].roles)
    services = await flow.list_services()
    assert all(isinstance(s, Service) for s in services)
    if services:
        assert (await flow.get_service(services[0].id)).id == services[0].id
    with pytest.raises(SiteError) as info:
        await flow.get_service(10**7)
    assert info.value.code == 404


# embedded site ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("one_version", ["7.0.0", "7.4.0"])  # 6.10 refuses the 7.x shape (service_template.rb)
async def test_instantiate_7x_runs_and_deletes(sim_only: None, flow: FlowClient, cloud: CloudClient) -> None:
    template_id, vnet_id = await _ids(cloud)
    created = await flow.create_service_template(body_7x(template_id, vnet_id))
    assert not created.legacy_inputs
    assert [i.name for i in created.inputs] == ["app_word", "app_secret"]
    assert created.input("app_secret") is not None and created.input("app_secret").secret  # type: ignore[union-attr]
    assert [(n.name, n.kind) for n in created.networks] == [("Public", "id")]
    assert [(r.name, r.template_id, r.cardinality, r.parents) for r in created.roles] == [
        ("first", template_id, 1, ()), ("second", template_id, 2, ("first",))]
    assert created.id in {t.id for t in await flow.list_service_templates()}

    service = await flow.instantiate(created.id, {
        "name": "svc-7x", "user_inputs_values": {"app_word": "hello", "app_secret": "s3cretvalue"},
        "networks_values": [{"Public": {"id": str(vnet_id)}}]})
    assert service.name == "svc-7x" and service.input_values["app_word"] == "hello"
    assert service.state_name in ("PENDING", "DEPLOYING")

    async def running() -> Service | None:
        current = await flow.get_service(service.id)
        return current if current.state_name == "RUNNING" else None

    done = await eventually(running, WAIT_S, "the service to run")
    assert [r.state_name for r in done.roles] == ["RUNNING", "RUNNING"]
    assert len(done.role("second").vm_ids) == 2  # type: ignore[union-attr]
    assert done.log and all(entry.message for entry in done.log)
    listed = {vm.id: vm for vm in await cloud.list_vms()}
    for role in done.roles:
        for vm_id in role.vm_ids:
            assert listed[vm_id].service_id == service.id and listed[vm_id].role_name == role.name

    await flow.service_action(service.id, "poweroff")

    async def off() -> bool:
        states = [(await cloud.vm_info(vm_id)).state_name for vm_id in done.vm_ids]
        return all(state == "poff" for state in states)

    await eventually(off, WAIT_S, "the service's VMs to power off")
    await flow.delete_service(service.id)

    async def gone() -> bool:
        try:
            current = await flow.get_service(service.id)
        except SiteError as error:
            return error.code == 404
        return current.state_name == "DONE"

    await eventually(gone, WAIT_S, "the service to be deleted")
    await flow.delete_service_template(created.id)
    assert created.id not in {t.id for t in await flow.list_service_templates()}


@pytest.mark.parametrize("one_version", ["7.0.0", "7.4.0"])
async def test_instantiate_validation_errors_carry_the_server_text(sim_only: None, flow: FlowClient,
                                                                   cloud: CloudClient) -> None:
    if (await cloud.version()).startswith("6."):
        pytest.skip("7.x input keys; the 6.x form is test_instantiate_6x_custom_attrs")
    template_id, vnet_id = await _ids(cloud)
    created = await flow.create_service_template(body_7x(template_id, vnet_id))
    with pytest.raises(SiteError) as info:
        await flow.instantiate(created.id, {"name": "x", "networks_values": [{"Public": {"id": str(vnet_id)}}],
                                            "user_inputs_values": {"app_word": "only one"}})
    assert info.value.code == 400 and not info.value.retryable
    assert "User Input" in info.value.detail
    with pytest.raises(SiteError) as info:
        await flow.instantiate(created.id, {"name": "x", "networks_values": [{"Private": {"id": "0"}}],
                                            "user_inputs_values": {"app_word": "w", "app_secret": "Very-Secret-Value"}},
                               secrets=("Very-Secret-Value",))
    assert info.value.code == 400 and "network" in info.value.detail
    assert "Very-Secret-Value" not in str(info.value)


async def test_instantiate_6x_custom_attrs(sim_only: None, site_factory: Any) -> None:
    sim = site_factory(one_version="6.10.0")
    user, _, password = sim.session.partition(":")
    cloud = CloudClient(sim.xmlrpc_url, sim.session, CALL_TIMEOUT_S)
    flow = FlowClient(sim.flow_url, user, password, CALL_TIMEOUT_S)
    try:
        assert (await cloud.version()).startswith("6.10")
        template_id, vnet_id = await _ids(cloud)
        created = await flow.create_service_template(body_6x(template_id, vnet_id))
        assert created.legacy_inputs and [i.name for i in created.inputs] == ["app_word"]
        assert created.roles[0].template_id == template_id and "$app_word" in created.roles[0].template_contents_text
        assert created.networks[0].default_id == str(vnet_id)
        service = await flow.instantiate(created.id, {
            "name": "svc-6x", "custom_attrs_values": {"app_word": "bonjour"},
            "networks_values": [{"Public": {"id": str(vnet_id)}}]})
        assert service.input_values == {"app_word": "bonjour"}
        assert "custom_attrs_values" in service.body

        async def nodes() -> tuple[int, ...]:
            return (await flow.get_service(service.id)).vm_ids

        vm_ids = await eventually(nodes, WAIT_S, "the role's VM")
        detail = await cloud.vm_info(vm_ids[0])
        assert detail.summary.service_id == service.id and detail.summary.role_name == "only"
    finally:
        await cloud.close()
        await flow.close()


async def test_bad_credentials_are_401(site: SiteUnderTest) -> None:
    client = FlowClient(site.flow_url, site.flow_user, "definitely-wrong", CALL_TIMEOUT_S)
    try:
        with pytest.raises(SiteError) as info:
            await client.list_services()
    finally:
        await client.close()
    assert info.value.code == 401 and "ONEFLOW_USER" in info.value.detail
    assert "definitely-wrong" not in str(info.value)


async def test_failure_modes(sim_only: None, sim: Any) -> None:
    user, _, password = sim.session.partition(":")
    client = FlowClient(sim.flow_url, user, password, 0.5)
    try:
        sim.site.faults.latency_ms = 3000
        started = time.monotonic()
        with pytest.raises(SiteError) as info:
            await client.list_services()
        assert time.monotonic() - started < 1.5
        assert info.value.retryable and "No answer" in info.value.title
        sim.site.faults.latency_ms = 0

        sim.site.faults.fail_rate = 1.0
        for _ in range(6):
            with pytest.raises(SiteError) as info:
                await client.list_service_templates()
            assert info.value.retryable
        sim.site.faults.fail_rate = 0.0

        sim.stop()
        with pytest.raises(SiteError) as info:
            await client.list_services()
        assert "Nothing listening" in info.value.title and "ONEFLOW_URL" in info.value.detail
        sim.start()
        assert isinstance(await client.list_services(), tuple)
    finally:
        sim.site.faults.latency_ms = 0
        sim.site.faults.fail_rate = 0.0
        sim.start()
        await client.close()
    assert password not in str(info.value)


def test_envelope_strings_become_numbers() -> None:
    doc = document_from_envelope({
        "ID": "5", "UID": "0", "GID": "1", "UNAME": "oneadmin", "GNAME": "users", "NAME": "s", "TYPE": "100",
        "PERMISSIONS": {"OWNER_U": "1", "OWNER_M": "1", "OWNER_A": "0", "GROUP_U": "1", "GROUP_M": "0",
                        "GROUP_A": "0", "OTHER_U": "0", "OTHER_M": "0", "OTHER_A": "0"},
        "TEMPLATE": {"BODY": {"name": "s", "state": 2, "roles": [{"name": "r", "state": 2, "nodes": [
            {"deploy_id": 7, "vm_info": {"VM": {"ID": "7", "NAME": "r_0_(service_5)", "STATE": "3", "LCM_STATE": "3"}}}]}]}},
    })
    assert (doc.id, doc.gid, doc.type, doc.permissions.octal) == (5, 1, 100, "640")
    from tui.domain.services import service_from_document

    service = service_from_document(doc)
    assert service.state_name == "RUNNING" and service.roles[0].nodes[0].vm_state == 3
    assert service.vm_ids == (7,)
