"""The console's flows, run as an operator runs them (`sitetk` processes), against a real frontend.

In order, each building on the one before (the module is one scenario; run it whole):
the host verdicts are the embedded site's for the same hosts; `market list` shows what the real
`one` driver imported; `market download` of the toolkit makes what OneFlow and oned hold, and a
second run reuses it; `toolkit deploy --wait` follows the real OneFlow to RUNNING (the hosts that
cannot run the document database disabled first, as tests/toolkit does on the embedded site);
`toolkit key` captures the automation VM's key and `--grant` gives it to the cloud user; a
database VM migrated by hand onto a host without AVX makes `hosts check` exit 3, `hosts move`
puts it on a compatible host and `hosts check` exits 0 again; `setup run` with the same input
file completes the guided setup and `setup status` exits 0; `site enable` offers a component.

What stands in for the guests is the harness's guest agent (realsite.agent): READY=YES, the
automation key, DB_ERROR on a host without AVX.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from realsite.rpc import text
from tests.real.conftest import RealSite
from tests.setup.inputs import SITE_SETS, input_values
from tests.waiting import wait_until
from tui.domain.naming import DEFAULT_NAMING
from tui.sim.platform import EMULATED_VERSIONS

pytestmark = pytest.mark.timeout(1800)

BRANCH = f"real-site-{int(time.time())}"
#: the host the database VM is moved onto by hand (no AVX: tui/sim/scenarios.py)
NO_AVX_HOST = "kvm-westmere-01"
TOOLKIT = DEFAULT_NAMING.toolkit_appliance_name


@pytest.fixture(scope="module")
def scenario(real: RealSite) -> Iterator[dict[str, Any]]:
    """What the steps hand on to each other; the hosts a step disabled are enabled again at the end
    whatever happened (the frontend outlives the suite)."""
    shared: dict[str, Any] = {"disabled_hosts": []}
    yield shared
    for host_id in shared["disabled_hosts"]:
        real.rpc.call("one.host.status", host_id, 0)


def _json(code: int, run: Any, *, expect: int | tuple[int, ...] = 0) -> Any:
    """The command's JSON answer, once its exit code is one of `expect` (else the failure shows
    the answer's error and step first, then the end of both outputs)."""
    wanted = expect if isinstance(expect, tuple) else (expect,)
    if code not in wanted:
        try:
            answer = json.loads(run.stdout)
            headline = json.dumps({k: answer.get(k) for k in ("error", "step") if k in answer}, indent=1)
        except ValueError:
            headline = "(no JSON answer)"
        raise AssertionError(f"exit {code}, wanted {wanted}: {headline}\nstdout:\n{run.stdout[-2000:]}\n"
                             f"stderr:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout)


def _flow(real: RealSite, path: str) -> Any:
    user, _, password = Path(real.env["ONE_AUTH"]).read_text().strip().partition(":")
    answer = httpx.get(real.env["ONEFLOW_URL"].rstrip("/") + path, auth=(user, password), timeout=30)
    answer.raise_for_status()
    return answer.json()


def _hosts(real: RealSite) -> dict[str, Any]:
    return {text(h, "NAME"): h for h in real.rpc.xml("one.hostpool.info").findall("HOST")}


def _vm(real: RealSite, vm_id: int) -> Any:
    return real.rpc.xml("one.vm.info", vm_id, False)


def _emulated(real: RealSite) -> str:
    series = real.version[:2]
    return next(v for v in EMULATED_VERSIONS if tuple(int(p) for p in v.split(".")[:2]) == series)


def test_info_names_the_real_frontend(real: RealSite) -> None:
    data = _json(*real.sitetk("info", "--json"))
    assert real.env["ONE_XMLRPC"] in json.dumps(data)


def test_host_verdicts_are_the_embedded_sites(real: RealSite, site_factory: Any) -> None:
    """The same hosts (names, CPU facts, states) get the same verdicts on both sites."""
    def rows(code: int, run: Any) -> dict[str, tuple[Any, ...]]:
        data = _json(code, run)
        return {h["name"]: (h["state"], h["arch"], h["sse4_2"], h["avx"], h["kvm_cpu_model"], h["verdict"],
                            h["cpu_verdict"], tuple(h["reasons"])) for h in data["hosts"]}

    on_real = rows(*real.sitetk("hosts", "list", "--json"))
    sim = site_factory(one_version=_emulated(real))
    runner = real.runner
    saved = dict(runner.real_env)
    runner.real_env.update({"ONE_XMLRPC": sim.xmlrpc_url, "ONE_AUTH": str(sim.site.state_dir / "one_auth"),
                            "ONEFLOW_URL": sim.flow_url})
    try:
        embedded = rows(*real.sitetk("hosts", "list", "--json"))
    finally:
        runner.real_env.clear()
        runner.real_env.update(saved)
    assert on_real == embedded


def test_market_list_shows_what_the_real_driver_imported(real: RealSite, scenario: dict[str, Any]) -> None:
    data = _json(*real.sitetk("market", "list", "--json"))
    market_url = real.env.get("SITETK_REAL_MARKET_URL", "").rstrip("/")
    ours = [m for m in data["marketplaces"] if m["url"].rstrip("/") == market_url]
    assert ours and "cloud" in ours[0]["origin"], data["marketplaces"]
    listed = {a["name"] for a in data["appliances"] if a["marketplace_url"].rstrip("/") == market_url}
    pool = real.rpc.xml("one.marketapppool.info", -2, -1, -1)
    imported = {text(a, "NAME") for a in pool.findall("MARKETPLACEAPP")
                if text(a, "MARKETPLACE_ID") == str(ours[0]["marketplace_id"])}
    assert listed == imported
    toolkit = [a for a in data["appliances"] if a["name"] == TOOLKIT and a["marketplace_url"].rstrip("/") == market_url]
    assert len(toolkit) == 1
    scenario["toolkit_key"] = toolkit[0]["key"]


def test_market_download_makes_the_toolkit_and_reuses_it(real: RealSite, scenario: dict[str, Any]) -> None:
    first = _json(*real.sitetk("market", "download", scenario["toolkit_key"], "--datastore", "1", "--yes", "--json",
                               timeout=900))
    result = first["result"]
    template = _flow(real, f"/service_template/{result['service_template_id']}")
    roles = template["DOCUMENT"]["TEMPLATE"]["BODY"]["roles"]
    assert {r["name"] for r in roles} == set(DEFAULT_NAMING.roles)
    for image_id in result["image_ids"]:
        image = real.rpc.xml("one.image.info", image_id, False)
        assert text(image, "STATE") in ("1", "2"), f"image {image_id} is neither READY nor USED"
    for template_id in result["template_ids"]:
        real.rpc.xml("one.template.info", template_id, False, False)
    again = _json(*real.sitetk("market", "download", scenario["toolkit_key"], "--datastore", "1", "--yes", "--json",
                               timeout=900))
    assert again["result"]["service_template_id"] == result["service_template_id"]
    assert again["result"]["reused"], again["result"]
    scenario["service_template_id"] = result["service_template_id"]


def _input_file(real: RealSite, work: Path) -> Path:
    """One input file for the deployment and the guided setup (so the setup finds this service):
    the site's skeleton (its OneFlow's values key) filled with tests/setup's values and secrets."""
    data = _json(*real.sitetk("toolkit", "inputs", "--json"))
    skeleton = data["file"]
    key = "user_inputs_values" if "user_inputs_values" in skeleton else "custom_attrs_values"
    values = input_values(BRANCH)
    vault_file = real.config.get("site", {}).get("vault_password_file")
    if vault_file:  # the automation decrypts the site's branch with the sites' vault password
        values[DEFAULT_NAMING.input_name("automation_sites_token")] = Path(vault_file).read_text().strip()
    skeleton[key] = {**skeleton[key], **values}
    skeleton["name"] = f"{TOOLKIT} real"
    path = work / "inputs.json"
    path.write_text(json.dumps(skeleton, indent=2))
    path.chmod(0o600)
    return path


def test_toolkit_deploy_follows_the_real_oneflow_to_running(real: RealSite, scenario: dict[str, Any]) -> None:
    for host in _hosts(real).values():
        features = {f.strip().replace(".", "_") for f in text(host, "TEMPLATE/KVM_CPU_FEATURES").split(",")}
        if text(host, "STATE") == "2" and not {"sse4_2", "avx"} <= features:
            real.rpc.call("one.host.status", int(text(host, "ID")), 1)
            scenario["disabled_hosts"].append(int(text(host, "ID")))
    inputs = _input_file(real, real.work)
    scenario["inputs"] = inputs
    data = _json(*real.sitetk("toolkit", "deploy", "--input", str(inputs), "--wait", "--yes", "--json", timeout=1500))
    service_id = data["result"]["service_id"]
    service = _flow(real, f"/service/{service_id}")["DOCUMENT"]
    body = service["TEMPLATE"]["BODY"]
    assert body["state"] == 2, body["state"]  # RUNNING
    vm_ids = {r["name"]: [n["deploy_id"] for n in r["nodes"]] for r in body["roles"]}
    for role, ids in vm_ids.items():
        for vm_id in ids:
            vm = _vm(real, vm_id)
            assert (text(vm, "STATE"), text(vm, "LCM_STATE")) == ("3", "3"), (role, vm_id)
            assert text(vm, "USER_TEMPLATE/READY") == "YES", (role, vm_id)
    scenario.update(service_id=service_id, vm_ids=vm_ids)


def test_toolkit_key_is_captured_and_granted(real: RealSite, scenario: dict[str, Any]) -> None:
    automation_vm = scenario["vm_ids"][DEFAULT_NAMING.role_automation][0]
    published = text(_vm(real, automation_vm), f"USER_TEMPLATE/{DEFAULT_NAMING.automation_key_attribute}")
    assert published.startswith("ssh-ed25519 ")
    shown = _json(*real.sitetk("toolkit", "key", "--service", str(scenario["service_id"]), "--json"))
    assert published.split()[1] in json.dumps(shown)
    _json(*real.sitetk("toolkit", "key", "--service", str(scenario["service_id"]), "--grant", "--user", "tkauto",
                       "--yes", "--json"))
    users = {text(u, "NAME"): int(text(u, "ID")) for u in real.rpc.xml("one.userpool.info").findall("USER")}
    user = real.rpc.xml("one.user.info", users["tkauto"], False)
    assert published.split()[1] in text(user, "TEMPLATE/SSH_PUBLIC_KEY")


def test_hosts_check_flags_a_database_vm_on_a_host_without_avx_and_move_fixes_it(
        real: RealSite, scenario: dict[str, Any]) -> None:
    enabled = list(scenario["disabled_hosts"])
    for host_id in enabled:
        real.rpc.call("one.host.status", host_id, 0)
    scenario["disabled_hosts"] = []
    hosts = _hosts(real)
    wait_until(lambda: all(text(h, "STATE") == "2" for h in _hosts(real).values() if int(text(h, "ID")) in enabled),
               180, "the hosts monitored again")
    manager = scenario["vm_ids"][DEFAULT_NAMING.role_manager][0]
    target = int(text(hosts[NO_AVX_HOST], "ID"))
    if text(_vm(real, manager).findall("HISTORY_RECORDS/HISTORY")[-1], "HID") != str(target):
        real.rpc.call("one.vm.migrate", manager, target, False, True, -1, 0)  # by hand, as an operator might

    def on_bad_host() -> bool:
        vm = _vm(real, manager)
        last = vm.findall("HISTORY_RECORDS/HISTORY")[-1]
        return (text(vm, "LCM_STATE") == "3" and text(last, "HID") == str(target)
                and bool(text(vm, "USER_TEMPLATE/DB_ERROR")))

    wait_until(on_bad_host, 300, f"VM {manager} running on {NO_AVX_HOST} with DB_ERROR published")
    code, run = real.sitetk("hosts", "check", "--json")
    flagged = _json(code, run, expect=3)
    assert str(manager) in json.dumps(flagged["at_risk"]), flagged
    moved = _json(*real.sitetk("hosts", "move", str(manager), "--yes", "--json", timeout=900))
    assert moved["ok"]
    vm = _vm(real, manager)
    host_now = text(vm.findall("HISTORY_RECORDS/HISTORY")[-1], "HOSTNAME")
    assert host_now != NO_AVX_HOST and text(vm, "USER_TEMPLATE/READY") == "YES"
    code, run = real.sitetk("hosts", "check", "--json")
    assert _json(code, run)["at_risk"] == []


def test_setup_run_completes_and_status_says_done(real: RealSite, scenario: dict[str, Any]) -> None:
    inputs = scenario["inputs"]
    data = _json(*real.sitetk("setup", "run", "--input", str(inputs), "--datastore", "1", "--yes", "--json", *SITE_SETS,
                              timeout=1700))
    assert data["ok"], data
    status = _json(*real.sitetk("setup", "status", "--input", str(inputs), "--json"))
    undone = [s for s in status["steps"] if s.get("mandatory", True) and s["state"] != "done"]
    assert undone == [], undone


def test_site_enable_offers_a_component_to_the_cloud_user(real: RealSite, scenario: dict[str, Any]) -> None:
    token = json.loads(Path(scenario["inputs"]).read_text())
    values = token.get("user_inputs_values") or token.get("custom_attrs_values")
    password_file = real.work / "vault-password"
    password_file.write_text(values[DEFAULT_NAMING.input_name("automation_sites_token")] + "\n")
    password_file.chmod(0o600)
    data = _json(*real.sitetk("site", "enable", "vm_kvm", "--cloud-user", "tkauto", "--datastore", "1", "--yes",
                              "--vault-password-file", str(password_file), "--json", timeout=900))
    assert data["ok"], data
