"""What the appliances inside the simulated VMs report once they boot.

A VM that belongs to a service role (ROLE_NAME, usually with SERVICE_ID) publishes READY=YES in
its USER_TEMPLATE a little after it reaches RUNNING, as appliances do through OneGate. A VM that
runs the document database (its role is one of `naming.document_db_roles`, or it carries
`naming.document_db_attribute`) only becomes READY on an x86_64 host whose KVM_CPU_FEATURES list
sse4_2 and avx and when its CPU model is absent, host-passthrough or one the host offers;
otherwise the database never starts and DB_ERROR says why. The automation role's VM publishes a
freshly generated ed25519 public key under `naming.automation_key_attribute`. A VM booted from
the route-manager appliance's image configures its API's token and publishes it when it generated it
(`tui.sim.route_manager.configure`: appliances/routemanager/appliance.sh lines 141-163 of
6G-SANDBOX/marketplace-community); one booted from the DNS appliance's image publishes its API token
`ONEAPP_DNS_TOKEN` and, when none was given, the admin password it generated (appliances/dns/
appliance.sh lines 86-93), both through the gate.
Each boot that (re)defines the VM clears READY and DB_ERROR and reports again.

What a guest publishes reaches the user template only through the gate, which takes no request
without the VM's token (src/cloud/common/CloudAuth/OneGateCloudAuth.rb lines 31-36 at
release-7.0.2), and a VM has one only when its CONTEXT says TOKEN="YES" (src/vm/
VirtualMachineContext.cc line 236, `generate_token_context` line 614); the contextualization
packages report READY=YES only when CONTEXT says REPORT_READY="YES" too (one-apps
context-linux/src/etc/one-context.d/net-99-report-ready, appliances/scripts/context_service_net-99.sh).
So a VM without them publishes nothing (no READY, no DB_ERROR, no key): `tui.domain.guest_ready`
is the console's side of the same rule.
"""

from __future__ import annotations

from tui.domain.one_states import LcmState, VmState
from tui.domain.template_text import scalar
from tui.sim.state import SimHost, SimSite, SimVm

#: simulated seconds between RUNNING and the appliance's reports
READY_DELAY = 12.0
KEY_DELAY = 6.0
DB_ERROR_ATTRIBUTE = "DB_ERROR"
#: the route-manager and DNS appliances (this site's marketplace record names) and what their VMs
#: publish: marketplace-community appliances/routemanager/appliance.sh line 148, appliances/dns/
#: appliance.sh lines 88 and 93
ROUTE_MANAGER_APPLIANCE = "Route Manager API"
ROUTE_MANAGER_TOKEN_ATTRIBUTE = "ONEAPP_ROUTEMANAGER_APITOKEN"
DNS_APPLIANCE = "DNS Server"
DNS_TOKEN_ATTRIBUTE = "ONEAPP_DNS_TOKEN"
DNS_PASSWORD_ATTRIBUTE = "ONEAPP_DNS_PASSWORD"


def role_of(vm: SimVm) -> str:
    return scalar(vm.user_template, "ROLE_NAME", "") or scalar(vm.template, "ROLE_NAME", "")


def runs_document_db(site: SimSite, vm: SimVm) -> bool:
    if role_of(vm) in site.naming.document_db_roles:
        return True
    flag = scalar(vm.user_template, site.naming.document_db_attribute, "") or scalar(
        vm.template, site.naming.document_db_attribute, ""
    )
    return flag.strip().upper() in ("YES", "TRUE", "1")


def vm_is_ready(vm: SimVm) -> bool:
    """RUNNING (ACTIVE/RUNNING) and READY=YES published, what OneFlow's ready gate waits for."""
    return vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.RUNNING and scalar(vm.user_template, "READY", "").upper() == "YES"


def current_host(site: SimSite, vm: SimVm) -> SimHost | None:
    return site.hosts.get(vm.history[-1].host_id) if vm.history else None


def document_db_problem(host: SimHost | None, cpu_model: str) -> str:
    """Why the document database cannot start on this host with this CPU model ("" when it can)."""
    if host is None:
        return "the VM has no host"
    arch = scalar(host.template, "ARCH", "")
    if arch != "x86_64":
        return f"host {host.name} is {arch or 'of an unknown architecture'}, the database needs x86_64"
    raw = scalar(host.template, "KVM_CPU_FEATURES", "")
    if not raw:
        return f"host {host.name} reports no KVM_CPU_FEATURES, sse4_2 and avx cannot be confirmed"
    features = {f.strip().lower() for f in raw.split(",")}
    missing = [flag for flag in ("sse4_2", "avx") if flag not in features]
    if missing:
        return f"host {host.name} CPU lacks {' and '.join(missing)}, the database needs sse4_2 and avx"
    models = scalar(host.template, "KVM_CPU_MODELS", "").split()
    if cpu_model and cpu_model != "host-passthrough" and cpu_model not in models:
        return f"CPU model {cpu_model} is not offered by host {host.name} (KVM_CPU_MODELS)"
    return ""


