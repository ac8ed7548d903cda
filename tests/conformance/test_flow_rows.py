"""Conformance rows of OneFlow and multi-VM service templates, on every emulated platform version.

Each test names the upstream file (OpenNebula/one, release-7.4.0 unless it says otherwise; 6.10
and 7.0 read at release-6.10.5 / release-7.0.2) whose behaviour it checks against the embedded
site, and through it the console's own use of OneFlow. Tests taking `one_version` run once per
emulated platform version (tests/conftest.py). The rows are those of
/work/shared/reference/upstream-behaviour.md ("Multi-VM service templates", "OneFlow HTTP") and
the further behaviours read in the same files.

The pre-7.0 conversion is ported here on its own (`platform_roles`), from
src/oca/ruby/opennebula/flow/service_template.rb (`old_format?` lines 799-803, `convert_template`
lines 809-842, `validate` lines 531-551), so that the console's exported body is checked against
the platform's rules and not against the embedded site's copy of them.
"""

from __future__ import annotations

import base64
import json
import xmlrpc.client
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable
from xml.etree import ElementTree

import httpx
import pytest

from tests.conftest import SimFactory
from tests.procedure_run import collect
from tests.waiting import wait_until
from tui.adapters.flow_errors import flow_http_error
from tui.domain.one_states import ROLE_STATES, SERVICE_STATES
from tui.domain.services import can_delete, delete_command, service_state_note
from tui.errors import SiteError
from tui.procedures.audit import AUDIT_ENV
from tui.procedures.connection import SiteConnection
from tui.procedures.market.download import download_appliance, plan_download
from tui.settings import Settings
from tui.sim.flow_engine import role_nodes
from tui.sim.server import SimServer

IMAGE_DS = 1
POLL = 0.02


def _seven(version: str) -> bool:
    return int(version.split(".")[0]) >= 7


# -- the platform's rules, ported for the tests ---------------------------------------------------
def platform_roles(body: dict[str, Any], version: str) -> dict[str, int | None]:
    """Role name -> the VM template id the platform deploys it from, or None when the platform's
    validation refuses the body (6.10 ROLE_SCHEMA: `vm_template` integer required).

    7.x: `old_format?` is true when every role has vm_template or vm_template_contents; then
    `template_id = role['vm_template'].to_i` (nil.to_i is 0) whatever template_id said."""
    roles = body["roles"]
    if not _seven(version):
        return {r["name"]: (int(r["vm_template"]) if "vm_template" in r else None) for r in roles}
    old = all("vm_template" in r or "vm_template_contents" in r for r in roles)
    if old:
        return {r["name"]: int(r.get("vm_template") or 0) for r in roles}
    return {r["name"]: int(r["template_id"]) if "template_id" in r else None for r in roles}


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AUDIT_ENV, str(tmp_path / "audit" / "audit.log"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SITETK_CONFIG", raising=False)


Connect = Callable[[SimServer], Awaitable[SiteConnection]]


@pytest.fixture
async def connect(tmp_path: Path) -> AsyncIterator[Connect]:
    opened: list[SiteConnection] = []

    async def factory(server: SimServer) -> SiteConnection:
        base = Settings(state_dir=tmp_path / "state", audit_log=tmp_path / "audit" / "audit.log")
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url, (), base=base))
        opened.append(site)
        await site.connect()
        return site

    yield factory
    for site in opened:
        await site.close()


def _client(sim: SimServer, user: str | None = None, password: str | None = None) -> httpx.Client:
    admin = sim.site.users[0]
    return httpx.Client(base_url=sim.flow_url, auth=(user or admin.name, admin.password if password is None else password),
                        timeout=10.0)


def _toolkit_app(sim: SimServer) -> int:
    with sim.site.lock:  # the cloud keeps one app per name (src/market/MarketPlaceAppPool.cc 211-223)
        found = [a.id for a in sim.site.marketapps.values() if a.record_id == "service_toolkit"]
    assert found, f"the {sim.site.config.one_version} cloud has not imported the toolkit app"
    return found[0]


