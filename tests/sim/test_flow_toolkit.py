"""The `deployed` scenario's toolkit service, read over loopback as the console reads it."""

from __future__ import annotations

import json
from typing import Callable

import pytest

from tests.sim.flow_support import flow_client, roles_by_name
from tui.domain.template_text import scalar
from tui.sim import catalog
from tui.sim.flow_engine import DEPLOYING, RUNNING
from tui.sim.server import SimServer


@pytest.mark.parametrize(("one_version", "values_key"), [("7.0.0", "user_inputs_values"),
                                                         ("6.10.0", "custom_attrs_values")])
def test_deployed_toolkit_runs_except_the_manager(
    sim_factory: Callable[..., SimServer], one_version: str, values_key: str
) -> None:
    sim = sim_factory(scenario="deployed", one_version=one_version)
    naming = sim.site.naming
    with flow_client(sim) as client:
        services = json.loads(client.get("/service").text)["DOCUMENT_POOL"]["DOCUMENT"]
        templates = json.loads(client.get("/service_template").text)["DOCUMENT_POOL"]["DOCUMENT"]
    assert len(services) == 1 and len(templates) == 1
    body = services[0]["TEMPLATE"]["BODY"]
    roles = roles_by_name(body)
    assert set(roles) == set(naming.roles)
    # the READY gate holds the service: the manager's database cannot start on its host
    assert body["state"] == DEPLOYING and body["ready_status_gate"] is True
    assert roles[naming.role_manager]["state"] == DEPLOYING
    assert all(roles[r]["state"] == RUNNING for r in naming.roles if r != naming.role_manager)
    values = body[values_key]
    assert len(values) == 23 and all(isinstance(v, str) for v in values.values())
    assert values[naming.input_name(f"{naming.role_objectstore}_tls_cert")] == ""
    # the frontend as the VMs reach it (the gate's host) on the platform's ports, not the console's loopback
    assert values[naming.input_name(f"{naming.role_automation}_cloud_flow_endpoint")] == "http://10.11.28.1:2474"
    assert values[naming.input_name(f"{naming.role_automation}_cloud_endpoint")] == "http://10.11.28.1:2633/RPC2"

    site = sim.site
    with site.lock:
        manager_vm = site.vms[roles[naming.role_manager]["nodes"][0]["deploy_id"]]
        host = site.hosts[manager_vm.history[-1].host_id]
        assert "avx" not in scalar(host.template, "KVM_CPU_FEATURES").split(",")
        assert scalar(host.template, "ARCH") == "x86_64"
        assert (manager_vm.state, manager_vm.lcm_state) == (3, 3)
        assert scalar(manager_vm.user_template, "READY") != "YES"
        # nothing pins it to its host: only what the market driver wrote into the app's VM template
        # on 7.x (src/market_mad/remotes/one/monitor `generate_vm_template64`), which onemarketapp export keeps
        requirements = dict(manager_vm.user_template).get("SCHED_REQUIREMENTS")
        assert requirements == ("HYPERVISOR=kvm" if one_version.startswith("7.") else None)
        automation_vm = site.vms[roles[naming.role_automation]["nodes"][0]["deploy_id"]]
        assert scalar(automation_vm.user_template, naming.automation_key_attribute).startswith("ssh-ed25519 ")

        toolkit_images = [i for i in site.images.values()
                          if scalar(i.template, naming.appliance_name_attribute) == naming.toolkit_appliance_name]
        assert len(toolkit_images) == 5  # one per VM template and disk, as onemarketapp export makes them
        software, stamp = catalog.TOOLKIT_OLD_VERSION.split("-", 1)
        for image in toolkit_images:
            assert scalar(image.template, naming.appliance_version_attribute) == stamp
            assert scalar(image.template, naming.appliance_software_version_attribute) == software
            assert image.state in (1, 2)  # READY, or USED by the running VMs
