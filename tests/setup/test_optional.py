"""The optional steps: the DNS and route-manager appliances downloaded, deployed with their inputs,
waited for until ready, the route manager's API checked with the VM's token over real HTTP, and
written into core.yaml (vault-encrypted) only when asked (`--only dns|route-manager`): previewed,
audited, refused read-only, idempotent; and their failures (no marketplace lists the appliance, the
VM fails, the API refuses the token, nothing answers)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from functools import partial
from pathlib import Path

import pytest

from tests.procedure_run import run_procedure
from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import write_inputs
from tests.setup.observe import observe
from tests.waiting import wait_until
from tui.adapters.route_manager import RouteManagerRefused, RouteManagerUnreachable, list_routes
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.site_config import SiteConfig
from tui.procedures.audit import AUDIT_ENV
from tui.sim import route_manager
from tui.sim.appliances import DNS_APPLIANCE, DNS_TOKEN_ATTRIBUTE, ROUTE_MANAGER_APPLIANCE, ROUTE_MANAGER_TOKEN_ATTRIBUTE
from tui.sim.platform import DEFAULT_VERSION
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)
TOKEN = "app_automation_sites_token"
FAST = ("--poll", "0.05", "--timeout", "120")


def _vm(server: SimServer, appliance: str) -> tuple[int, str, dict[str, str]]:
    """The VM booted from `appliance` (id, address, user template)."""
    from tui.domain.template_text import scalar
    from tui.sim.appliances import appliance_names

    server.site.advance()  # the site's timed events run as its clock advances (each request advances it)
    with server.site.lock:
        vms = [vm for vm in server.site.vms.values() if appliance in appliance_names(server.site, vm) and vm.state != 6]
        assert len(vms) == 1, [vm.id for vm in vms]
        vm = vms[0]
        nic = next(value for name, value in vm.template if name == "NIC")
        return vm.id, scalar(nic, "IP", ""), {k: v for k, v in vm.user_template if isinstance(v, str)}


def _deploy_by_hand(server: SimServer, name: str) -> tuple[int, str, str]:
    """Download the marketplace appliance `name` and start a VM from it on the default network, as
    an operator would (`onemarketapp export`, `onetemplate instantiate --nic 0`); once its token is
    published: (VM id, address, token)."""
    from tui.procedures.connection import SiteConnection
    from tui.procedures.market.download import download_appliance, plan_download
    from tui.settings import Settings

    async def go() -> int:
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))
        try:
            await site.connect()
            app = next(a for a in await site.cloud.list_marketapps() if a.name == name)
            plan = await plan_download(site, app.id, 1, f"{name} test")
            _, result = await run_procedure(partial(download_appliance, site, plan, poll_interval=0.02))
            template_id = result.template_ids[0]
            return await site.cloud.template_instantiate(template_id, f"{name} VM", extra='NIC = [ NETWORK_ID = "0" ]')
        finally:
            await site.close()

    vm_id = asyncio.run(go())
    wait_until(lambda: bool(_vm(server, name)[2].get(ROUTE_MANAGER_TOKEN_ATTRIBUTE)), timeout=60,
               what="the route manager to publish its token")
    _, address, published = _vm(server, name)
    return vm_id, address, published[ROUTE_MANAGER_TOKEN_ATTRIBUTE]


@pytest.fixture
def deployed(site_factory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[SimServer, Path]:
    # the appliances' steps use nothing that differs between platform versions: one version
    server: SimServer = site_factory(scenario="deployed", one_version=DEFAULT_VERSION)
    point_at(server, monkeypatch, vault_file=False)
    monkeypatch.setenv("SITETK_GUEST_PROXY", server.market_url)
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


def _core(server: SimServer) -> SiteConfig:
    """core.yaml of the site branch, decrypted with the site's vault password."""
    return SiteConfig.parse(observe(server, EXISTING_SITE, SIM_VAULT_PASSWORD).core_yaml, DEFAULT_NAMING)


def _audit(tmp_path: Path) -> list[dict]:
    path = tmp_path / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow  # with the next: about 3 minutes at two workers
