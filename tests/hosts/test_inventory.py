"""The host inventory against the embedded site: verdicts, known-good marks, targets, database VMs."""

from __future__ import annotations

from tests.hosts.conftest import Connect
from tests.waiting import wait_until
from tui.domain.cpu import HostVerdictKind, VmVerdictKind
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.procedures.site_record import RecordedRole, RecordedVm, SiteRecord, save_site_record, site_record_path
from tui.sim.server import SimServer


def _by_name(inventory, name):  # type: ignore[no-untyped-def]
    return next(row for row in inventory.hosts if row.name == name)


async def test_host_verdicts_with_and_without_avx_features_and_arch(sim: SimServer, connect: Connect) -> None:
    inventory = await load_inventory(connect(sim))

    good = _by_name(inventory, "kvm-cascadelake-01")
    assert good.verdict.kind is HostVerdictKind.COMPATIBLE
    assert (good.sse4_2, good.avx) == (True, True)
    assert good.known_good  # Cascadelake-Server-noTSX is one of the spec's models

    no_avx = _by_name(inventory, "kvm-westmere-01")
    assert no_avx.verdict.kind is HostVerdictKind.INCOMPATIBLE
    assert (no_avx.sse4_2, no_avx.avx) == (True, False)
    assert "no AVX" in no_avx.verdict.reasons
    assert not no_avx.known_good

    silent = _by_name(inventory, "kvm-legacy-01")
    assert silent.verdict.kind is HostVerdictKind.UNKNOWN
    assert (silent.sse4_2, silent.avx) == (None, None)
    assert "reports no CPU features" in silent.verdict.text

    arm = _by_name(inventory, "arm-ampere-01")
    assert arm.verdict.kind is HostVerdictKind.INCOMPATIBLE
    assert "aarch64" in arm.verdict.text


async def test_targets_are_usable_compatible_hosts_ranked_by_free_capacity(sim: SimServer, connect: Connect) -> None:
    inventory = await load_inventory(connect(sim))
    targets = [ranked.host.name for ranked in inventory.ranking.eligible]
    # the disabled and the offline compatible hosts are not targets; the roomiest comes first
    assert targets == ["kvm-cascadelake-01", "kvm-broadwell-01"]
    reasons = {ex.host.name: ex.reason for ex in inventory.ranking.excluded}
    assert reasons["kvm-broadwell-02"].startswith("host state")
    assert reasons["kvm-cascadelake-02"].startswith("host state")
    assert "no AVX" in reasons["kvm-westmere-01"]


async def test_free_capacity_thresholds_come_from_settings(deployed: SimServer, connect: Connect) -> None:
    inventory = await load_inventory(connect(deployed, min_free_memory_mib=200 * 1024))
    assert [r.host.name for r in inventory.ranking.eligible] == ["kvm-cascadelake-01"]
    assert "free memory" in next(ex.reason for ex in inventory.ranking.excluded if ex.host.name == "kvm-broadwell-01")

    # each compatible host runs one toolkit VM, so neither has every CPU free
    inventory = await load_inventory(connect(deployed, min_free_cpu_percent=100.0))
    assert inventory.ranking.eligible == ()
    assert any("free CPU" in ex.reason for ex in inventory.ranking.excluded)


async def test_known_good_models_extend_from_settings(sim: SimServer, connect: Connect) -> None:
    inventory = await load_inventory(connect(sim, extra_cpu_models=("SandyBridge",)))
    assert _by_name(inventory, "kvm-legacy-01").known_good
    assert "SandyBridge" in inventory.known_good
    assert "Broadwell-noTSX" in inventory.known_good


async def test_fresh_site_has_no_document_db_vm(sim: SimServer, connect: Connect) -> None:
    inventory = await load_inventory(connect(sim))
    assert inventory.db_vms == ()
    assert inventory.at_risk == ()


async def test_manager_on_avx_less_host_is_at_risk_and_never_ready(deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    inventory = await load_inventory(site)
    [manager] = inventory.db_vms
    assert manager.identified_by == "role manager"
    assert manager.host_name == "kvm-westmere-01"
    assert manager.verdict.kind is VmVerdictKind.MODEL_LACKS_FLAGS
    assert manager.at_risk and manager.flagged

    # the appliance has reported (its database could not start), and READY never came
    def reported() -> bool:
        deployed.site.advance()
        with deployed.site.lock:
            vm = deployed.site.vms[manager.id]
            return any(name == "DB_ERROR" for name, _ in vm.user_template)

    wait_until(reported, timeout=20, what="the manager appliance's report")
    detail = await site.cloud.vm_info(manager.id)
    assert detail.summary.running and not detail.ready
    assert (await load_inventory(site)).db_vm(manager.id).application == "not ready"  # type: ignore[union-attr]


async def test_other_database_vms_are_found_by_the_settings_attribute(deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    before = await load_inventory(site)
    other = next(vm for vm in await site.cloud.list_vms() if vm.role_name == "timeseries")
    assert before.db_vm(other.id) is None
    await site.cloud.vm_update(other.id, f'{site.naming.document_db_attribute} = "YES"', append=1)
    after = await load_inventory(site)
    row = after.db_vm(other.id)
    assert row is not None and row.identified_by == f"attribute {site.naming.document_db_attribute}"
    # on a compatible host without a CPU model: not at risk, but flagged for a move that sets one
    assert row.verdict.kind is VmVerdictKind.UNKNOWN
    assert row.flagged and not row.at_risk


async def test_vms_listed_by_the_site_record_count_as_database_vms(deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    other = next(vm for vm in await site.cloud.list_vms() if vm.role_name == "timeseries")
    record = SiteRecord(endpoint=site.settings.xmlrpc_url, service_id=1, service_name="toolkit", template_id=0,
                        template_name="toolkit", platform_version="7.0.0", created="2025-03-14T09:00:00Z",
                        roles=(RecordedRole("manager", (RecordedVm(other.id, other.name),)),))
    save_site_record(site.settings, record)
    inventory = await load_inventory(site)
    row = inventory.db_vm(other.id)
    assert row is not None and row.identified_by == "site record"
    assert inventory.notes == ()


async def test_an_unreadable_site_record_is_a_note_not_a_failure(deployed: SimServer, connect: Connect) -> None:
    site = connect(deployed)
    path = site_record_path(site.settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    inventory = await load_inventory(site)
    assert len(inventory.db_vms) == 1  # the manager, found by its role
    assert "site record cannot be read" in inventory.notes[0]
