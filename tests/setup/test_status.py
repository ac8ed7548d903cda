"""`sitetk setup status`: every step decided from the live embedded site (fresh, deployed, 6.10,
bad networks built through the site's state), exit 0 only when every mandatory step is done."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.setup.conftest import point_at, run, steps
from tui.sim.platform import version_key
from tui.sim.server import SimServer
from tui.sim.state import SimAddressRange, SimVnet

pytestmark = pytest.mark.timeout(300)


def _template_set(vnet: SimVnet, name: str, value: str) -> None:
    template = vnet.template
    template[:] = [(k, v) for k, v in template if k != name] + ([(name, value)] if value else [])


@pytest.mark.every_version  # the CLI helper step is done from 7.0 on, optional below
def test_fresh_site_is_mostly_to_do(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch)
    code, data, _ = run(capsys, "setup", "status", "--json")
    assert code == 3
    assert data["complete"] is False
    by_id = steps(data)
    for done in ("platform", "gate", "marketplaces", "datastores", "default-network", "trial-network", "repository"):
        assert by_id[done]["state"] == "done", (done, by_id[done])
    # 7.0 and later carry the CLI helper change; below, it is optional (test_a_6_10_site_names_...)
    helper = "done" if version_key(server.site.config.one_version) >= (7, 0) else "optional"
    assert by_id["cli-helper"]["state"] == helper
    assert by_id["download"]["state"] == "to do"
    assert "onemarketapp export" in by_id["download"]["action"]
    assert by_id["instantiate"]["state"] == "blocked" and by_id["instantiate"]["blocked_by"] == "download"
    assert by_id["grant"]["state"] == "blocked"
    assert "10.11.28.1:5030" in " ".join(by_id["gate"]["evidence"])
    trial = " ".join(by_id["trial-network"]["evidence"])
    assert "GUEST_MTU is 50 bytes below the NIC MTU" in trial
    assert "not checked" in trial  # bond0 under br-mgmt: the cloud cannot tell, and says so
    table = by_id["forwarded-addresses"]["data"]["addresses"]
    assert [row["ip"] for row in (table[0], table[-1])] == ["10.11.28.211", "10.11.28.240"]
    assert table[0]["port"] == "xx211 -> .211:xx211"
    assert table[0]["leasable"] is True and table[-1]["leasable"] is False  # the range ends at .219
    assert by_id["dns"]["state"] == "optional" and by_id["dns"]["mandatory"] is False


def test_text_output_names_the_next_step(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch)
    code, text, _ = run(capsys, "setup", "status")
    assert code == 3
    assert "✔ done     The platform answers" in text
    assert "mandatory step(s) not done. Next:" in text


def test_deployed_site_is_further(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch)
    code, data, _ = run(capsys, "setup", "status", "--json")
    assert code == 3
    by_id = steps(data)
    for done in ("cloud-user", "tagged", "record", "site-branch"):
        assert by_id[done]["state"] == "done", (done, by_id[done])
    # listed with the template's placeholder IDs is not enabled
    components = by_id["components"]
    assert components["state"] == "to do" and components["data"]["missing"] == ["tn_bastion", "vm_kvm"]
    assert any("tn_bastion: template_id is 0 (the template's placeholder)" in e for e in components["evidence"])
    assert by_id["grant"]["state"] == "to do"
    assert "oneuser update tkauto" in by_id["grant"]["action"]
    # the deployed scenario leaves the manager on a host without AVX
    assert by_id["database-host"]["state"] == "to do"
    assert "sitetk hosts move" in by_id["database-host"]["action"]
    # the demo branch's core.yaml names another address than the object store VM's
    assert by_id["core-yaml"]["state"] == "to do"
    assert any("does not name the object store VM" in e for e in by_id["core-yaml"]["evidence"])


def test_a_6_10_site_names_the_cli_helper_change(site_factory, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    server: SimServer = site_factory(one_version="6.10.0")
    point_at(server, monkeypatch)
    code, data, _ = run(capsys, "setup", "status", "--json")
    step = steps(data)["cli-helper"]
    assert step["state"] == "optional" and step["mandatory"] is False
    assert "one_helper.rb" in step["action"] and "7.0" in step["action"]
    assert any("below 7.0" in e for e in step["evidence"])


def test_guest_mtu_not_below_the_nic_mtu_blocks_with_the_fix(sim_factory, monkeypatch: pytest.MonkeyPatch,
                                                             capsys) -> None:
    server: SimServer = sim_factory()
    with server.site.lock:
        _template_set(server.site.vnets[1], "GUEST_MTU", "1500")
    point_at(server, monkeypatch)
    code, data, _ = run(capsys, "setup", "status", "--json")
    step = steps(data)["trial-network"]
    assert code == 3
    assert step["state"] == "blocked"
    assert "GUEST_MTU 1500 is not below the NIC MTU 1500" in step["action"]
    assert "GUEST_MTU to 1450" in step["action"] and "onevnet update 1" in step["action"]


def test_guest_mtu_below_by_less_than_the_headers_blocks(sim_factory, monkeypatch: pytest.MonkeyPatch,
                                                         capsys) -> None:
    server: SimServer = sim_factory()
    with server.site.lock:
        _template_set(server.site.vnets[1], "GUEST_MTU", "1480")
    point_at(server, monkeypatch)
    _, data, _ = run(capsys, "setup", "status", "--json")
    step = steps(data)["trial-network"]
    assert step["state"] == "blocked"
    assert "only 20 bytes below" in step["action"]


def test_a_default_network_that_is_no_24_blocks(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    server: SimServer = sim_factory()
    with server.site.lock:
        _template_set(server.site.vnets[0], "NETWORK_MASK", "255.255.0.0")
    point_at(server, monkeypatch)
    _, data, _ = run(capsys, "setup", "status", "--json")
    by_id = steps(data)
    assert by_id["default-network"]["state"] == "blocked"  # no /24 left on a bridge
    assert "/24" in by_id["default-network"]["action"]
    assert by_id["forwarded-addresses"]["state"] == "blocked"


def test_a_default_network_without_bridge_blocks(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys,
                                                 tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    with server.site.lock:
        server.site.vnets[0].bridge = ""
    point_at(server, monkeypatch)
    inputs = tmp_path / "inputs.json"
    inputs.write_text('{"name": "t", "custom_attrs_values": {}, "networks_values": [{"Public": {"id": "0"}}]}')
    _, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["default-network"]
    assert step["state"] == "blocked"
    assert "names no BRIDGE" in step["action"]
    assert "chosen by the input file" in step["evidence"][0]


def test_forwarded_addresses_taken_by_leases_are_named(sim_factory, monkeypatch: pytest.MonkeyPatch,
                                                       capsys) -> None:
    server: SimServer = sim_factory(scenario="deployed")
    with server.site.lock:
        oam_range: SimAddressRange = server.site.vnets[0].ars[0]
        oam_range.leases[191] = 2   # .211, the automation VM
        oam_range.leases[192] = -1  # .212, on hold
    point_at(server, monkeypatch)
    _, data, _ = run(capsys, "setup", "status", "--json")
    rows = {row["ip"]: row for row in steps(data)["forwarded-addresses"]["data"]["addresses"]}
    assert rows["10.11.28.211"]["status"] == "VM 2"
    assert rows["10.11.28.212"]["status"] == "on hold"
    assert rows["10.11.28.213"]["status"] == "free"
    assert rows["10.11.28.230"]["status"] == "free, outside every address range"


def test_a_configured_marketplace_the_cloud_lacks_is_to_do(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys,
                                                           tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    config = tmp_path / "config.toml"
    config.write_text('[marketplace]\nurls = ["http://127.0.0.1:9/other-market"]\n')
    monkeypatch.setenv("SITETK_CONFIG", str(config))
    point_at(server, monkeypatch)
    _, data, _ = run(capsys, "setup", "status", "--json")
    step = steps(data)["marketplaces"]
    assert step["state"] == "to do"
    assert step["data"]["missing"] == ["http://127.0.0.1:9/other-market"]
    assert "onemarket create" in step["action"]


def test_a_bad_input_file_is_a_usage_error(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys,
                                           tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch)
    bad = tmp_path / "inputs.json"
    bad.write_text('{"name": "x",\n  "custom_attrs_values": {')
    code, _, err = run(capsys, "setup", "status", "--input", str(bad))
    assert code == 2
    assert "line 2" in err and "Traceback" not in err


@pytest.mark.parametrize("backend", ["sqlite", "mysql"])
def test_the_database_step_finds_the_manager_on_either_backend(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys,
                                                               backend: str) -> None:
    """The database VMs are read from the whole pool in pages (tui.procedures.hosts.cpu_inventory): sqlite, which
    refuses the pool query, and MySQL, which matches it as a substring, give the same step; a page
    the platform refuses leaves the step unknown, never done."""
    server: SimServer = sim_factory(scenario="deployed", db_backend=backend)
    point_at(server, monkeypatch)
    code, data, _ = run(capsys, "setup", "status", "--json")
    step = steps(data)["database-host"]
    assert (code, step["state"]) == (3, "to do")
    assert "manager_0_(service_1)" in " ".join(step["evidence"]) and "sitetk hosts move" in step["action"]
    with server.site.lock:
        server.site.faults.fail_methods["one.vmpool.infoextended"] = 100
    code, data, _ = run(capsys, "setup", "status", "--json")
    step = steps(data)["database-host"]
    assert code != 0 and (step["state"], step["blocked_by"]) == ("blocked", "unreadable source"), step
    assert "the hosts could not be read" in step["action"]
    assert any("hosts and database VMs" in note and "refused by an injected fault" in note
               for note in data["notes"]), data["notes"]


def _dead_loopback_url() -> str:
    """A loopback URL nothing listens on (a port bound, then released: connections are refused)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_preflight_checks_every_service_the_setup_uses(sim_factory, monkeypatch: pytest.MonkeyPatch,
                                                       capsys) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch)
    code, data, _ = run(capsys, "setup", "status", "--json")
    services = steps(data)["services"]
    assert services["group"] == "Preflight" and services["state"] == "done", services
    said = "\n".join(services["evidence"])
    for what in ("XML-RPC", f"OneFlow {server.flow_url}: answers with the session", "marketplace",
                 "sites repository", "the gate"):
        assert what in said, (what, said)