def test_appliances_deployed_ready_and_written_only_when_asked(deployed, capsys, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    server, inputs = deployed
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    dns = steps(data)["dns"]
    assert dns["state"] == "optional" and "no DNS Server appliance downloaded; marketplace app" in dns["evidence"][0]
    assert dns["command"].endswith("--only dns") and dns["data"]["app_id"] is not None

    # read-only: the first change (the download) refused by the pipeline, one refused record
    code, _, err = run(capsys, "--read-only", "setup", "run", "--input", str(inputs), "--only", "dns", "--yes")
    assert code == 2 and "read-only" in err.lower()
    assert [r["outcome"] for r in _audit(tmp_path)] == ["refused"]

    # before core.yaml is submitted the appliance is deployed and waited for, then writing it waits
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes", *FAST)
    assert code == 1 and "blocked by submitted" in err, err
    rm_vm, rm_ip, published = _vm(server, ROUTE_MANAGER_APPLIANCE)
    token = published[ROUTE_MANAGER_TOKEN_ATTRIBUTE]
    assert token and "Deploy the route manager appliance" in err
    # the mandatory steps leave the optional ones alone
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST)
    assert code == 0, err
    before = _commits(server)

    # DNS: previewed (the download first), then every round in one run, the zone from site_domain
    code, out, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--dry-run")
    assert code == 0, err
    assert "onemarketapp export" in out and _commits(server) == before
    code, out, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--yes",
                         "--set", "ONEAPP_DNS_FORWARDERS=9.9.9.9", *FAST)
    assert code == 0, err
    dns_vm, dns_ip, dns_template = _vm(server, DNS_APPLIANCE)
    domain = _core(server).get("site_domain")
    assert dns_template["ONEAPP_DNS_DOMAIN"] == domain and dns_template["ONEAPP_DNS_FORWARDERS"] == "9.9.9.9"
    assert dns_template[DNS_TOKEN_ATTRIBUTE] and dns_template["ONEAPP_DNS_PASSWORD"]  # generated by the appliance
    assert "onetemplate instantiate" in out and f"ONEAPP_DNS_DOMAIN={domain} (core.yaml site_domain)" in out
    assert "ONEAPP_DNS_PASSWORD: left empty, the appliance generates it" in out
    assert _core(server).get("site_dns") == f"{dns_ip},8.8.8.8,1.1.1.1"
    assert _commits(server) == before + 1
    assert run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--yes")[0] == 0
    assert _commits(server) == before + 1  # written already: nothing committed again

    # route manager: a token the API refuses (401), then nothing answering: stopped, nothing written
    with server.site.lock:
        route_manager.managers(server.site)[rm_vm].token = "another-token"
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes")
    assert code == 1 and "refused the token (401)" in err and "Invalid or expired token" in err, err
    with server.site.lock:
        route_manager.managers(server.site)[rm_vm].token = token
    monkeypatch.setenv("SITETK_GUEST_PROXY", "http://127.0.0.1:9")  # nothing listens on the discard port
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes")
    assert code == 1 and "did not answer" in err, err
    monkeypatch.setenv("SITETK_GUEST_PROXY", server.market_url)
    assert _commits(server) == before + 1 and _core(server).get("site_routemanager.token") in (None, "")

    code, dry, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--dry-run")
    assert code == 0, err
    assert f"site_routemanager.api_endpoint: null -> '{rm_ip}'" in dry and f"http://{rm_ip}:8172/routes/" in dry
    code, out, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes", "--json")
    assert code == 0, err
    checked = [e for e in out["events"] if e.get("step", "").endswith("check the API") and e.get("state") == "done"]
    assert checked and checked[0]["data"]["url"] == f"http://{rm_ip}:8172/routes/", out["events"]
    config = _core(server)
    assert config.get("site_routemanager.api_endpoint") == rm_ip and config.get("site_routemanager.token") == token
    assert _commits(server) == before + 2
    assert run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes")[0] == 0
    assert _commits(server) == before + 2
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert steps(data)["route-manager"]["state"] == "done" and steps(data)["dns"]["state"] == "done"
    assert f"its API: http://{rm_ip}:8172/routes/ answered core.yaml's token" in steps(data)["route-manager"]["evidence"][-1]
    # the status asks the API with core.yaml's token every time: refused, the step is failed with the fix
    with server.site.lock:
        route_manager.managers(server.site)[rm_vm].token = "rotated-on-the-vm"
    code, refused, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    failed = steps(refused)["route-manager"]
    assert failed["state"] == "failed" and "refused the token (401)" in failed["evidence"][-1]
    assert "does not take core.yaml's site_routemanager.token" in failed["action"]
    with server.site.lock:
        route_manager.managers(server.site)[rm_vm].token = token
    data["refused"] = refused

    records = _audit(tmp_path)
    deployed_vms = [r for r in records if r["action"] == "appliance.instantiate" and r["outcome"] == "ok"]
    assert sorted(r["details"]["vm_id"] for r in deployed_vms) == sorted([rm_vm, dns_vm])
    assert {r["details"]["appliance"] for r in deployed_vms} == {DNS_APPLIANCE, ROUTE_MANAGER_APPLIANCE}
    shown = dry + json.dumps(out) + err + json.dumps(data) + (tmp_path / "audit.jsonl").read_text()
    assert token not in shown and dns_template["ONEAPP_DNS_PASSWORD"] not in shown
    raw = subprocess.run(["git", "-C", str(server.site.sites_repo), "show", f"{EXISTING_SITE}:{EXISTING_SITE}/core.yaml"],
                         capture_output=True, text=True, check=True).stdout
    assert raw.startswith("$ANSIBLE_VAULT") and token not in raw