def _simple_body(template_id: int, *, old: bool) -> dict[str, Any]:
    """A one-role template: `old` gives the pre-7.0 shape a public record has plus `vm_template`."""
    role: dict[str, Any] = {"name": "front", "cardinality": 1}
    if old:
        role.update(vm_template=template_id, vm_template_contents='NIC = [ NAME = "NIC0", NETWORK_ID = "$Public" ]')
    else:
        role.update(type="vm", template_id=template_id, template_contents={"NIC": [{"NAME": "NIC0",
                                                                                   "NETWORK_ID": "$Public"}]})
    return {"name": "simple", "networks": {"Public": "M|network|Public||id:"}, "roles": [role]}


def _vnet(sim: SimServer) -> int:
    with sim.site.lock:
        return min(v.id for v in sim.site.vnets.values())


def _instantiate(client: httpx.Client, template_id: int, merge: dict[str, Any]) -> httpx.Response:
    return client.post(f"/service_template/{template_id}/action",
                       json={"action": {"perform": "instantiate", "params": {"merge_template": merge}}})


def _role_vm_templates(sim: SimServer, service_id: int) -> dict[str, set[int]]:
    """Role -> the TEMPLATE_ID of its VMs, read over the wire (each request moves the site on)."""
    with _client(sim) as client:
        body = client.get(f"/service/{service_id}").json()["DOCUMENT"]["TEMPLATE"]["BODY"]
    proxy = xmlrpc.client.ServerProxy(sim.xmlrpc_url)
    out: dict[str, set[int]] = {}
    for role in body["roles"]:
        ids = [int(node["deploy_id"]) for node in role.get("nodes", [])]
        out[role["name"]] = {int(ElementTree.fromstring(proxy.one.vm.info(sim.session, i)[1]).findtext("TEMPLATE/TEMPLATE_ID",
                                                                                                       "-1"))
                             for i in ids}
    return out


# -- multi-VM service templates -------------------------------------------------------------------
def test_service_app_keeps_the_public_records_body(sim_factory: SimFactory, one_version: str) -> None:
    """src/market_mad/remotes/one/monitor `render_service_template` (lines 145-165): APPTEMPLATE64
    is the record's `opennebula_template` string as it is; public service records
    (OpenNebula/marketplace appliances/service/*.yaml) give roles `vm_template_contents` and none
    of `type`, `template_id`, `vm_template`."""
    sim = sim_factory(one_version=one_version)
    app_id = _toolkit_app(sim)
    with sim.site.lock:
        app = sim.site.marketapps[app_id]
        record = next(r for r in sim.site.market_records[""] if r["_id"]["$oid"] == "service_toolkit")
    assert base64.b64decode(app.apptemplate64).decode() == record["opennebula_template"]
    for role in json.loads(record["opennebula_template"])["roles"]:
        assert isinstance(role["vm_template_contents"], str)
        assert not {"type", "template_id", "vm_template"} & set(role)


async def test_exported_toolkit_deploys_each_role_from_its_own_template(
        sim_factory: SimFactory, connect: Connect, one_version: str) -> None:
    """src/oca/ruby/opennebula/marketplaceapp_ext.rb `create_service_template` (lines 346-382):
    each role gets `vm_template` = its exported VM template, and the body goes through
    `ServiceTemplate#allocate`, whose validation (service_template.rb 531-551, 799-842) converts
    it on 7.x (src/oca/ruby/opennebula/flow/service_template.rb). Read by the platform's rules (ported above), the console's body deploys every role
    from the template exported for it; the embedded site stores and deploys the same."""
    sim = sim_factory(one_version=one_version)
    site = await connect(sim)
    plan = await plan_download(site, _toolkit_app(sim), IMAGE_DS, "TK")
    events = await collect(partial(download_appliance, site, plan, poll_interval=POLL, attach=False))
    result = events[-1].data["download"]
    exported = {role: tid for template, tid in zip(plan.templates, result["template_ids"], strict=True) for role in template.roles}
    sent = plan.service.document_body(result["template_ids"])  # type: ignore[union-attr]
    assert platform_roles(sent, one_version) == exported
    assert all("template_id" not in role for role in sent["roles"])

    with _client(sim) as client:
        stored = client.get(f"/service_template/{result['service_template_id']}").json()["DOCUMENT"]["TEMPLATE"]["BODY"]
        key = "template_id" if _seven(one_version) else "vm_template"
        assert {r["name"]: r[key] for r in stored["roles"]} == exported
        inputs = stored.get("user_inputs" if _seven(one_version) else "custom_attrs")
        values_key = "user_inputs_values" if _seven(one_version) else "custom_attrs_values"
        response = _instantiate(client, result["service_template_id"], {
            "name": "tk", values_key: {name: "x" for name in inputs},
            "networks_values": [{"Public": {"id": str(_vnet(sim))}}]})
        assert response.status_code == 201, response.text
    service_id = int(response.json()["DOCUMENT"]["ID"])
    first = {role for role, parents in ((r["name"], r.get("parents")) for r in stored["roles"]) if not parents}
    deployed = wait_until(lambda: (lambda seen: seen if all(seen[r] for r in first) else None)(
        _role_vm_templates(sim, service_id)), timeout=30, what="the first roles' VMs")
    for role in first:
        assert deployed[role] == {exported[role]}


