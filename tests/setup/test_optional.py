"""The optional steps: the DNS and route-manager appliances, deployed by the operator with the real
procedures, written into the site configuration only when asked (`--only dns|route-manager`),
previewed with the token masked, submitted, and done once written (a re-run changes nothing)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import write_inputs
from tests.setup.observe import observe
from tests.waiting import wait_until
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.site_config import SiteConfig
from tui.procedures.audit import AUDIT_ENV
from tui.procedures.connection import SiteConnection
from tui.procedures.download_appliance import download_appliance, plan_download
from tui.settings import Settings
from tui.sim.appliances import ROUTE_MANAGER_TOKEN_ATTRIBUTE
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)
TOKEN = "app_automation_sites_token"
IMAGE_DS = 1


def _deploy_appliance(server: SimServer, name: str) -> int:
    """Download the marketplace appliance `name` (attributes attached) and start a VM from it on the
    default network, as an operator would (`onemarketapp export`, `onetemplate instantiate --nic 0`)."""
    async def go() -> int:
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))
        try:
            await site.connect()
            app = next(a for a in await site.cloud.list_marketapps() if a.name == name)
            plan = await plan_download(site, app.id, IMAGE_DS, f"{name} test")
            events = [e async for e in download_appliance(site, plan, poll_interval=0.02)]
            template_id = int(events[-1].data["download"]["template_ids"][0])
            return await site.cloud.template_instantiate(template_id, f"{name} VM", extra='NIC = [ NETWORK_ID = "0" ]')
        finally:
            await site.close()
    return asyncio.run(go())


def _vm_user_template(server: SimServer, vm_id: int) -> dict[str, str]:
    import xmlrpc.client
    from xml.etree import ElementTree

    body = xmlrpc.client.ServerProxy(server.xmlrpc_url).one.vm.info(server.session, vm_id)[1]
    vm = ElementTree.fromstring(body)
    return {child.tag: child.text or "" for child in vm.find("USER_TEMPLATE") or ()} | {
        "STATE": vm.findtext("STATE", ""), "IP": vm.findtext("TEMPLATE/NIC/IP", "")}


@pytest.fixture
def deployed(sim_factory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[SimServer, Path]:
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch, vault_file=False)
    monkeypatch.setenv(AUDIT_ENV, str(tmp_path / "audit.jsonl"))
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs, branch=EXISTING_SITE)
    data = json.loads(inputs.read_text())
    data["custom_attrs_values"][TOKEN] = SIM_VAULT_PASSWORD  # the demo branch's vault password
    inputs.write_text(json.dumps(data))
    return server, inputs


def _commits(server: SimServer) -> int:
    out = subprocess.run(["git", "-C", str(server.site.sites_repo), "rev-list", "--count", EXISTING_SITE],
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_optional_appliances_are_written_only_when_asked(deployed, capsys, tmp_path: Path) -> None:
    server, inputs = deployed
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert steps(data)["dns"]["state"] == "optional" and "no DNS Server appliance downloaded" in steps(data)["dns"]["evidence"][0]
    dns_vm = _deploy_appliance(server, "DNS Server")
    rm_vm = _deploy_appliance(server, "Route Manager API")
    wait_until(lambda: bool(_vm_user_template(server, rm_vm).get(ROUTE_MANAGER_TOKEN_ATTRIBUTE)), timeout=60,
               what="the route manager to publish its token")
    wait_until(lambda: _vm_user_template(server, dns_vm)["STATE"] == "3", timeout=60, what="the DNS VM to run")
    ip = _vm_user_template(server, dns_vm)["IP"]
    published = _vm_user_template(server, rm_vm)
    token, rm_ip = published[ROUTE_MANAGER_TOKEN_ATTRIBUTE], published["IP"]
    # before core.yaml is filled, checked whole and submitted, writing them waits for it
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert steps(data)["dns"]["state"] == "blocked" and steps(data)["dns"]["blocked_by"] == "submitted"
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--yes")
    assert code == 1 and "blocked by submitted" in err
    # the mandatory steps, which leave the optional ones alone
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", "--poll", "0.05", "--timeout", "120")
    assert code == 0, err
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    dns, rm = steps(data)["dns"], steps(data)["route-manager"]
    assert dns["state"] == rm["state"] == "optional" and dns["command"].endswith("--only dns")
    assert any(f"VM {dns_vm}" in e for e in dns["evidence"]) and any("site_dns = 8.8.8.8,1.1.1.1" in e for e in dns["evidence"])

    before = _commits(server)
    code, out, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--dry-run")
    assert code == 0, err
    assert f"site_dns: '8.8.8.8,1.1.1.1' -> '{ip},8.8.8.8,1.1.1.1'" in out and "ansible-vault edit" in out
    assert _commits(server) == before
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--yes")
    assert code == 0, err
    assert _commits(server) == before + 1
    config = SiteConfig.parse(observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD).core_yaml, DEFAULT_NAMING)
    assert config.get("site_dns") == f"{ip},8.8.8.8,1.1.1.1"
    assert run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--yes")[0] == 0
    assert _commits(server) == before + 1  # written already: nothing committed again

    # a route manager that has not published its token: stopped with the reason, nothing written
    with server.site.lock:
        vm = server.site.vms[rm_vm]
        vm.user_template = [a for a in vm.user_template if a[0] != ROUTE_MANAGER_TOKEN_ATTRIBUTE]
        vm.touch()
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes")
    assert code == 1 and "has not published its token" in err and ROUTE_MANAGER_TOKEN_ATTRIBUTE in err
    assert _commits(server) == before + 1
    with server.site.lock:
        vm.user_template = vm.user_template + [(ROUTE_MANAGER_TOKEN_ATTRIBUTE, token)]
        vm.touch()

    code, dry, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--dry-run")
    assert code == 0, err
    assert f"site_routemanager.api_endpoint: null -> 'http://{rm_ip}:8172'" in dry and "site_routemanager.token" in dry
    code, out, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes")
    assert code == 0, err
    config = SiteConfig.parse(observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD).core_yaml, DEFAULT_NAMING)
    assert config.get("site_routemanager.api_endpoint") == f"http://{rm_ip}:8172"
    assert config.get("site_routemanager.token") == token
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert steps(data)["route-manager"]["state"] == "done" and steps(data)["dns"]["state"] == "done"
    shown = dry + out + err + json.dumps(data) + (tmp_path / "audit.jsonl").read_text()
    assert token not in shown
    raw = subprocess.run(["git", "-C", str(server.site.sites_repo), "show", f"{EXISTING_SITE}:{EXISTING_SITE}/core.yaml"],
                         capture_output=True, text=True, check=True).stdout
    assert raw.startswith("$ANSIBLE_VAULT") and token not in raw