@pytest.mark.slow  # see above
def test_appliance_missing_from_the_marketplaces_and_a_vm_that_fails(deployed, capsys, tmp_path: Path) -> None:
    server, inputs = deployed
    with server.site.lock:  # gone from the marketplaces (their monitoring brings nothing back) and the cloud
        for prefix, records in server.site.market_records.items():
            server.site.market_records[prefix] = [r for r in records if r.get("name") != DNS_APPLIANCE]
        for app_id in [a.id for a in server.site.marketapps.values() if a.name == DNS_APPLIANCE]:
            del server.site.marketapps[app_id]
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert "no marketplace the cloud holds lists 'DNS Server' or 'Technitium DNS'" in steps(data)["dns"]["evidence"][0]
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--yes")
    assert code == 1 and "No marketplace the cloud holds lists the DNS appliance" in err and "onemarket create" in err

    server.site.faults.fail_appliance = ROUTE_MANAGER_APPLIANCE
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes", *FAST)
    assert code == 1 and "BOOT_FAILURE" in err and "onevm recover --delete" in err, err
    failed = [r for r in _audit(tmp_path) if r["action"] == "appliance.instantiate"]
    assert [r["outcome"] for r in failed] == ["failed"] and failed[0]["details"]["vm_id"] is not None
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert steps(data)["route-manager"]["state"] == "failed"
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes")
    assert code == 1 and "failed" in err and len([r for r in _audit(tmp_path) if r["action"] == "appliance.instantiate"]) == 1


