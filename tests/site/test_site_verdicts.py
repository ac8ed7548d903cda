"""Verdicts in the dangerous direction, against the embedded deployed site: IDs that exist but are
not the component's appliance, template placeholders, confirmations that are recorded."""

from __future__ import annotations

import json
from functools import partial

import pytest

from tests.procedure_run import collect
from tests.site.conftest import open_demo_site
from tests.site.test_provision_component import POLL, library, password_of
from tui.domain.severity import Severity
from tui.domain.site_checks import check_placeholders, check_site_config
from tui.domain.site_config import SiteConfig
from tui.errors import SiteError
from tui.procedures.components.enable_operation import EnableComponent, EnableReview, offer_component
from tui.procedures.components.provision import plan_provision
from tui.procedures.connection import SiteConnection
from tui.procedures.operation import RunContext, run_operation
from tui.procedures.preview import Preview
from tui.procedures.site.config import load_site_config
from tui.procedures.site.confirm_operation import ConfirmApplianceId, plan_confirmation
from tui.procedures.site.confirmations import confirmations_path
from tui.procedures.site.fill import gather_cloud_facts
from tui.sim.repos import template_core_yaml
from tui.sim.server import SimServer

#: the automation cloud user the grants go to (named, never guessed)
USER = "tkauto"

FILLED = {"site_s3_server.endpoint": "https://10.0.0.9:9000", "site_public_ip": "192.0.2.10", "site_domain": "trial.example.org",
          "site_onegate": "10.11.28.1"}


def template(**changes: object) -> SiteConfig:
    config = SiteConfig.parse(template_core_yaml())
    return config.edit([*FILLED.items(), *changes.items()])


def errors(findings: tuple) -> dict[str, str]:  # type: ignore[type-arg]
    return {f.path: f.message for f in findings if f.severity is Severity.ERROR}


async def test_template_ids_that_exist_are_not_the_appliance(cloud: SiteConnection, deployed: SimServer) -> None:
    """The template's 0s exist (an Ubuntu image and template) but are not the bastion: errors saying
    what was checked, what was found and the fix."""
    definitions = (await library(cloud)).as_mapping()
    config = template()
    facts = await gather_cloud_facts(cloud, config, definitions)
    assert facts.identity is not None
    findings = check_site_config(config, definitions=definitions, cloud=facts.ids, nic_mtu=facts.nic_mtu, appliances=facts.identity)
    found = errors(findings)
    image = found["site_variables.tn_bastion.image_id"]
    assert "image 0 is not tn_bastion's appliance" in image
    assert "PLATFORM_MARKETPLACE_APPLIANCE_NAME = 'Bastion'" in image  # what was checked
    assert "image 0 'Ubuntu 22.04' (no marketplace attributes)" in image  # what was found
    assert "sitetk site enable tn_bastion" in image and "sitetk site fill" in image  # the fix
    template_msg = found["site_variables.tn_bastion.template_id"]
    assert "VM template 0 'ubuntu-22.04'; uses image 0 'Ubuntu 22.04'" in template_msg
    assert "site_variables.vm_kvm.image_id" in found and "site_variables.vm_kvm.template_id" in found


async def test_the_downloaded_appliance_passes(cloud: SiteConnection, deployed: SimServer) -> None:
    path = await open_demo_site(cloud.settings)
    password = password_of(cloud)
    definitions = (await library(cloud)).as_mapping()
    events = await collect(partial(offer_component, cloud, path, password, definitions["tn_bastion"], poll_interval=POLL,
                                  cloud_user=USER))
    assert events[-1].state == "done"
    config = (await load_site_config(path, password, cloud.naming)).config
    facts = await gather_cloud_facts(cloud, config, definitions)
    assert facts.identity is not None
    findings = check_site_config(config, definitions=definitions, cloud=facts.ids, appliances=facts.identity)
    assert not [f for f in findings if f.path.startswith("site_variables.tn_bastion")]
    # the template's 0s of vm_kvm are still wrong
    assert "site_variables.vm_kvm.image_id" in errors(findings)


