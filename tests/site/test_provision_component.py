"""Day-2 components end to end (spec operation 9) against the embedded deployed site: download,
grants visible in the cloud (ACL list, image permissions, the automation user's own session),
core.yaml written, submitted; re-runs, duplicates and failures."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.procedure_run import collect, run_procedure
from tests.site.conftest import open_demo_site
from tui.adapters.cloud import CloudClient
from tui.adapters.cloud_errors import AUTHORIZATION
from tui.adapters.vault import VaultPassword, read_vault_file
from tui.domain.components import ComponentDefinition, ComponentLibrary, VariableSpec
from tui.domain.site_config import SiteConfig
from tui.errors import SiteError
from tui.procedures.components.enable_operation import EnableComponent, offer_component
from tui.procedures.components.provision import ComponentProvisioner, plan_provision, provision_component
from tui.procedures.connection import SiteConnection
from tui.procedures.market.download import download_appliance, find_market_app, plan_download
from tui.procedures.market.marketplaces import load_catalog
from tui.procedures.operation import RunContext, run_operation
from tui.procedures.site.component_library import load_library
from tui.procedures.site.config import enable_component
from tui.procedures.site.repo import current_site, preview_submit, submit_site
from tui.procedures.site.verdict import site_verdict, submit_gate
from tui.procedures.site.workspace import library_repo, sites_repo, vault_password
from tui.sim.acl import rule_of
from tui.sim.server import SimServer

#: the automation cloud user the grants go to (named, never guessed)
USER = "tkauto"

POLL = 0.02


async def library(site: SiteConnection) -> ComponentLibrary:
    repo = library_repo(site.settings)
    try:
        return await load_library(repo, site.naming)
    finally:
        repo.close()


def password_of(site: SiteConnection) -> VaultPassword:
    password = vault_password(site.settings)
    assert password is not None
    return password


def rule_strings(server: SimServer) -> set[str]:
    with server.site.lock:
        return {rule_of(acl).to_str() for acl in server.site.acls.values()}


async def as_automation_user(server: SimServer) -> CloudClient:
    user = server.site.users[2]
    return CloudClient(server.xmlrpc_url, f"{user.name}:{user.password}")


async def test_enable_tn_bastion_end_to_end(cloud: SiteConnection, deployed: SimServer) -> None:
    path = await open_demo_site(cloud.settings)
    password = password_of(cloud)
    bastion = (await library(cloud)).get("tn_bastion")
    assert bastion is not None
    images_before = set(deployed.site.images)

    plan = await plan_provision(cloud, bastion, cloud_user=USER)
    assert plan.user.name == "tkauto" and not plan.is_noop
    preview = plan.preview()
    commands = [c.cli for c in preview.changes if c.cli]
    assert any(c.startswith("onemarketapp export ") and "--datastore 1" in c for c in commands)
    assert "oneacl create '#2 IMAGE/#<new image id> USE'" in commands
    assert "oneacl create '#2 TEMPLATE/#<new VM template id> USE'" in commands

    operation = EnableComponent(path, password, bastion, poll_interval=POLL, cloud_user=USER)
    review = await operation.plan(cloud)
    assert review.provision is not None and review.provision.preview() == preview
    events: list = []
    await run_operation(cloud, operation, review, RunContext(events.append))
    assert events[-1].state == "done"
    provisioned = next(e for e in events if "values" in e.data)
    values = provisioned.data["values"]
    image_id, template_id = values["image_id"], values["template_id"]
    assert image_id not in images_before and image_id in deployed.site.images

    # the grants, read back through the cloud adapter
    rules = {rule.string for rule in await cloud.cloud.acl_list()}
    assert f"#2 IMAGE/#{image_id} USE #0" in rules and f"#2 TEMPLATE/#{template_id} USE #0" in rules
    image = await cloud.cloud.image_info(image_id)
    assert image.uname == "oneadmin" and image.permissions.octal == "600"  # ownership and permissions untouched
    automation = await as_automation_user(deployed)
    try:
        assert (await automation.image_info(image_id)).id == image_id
        assert (await automation.template_info(template_id)).id == template_id
        toolkit_image = min(images_before - {0})
        with pytest.raises(SiteError) as denied:
            await automation.image_info(toolkit_image)
        assert denied.value.code == AUTHORIZATION
    finally:
        await automation.close()
    # the run's one record holds the rules added (no record per rule)
    assert not [e for e in cloud.audit.entries() if e["action"] == "acl.create"]
    [record] = [e for e in cloud.audit.entries() if e["action"] == "site.enable_component"]
    grants = record["details"]["grants"]
    assert {g["rule"] for g in grants} == {f"#2 IMAGE/#{image_id} USE", f"#2 TEMPLATE/#{template_id} USE"}
    assert all(g["user"] == "tkauto" and isinstance(g["rule_id"], int) and g["cli"].startswith("oneacl create")
               for g in grants)

    # core.yaml: the IDs, comments kept, still encrypted
    text = read_vault_file(path, password)
    config = SiteConfig.parse(text)
    assert config.component_variables("tn_bastion") == {"template_id": template_id, "image_id": image_id}
    assert "tn_bastion:        # mandatory: entry point of every trial network" in text

    # submitted last: the decrypted diff, then commit and push
    repo = sites_repo(cloud.settings)
    try:
        site_ref = await current_site(repo)
        submit = await preview_submit(repo, site_ref, password)
        assert f"+    template_id: {template_id}" in submit.diff and submit.pending
        verdict = await site_verdict(SiteConfig.parse(text), site=cloud, definitions=(await library(cloud)).as_mapping())
        assert not [f for f in verdict.findings if f.path.startswith("site_variables.tn_bastion")]
        assert "site_variables.vm_kvm.image_id" in {f.path for f in verdict.errors}  # still the template's Ubuntu image
        gate = submit_gate(verdict, "vm_kvm is offered next")
        done = await collect(partial(submit_site, repo, site_ref, password, gate=gate, audit=cloud.audit))
        assert done[-1].data["pushed"]
    finally:
        repo.close()

    # a re-run changes nothing: no download, no rule, no write
    again = await plan_provision(cloud, bastion, cloud_user=USER)
    assert again.is_noop and again.preview().is_noop
    rules_before = rule_strings(deployed)
    events = await collect(partial(offer_component, cloud, path, password, bastion, poll_interval=POLL, cloud_user=USER))
    assert events[-1].state == "skipped"
    assert rule_strings(deployed) == rules_before
    assert [e.state for e in events if e.step.startswith("grant ")] == ["skipped", "skipped"]


async def test_an_existing_rule_counts_as_granted(cloud: SiteConnection, deployed: SimServer) -> None:
    vm_kvm = (await library(cloud)).get("vm_kvm")
    assert vm_kvm is not None
    # downloaded by hand through the marketplace procedures, without grants
    entry = (await load_catalog(cloud)).find("service_vm_kvm")
    app = await find_market_app(cloud, entry.record)
    download = await plan_download(cloud, app.id, 1, "Ubuntu Base VM v1.2.0")
    await run_procedure(partial(download_appliance, cloud, download, poll_interval=POLL))
    plan = await plan_provision(cloud, vm_kvm, cloud_user=USER)
    assert all(step.reused for step in plan.appliances)
    image_grant = next(g for g in plan.grants if g.object.kind == "image")
    assert image_grant.needed and image_grant.cli == f"oneacl create '#2 IMAGE/#{image_grant.object.id} USE'"
    # another console adds the same rule between the preview and the run
    await cloud.cloud.acl_add(image_grant.rule)
    events = await collect(partial(provision_component, cloud, plan, poll_interval=POLL))
    grants = {e.step: e for e in events if e.step.startswith("grant ")}
    assert grants[f"grant {image_grant.object.label}"].state == "skipped"
    assert "exists already" in grants[f"grant {image_grant.object.label}"].message
    assert [e.state for e in grants.values()].count("done") == 1
    assert events[-1].data["values"] == {"template_id": plan.appliances[0].installed.template_id, "image_id": image_grant.object.id}  # type: ignore[union-attr]


async def test_wrong_password_stops_before_the_cloud_changes(cloud: SiteConnection, deployed: SimServer) -> None:
    path = await open_demo_site(cloud.settings)
    bastion = (await library(cloud)).get("tn_bastion")
    assert bastion is not None
    before = path.read_bytes()
    images, rules = set(deployed.site.images), rule_strings(deployed)
    with pytest.raises(SiteError) as error:
        await collect(partial(offer_component, cloud, path, VaultPassword.from_text("not the password"), bastion, poll_interval=POLL,
                                  cloud_user=USER))
    assert error.value.title == "Wrong vault password"
    assert set(deployed.site.images) == images and rule_strings(deployed) == rules and path.read_bytes() == before


async def test_unknown_cloud_user(cloud: SiteConnection) -> None:
    bastion = (await library(cloud)).get("tn_bastion")
    assert bastion is not None
    with pytest.raises(SiteError) as error:
        await plan_provision(cloud, bastion, cloud_user="nobody")
    assert error.value.title == "Cloud user 'nobody' does not exist"


async def test_failed_download_grants_nothing_and_writes_nothing(cloud: SiteConnection, deployed: SimServer) -> None:
    path = await open_demo_site(cloud.settings)
    password = password_of(cloud)
    broken = ComponentDefinition(
        "traffic", appliances=("{marketplace_url}/appliance/service_traffic_generator",),
        site_variables=(VariableSpec("template_id", "VM template"), VariableSpec("image_id", "image")),
    )
    before = path.read_bytes()
    images, rules = set(deployed.site.images), rule_strings(deployed)
    with pytest.raises(SiteError) as error:
        await collect(partial(offer_component, cloud, path, password, broken, poll_interval=POLL, cloud_user=USER))
    assert "ERROR" in error.value.title and "Rolled back" in error.value.detail
    assert set(deployed.site.images) == images and rule_strings(deployed) == rules and path.read_bytes() == before


async def test_provisioner_plugs_into_enable_component(cloud: SiteConnection, tmp_path: Path) -> None:
    path = await open_demo_site(cloud.settings)
    password = password_of(cloud)
    ran = (await library(cloud)).get("ran_sim")
    assert ran is not None
    seen: list[str] = []
    provisioner = ComponentProvisioner(cloud, RunContext(lambda e: seen.append(e.step)), USER, poll_interval=POLL)
    events = await collect(partial(enable_component, path, password, ran, provision_appliances=provisioner, audit=cloud.audit))
    assert events[-1].state == "done" and set(provisioner.learned) == {"template_id", "image_id"}
    assert any(step.startswith("grant image ") for step in seen)
    assert SiteConfig.parse(read_vault_file(path, password)).component_variables("ran_sim") == provisioner.learned
