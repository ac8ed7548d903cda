"""The setup's own operations against the embedded site over XML-RPC: the automation cloud user
(group, user, group admin, the group's default rule) and a marketplace the settings name, each
previewed, idempotent, and finishing what an earlier run (or an operator) started."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.setup.conftest import point_at, run, steps
from tests.setup.inputs import write_inputs
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.setup.identity import group_rule
from tui.settings import Settings
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)
USER = "trialbot"


def _inputs_for(path: Path, user: str) -> dict[str, str]:
    values = write_inputs(path)
    data = json.loads(path.read_text())
    data["custom_attrs_values"]["app_automation_cloud_username"] = user
    path.write_text(json.dumps(data))
    values["app_automation_cloud_username"] = user
    return values


def _site(server: SimServer, session: str | None = None) -> SiteConnection:
    return SiteConnection(Settings.for_site(server.xmlrpc_url, session or server.session, server.flow_url))


def _identities(server: SimServer) -> tuple[dict[str, int], dict[str, tuple[int, ...]], list[str]]:
    async def read():  # type: ignore[no-untyped-def]
        site = _site(server)
        try:
            users, groups, rules = await asyncio.gather(site.cloud.list_users(), site.cloud.list_groups(),
                                                        site.cloud.acl_list())
        finally:
            await site.close()
        return ({u.name: u.gid for u in users}, {g.name: g.admin_ids for g in groups}, [r.string for r in rules])
    return asyncio.run(read())


def test_the_cloud_user_is_created_as_the_installer_does(sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    values = _inputs_for(inputs, USER)
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert steps(data)["cloud-user"]["state"] == "to do"
    code, dry, _ = run(capsys, "setup", "run", "--input", str(inputs), "--only", "cloud-user", "--dry-run", "--json")
    assert code == 0
    clis = " ".join(c["cli"] for c in dry["preview"]["changes"])
    assert f"onegroup create {USER}" in clis and "oneacl create" in clis and "--read-file" in clis
    assert values["app_automation_cloud_password"] not in json.dumps(dry)
    assert USER not in _identities(server)[0]
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "cloud-user", "--yes")
    assert code == 0, err
    users, groups, rules = _identities(server)
    gid = users[USER]
    assert gid >= 100 and groups[USER]  # its own group, administered by it
    assert any(rule.startswith(f"@{gid} VM+") and rule.endswith("CREATE *") or rule == group_rule(gid) for rule in rules)
    assert values["app_automation_cloud_password"] not in (tmp_path / "home").joinpath(
        ".local/state/sitetk/audit.log").read_text()

    async def logs_in() -> str:
        site = _site(server, f"{USER}:{values['app_automation_cloud_password']}")
        try:
            return (await site.connect()).user
        finally:
            await site.close()
    assert asyncio.run(logs_in()) == USER
    # again: nothing new
    assert run(capsys, "setup", "run", "--input", str(inputs), "--only", "cloud-user", "--yes")[0] == 0
    assert _identities(server) == (users, groups, rules)


def test_a_group_made_by_hand_is_reused(sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    _inputs_for(inputs, USER)

    async def by_hand() -> int:
        site = _site(server)
        try:
            await site.connect()
            return await site.cloud.group_allocate(USER)
        finally:
            await site.close()
    gid = asyncio.run(by_hand())
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "cloud-user", "--yes")
    assert code == 0, err
    assert "exists (ID" in err
    users, groups, _ = _identities(server)
    assert users[USER] == gid and list(groups).count(USER) == 1


def test_the_platform_refuses_a_taken_name_and_a_non_admin(sim_factory) -> None:
    server: SimServer = sim_factory()

    async def probe() -> tuple[SiteError, SiteError]:
        site = _site(server)
        try:
            await site.connect()
            with pytest.raises(SiteError) as taken:
                await site.cloud.group_allocate("users")
            user = server.site.user_by_name("tkauto")
            assert user is not None
            other = _site(server, f"tkauto:{user.password}")
            try:
                with pytest.raises(SiteError) as refused:
                    await other.cloud.group_allocate("mine")
            finally:
                await other.close()
            return taken.value, refused.value
        finally:
            await site.close()
    taken, refused = asyncio.run(probe())
    assert "already taken by GROUP 1" in taken.detail + taken.title
    assert "Not authorized" in refused.detail + refused.title


def test_a_configured_marketplace_is_registered_once(sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    config = tmp_path / "config.toml"
    config.write_text('[marketplace]\nurls = ["http://market.example.org:8080/site"]\n')
    monkeypatch.setenv("SITETK_CONFIG", str(config))
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs)
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "marketplaces", "--yes")
    assert code == 0, err
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    assert steps(data)["marketplaces"]["state"] == "done"
    assert "http://market.example.org:8080/site" in " ".join(steps(data)["marketplaces"]["evidence"])
    count = len(server.site.marketplaces)
    assert run(capsys, "setup", "run", "--input", str(inputs), "--only", "marketplaces", "--yes")[0] == 0
    assert len(server.site.marketplaces) == count
    # registered from ID 100 on (the bootstrap 0 and 1, the site's own 100), with the trailing
    # slash every market driver version reads right (6.10.0-6.10.2 do not add it)
    market = max(server.site.marketplaces.values(), key=lambda m: m.id)
    assert market.id == 101 and market.endpoint == "http://market.example.org:8080/site/"
    evidence = " ".join(steps(data)["marketplaces"]["evidence"])
    assert "disabled: OpenNebula Public (ID 0) the driver's built-in public marketplace" in evidence
    assert "local store" not in evidence


def test_a_configured_marketplace_registered_but_disabled_is_enabled_not_registered_again(
        sim_factory, monkeypatch, capsys, tmp_path: Path) -> None:
    """A disabled marketplace is not monitored and holds no app (src/rm/RequestManagerMarketPlace.cc
    47-51, 88-110 at release-7.0.2): it does not count as registered; the setup enables it."""
    server: SimServer = sim_factory()
    url = server.market_url + "/community"
    config = tmp_path / "config.toml"
    config.write_text(f'[marketplace]\nurls = ["{url}"]\n')
    monkeypatch.setenv("SITETK_CONFIG", str(config))
    point_at(server, monkeypatch, vault_file=False)
    from tui.sim import catalog

    with server.site.lock:
        market = catalog.register_marketplace(server.site, catalog.COMMUNITY_PREFIX)
        market.state = 1
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs)
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["marketplaces"]
    assert step["state"] == "to do" and step["data"]["missing"] == [url]
    assert f"onemarket enable {market.id}" in step["action"]
    count = len(server.site.marketplaces)
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "marketplaces", "--yes")
    assert code == 0, err
    assert len(server.site.marketplaces) == count and server.site.marketplaces[market.id].state == 0
    # enabling monitors it at once: the community's own appliances are its apps
    assert any(a.marketplace_id == market.id for a in server.site.marketapps.values())
    assert steps(run(capsys, "setup", "status", "--input", str(inputs), "--json")[1])["marketplaces"]["state"] == "done"


@pytest.mark.parametrize("one_version", ["6.10.0", "7.0.0"])
def test_an_endpoint_without_its_slash_is_a_named_fixable_finding_on_6_10_0(
        sim_factory, monkeypatch, capsys, tmp_path: Path, one_version: str) -> None:
    """The 6.10.0-6.10.2 market driver builds `"#{@url}appliance/#{id}"` from the ENDPOINT as it is
    (src/market_mad/remotes/one/monitor line 170 at release-6.10.0; 6.10.3 adds the slash, line
    42): every app's download is broken. The step names it with `onemarket update`, and `setup run
    --only marketplaces` makes that update; later versions are not concerned."""
    server: SimServer = sim_factory(one_version=one_version)
    point_at(server, monkeypatch, vault_file=False)
    with server.site.lock:
        market = server.site.marketplaces[100]
        market.endpoint = market.endpoint.rstrip("/")
        market.template = [a for a in market.template if a[0] != "ENDPOINT"] + [("ENDPOINT", market.endpoint)]
        endpoint = market.endpoint
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs)
    code, data, _ = run(capsys, "setup", "status", "--input", str(inputs), "--json")
    step = steps(data)["marketplaces"]
    if one_version != "6.10.0":
        assert step["state"] == "done"
        return
    assert step["state"] == "to do"
    assert any("lacks a trailing slash" in e and f"{endpoint}appliance/<id>" in e for e in step["evidence"])
    assert "onemarket update 100 <file> --append" in step["action"]
    assert step["data"]["endpoint_without_slash"] == [{"marketplace_id": 100, "endpoint": endpoint}]
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "marketplaces", "--yes")
    assert code == 0, err
    assert server.site.marketplaces[100].endpoint == endpoint + "/"
    assert steps(run(capsys, "setup", "status", "--input", str(inputs), "--json")[1])["marketplaces"]["state"] == "done"


def test_the_identity_steps_are_operations(sim_factory, monkeypatch, tmp_path: Path) -> None:
    """CreateCloudUser / RegisterMarketplace go through the operation pipeline: the preview names the
    platform commands, read-only mode refuses (and the refusal is audit-logged) before anything is
    read or changed, a run reports each part, the password is in no preview, plan or audit entry."""
    from tui.procedures.audit import AUDIT_ENV, AuditLog
    from tui.procedures.operation import ReadOnlyRefused, RunContext, run_operation
    from tui.procedures.setup.identity import CreateCloudUser, RegisterMarketplace

    server: SimServer = sim_factory()
    audit_path = tmp_path / "audit.jsonl"
    monkeypatch.setenv(AUDIT_ENV, str(audit_path))
    password = "s3cret-Cloud-pw"
    url = "http://market.example.org:8080/site"

    async def scenario() -> tuple[list[str], list[str], str, str]:
        settings = Settings.for_site(server.xmlrpc_url, server.session, server.flow_url)
        read_only = SiteConnection(settings, read_only=True)
        site = SiteConnection(settings)
        try:
            await read_only.connect()
            await site.connect()
            user, market = CreateCloudUser(USER, password), RegisterMarketplace(url)
            user_plan, market_plan = await user.plan(site), await market.plan(site)
            commands = [c.cli for c in user.preview(user_plan).changes + market.preview(market_plan).changes]
            text = repr(user) + json.dumps(user.plan_json(user_plan)) + repr(user.preview(user_plan))
            confirm = user.confirmation(user_plan)
            assert confirm is not None and "onegroup addadmin" in confirm.command
            for operation, plan in ((user, user_plan), (market, market_plan)):
                with pytest.raises(ReadOnlyRefused):
                    await run_operation(read_only, operation, plan, RunContext(lambda e: None))
            events: list[str] = []
            await run_operation(site, user, user_plan, RunContext(lambda e: events.append(e.message)))
            again = await user.plan(site)
            assert again.complete and user.confirmation(again) is None
            done = await run_operation(site, market, market_plan, RunContext(lambda e: events.append(e.message)))
            assert done.changed and market.confirmation(await market.plan(site)) is None
            return commands, events, text, audit_path.read_text()
        finally:
            await read_only.close()
            await site.close()

    commands, events, text, audit_text = asyncio.run(scenario())
    assert any(c.startswith(f"onegroup create {USER}") for c in commands)
    assert any(c.startswith(f"oneuser create {USER} --read-file") for c in commands)
    assert any(c.startswith(f"onegroup addadmin {USER} {USER}") for c in commands)
    assert any(c.startswith("oneacl create '@<new group id> VM+IMAGE") for c in commands)
    assert any(c.startswith("onemarket create") for c in commands)
    assert any(f"user {USER} created" in e for e in events) and any("registered as marketplace" in e for e in events)
    entries = [json.loads(line) for line in audit_text.splitlines()]
    refused = [(e["action"], e["outcome"]) for e in entries if e["outcome"] == "refused"]
    assert refused == [("setup.cloud_user", "refused"), ("market.create", "refused")]
    # one record per run, listing what it made with the IDs the platform gave
    ran = [e for e in entries if e["outcome"] != "refused"]
    assert [(e["action"], e["target"], e["outcome"]) for e in ran] == [("setup.cloud_user", USER, "ok"),
                                                                       ("market.create", url.rstrip("/"), "ok")]
    made = {m["what"]: m for m in ran[0]["details"]["made"]}
    assert set(made) == {"group", "user", "group admin", "ACL rule"}
    assert made["user"]["name"] == USER and made["user"]["group_id"] == made["group"]["group_id"]
    assert isinstance(made["user"]["user_id"], int) and isinstance(made["ACL rule"]["rule_id"], int)
    assert ran[1]["details"]["made"][0]["what"] == "marketplace" and isinstance(ran[1]["details"]["made"][0]["market_id"], int)
    assert password not in text and password not in audit_text
    assert len(AuditLog(audit_path).entries()) == len(entries)


def test_registering_a_marketplace_that_lists_names_the_cloud_holds_is_previewed_with_the_consequence(
        sim_factory) -> None:
    """The cloud keeps one app per name across marketplaces, rebuilt from the one monitored last
    (src/market/MarketPlaceAppPool.cc 211-223 at release-7.0.2): registering the community
    marketplace, which lists older builds under the site's appliance names, would make the cloud's
    toolkit app hold its v0.4.0. The plan says so before anything is registered."""
    from tui.procedures.setup.identity import plan_marketplace

    server: SimServer = sim_factory()
    url = server.market_url + "/community"

    async def plan():  # type: ignore[no-untyped-def]
        site = _site(server)
        await site.connect()
        try:
            return await plan_marketplace(site, url), await plan_marketplace(site, server.market_url)
        finally:
            await site.close()

    community, own = asyncio.run(plan())
    assert community.existing is None and own.existing == 100 and own.warnings == ()
    [warning] = community.preview().warnings
    assert "one app per name" in warning and f"apps it holds from {server.market_url} " in warning
    assert "Site Toolkit" in warning and "DNS Server" in warning