def test_with_oneflow_down_preflight_fails_and_next_names_it(sim_factory, monkeypatch: pytest.MonkeyPatch,
                                                             capsys) -> None:
    """Issue 20 item 8: with the OneFlow endpoint down, preflight was all done and "Next" pointed
    at the automation cloud user."""
    server: SimServer = sim_factory()
    point_at(server, monkeypatch)
    dead = _dead_loopback_url()
    monkeypatch.setenv("ONEFLOW_URL", dead)
    code, data, _ = run(capsys, "setup", "status", "--json")
    assert code != 0 and data["complete"] is False
    by_id = steps(data)
    preflight = [step for step in data["steps"] if step["group"] == "Preflight"]
    assert not all(step["state"] == "done" for step in preflight if step["mandatory"])
    assert by_id["services"]["state"] == "failed"
    assert data["next"] == "services"
    assert f"OneFlow at {dead}" in by_id["services"]["action"]
    assert "opennebula-flow" in by_id["services"]["action"]
    code, text, _ = run(capsys, "setup", "status")
    next_line = text[text.index("Next:"):]
    assert "Services the setup uses answer" in next_line.splitlines()[0] or "OneFlow" in next_line, next_line
    assert "cloud user" not in next_line.splitlines()[0]


def test_a_marketplace_that_does_not_answer_fails_preflight(sim_factory, monkeypatch: pytest.MonkeyPatch,
                                                            capsys, tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch)
    dead = _dead_loopback_url()
    config = tmp_path / "config.toml"
    config.write_text(f'[marketplace]\nurls = ["{dead}"]\n')
    monkeypatch.setenv("SITETK_CONFIG", str(config))
    code, data, _ = run(capsys, "setup", "status", "--json")
    services = steps(data)["services"]
    assert services["state"] == "failed" and dead in services["action"], services
    assert data["next"] == "services"