def test_the_old_console_body_fails_on_the_embedded_site(sim_factory: SimFactory, one_version: str) -> None:
    """src/oca/ruby/opennebula/flow/service_template.rb `old_format?` / `convert_template` (7.x
    lines 799-842): a body whose
    roles carry `template_id` beside `vm_template_contents` is old format, so 7.x deploys VM
    template `nil.to_i` = 0; 6.10's ROLE_SCHEMA refuses it ("KEY: 'vm_template' is required;")."""
    sim = sim_factory(one_version=one_version)
    proxy = xmlrpc.client.ServerProxy(sim.xmlrpc_url)
    intended = proxy.one.template.allocate(sim.session, 'NAME = "exported"\nCPU = "1"\nMEMORY = "256"')[1]
    assert intended != 0
    body = _simple_body(intended, old=True)
    role = body["roles"][0]
    role["template_id"] = role.pop("vm_template")  # what the console used to write
    answer = proxy.one.document.allocate(sim.session, f"BODY = {json.dumps(json.dumps(body))}\nNAME = \"old\"", 101)
    assert answer[0] is True, answer
    with _client(sim) as client:
        created = client.post("/service_template", json=body)
        response = _instantiate(client, answer[1], {"name": "old", "networks_values": [{"Public": {"id": str(_vnet(sim))}}]})
        if not _seven(one_version):
            assert (created.status_code, created.text) == (400, "KEY: 'vm_template' is required;")
            assert (response.status_code, response.text) == (500, "KEY: 'vm_template' is required;")
            return
        assert created.status_code == 201
        assert created.json()["DOCUMENT"]["TEMPLATE"]["BODY"]["roles"][0]["template_id"] == 0
        assert response.status_code == 201, response.text
    service_id = int(response.json()["DOCUMENT"]["ID"])
    deployed = wait_until(lambda: _role_vm_templates(sim, service_id)["front"] or None, timeout=30,
                          what="the role's VM")
    assert deployed == {0} and intended not in deployed