def test_offline_the_placeholder_zero_is_not_verified() -> None:
    from tui.domain.components import parse_public_yaml

    bastion = parse_public_yaml("tn_bastion", "metadata: {appliances: ['{marketplace_url}/appliance/service_bastion']}\n"
                                              "site_variables: {template_id: t, image_id: i}\n")
    findings = check_site_config(template(), definitions={"tn_bastion": bastion})
    warnings = {f.path: f.message for f in findings if f.severity is Severity.WARNING}
    assert "template's placeholder" in warnings["site_variables.tn_bastion.image_id"]


def test_template_placeholders_are_flagged() -> None:
    config = SiteConfig.parse(template_core_yaml())
    found = {f.path: f for f in check_placeholders(config)}
    assert found["site_public_ip"].severity is Severity.WARNING and "'12.34.56.78'" in found["site_public_ip"].message
    assert found["site_domain"].severity is Severity.WARNING
    assert found["site_onegate"].severity is Severity.ERROR and "sitetk site fill" in found["site_onegate"].message
    assert found["site_admin_ssh_public_key"].severity is Severity.WARNING and "fake key" in found["site_admin_ssh_public_key"].message
    filled = config.edit([*FILLED.items(), ("site_admin_ssh_public_key",
                                              "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl admin@site")])
    assert check_placeholders(filled) == []
    broken = config.with_value("site_admin_ssh_public_key", "ssh-ed25519 not-a-key admin@site")
    typo = {f.path: f for f in check_placeholders(broken)}["site_admin_ssh_public_key"]
    assert typo.severity is Severity.ERROR and "not a public SSH key" in typo.message
    angle = {f.path: f for f in check_placeholders(config.with_value("site_domain", "<your domain>"))}["site_domain"]
    assert angle.severity is Severity.ERROR and "<your domain>" in angle.message


async def test_a_confirmation_is_recorded_and_audited(cloud: SiteConnection, deployed: SimServer) -> None:
    definitions = (await library(cloud)).as_mapping()
    config = template()
    with pytest.raises(SiteError, match="A reason is needed"):
        await plan_confirmation(cloud, config, "site_variables.tn_bastion.image_id", "  ", definitions)
    with pytest.raises(SiteError, match="not a set appliance ID"):
        await plan_confirmation(cloud, config, "site_public_ip", "why", definitions)
    plan = await plan_confirmation(cloud, config, "site_variables.tn_bastion.image_id", "our own bastion build", definitions)
    assert plan.confirmation.object_name == "Ubuntu 22.04"
    # the ConfirmApplianceId operation writes the file (confirm_appliance_id) and the audit record (run_operation)
    operation = ConfirmApplianceId(config, "site_variables.tn_bastion.image_id", "our own bastion build", definitions)
    recorded = await run_operation(cloud, operation, plan, RunContext(emit=lambda event: None))
    written = recorded.file
    assert oct(confirmations_path(cloud.settings).stat().st_mode & 0o777) == "0o600"
    assert json.loads(open(written).read())["confirmations"][0]["reason"] == "our own bastion build"
    entry = [e for e in cloud.audit.entries() if e["action"] == "site.confirm_appliance_id"]
    assert entry and entry[0]["details"]["reason"] == "our own bastion build"
    facts = await gather_cloud_facts(cloud, config, definitions)
    assert facts.identity is not None
    findings = check_site_config(config, definitions=definitions, appliances=facts.identity)
    path = "site_variables.tn_bastion.image_id"
    assert path not in errors(findings)
    warning = next(f for f in findings if f.path == path)
    assert warning.severity is Severity.WARNING and "the operator confirmed it" in warning.message and "our own bastion build" in warning.message
    # the template ID is still unconfirmed, and a confirmation of another object does not carry over
    assert "site_variables.tn_bastion.template_id" in errors(findings)
    other = max(facts.identity.images)  # a toolkit image: not the bastion, and not the confirmed object
    assert other != 0
    moved = config.with_value(path, other)
    assert path in errors(check_site_config(moved, definitions=definitions, appliances=facts.identity))


