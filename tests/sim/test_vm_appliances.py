"""What the simulated appliances report: READY, the document database's CPU needs, the automation key."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_ssh_public_key

from tests.sim.one_client import one, states
from tests.waiting import wait_until
from tui.sim.lifecycle import vm_is_ready
from tui.sim.server import SimServer

ACTIVE, POWEROFF, UNDEPLOYED = 3, 8, 9


def _host(sim: SimServer, name: str) -> int:
    return next(h.id for h in sim.site.hosts.values() if h.name == name)


#: what the appliances' VM templates carry (tui.sim.catalog): a gate token and REPORT_READY, without
#: which nothing the guest says reaches the user template (tui.sim.appliances)
REPORTING = 'CONTEXT = [ NETWORK = "YES", TOKEN = "YES", REPORT_READY = "YES" ]'


def _role_vm(sim: SimServer, role: str, host: str | None = None, extra: str = "",
             context: str = REPORTING) -> int:
    requirements = f'\nSCHED_REQUIREMENTS = "ID = {_host(sim, host)}"' if host else ""
    text = f'ROLE_NAME = "{role}"\nSERVICE_ID = "3"{requirements}\n{context}\n{extra}'
    return one(sim).template.instantiate(0, f"{role}_0_(service_3)", False, text)


def _user_template(sim: SimServer, vm_id: int) -> dict[str, Any]:
    return one(sim).vm.info(vm_id).USER_TEMPLATE


def _ready(sim: SimServer, vm_id: int) -> bool:
    return _user_template(sim, vm_id).get("READY") == "YES"


def test_a_role_vm_reports_ready_after_it_runs(sim: SimServer) -> None:
    vm_id = _role_vm(sim, sim.site.naming.role_objectstore)
    wait_until(lambda: _ready(sim, vm_id), what="READY=YES")
    assert vm_is_ready(sim.site.vms[vm_id])


def test_an_ordinary_vm_reports_nothing(sim: SimServer) -> None:
    client = one(sim)
    plain = client.template.instantiate(0, "plain")
    marker = _role_vm(sim, sim.site.naming.role_timeseries)
    wait_until(lambda: _ready(sim, marker), what="the role VM READY")
    assert "READY" not in client.vm.info(plain).USER_TEMPLATE


def test_the_manager_on_a_host_without_avx_never_becomes_ready_until_moved(sim: SimServer) -> None:
    client = one(sim)
    vm_id = _role_vm(sim, sim.site.naming.role_manager, host="kvm-westmere-01")
    error = wait_until(lambda: _user_template(sim, vm_id).get("DB_ERROR"), what="DB_ERROR")
    assert "lacks avx" in error and "READY" not in _user_template(sim, vm_id)
    client.vm.action("undeploy", vm_id)
    wait_until(lambda: states(client, vm_id) == (UNDEPLOYED, 0), what="UNDEPLOYED")
    client.vm.deploy(vm_id, _host(sim, "kvm-cascadelake-01"))
    wait_until(lambda: _ready(sim, vm_id), what="READY on a host with avx")
    assert "DB_ERROR" not in _user_template(sim, vm_id)


def test_hosts_without_reported_features_or_of_another_architecture_fail_the_database(sim: SimServer) -> None:
    manager = sim.site.naming.role_manager
    legacy = _role_vm(sim, manager, host="kvm-legacy-01")
    # the base template says OS/ARCH x86_64, which keeps the scheduler off the aarch64 host
    arm = _role_vm(sim, manager, host="arm-ampere-01", extra='OS = [ ARCH = "aarch64" ]')
    assert "KVM_CPU_FEATURES" in wait_until(lambda: _user_template(sim, legacy).get("DB_ERROR"), what="DB_ERROR")
    assert "x86_64" in wait_until(lambda: _user_template(sim, arm).get("DB_ERROR"), what="DB_ERROR")


def test_a_cpu_model_takes_effect_on_the_next_definition_only(sim: SimServer) -> None:
    client = one(sim)
    vm_id = _role_vm(sim, sim.site.naming.role_manager, host="kvm-broadwell-01")
    wait_until(lambda: _ready(sim, vm_id), what="READY on Broadwell")
    client.vm.updateconf(vm_id, 'CPU_MODEL = [ MODEL = "Cascadelake-Server-noTSX" ]', 1)
    client.vm.action("reboot", vm_id)
    wait_until(lambda: _ready(sim, vm_id), what="READY after a reboot (same domain)")
    client.vm.action("poweroff", vm_id)
    wait_until(lambda: states(client, vm_id) == (POWEROFF, 0), what="POWEROFF")
    client.vm.action("resume", vm_id)
    # the host does not offer that model: libvirt refuses the boot (fallback='forbid',
    # src/vmm/LibVirtDriverKVM.cc) and a failed BOOT_POWEROFF goes back to POWEROFF
    error = wait_until(lambda: _user_template(sim, vm_id).get("ERROR"), what="the boot refused with a foreign model")
    assert "Cascadelake-Server-noTSX" in error
    assert states(client, vm_id) == (POWEROFF, 0)
    client.vm.updateconf(vm_id, 'CPU_MODEL = [ MODEL = "host-passthrough" ]', 1)
    client.vm.action("resume", vm_id)
    wait_until(lambda: _ready(sim, vm_id), what="READY with host-passthrough")


def test_the_document_db_attribute_marks_any_vm(sim: SimServer) -> None:
    attribute = sim.site.naming.document_db_attribute
    vm_id = _role_vm(sim, "other", host="kvm-westmere-01", extra=f'{attribute} = "YES"')
    assert wait_until(lambda: _user_template(sim, vm_id).get("DB_ERROR"), what="DB_ERROR")


def test_the_automation_vm_publishes_a_fresh_ed25519_key(sim: SimServer) -> None:
    naming = sim.site.naming
    first = _role_vm(sim, naming.role_automation)
    second = _role_vm(sim, naming.role_automation)
    keys = [
        wait_until(lambda vm=vm: _user_template(sim, vm).get(naming.automation_key_attribute), what="a public key")
        for vm in (first, second)
    ]
    assert keys[0] != keys[1]
    for key in keys:
        assert key.startswith("ssh-ed25519 ")
        assert isinstance(load_ssh_public_key(key.encode()), Ed25519PublicKey)


def test_a_vm_without_a_gate_token_or_report_ready_reports_nothing(sim: SimServer) -> None:
    """Only the guest writes READY, through the gate, with the token TOKEN=YES gives it, and the
    contextualization reports only with REPORT_READY=YES (OneGateCloudAuth.rb 31-36,
    VirtualMachineContext.cc 236 and 614 at release-7.0.2; one-apps net-99-report-ready)."""
    naming = sim.site.naming
    silent = _role_vm(sim, naming.role_automation, context='CONTEXT = [ NETWORK = "YES" ]')
    unreported = _role_vm(sim, naming.role_objectstore, context='CONTEXT = [ TOKEN = "YES" ]')
    marker = _role_vm(sim, naming.role_automation)
    wait_until(lambda: _ready(sim, marker) and _user_template(sim, marker).get(naming.automation_key_attribute),
               what="the reporting VM READY with its key")
    assert "READY" not in _user_template(sim, silent) and naming.automation_key_attribute not in _user_template(
        sim, silent)
    assert "READY" not in _user_template(sim, unreported)