def test_allocate_validates_and_converts(sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/oneflow-server.rb `post '/service_template'` (lines 691-712) with
    service_template.rb `allocate` / `validate` and validator.rb: the stored body is the
    converted one on 7.x (type vm, template_id, template_contents object, custom_attrs ->
    user_inputs), the old one on 6.10; schema errors answer 400 with the validator's text."""
    sim = sim_factory(one_version=one_version)
    body = _simple_body(3, old=True)
    body["custom_attrs"] = {"word": "M|text|A word"}
    with _client(sim) as client:
        stored = client.post("/service_template", json=body).json()["DOCUMENT"]["TEMPLATE"]["BODY"]
        missing = client.post("/service_template", json={"name": "x", "roles": [{"name": "r"}]})
        bad_name = client.post("/service_template", json={"name": "x", "roles": [{"name": "a b", "vm_template": 1}]})
        not_json = client.post("/service_template", content=b"{nope")
    role = stored["roles"][0]
    assert isinstance(stored["registration_time"], int) and role["cardinality"] == 1
    if _seven(one_version):
        assert (role["type"], role["template_id"]) == ("vm", 3) and "vm_template" not in role
        assert role["template_contents"] == {"NIC": [{"NAME": "NIC0", "NETWORK_ID": "$Public"}]}
        assert stored["user_inputs"] == {"word": "M|text|A word"} and "custom_attrs" not in stored
        assert missing.status_code == 400 and missing.text.startswith("Mandatory document key 'type (string)' is missing from")
    else:
        assert role["vm_template"] == 3 and "template_id" not in role and "custom_attrs" in stored
        assert (missing.status_code, missing.text) == (400, "KEY: 'vm_template' is required;")
    assert (bad_name.status_code, bad_name.text) == (400, "KEY: 'name' must match regexp /^\\w+$/;")
    assert not_json.status_code == 400


# -- OneFlow HTTP ---------------------------------------------------------------------------------
def test_credentials_refused_by_the_before_filter(sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/oneflow-server.rb before filter (lines 173-183): 401 "A username and password must
    be provided" without Basic auth, 401 "Invalid credentials" when they are wrong; the console
    reads both as refused credentials."""
    sim = sim_factory(one_version=one_version)
    bare = httpx.get(f"{sim.flow_url}/service")
    with _client(sim, password="wrong") as client:
        wrong = client.get("/service")
    assert (bare.status_code, bare.text) == (401, "A username and password must be provided")
    assert (wrong.status_code, wrong.text) == (401, "Invalid credentials")
    for response in (bare, wrong):
        error = flow_http_error("GET", "/service", response.status_code, response.text)
        assert error.title == "OneFlow rejected the credentials" and not error.retryable


def test_authorization_is_401_and_read_as_not_allowed(sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/oneflow-server.rb `one_error_to_http` (lines 212-225): EAUTHORIZATION (0x0200,
    src/oca/ruby/opennebula/error.rb) -> 401 with the core's message; the console tells it from
    refused credentials by the body."""
    sim = sim_factory(one_version=one_version)
    with _client(sim) as admin:
        template_id = int(admin.post("/service_template", json=_simple_body(0, old=not _seven(one_version)))
                          .json()["DOCUMENT"]["ID"])
    user = sim.site.users[2]
    with _client(sim, user.name, user.password) as client:
        response = client.get(f"/service_template/{template_id}")
    assert response.status_code == 401
    assert response.text == f"[one.document.info] User [{user.id}] : Not authorized to perform USE DOCUMENT [{template_id}]."
    error = flow_http_error("GET", "/x", 401, response.text)
    assert error.title == "Not allowed by the cloud" and not error.retryable


def test_authentication_is_403() -> None:
    """src/flow/oneflow-server.rb `one_error_to_http` (lines 212-225): EAUTHENTICATION (0x0100)
    -> 403, the core refusing the session OneFlow opened for the user; the console does not read
    it as "not allowed"."""
    error = flow_http_error("GET", "/service", 403, "[one.documentpool.info] User couldn't be authenticated, aborting call.")
    assert error.title == "The cloud refused OneFlow's session" and error.code == 403 and not error.retryable


def test_no_exists_is_404_and_another_document_type_500(sim_factory: SimFactory, one_version: str) -> None:
    """src/oca/ruby/opennebula/document.rb `info` (lines 92-100): a document of another type is
    "[DocumentInfo] Error getting document [N]." with the default errno 0x1111, which
    `one_error_to_http` (oneflow-server.rb 212-225) makes 500; a missing one is NO_EXISTS, 404."""
    sim = sim_factory(one_version=one_version)
    with _client(sim) as client:
        template_id = int(client.post("/service_template", json=_simple_body(0, old=not _seven(one_version)))
                          .json()["DOCUMENT"]["ID"])
        other = client.get(f"/service/{template_id}")
        missing = client.get("/service/4242")
    assert (other.status_code, other.text) == (500, f"[DocumentInfo] Error getting document [{template_id}].")
    assert missing.status_code == 404 and "4242" in missing.text
    error = flow_http_error("GET", "/service/x", 500, other.text)
    assert not error.retryable


def test_bad_instantiate_bodies_are_400(sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/oneflow-server.rb instantiate (7.x lines 738-842, `check_user_inptus`; 6.10
    `check_custom_attrs`): missing input values and networks answer 400 (VALIDATION_EC) with the
    version's text; 7.x renames `custom_attrs_values` to `user_inputs_values` on the way in."""
    sim = sim_factory(one_version=one_version)
    seven = _seven(one_version)
    body = _simple_body(0, old=not seven)
    body["user_inputs" if seven else "custom_attrs"] = {"word": "M|text|A word"}
    net = [{"Public": {"id": str(_vnet(sim))}}]
    with _client(sim) as client:
        template_id = int(client.post("/service_template", json=body).json()["DOCUMENT"]["ID"])
        partial = _instantiate(client, template_id, {"name": "s", "networks_values": net,
                                                     ("user_inputs_values" if seven else "custom_attrs_values"): {}})
        no_net = _instantiate(client, template_id, {"name": "s", "networks_values": [{"Other": {"id": "0"}}],
                                                    "custom_attrs_values": {"word": "w"}})
        renamed = _instantiate(client, template_id, {"name": "s", "networks_values": net,
                                                     "custom_attrs_values": {"word": "w"}})
    message = ("Verify that every User Input have its corresponding value defined" if seven
               else "Verify that every custom attribute have its corresponding value defined")
    assert (partial.status_code, partial.text) == (400, message)
    assert (no_net.status_code, no_net.text) == (400, "Every network key must have its value defined at networks_value")
    assert renamed.status_code == 201, renamed.text
    values = renamed.json()["DOCUMENT"]["TEMPLATE"]["BODY"]
    assert ("user_inputs_values" in values) is seven and ("custom_attrs_values" in values) is not seven


def test_a_service_passes_deploying_nets(sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/lib/LifeCycleManager.rb `deploy_nets_action` (lines 342-372; 6.10 the same): the
    instantiate answer is the service as allocated (PENDING, src/flow/lib/models/service.rb
    `allocate`), then it is DEPLOYING_NETS (11) until its networks are ready, then DEPLOYING."""
    sim = sim_factory(one_version=one_version, time_scale=1000.0)  # no event runs unless stepped
    with _client(sim) as client:
        template_id = int(client.post("/service_template", json=_simple_body(0, old=not _seven(one_version)))
                          .json()["DOCUMENT"]["ID"])
        created = _instantiate(client, template_id, {"name": "s", "networks_values": [{"Public": {"id": str(_vnet(sim))}}]})
        assert created.json()["DOCUMENT"]["TEMPLATE"]["BODY"]["state"] == 0
        service_id = created.json()["DOCUMENT"]["ID"]
        assert client.get(f"/service/{service_id}").json()["DOCUMENT"]["TEMPLATE"]["BODY"]["state"] == 11
        with sim.site.lock:
            assert sim.site.run_next_event()
        body = client.get(f"/service/{service_id}").json()["DOCUMENT"]["TEMPLATE"]["BODY"]
    assert body["state"] == 1
    assert [e["message"] for e in body["log"]][:2] == ["New state: DEPLOYING_NETS", "New state: DEPLOYING"]
    assert service_state_note(11) and SERVICE_STATES[11] == "DEPLOYING_NETS"


def test_delete_of_a_failed_or_transient_service_is_refused_and_recover_delete_removes_it(
        sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/lib/LifeCycleManager.rb `undeploy_action` (lines 467-509) with
    src/flow/lib/models/service.rb `can_undeploy?` (lines 170-179): DELETE of a transient
    (DEPLOYING_NETS) or failed service answers 500 "Service cannot be undeployed in state: X";
    `recover` with `params.delete` (src/cli/oneflow `recover --delete`, lines 202-219;
    `recover_action` lines 599-648) undeploys it anyway. The console offers that command."""
    sim = sim_factory(one_version=one_version, time_scale=1000.0)
    with _client(sim) as client:
        template_id = int(client.post("/service_template", json=_simple_body(999, old=not _seven(one_version)))
                          .json()["DOCUMENT"]["ID"])
        service_id = _instantiate(client, template_id,
                                  {"name": "s", "networks_values": [{"Public": {"id": str(_vnet(sim))}}]}).json()["DOCUMENT"]["ID"]
        transient = client.delete(f"/service/{service_id}")
        assert (transient.status_code, transient.text) == (500, "Service cannot be undeployed in state: DEPLOYING_NETS")
        with sim.site.lock:
            sim.site.run_next_event()  # networks ready: the role fails on the missing VM template 999
        state = client.get(f"/service/{service_id}").json()["DOCUMENT"]["TEMPLATE"]["BODY"]["state"]
        assert SERVICE_STATES[state] == "FAILED_DEPLOYING"
        failed = client.delete(f"/service/{service_id}")
        assert (failed.status_code, failed.text) == (500, "Service cannot be undeployed in state: FAILED_DEPLOYING")
        error = flow_http_error("DELETE", f"/service/{service_id}", failed.status_code, failed.text)
        assert not error.retryable and "oneflow recover --delete" in error.detail
        assert not can_delete(state) and delete_command(int(service_id), state) == f"oneflow recover --delete {service_id}"
        recovered = client.post(f"/service/{service_id}/action",
                                json={"action": {"perform": "recover", "params": {"delete": True}}})
        assert recovered.status_code == 204
        assert client.get(f"/service/{service_id}").status_code == 404


def test_other_refusals_are_500(sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/oneflow-server.rb service actions (lines 370-439) and LifeCycleManager.rb
    `recover_action` (lines 636-640): an unknown action is "Action x not supported", a recover in
    a state without recovery "Service cannot be recovered in state: X"; both plain Errors, so 500
    (405, OPERATION_EC, is never sent); the console does not retry them."""
    sim = sim_factory(one_version=one_version, time_scale=1000.0)
    with _client(sim) as client:
        template_id = int(client.post("/service_template", json=_simple_body(0, old=not _seven(one_version)))
                          .json()["DOCUMENT"]["ID"])
        service_id = _instantiate(client, template_id,
                                  {"name": "s", "networks_values": [{"Public": {"id": str(_vnet(sim))}}]}).json()["DOCUMENT"]["ID"]
        unknown = client.post(f"/service/{service_id}/action", json={"action": {"perform": "explode"}})
        with sim.site.lock:
            sim.site.documents[int(service_id)].body["state"] = 2  # RUNNING
        recover = client.post(f"/service/{service_id}/action", json={"action": {"perform": "recover"}})
    assert (unknown.status_code, unknown.text) == (500, "Action explode not supported")
    assert (recover.status_code, recover.text) == (500, "Service cannot be recovered in state: RUNNING")
    for response in (unknown, recover):
        assert not flow_http_error("POST", "/x", 500, response.text).retryable
    assert flow_http_error("GET", "/x", 500, "[one.documentpool.info] Internal error").retryable


def test_service_and_role_states() -> None:
    """src/flow/lib/models/service.rb `STATE` (lines 26-43) and src/flow/lib/models/role.rb
    `STATE` (lines 35-48): numbers and names as the console reads them."""
    service = ["PENDING", "DEPLOYING", "RUNNING", "UNDEPLOYING", "WARNING", "DONE", "FAILED_UNDEPLOYING",
               "FAILED_DEPLOYING", "SCALING", "FAILED_SCALING", "COOLDOWN", "DEPLOYING_NETS", "UNDEPLOYING_NETS",
               "FAILED_DEPLOYING_NETS", "FAILED_UNDEPLOYING_NETS", "HOLD"]
    role = service[:11] + ["HOLD"]
    assert SERVICE_STATES == dict(enumerate(service)) and ROLE_STATES == dict(enumerate(role))
    # can_undeploy?: transient states other than UNDEPLOYING, DONE and failed states refuse DELETE
    assert [n for n in SERVICE_STATES if can_delete(n)] == [0, 2, 3, 4, 15]


def _sched_actions(sim: SimServer, service_id: int) -> list[dict[str, str]]:
    """Each VM's scheduled action (VM/TEMPLATE/SCHED_ACTION over XML-RPC), in the role's node order."""
    proxy = xmlrpc.client.ServerProxy(sim.xmlrpc_url)
    with sim.site.lock:
        ids = [int(n["deploy_id"]) for n in sim.site.documents[service_id].body["roles"][0]["nodes"]]
    found = []
    for vm_id in ids:
        vm = ElementTree.fromstring(proxy.one.vm.info(sim.session, vm_id)[1])
        action = vm.find("TEMPLATE/SCHED_ACTION")
        assert action is not None, f"VM {vm_id} has no SCHED_ACTION"
        assert [e.text for e in vm.findall("SCHED_ACTIONS/ID")] == [action.findtext("ID")]
        found.append({child.tag: child.text or "" for child in action} | {"VM": str(vm_id)})
    return found


def _role_of_three(client: httpx.Client, sim: SimServer, version: str) -> int:
    body = _simple_body(0, old=not _seven(version))
    body["roles"][0]["cardinality"] = 3
    template_id = int(client.post("/service_template", json=body).json()["DOCUMENT"]["ID"])
    service_id = int(_instantiate(client, template_id, {"name": "s", "networks_values": [
        {"Public": {"id": str(_vnet(sim))}}]}).json()["DOCUMENT"]["ID"])
    wait_until(lambda: client.get(f"/service/{service_id}").json()["DOCUMENT"]["TEMPLATE"]["BODY"]["state"] == 2,
               timeout=60, what="the service to run")
    return service_id


def test_role_vm_actions_are_staggered(sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/oneflow-server.rb (release-7.4.0 lines 117-118 and 512-514: period 60 and number 1
    when not given) and `batch_action` (release-7.4.0/7.0.2 src/flow/lib/models/vmrole.rb lines
    128-183, 6.10.5 src/flow/lib/models/role.rb lines 646-701): a role VM action becomes a
    SCHED_ACTION on each VM at now + (index / number) * period; the scheduler runs each when due."""
    sim = sim_factory(one_version=one_version)
    with _client(sim) as client:
        service_id = _role_of_three(client, sim, one_version)
        assert client.post(f"/service/{service_id}/role/front/action",
                           json={"action": {"perform": "poweroff", "params": {}}}).status_code == 204
        defaults = _sched_actions(sim, service_id)
        times = [int(a["TIME"]) for a in defaults]
        assert [t - times[0] for t in times] == [0, 60, 120]
        assert {a["ACTION"] for a in defaults} == {"poweroff"} and all(a["PARENT_ID"] == a["VM"] for a in defaults)
        # the scheduler runs each when its time comes: every VM powered off, DONE written
        wait_until(lambda: all(a["DONE"] != "-1" for a in _sched_actions(sim, service_id)), timeout=60,
                   what="the scheduled poweroffs to run")
        proxy = xmlrpc.client.ServerProxy(sim.xmlrpc_url)

        def powered_off() -> bool:
            states = [ElementTree.fromstring(proxy.one.vm.info(sim.session, int(a["VM"]))[1]).findtext("STATE")
                      for a in defaults]
            return states == ["8"] * len(defaults)  # POWEROFF

        wait_until(powered_off, timeout=60, what="the role's VMs in POWEROFF")
        done = [int(a["DONE"]) for a in _sched_actions(sim, service_id)]
        assert done == sorted(done)


def test_role_vm_actions_take_period_and_number(sim_factory: SimFactory, one_version: str) -> None:
    """src/flow/lib/models/vmrole.rb `batch_action` (lines 140-156): `number` VMs per `period`, ARGS
    passed on; a period or number of 0 puts every VM at now."""
    sim = sim_factory(one_version=one_version)
    with _client(sim) as client:
        service_id = _role_of_three(client, sim, one_version)
        url = f"/service/{service_id}/role/front/action"
        assert client.post(url, json={"action": {"perform": "hold", "params": {"period": 3000, "number": 2,
                                                                                "args": "x"}}}).status_code == 204
        first = _sched_actions(sim, service_id)
        times = [int(a["TIME"]) for a in first]
        assert [t - times[0] for t in times] == [0, 0, 3000] and {a["ARGS"] for a in first} == {"x"}
        with sim.site.lock:
            for vm in role_nodes(sim.site, sim.site.documents[service_id]):
                vm.template = [(k, v) for k, v in vm.template if k != "SCHED_ACTION"]
        assert client.post(url, json={"action": {"perform": "hold", "params": {"period": 0}}}).status_code == 204
        assert len({a["TIME"] for a in _sched_actions(sim, service_id)}) == 1


def test_the_console_offers_recover_delete_where_it_offers_deletion() -> None:
    """src/flow/lib/models/service.rb `can_undeploy?` (lines 170-179): the removal command the
    console names for a failed service is `oneflow recover --delete`, `oneflow delete` otherwise."""
    assert delete_command(7, 7) == "oneflow recover --delete 7"
    assert delete_command(7, 11) == "oneflow recover --delete 7"
    assert delete_command(7, 2) == "oneflow delete 7"
    with pytest.raises(SiteError):
        raise flow_http_error("DELETE", "/service/7", 500, "Service cannot be undeployed in state: FAILED_DEPLOYING")