def new_public_key(comment: str, seed: bytes | None = None) -> str:
    """An OpenSSH ed25519 public key line; from `seed` (32 bytes) when given, so a seeded site
    publishes the same keys run after run (stable screenshots)."""
    # imported on first use: cryptography costs ~40 ms of the demo site's start, and a fresh site
    # publishes no key until the automation VM boots
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.from_private_bytes(seed) if seed else Ed25519PrivateKey.generate()
    key = private.public_key()
    text = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return f"{text} {comment}"


def _set(vm: SimVm, name: str, value: str) -> None:
    vm.user_template = [a for a in vm.user_template if a[0] != name] + [(name, value)]
    vm.touch()


def _drop(vm: SimVm, *names: str) -> None:
    before = len(vm.user_template)
    vm.user_template = [a for a in vm.user_template if a[0] not in names]
    if len(vm.user_template) != before:
        vm.touch()


def appliance_names(site: SimSite, vm: SimVm) -> set[str]:
    """The marketplace appliance names the VM's disk images carry."""
    names = set()
    for name, value in vm.template:
        if name != "DISK" or not isinstance(value, list):
            continue
        image = site.images.get(int(dict(value).get("IMAGE_ID", "-1") or -1))
        if image is not None:
            names.add(scalar(image.template, site.naming.appliance_name_attribute, ""))
    return names - {""}


def _configure_route_manager(site: SimSite, vm: SimVm) -> None:
    from tui.sim import route_manager

    epoch = vm.epoch
    manager = route_manager.managers(site).get(vm.id)
    if manager is not None:
        manager.up = False  # the service restarts with the VM

    def configure() -> None:
        if site.vms.get(vm.id) is vm and vm.epoch == epoch and route_manager.running(vm):
            route_manager.configure(site, vm, gate=_context_says(vm, "TOKEN"))

    site.after(KEY_DELAY, configure)


def _configure_dns(site: SimSite, vm: SimVm) -> None:
    """configure_dns (appliances/dns/appliance.sh lines 79-111): a persistent API token published
    (line 88), then a generated admin password when none was given (lines 90-94)."""
    import secrets

    from tui.sim import route_manager

    epoch = vm.epoch

    def configure() -> None:
        live = site.vms.get(vm.id) is vm and vm.epoch == epoch and route_manager.running(vm)
        if not live or not _context_says(vm, "TOKEN") or scalar(vm.user_template, DNS_TOKEN_ATTRIBUTE, ""):
            return
        _set(vm, DNS_TOKEN_ATTRIBUTE, secrets.token_hex(32))
        given = scalar(vm.user_template, DNS_PASSWORD_ATTRIBUTE, "")
        if not given:
            _set(vm, DNS_PASSWORD_ATTRIBUTE, secrets.token_urlsafe(32))

    site.after(KEY_DELAY, configure)


def _context_says(vm: SimVm, name: str) -> bool:
    """CONTEXT's `name` is YES (the guest's contextualization reads its CONTEXT)."""
    for attr, value in vm.template:
        if attr == "CONTEXT" and isinstance(value, list):
            return scalar(value, name, "").strip().upper() == "YES"
    return False


def on_boot(site: SimSite, vm: SimVm) -> None:
    """Called when the VM reaches RUNNING: schedule what its appliance will report."""
    names = appliance_names(site, vm)
    if ROUTE_MANAGER_APPLIANCE in names:
        _configure_route_manager(site, vm)
    if DNS_APPLIANCE in names:
        _configure_dns(site, vm)
    role = role_of(vm)
    service = scalar(vm.user_template, "SERVICE_ID", "")
    if not role and not service and not runs_document_db(site, vm):
        return
    if not _context_says(vm, "TOKEN"):
        return  # no gate token: nothing the guest says reaches the user template
    reports_ready = _context_says(vm, "REPORT_READY")
    _drop(vm, "READY", DB_ERROR_ATTRIBUTE)
    epoch = vm.epoch

    def still_running() -> bool:
        return site.vms.get(vm.id) is vm and vm.epoch == epoch and vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.RUNNING

    def report_ready() -> None:
        if not still_running():
            return
        if runs_document_db(site, vm):
            problem = document_db_problem(current_host(site, vm), vm.deployed_cpu_model)
            if problem:
                _set(vm, DB_ERROR_ATTRIBUTE, f"document database cannot start: {problem}")
                return
        if reports_ready:
            _set(vm, "READY", "YES")

    def publish_key() -> None:
        if still_running() and not scalar(vm.user_template, site.naming.automation_key_attribute, ""):
            _set(vm, site.naming.automation_key_attribute,
                 new_public_key(f"{role}@one-{vm.id}", site.rng.randbytes(32)))

    if role == site.naming.role_automation:
        site.after(KEY_DELAY, publish_key)
    site.after(READY_DELAY, report_ready)
