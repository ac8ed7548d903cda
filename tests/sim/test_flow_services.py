"""Services on the embedded site, over loopback: states from the VMs, straight order, the READY gate,
failures and recovery, deletion, and what each role VM carries."""

from __future__ import annotations

import json
from typing import Any, Callable

from tests.sim.flow_support import (
    add_service_template,
    flow_client,
    host_with_avx,
    host_without_avx,
    instantiate_body,
    roles_by_name,
    service_body,
    values_key,
)
from tests.waiting import wait_until
from tui.domain.template_text import first, scalar
from tui.sim.flow_engine import (
    DEPLOYING,
    DEPLOYING_NETS,
    DONE,
    FAILED_DEPLOYING,
    RUNNING,
    UNDEPLOYING,
    WARNING,
    is_7x,
)
from tui.sim.server import SimServer

VALUES = {"app_greeting": "hello", "app_secret": "s3cr3t"}


def _instantiate(sim: SimServer, template_id: int, values: dict[str, str] | None = None, **kw: Any) -> int:
    kw.setdefault("key", values_key(sim))
    with flow_client(sim) as client:
        response = client.post(f"/service_template/{template_id}/action",
                               json=instantiate_body(VALUES if values is None else values, **kw))
    assert response.status_code == 201, response.text
    return int(json.loads(response.text)["DOCUMENT"]["ID"])


def _state(sim: SimServer, service_id: int) -> int:
    with flow_client(sim) as client:
        return int(service_body(client, service_id)["state"])


def test_straight_deployment_reaches_running_parents_first(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [
        {"name": "front"},
        {"name": "back", "parents": ["front"], "cardinality": 2},
    ])
    service_id = _instantiate(sim, template_id)
    seen_parent_deploying_alone = False
    # the service's networks come first (DEPLOYING_NETS, on 6.10 and 7.x alike: LifeCycleManager.rb
    # deploy_nets_action), which a quick first read can see
    states = (DEPLOYING_NETS, DEPLOYING, RUNNING)
    with flow_client(sim) as client:
        def running() -> bool:
            nonlocal seen_parent_deploying_alone
            body = service_body(client, service_id)
            roles = roles_by_name(body)
            if roles["back"]["nodes"]:
                # children only start once every parent runs
                assert roles["front"]["state"] == RUNNING
            elif roles["front"]["state"] == DEPLOYING:
                seen_parent_deploying_alone = True
            assert body["state"] in states
            return body["state"] == RUNNING

        wait_until(running, what="the service to run")
        body = service_body(client, service_id)
    assert seen_parent_deploying_alone
    roles = roles_by_name(body)
    assert [r["state"] for r in roles.values()] == [RUNNING, RUNNING]
    assert len(roles["back"]["nodes"]) == 2
    messages = [entry["message"] for entry in body["log"]]
    # LifeCycleManager.rb release-7.4.0 342-372: deploy_nets_action before deploy_action
    assert messages == ["New state: DEPLOYING_NETS", "New state: DEPLOYING", "New state: RUNNING"]
    with sim.site.lock:
        for role in roles.values():
            for node in role["nodes"]:
                vm = sim.site.vms[node["deploy_id"]]
                assert (vm.state, vm.lcm_state) == (3, 3)
                assert scalar(vm.user_template, "READY") == "YES"
                assert node["vm_info"]["VM"]["ID"] == str(vm.id)