def _objects(server: SimServer) -> tuple[set[int], set[int], set[int], set[str]]:
    from tui.sim.acl import rule_of

    with server.site.lock:
        return (set(server.site.images), set(server.site.templates), set(server.site.documents),
                {rule_of(a).to_str() for a in server.site.acls.values()})


async def test_enable_with_missing_variables_creates_nothing(cloud: SiteConnection, deployed: SimServer) -> None:
    """A load-test agent needs its middleware address besides the appliance's IDs: without it the
    enable stops before anything is downloaded, granted or written."""
    from tui.domain.components import ComponentDefinition, VariableSpec

    path = await open_demo_site(cloud.settings)
    before, objects = path.read_bytes(), _objects(deployed)
    agent = ComponentDefinition("load_agent", appliances=("{marketplace_url}/appliance/service_bastion",), site_variables=(
        VariableSpec("middleware_ip", "address of the load-test middleware"), VariableSpec("template_id", "VM template"),
        VariableSpec("image_id", "image")))
    with pytest.raises(SiteError) as error:
        await collect(partial(offer_component, cloud, path, password_of(cloud), agent, poll_interval=POLL, cloud_user=USER))
    assert error.value.title == "load_agent: site variables missing"
    assert "middleware_ip (address of the load-test middleware)" in error.value.detail
    assert "template_id" not in error.value.detail and "Nothing was downloaded or granted" in error.value.detail
    assert _objects(deployed) == objects and path.read_bytes() == before


async def test_a_failed_enable_removes_what_it_created(cloud: SiteConnection, deployed: SimServer) -> None:
    """An appliance without a VM template cannot fill template_id: the enable fails after the
    download, and the image and the ACL rule it made are removed again (audit-logged)."""
    from tests.market.conftest import register_community
    from tui.domain.components import ComponentDefinition, VariableSpec
    from tui.sim.catalog import _UUID_NAMESPACE
    from tui.sim.uuids import uuid5_text

    register_community(deployed)  # its Debian 12 (arm64) record comes without a VM template
    path = await open_demo_site(cloud.settings)
    before, objects = path.read_bytes(), _objects(deployed)
    record = uuid5_text(_UUID_NAMESPACE, "debian-12-arm")
    imageless = ComponentDefinition("arm_vm", appliances=(f"{{marketplace_url}}/appliance/{record}",),
                                    site_variables=(VariableSpec("template_id", "VM template"), VariableSpec("image_id", "image")))
    operation = EnableComponent(path, password_of(cloud), imageless, poll_interval=POLL, cloud_user=USER)
    review = EnableReview("arm_vm", await plan_provision(cloud, imageless, cloud_user=USER), Preview("enable arm_vm"))
    context = RunContext(lambda event: None)
    with pytest.raises(SiteError) as error:
        await run_operation(cloud, operation, review, context)
    events = context.events
    assert error.value.title == "arm_vm: site variables missing" and "Removed what it had created: image " in error.value.detail
    assert any(e.step.startswith("undo: delete image") and e.state == "done" for e in events)
    assert any(e.step.startswith("undo: delete ACL rule") and e.state == "done" for e in events)
    assert _objects(deployed) == objects and path.read_bytes() == before
    # one failed record: the rule it had added, what the rollback removed and why
    [record] = [e for e in cloud.audit.entries() if e["action"] == "site.enable_component"]
    assert record["outcome"] == "failed" and record["details"]["error"] == error.value.title
    assert "enabling arm_vm failed" in record["details"]["undo_reason"] and "not_undone" not in record["details"]
    undone = record["details"]["undone"]
    assert any(u.startswith("image ") for u in undone) and any(u.startswith("ACL rule ") for u in undone)
    assert [f"ACL rule {g['rule_id']}" for g in record["details"]["grants"]] == [u for u in undone if u.startswith("ACL")]
    assert not [e for e in cloud.audit.entries() if e["action"].endswith(".delete") or e["action"] == "acl.create"]