def test_route_manager_api_over_http(site_factory) -> None:
    """The embedded route manager answers as route-manager-api v0.2.0 does, over real HTTP on loopback."""
    import httpx

    server: SimServer = site_factory(scenario="fresh", one_version=DEFAULT_VERSION)
    vm_id, address, token = _deploy_by_hand(server, ROUTE_MANAGER_APPLIANCE)
    listing = asyncio.run(list_routes(address, token, proxy=server.market_url))
    assert listing.database_routes == () and any(r.startswith("default via") for r in listing.system_routes)
    with pytest.raises(RouteManagerRefused) as refused:
        asyncio.run(list_routes(address, "wrong", proxy=server.market_url))
    assert refused.value.status == 401 and "wrong" not in refused.value.detail
    with pytest.raises(RouteManagerUnreachable):
        asyncio.run(list_routes("10.99.0.1", token, proxy=server.market_url))
    url = f"http://{address}:8172/routes/"
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(proxy=server.market_url) as client:
        assert client.get(url).status_code == 403  # no bearer credentials
        assert client.get(url[:-1], headers=auth).status_code == 307
        assert client.put(url, headers=auth, json={"to": "10.10.2.10/32", "via": "10.0.0.1"}).status_code == 201
        assert client.put(url, headers=auth, json={"to": "10.10.2.10/32", "via": "10.0.0.1"}).status_code == 200
        assert client.put(url, headers=auth, json={"to": "10.10.3.0/24"}).status_code == 422  # neither via nor dev
        later = {"to": "10.10.4.0/24", "dev": "eth0", "create_at": "2999-01-01T00:00:00+00:00"}
        assert client.put(url, headers=auth, json=later).status_code == 201
        body = client.get(url, headers=auth).json()
        assert {r["to"]: r["status"] for r in body["database_routes"]} == {"10.10.2.10/32": "active",
                                                                            "10.10.4.0/24": "pending"}
        assert "10.10.2.10/32 via 10.0.0.1" in body["system_routes"]
        assert client.request("DELETE", url, headers=auth, json={"to": "10.10.2.10"}).status_code == 200
        assert client.request("DELETE", url, headers=auth, json={"to": "10.10.2.10"}).status_code == 404
        deleted = client.get(url + "deleted", headers=auth).json()["deleted_routes"]
        assert [(d["to"], d["status"]) for d in deleted] == [("10.10.2.10/32", "deleted")]
    with server.site.lock:  # the VM powered off: nothing answers at its address
        server.site.vms[vm_id].lcm_state = 0
        server.site.vms[vm_id].state = 8
    with pytest.raises(RouteManagerUnreachable):
        asyncio.run(list_routes(address, token, proxy=server.market_url))


def test_fresh_site_setup_run_then_dns_and_route_manager(site_factory, monkeypatch: pytest.MonkeyPatch,
                                                         capsys, tmp_path: Path) -> None:
    """Issue 21's done-when from a fresh embedded site: the whole `setup run` leaves disk0 at 30 GB;
    `--only dns` and `--only route-manager` then leave each appliance's VM RUNNING in the cloud, its
    token published, and core.yaml (read decrypted) naming its address (and the route manager's token)."""
    from tests.setup.inputs import BRANCH, SITE_SETS

    server: SimServer = site_factory(scenario="fresh", one_version=DEFAULT_VERSION)
    point_at(server, monkeypatch, vault_file=False)
    monkeypatch.setenv("SITETK_GUEST_PROXY", server.market_url)
    inputs = tmp_path / "inputs.json"
    password = write_inputs(inputs)[TOKEN]
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--yes", *FAST, *SITE_SETS)
    assert code == 0 and "every mandatory step is done" in err, err
    seen = observe(server, BRANCH, password)
    assert seen.objectstore_disk_mb == 30 * 1024
    commits = seen.branch_commits
    config = SiteConfig.parse(seen.core_yaml, DEFAULT_NAMING)
    assert config.get("site_routemanager.token") in (None, "")

    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "dns", "--yes", *FAST)
    assert code == 0, err
    dns_vm, dns_ip, dns_template = _vm(server, DNS_APPLIANCE)
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "route-manager", "--yes", *FAST)
    assert code == 0, err
    rm_vm, rm_ip, rm_template = _vm(server, ROUTE_MANAGER_APPLIANCE)
    with server.site.lock:
        assert [(server.site.vms[v].state, server.site.vms[v].lcm_state) for v in (dns_vm, rm_vm)] == [(3, 3), (3, 3)]
    assert dns_template[DNS_TOKEN_ATTRIBUTE] and rm_template[ROUTE_MANAGER_TOKEN_ATTRIBUTE]

    seen = observe(server, BRANCH, password)
    assert seen.branch_commits == commits + 2 and seen.objectstore_disk_mb == 30 * 1024
    config = SiteConfig.parse(seen.core_yaml, DEFAULT_NAMING)
    assert config.get("site_dns").split(",")[0] == dns_ip
    assert config.get("site_routemanager.api_endpoint") == rm_ip
    assert config.get("site_routemanager.token") == rm_template[ROUTE_MANAGER_TOKEN_ATTRIBUTE]
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert code == 0 and {steps(data)[s]["state"] for s in ("dns", "route-manager", "objectstore-disk")} == {"done"}