def test_role_vms_carry_service_role_inputs_and_network(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    service_id = _instantiate(sim, template_id, network="0")
    with flow_client(sim) as client:
        # the role's VM is created once the service's networks are deployed (DEPLOYING_NETS first)
        nodes = wait_until(lambda: service_body(client, service_id)["roles"][0]["nodes"],
                           what="the role's first VM")
    node = nodes[0]
    assert node["vm_info"]["VM"]["NAME"] == f"front_0_(service_{service_id})"
    with sim.site.lock:
        vm = sim.site.vms[node["deploy_id"]]
        assert vm.name == f"front_0_(service_{service_id})"
        assert scalar(vm.user_template, "SERVICE_ID") == str(service_id)
        assert scalar(vm.user_template, "ROLE_NAME") == "front"
        assert scalar(vm.user_template, "APP_GREETING") == "hello"
        context = dict(first(vm.template, "CONTEXT") or [])
        assert context["APP_GREETING"] == "hello" and context["APP_SECRET"] == "s3cr3t"
        assert context["NETWORK"] == "YES"  # the VM template's own CONTEXT is kept
        nic = dict(first(vm.template, "NIC") or [])
        assert nic["NETWORK_ID"] == "0" and nic["IP"]


def test_6x_service_reaches_running(site_factory: Callable[..., SimServer]) -> None:
    sim = site_factory(one_version="6.10.0")
    template_id = add_service_template(sim.site, [{"name": "front"}, {"name": "back", "parents": ["front"]}],
                                       seven=False)
    service_id = _instantiate(sim, template_id, key="custom_attrs_values")
    wait_until(lambda: _state(sim, service_id) == RUNNING, what="the 6.x service to run")
    with sim.site.lock:
        vm = next(vm for vm in sim.site.vms.values() if scalar(vm.user_template, "ROLE_NAME") == "back")
        assert dict(first(vm.template, "CONTEXT") or [])["APP_SECRET"] == "s3cr3t"
        assert dict(first(vm.template, "NIC") or [])["NETWORK_ID"] == "0"


def _manager_pinned(sim: SimServer, gate: bool) -> int:
    """A service whose manager role (document database) is placed on a host without avx."""
    host = host_without_avx(sim.site)
    manager = sim.site.naming.role_manager
    template_id = add_service_template(sim.site, [
        {"name": "front"},
        {"name": manager, "parents": ["front"], "contents": {"SCHED_REQUIREMENTS": f'ID = "{host.id}"'}},
    ], gate=gate)
    return _instantiate(sim, template_id)


def _manager_vm_reported(sim: SimServer, service_id: int) -> bool:
    _state(sim, service_id)  # any request moves the site's clock
    with sim.site.lock:
        for vm in sim.site.vms.values():
            if scalar(vm.user_template, "SERVICE_ID") == str(service_id) and \
                    scalar(vm.user_template, "ROLE_NAME") == sim.site.naming.role_manager:
                return bool(scalar(vm.user_template, "DB_ERROR") or scalar(vm.user_template, "READY"))
    return False


def test_ready_gate_keeps_the_service_deploying_until_ready(sim: SimServer) -> None:
    service_id = _manager_pinned(sim, gate=True)
    wait_until(lambda: _manager_vm_reported(sim, service_id), what="the manager's appliance to report")
    with flow_client(sim) as client:
        body = service_body(client, service_id)
    roles = roles_by_name(body)
    assert body["state"] == DEPLOYING
    assert roles["front"]["state"] == RUNNING
    assert roles[sim.site.naming.role_manager]["state"] == DEPLOYING


def test_without_the_gate_a_running_vm_is_enough(sim: SimServer) -> None:
    service_id = _manager_pinned(sim, gate=False)
    wait_until(lambda: _state(sim, service_id) == RUNNING, what="the service to run")
    with sim.site.lock:
        manager = next(vm for vm in sim.site.vms.values() if scalar(vm.user_template, "ROLE_NAME") == "manager")
        assert scalar(manager.user_template, "READY") != "YES"


def test_a_failing_role_fails_the_deployment_and_recover_retries(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}, {"name": "back", "parents": ["front"]}])
    sim.site.faults.fail_role = "back"
    service_id = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, service_id) == FAILED_DEPLOYING, what="the deployment to fail")
    with flow_client(sim) as client:
        body = service_body(client, service_id)
        roles = roles_by_name(body)
        assert roles["back"]["state"] == FAILED_DEPLOYING and roles["front"]["state"] == RUNNING
        errors = [entry for entry in body["log"] if entry["severity"] == "E"]
        assert errors and "back" in errors[-1]["message"] and "BOOT_FAILURE" in errors[-1]["message"]
        failed_vm = roles["back"]["nodes"][0]["deploy_id"]

        sim.site.faults.fail_role = ""
        assert client.post(f"/service/{service_id}/action",
                           json={"action": {"perform": "recover"}}).status_code == 204
        wait_until(lambda: service_body(client, service_id)["state"] == RUNNING, what="the recovered service")
        body = service_body(client, service_id)
    assert [n["deploy_id"] for n in roles_by_name(body)["back"]["nodes"]] == [failed_vm]  # retried in place
    assert body["log"][-1]["message"] == "New state: RUNNING"


