"""Filling core.yaml from the cloud, against the embedded site after a toolkit deployment."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from tests.conftest import SimFactory
from tests.procedure_run import collect as reported
from tests.site.conftest import open_demo_site, settings_for
from tui.adapters.vault import read_vault_file
from tui.domain.severity import Severity
from tui.domain.site_checks import check_site_config
from tui.domain.site_config import SiteConfig
from tui.domain.site_record import RecordedRole, RecordedVm, SiteRecord
from tui.procedures.connection import SiteConnection
from tui.procedures.site.fill import fill_site_file, gather_cloud_facts, plan_fill
from tui.procedures.site.workspace import vault_password
from tui.procedures.site_record import save_site_record
from tui.sim.repos import DEMO_ADMIN_KEY, template_core_yaml
from tui.sim.server import SimServer


def objectstore_vm(server: SimServer) -> tuple[int, str]:
    """(VM id, IP) of the deployed object store VM, read from the embedded site's own state."""
    site = server.site
    with site.lock:
        service = next(d for d in site.documents.values() if d.type == 100)
        role = next(r for r in service.body["roles"] if r["name"] == site.naming.role_objectstore)
        vm_id = int(role["nodes"][0]["deploy_id"])
        nic = next(value for name, value in site.vms[vm_id].template if name == "NIC")
        return vm_id, next(v for k, v in nic if k == "IP")


async def test_facts_from_the_deployed_cloud(cloud: SiteConnection, deployed: SimServer) -> None:
    vm_id, ip = objectstore_vm(deployed)
    facts = await gather_cloud_facts(cloud, SiteConfig.parse(template_core_yaml()))
    assert facts.objectstore_address == ip
    assert facts.objectstore_source.startswith("toolkit service") and f"VM {vm_id}" in facts.objectstore_source
    assert facts.gate_endpoint == deployed.site.system_config["ONEGATE_ENDPOINT"]
    assert facts.default_network_id == 0 and facts.nic_mtu == 1500
    assert facts.automation_user == "tkauto"
    assert facts.ids is not None and facts.ids.templates == frozenset(deployed.site.templates)
    assert facts.ids.images == frozenset(deployed.site.images) and facts.ids.networks == frozenset(deployed.site.vnets)
    assert facts.notes == ()


async def test_the_site_record_is_preferred(cloud: SiteConnection, deployed: SimServer) -> None:
    vm_id, ip = objectstore_vm(deployed)
    record = SiteRecord(
        endpoint=cloud.settings.xmlrpc_url, service_id=1, service_name="toolkit", template_id=0, template_name="toolkit",
        platform_version="7.0.0", created="2026-01-01T00:00:00+00:00",
        roles=(RecordedRole(cloud.naming.role_objectstore, (RecordedVm(vm_id, "objectstore_0"),)),),
        networks=(("Public", "1"),), cloud_username="oneadmin",
    )
    save_site_record(cloud.settings, record)
    facts = await gather_cloud_facts(cloud)
    assert facts.objectstore_address == ip and facts.objectstore_source == f"the site record of service 1, VM {vm_id}"
    assert facts.default_network_id == 1 and facts.automation_user == "oneadmin"


async def test_fill_writes_once_and_keeps_comments(cloud: SiteConnection, deployed: SimServer) -> None:
    _vm, ip = objectstore_vm(deployed)
    path = await open_demo_site(cloud.settings)
    password = vault_password(cloud.settings)
    assert password is not None
    plan = await plan_fill(cloud, path, password)
    by_path = {c.path: c for c in plan.changes}
    assert by_path["site_s3_server.endpoint"].new == f"https://{ip}:9000"
    assert by_path["site_s3_server.endpoint"].old == "https://10.0.0.21:9000"
    assert by_path["site_onegate"].new == "10.11.28.1"
    assert "site_networks_id.default" not in by_path  # already 0
    preview = plan.preview(password)
    assert all(c.cli.startswith("ansible-vault edit --vault-password-file ") for c in preview.changes)
    assert "(from the object store VM: toolkit service 1, VM " in preview.changes[0].description
    events = await reported(partial(fill_site_file, cloud, plan, password))
    assert events[-1].state == "done"
    text = read_vault_file(path, password)
    assert f'endpoint: "https://{ip}:9000"' in text and 'site_onegate: "10.11.28.1"' in text
    assert "# Object store of the toolkit. The endpoint is the object store VM's address" in text
    again = await plan_fill(cloud, path, password)
    assert again.changes == ()
    assert again.preview(password).is_noop
    events = await reported(partial(fill_site_file, cloud, again, password))
    assert events[-1].state == "skipped"
    entries = [e for e in cloud.audit.entries() if e["action"] == "site.edit"]
    assert len(entries) == 1 and entries[0]["details"]["changes"]["site_onegate"] == "10.11.28.1"


async def test_cloud_checks_find_missing_ids_and_the_mtu(cloud: SiteConnection) -> None:
    config = SiteConfig.parse(template_core_yaml()).edit([
        ("site_variables.tn_bastion.template_id", 99), ("site_variables.vm_kvm.image_id", 98),
        ("site_networks_id.default", 7), ("site_vxlan_guest_mtu", 1500), ("site_s3_server.endpoint", "https://10.0.0.9:9000"),
    ])
    facts = await gather_cloud_facts(cloud, config)
    findings = check_site_config(config, cloud=facts.ids, nic_mtu=facts.nic_mtu)
    errors = {f.path: f.message for f in findings if f.severity is Severity.ERROR}
    assert errors["site_variables.tn_bastion.template_id"] == "VM template 99 does not exist in the cloud"
    assert errors["site_variables.vm_kvm.image_id"] == "image 98 does not exist in the cloud"
    assert errors["site_networks_id.default"] == "virtual network 7 does not exist in the cloud"
    assert "guest MTU 1500 must be lower than the network's MTU 1500" in errors["site_vxlan_guest_mtu"]
    good = SiteConfig.parse(template_core_yaml()).edit([
        ("site_s3_server.endpoint", "https://10.0.0.9:9000"), ("site_public_ip", "192.0.2.10"), ("site_onegate", "10.11.28.1"),
        ("site_admin_ssh_public_key", f"ssh-ed25519 {DEMO_ADMIN_KEY}")])
    assert not [f for f in check_site_config(good, cloud=facts.ids, nic_mtu=facts.nic_mtu) if f.severity is Severity.ERROR]


async def test_fresh_site_has_no_object_store(sim_factory: SimFactory, tmp_path: Path) -> None:
    site = SiteConnection(settings_for(sim_factory(scenario="fresh"), tmp_path))
    await site.connect()
    try:
        facts = await gather_cloud_facts(site, SiteConfig.parse(template_core_yaml()))
    finally:
        await site.close()
    assert facts.objectstore_address is None and facts.gate_endpoint
    assert any("no toolkit deployment found" in note for note in facts.notes)