def test_recover_is_refused_for_a_running_service(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    service_id = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, service_id) == RUNNING, what="the service to run")
    with flow_client(sim) as client:
        response = client.post(f"/service/{service_id}/action", json={"action": {"perform": "recover"}})
    # LifeCycleManager.rb release-7.4.0 636-640: a plain Error, so one_error_to_http gives 500
    assert (response.status_code, response.text) == (500, "Service cannot be recovered in state: RUNNING")


def test_a_vm_going_away_warns_and_coming_back_recovers(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    service_id = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, service_id) == RUNNING, what="the service to run")
    with flow_client(sim) as client:
        role_action = f"/service/{service_id}/role/front/action"
        assert client.post(role_action, json={"action": {"perform": "poweroff"}}).status_code == 204
        wait_until(lambda: service_body(client, service_id)["state"] == WARNING, what="a WARNING service")
        assert client.post(role_action, json={"action": {"perform": "resume"}}).status_code == 204
        wait_until(lambda: service_body(client, service_id)["state"] == RUNNING, what="the service to run again")
        assert client.post(f"/service/{service_id}/role/ghost/action",
                           json={"action": {"perform": "poweroff"}}).status_code == 500  # "Role 'ghost' not found"


def test_delete_terminates_the_vms_and_removes_the_service(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}, {"name": "back", "parents": ["front"]}])
    service_id = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, service_id) == RUNNING, what="the service to run")
    with flow_client(sim) as client:
        body = service_body(client, service_id)
        vm_ids = [n["deploy_id"] for r in body["roles"] for n in r["nodes"]]
        response = client.delete(f"/service/{service_id}")
        assert response.status_code == 204
        states = []

        def gone() -> bool:
            answer = client.get(f"/service/{service_id}")
            if answer.status_code == 200:
                states.append(json.loads(answer.text)["DOCUMENT"]["TEMPLATE"]["BODY"]["state"])
            return answer.status_code == 404

        wait_until(gone, what="the service to be removed")
    assert set(states) <= {UNDEPLOYING, DONE}
    with sim.site.lock:
        assert all(sim.site.vms[vm_id].state == 6 for vm_id in vm_ids)


def test_delete_of_a_failed_service(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    sim.site.faults.fail_role = "front"
    service_id = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, service_id) == FAILED_DEPLOYING, what="the deployment to fail")
    with flow_client(sim) as client:
        # Service#can_undeploy? is false in a failed state (service.rb release-7.4.0 170-179)
        refused = client.delete(f"/service/{service_id}")
        assert (refused.status_code, refused.text) == (500, "Service cannot be undeployed in state: FAILED_DEPLOYING")
        # `oneflow recover --delete`: recover_action with delete -> undeploy_action(..., true)
        recover = client.post(f"/service/{service_id}/action",
                              json={"action": {"perform": "recover", "params": {"delete": True}}})
        assert recover.status_code == 204
        wait_until(lambda: client.get(f"/service/{service_id}").status_code == 404, what="the removal")


def test_a_missing_vm_template_fails_the_role_with_a_log_entry(sim: SimServer) -> None:
    """The role's VM template: 7.x `template_id` (role.rb release-7.0.0 640), 6.x `vm_template`
    (role.rb release-6.10.0 414)."""
    template_id = add_service_template(sim.site, [{"name": "front"}])
    key = "template_id" if is_7x(sim.site) else "vm_template"
    with sim.site.lock:
        sim.site.documents[template_id].body["roles"][0][key] = 999
    service_id = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, service_id) == FAILED_DEPLOYING, what="the deployment to fail")
    with flow_client(sim) as client:
        body = service_body(client, service_id)
    assert "front" in body["log"][-2]["message"] and "999" in body["log"][-2]["message"]


def test_6x_reads_the_vm_template_key_and_a_role_text_oned_cannot_parse_fails_the_role(
        site_factory: Callable[..., SimServer]) -> None:
    """6.10 role.rb 414-475: the role instantiates `vm_template` (a `template_id` beside it is not
    read) with `vm_template_contents` as the extra template; oned refuses text it cannot parse
    (RequestManagerVMTemplate.cc release-6.10.0 384-389), and the role fails with a log entry."""
    sim = site_factory(one_version="6.10.0")
    template_id = add_service_template(sim.site, [{"name": "front"}], seven=False)
    with sim.site.lock:
        role = sim.site.documents[template_id].body["roles"][0]
        role["template_id"] = 999
    service_id = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, service_id) == RUNNING, what="the 6.x service to run")
    with sim.site.lock:
        role["vm_template_contents"] = 'MEMORY = "1024" ]'
    broken = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, broken) == FAILED_DEPLOYING, what="the deployment to fail")
    with flow_client(sim) as client:
        message = service_body(client, broken)["log"][-2]["message"]
    assert message.startswith("Role front : Instantiate failed for template 0;") and "Parse error" in message


def test_chown_of_a_service_moves_its_vms(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    service_id = _instantiate(sim, template_id)
    user = sim.site.users[2]
    with flow_client(sim) as client:
        # the role's VM exists once the service's networks are ready (DEPLOYING_NETS comes first)
        wait_until(lambda: roles_by_name(service_body(client, service_id))["front"]["nodes"], what="the role's VM")
        response = client.post(f"/service/{service_id}/action",
                               json={"action": {"perform": "chown", "params": {"owner_id": user.id, "group_id": user.gid}}})
        assert response.status_code == 204
        document = json.loads(client.get(f"/service/{service_id}").text)["DOCUMENT"]
    assert (document["UID"], document["GID"], document["UNAME"]) == (str(user.id), str(user.gid), user.name)
    with sim.site.lock:
        vm_id = document["TEMPLATE"]["BODY"]["roles"][0]["nodes"][0]["deploy_id"]
        assert sim.site.vms[vm_id].uid == user.id


def test_moving_the_manager_to_a_compatible_host_lets_the_service_run(sim: SimServer) -> None:
    service_id = _manager_pinned(sim, gate=True)
    wait_until(lambda: _manager_vm_reported(sim, service_id), what="the manager's appliance to report")
    from tui.sim.lifecycle import deploy_vm, vm_action

    with sim.site.lock:
        manager = next(vm for vm in sim.site.vms.values() if scalar(vm.user_template, "ROLE_NAME") == "manager")
        vm_action(sim.site, "undeploy", manager.id)
    wait_until(lambda: _state(sim, service_id) is not None and manager.state == 9, what="the manager to be undeployed")
    with sim.site.lock:
        deploy_vm(sim.site, manager.id, host_with_avx(sim.site).id)
    wait_until(lambda: _state(sim, service_id) == RUNNING, what="the service to run")


def test_recover_while_the_cause_remains_fails_again(sim: SimServer) -> None:
    template_id = add_service_template(sim.site, [{"name": "front"}])
    sim.site.faults.fail_role = "front"
    service_id = _instantiate(sim, template_id)
    wait_until(lambda: _state(sim, service_id) == FAILED_DEPLOYING, what="the deployment to fail")
    with flow_client(sim) as client:
        # the clock held: the retried VM stays in its boot, so the service is read DEPLOYING before it
        # fails again (under load the site's scheduler could fail it between the two requests)
        sim.site.hold_clock()
        try:
            assert client.post(f"/service/{service_id}/action",
                               json={"action": {"perform": "recover"}}).status_code == 204
            assert service_body(client, service_id)["state"] == DEPLOYING
        finally:
            sim.site.release_clock()
        wait_until(lambda: service_body(client, service_id)["state"] == FAILED_DEPLOYING, what="a second failure")
        errors = [e for e in service_body(client, service_id)["log"] if e["severity"] == "E"]
    assert len(errors) == 2
