"""Seeded scenarios of the simulated site.

`fresh`: a frontend before the toolkit: users and groups, KVM hosts of several CPU generations
(one without AVX, one reporting no CPU features, one aarch64, one disabled, one offline), the
image/system/file datastores, a /24 OAM network on a bridge and a VXLAN trial network, the
bootstrap marketplaces 0 and 1 (disabled) and the site's own marketplace 100 with the apps the
cloud imported from it (tui.sim.catalog), a base image and VM template.
`deployed`: the same after a toolkit deployment (tui.sim.flow_api.deploy_toolkit_now).
`SimConfig.extra_vms` adds that many ordinary RUNNING VMs, built in bulk (50,000 in seconds).
Both also get the sites repository and component library (tui.sim.repos) in the state directory.
"""

from __future__ import annotations

import secrets
import threading
import time

from tui.domain.one_states import DatastoreType, HostState, ImageState
from tui.domain.permissions import Permissions
from tui.domain.template_text import Template
from tui.sim.acl import add_rule, add_vdc_rules
from tui.sim.leases import ip_at, mac_at, mac_for_ip
from tui.sim.platform import version_key
from tui.sim.repos import seed_site_repositories
from tui.sim.state import (
    SimAddressRange,
    SimDatastore,
    SimGroup,
    SimHistory,
    SimHost,
    SimImage,
    SimSite,
    SimUser,
    SimVm,
    SimVmTemplate,
    SimVnet,
)

#: name of the cloud user the toolkit's automation uses
AUTOMATION_USER = "tkauto"
#: its password on the embedded site (known, as the demo vault password is: the console's login
#: check of app_automation_cloud_password needs the right one in the demo and the scenes)
AUTOMATION_PASSWORD = "demo-tkauto-password"
ONEGATE_ENDPOINT = "http://10.11.28.1:5030"

_X86_MODELS = "qemu64 kvm64 Nehalem Westmere SandyBridge IvyBridge Haswell-noTSX Broadwell-noTSX"
_HOSTS: tuple[tuple[str, HostState, dict[str, str]], ...] = (
    ("kvm-cascadelake-01", HostState.MONITORED, {
        "ARCH": "x86_64", "MODELNAME": "Intel(R) Xeon(R) Gold 6230R CPU @ 2.10GHz", "CPUSPEED": "2100",
        "KVM_CPU_MODEL": "Cascadelake-Server-noTSX",
        "KVM_CPU_MODELS": f"{_X86_MODELS} Skylake-Server-noTSX Cascadelake-Server-noTSX",
        "KVM_CPU_FEATURES": "sse4_1,sse4_2,ssse3,popcnt,aes,pclmulqdq,avx,avx2,fma,bmi1,bmi2,avx512f,avx512cd,"
                            "avx512bw,avx512dq,avx512vl,avx512vnni",
    }),
    ("kvm-broadwell-01", HostState.MONITORED, {
        "ARCH": "x86_64", "MODELNAME": "Intel(R) Xeon(R) CPU E5-2630 v4 @ 2.20GHz", "CPUSPEED": "2200",
        "KVM_CPU_MODEL": "Broadwell-noTSX", "KVM_CPU_MODELS": _X86_MODELS,
        "KVM_CPU_FEATURES": "sse4_1,sse4_2,ssse3,popcnt,aes,pclmulqdq,avx,avx2,fma,bmi1,bmi2",
    }),
    ("kvm-westmere-01", HostState.MONITORED, {
        "ARCH": "x86_64", "MODELNAME": "Intel(R) Xeon(R) CPU X5650 @ 2.67GHz", "CPUSPEED": "2670",
        "KVM_CPU_MODEL": "Westmere", "KVM_CPU_MODELS": "qemu64 kvm64 Nehalem Westmere",
        "KVM_CPU_FEATURES": "sse4_1,sse4_2,ssse3,popcnt,aes,pclmulqdq",
    }),
    ("kvm-legacy-01", HostState.MONITORED, {
        # an older monitoring probe: models reported, features not
        "ARCH": "x86_64", "MODELNAME": "Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz", "CPUSPEED": "2600",
        "KVM_CPU_MODEL": "SandyBridge", "KVM_CPU_MODELS": "qemu64 kvm64 Nehalem Westmere SandyBridge",
    }),
    ("arm-ampere-01", HostState.MONITORED, {
        "ARCH": "aarch64", "MODELNAME": "Neoverse-N1", "CPUSPEED": "3000",
        "KVM_CPU_MODEL": "host", "KVM_CPU_MODELS": "cortex-a57 cortex-a72 max host",
        "KVM_CPU_FEATURES": "fp,asimd,evtstrm,aes,pmull,sha1,sha2,crc32,atomics,fphp,asimdhp,cpuid,asimdrdm,lrcpc,"
                            "dcpop,asimddp",
    }),
    ("kvm-broadwell-02", HostState.DISABLED, {
        "ARCH": "x86_64", "MODELNAME": "Intel(R) Xeon(R) CPU E5-2630 v4 @ 2.20GHz", "CPUSPEED": "2200",
        "KVM_CPU_MODEL": "Broadwell-noTSX", "KVM_CPU_MODELS": _X86_MODELS,
        "KVM_CPU_FEATURES": "sse4_1,sse4_2,ssse3,popcnt,aes,pclmulqdq,avx,avx2,fma,bmi1,bmi2",
    }),
    ("kvm-cascadelake-02", HostState.OFFLINE, {
        "ARCH": "x86_64", "MODELNAME": "Intel(R) Xeon(R) Gold 6230R CPU @ 2.10GHz", "CPUSPEED": "2100",
        "KVM_CPU_MODEL": "Cascadelake-Server-noTSX",
        "KVM_CPU_MODELS": f"{_X86_MODELS} Skylake-Server-noTSX Cascadelake-Server-noTSX",
        "KVM_CPU_FEATURES": "sse4_1,sse4_2,ssse3,popcnt,aes,avx,avx2,fma,avx512f",
    }),
)

_SYSTEM_CONFIG: dict[str, str] = {
    "API_LIST_ORDER": "DESC", "DEFAULT_AUTH": "default", "DEFAULT_DEVICE_PREFIX": "vd", "DEFAULT_UMASK": "177",
    "DS_MONITOR_VM_DISK": "10", "KEEPALIVE_MAX_CONN": "30", "KEEPALIVE_TIMEOUT": "15",
    "LISTEN_ADDRESS": "0.0.0.0", "MAC_PREFIX": "02:00", "MANAGER_TIMER": "15", "MAX_CONN": "240",
    "MAX_CONN_BACKLOG": "480", "MESSAGE_SIZE": "1073741824", "MONITORING_INTERVAL_DATASTORE": "300",
    # no MONITORING_INTERVAL_HOST/VM: they live in monitord.conf, not oned.conf (share/etc/oned.conf
    # 73-74 at release-6.10.0, 7.0.0 and 7.4.0 set only DATASTORE and MARKET)
    "MONITORING_INTERVAL_MARKET": "600",
    "NETWORK_SIZE": "254", "ONEGATE_ENDPOINT": ONEGATE_ENDPOINT, "PORT": "2633",
    "SCRIPTS_REMOTE_DIR": "/var/tmp/one", "SESSION_EXPIRATION_TIME": "900", "TIMEOUT": "15",
    "VM_SUBMIT_ON_HOLD": "NO",
}


def _vnet_template(items: dict[str, str]) -> Template:
    return list(items.items())


def _datastore_defaults(site: SimSite, ds: SimDatastore) -> Template:
    """What oned adds to every datastore's template: SAFE_DIRS and RESTRICTED_DIRS when unset
    (src/datastore/Datastore.cc 729-738 at release-7.0.0, 701-710 at 6.10.0), from 7.0 the
    TM_MAD_CONF's PERSISTENT_SNAPSHOTS, YES unless it says otherwise (Datastore.cc 533-548), and
    from 7.4 a system datastore's DS_LIVE_MIGRATE and DS_MIGRATE_SNAP."""
    names = {name for name, _ in ds.template}
    added: Template = [(k, v) for k, v in (("RESTRICTED_DIRS", "/"), ("SAFE_DIRS", "/var/tmp")) if k not in names]
    if version_key(site.config.one_version) >= (7, 0) and "PERSISTENT_SNAPSHOTS" not in names:
        added.append(("PERSISTENT_SNAPSHOTS", "YES"))
    if version_key(site.config.one_version) >= (7, 4) and dict(ds.template).get("TYPE") == "SYSTEM_DS":
        # 7.4 copies the TM_MAD_CONF's live-migration flags into a system datastore (Datastore.cc
        # 428-438 at release-7.4.0); the stock `ssh` entry says YES to both (oned.conf 1175-1177)
        added += [(k, "YES") for k in ("DS_LIVE_MIGRATE", "DS_MIGRATE_SNAP") if k not in names]
    return added


def seed_identities(site: SimSite) -> None:
    site.groups[0] = SimGroup(0, "oneadmin")
    # the bootstrap users group carries the Sunstone views (GroupPool.cc 71 at release-7.0.0)
    site.groups[1] = SimGroup(1, "users", template=[("SUNSTONE", [
        ("DEFAULT_VIEW", "cloud"), ("GROUP_ADMIN_DEFAULT_VIEW", "groupadmin"), ("GROUP_ADMIN_VIEWS", "groupadmin,cloud"),
        ("VIEWS", "cloud")])])
    site.users[0] = SimUser(0, "oneadmin", secrets.token_urlsafe(12), 0, "oneadmin", [0],
                            template=[("TOKEN_PASSWORD", secrets.token_hex(20))])
    site.users[1] = SimUser(1, "serveradmin", secrets.token_hex(20), 0, "oneadmin", [0], auth_driver="server_cipher",
                            template=[("TOKEN_PASSWORD", secrets.token_hex(20))])
    site.users[2] = SimUser(2, AUTOMATION_USER, AUTOMATION_PASSWORD, 1, "users", [1],
                            template=[("DESCRIPTION", "cloud account of the site toolkit's automation")])
    site.reserve_ids("user", 2)
    site.reserve_ids("group", 1)
    # the platform's default rules: users create their own objects, everyone uses zones and markets
    # (AclManager bootstrap, src/acl/AclManager.cc 91-119), then the default VDC's for the users group:
    # its hosts, networks and datastores (VdcPool.cc 69-70); a fresh 7.0.2 frontend lists these six
    add_rule(site, 0x200000001, 0x1000000000 | 0x8000000000 | 0x20000000000 | 0x400000000000 | 0x1000000000000
             | 0x20000000000000 | 0x100000000000000 | 0x400000000, 0x8, 0x400000000)
    add_rule(site, 0x400000000, 0x800000000000 | 0x400000000, 0x1, 0x400000000)
    add_rule(site, 0x400000000, 0x8000000000000 | 0x10000000000000 | 0x400000000, 0x1, 0x400000000)
    add_vdc_rules(site, 1)


def seed_infrastructure(site: SimSite) -> None:
    for host_id, (name, state, facts) in enumerate(_HOSTS):
        cores = 32 if "arm" in name else 40 if "cascadelake" in name else 20
        mem_kb = (256 if "cascadelake" in name else 128) * 1024 * 1024
        template = {**facts, "HOSTNAME": name, "HYPERVISOR": "kvm", "IM_MAD": "kvm", "VM_MAD": "kvm",
                    "KVM_MACHINES": "virt virt-8.2" if facts["ARCH"] == "aarch64" else "pc q35 pc-q35-8.2 pc-i440fx-8.2",
                    "TOTALCPU": str(cores * 100), "TOTALMEMORY": str(mem_kb), "RESERVED_CPU": "", "RESERVED_MEM": "",
                    "VERSION": site.config.one_version}
        if version_key(site.config.one_version) >= (7, 4):
            # the 7.4 KVM probe reports the host's memory encryption, NONE without SEV or TDX
            # (src/im_mad/remotes/kvm-probes.d/host/system/memory_encryption.rb at release-7.4.0)
            template["MEMORY_ENCRYPTION"] = "NONE"
        site.hosts[host_id] = SimHost(host_id, name, state, cores * 100, mem_kb, list(template.items()))
    site.reserve_ids("host", len(_HOSTS) - 1)
    site.datastores[0] = SimDatastore(0, "system", DatastoreType.SYSTEM_DS, "-", "ssh", 2_000_000, 1_600_000, [
        ("ALLOW_ORPHANS", "NO"), ("DISK_TYPE", "FILE"), ("DS_MIGRATE", "YES"), ("SHARED", "NO"),
        ("TM_MAD", "ssh"), ("TYPE", "SYSTEM_DS")])
    site.datastores[1] = SimDatastore(1, "default", DatastoreType.IMAGE_DS, "fs", "ssh", 4_000_000, 3_500_000, [
        ("ALLOW_ORPHANS", "NO"), ("CLONE_TARGET", "SYSTEM"), ("DISK_TYPE", "FILE"), ("DS_MAD", "fs"),
        ("LN_TARGET", "SYSTEM"), ("TM_MAD", "ssh"), ("TYPE", "IMAGE_DS")])
    site.datastores[2] = SimDatastore(2, "files", DatastoreType.FILE_DS, "fs", "ssh", 200_000, 190_000, [
        ("DS_MAD", "fs"), ("TM_MAD", "ssh"), ("TYPE", "FILE_DS")])
    for ds in site.datastores.values():
        ds.template = sorted([*ds.template, *_datastore_defaults(site, ds)])
    site.reserve_ids("datastore", 2)
    oam = SimVnet(0, "oam", "br-mgmt", "bridge", _vnet_template({
        "BRIDGE": "br-mgmt", "BRIDGE_TYPE": "linux", "DESCRIPTION": "operations and management network",
        "DNS": "10.11.28.2", "GATEWAY": "10.11.28.1", "MTU": "1500", "NETWORK_ADDRESS": "10.11.28.0",
        "NETWORK_MASK": "255.255.255.0", "OUTER_VLAN_ID": "", "PHYDEV": "", "SECURITY_GROUPS": "0",
        "VLAN_ID": "", "VN_MAD": "bridge"}),
        [SimAddressRange(0, "10.11.28.20", mac_for_ip("10.11.28.20"), 200)])
    trial = SimVnet(1, "trial-vxlan", "onebr.100", "vxlan", _vnet_template({
        "BRIDGE": "onebr.100", "BRIDGE_TYPE": "linux", "DESCRIPTION": "VXLAN network for trial VMs",
        "GATEWAY": "192.168.100.1", "GUEST_MTU": "1450", "MTU": "1500", "NETWORK_ADDRESS": "192.168.100.0",
        "NETWORK_MASK": "255.255.255.0", "PHYDEV": "bond0", "SECURITY_GROUPS": "0", "VLAN_ID": "100",
        "VN_MAD": "vxlan"}),
        [SimAddressRange(0, "192.168.100.10", mac_for_ip("192.168.100.10"), 100)], phydev="bond0", vlan_id="100")
    site.vnets[0], site.vnets[1] = oam, trial
    site.reserve_ids("vnet", 1)


def seed_marketplaces(site: SimSite) -> None:
    """The bootstrap marketplaces (disabled), the site's own one registered and monitored (tui.sim.catalog)."""
    try:
        from tui.sim.catalog import seed_catalog
    except ImportError as exc:  # the catalogue module ships with the marketplace part of the simulator
        raise RuntimeError(f"the marketplace catalogue (tui.sim.catalog) cannot be loaded: {exc}") from exc
    seed_catalog(site)


def seed_base_content(site: SimSite) -> None:
    """A base image and a VM template, what any frontend has before the toolkit arrives."""
    now = int(time.time()) - 86_400 * 30
    site.images[0] = SimImage(0, "Ubuntu 22.04", 0, 0, 1, ImageState.READY, 2252,
                              [("DEV_PREFIX", "vd"), ("DRIVER", "qcow2")], source="/var/lib/one//datastores/1/0ubuntu2204",
                              path="https://marketplace.opennebula.io/appliance/ubuntu2204/download/0", regtime=now,
                              perms=Permissions(1, 1, 0, 1, 0, 0, 1, 0, 0))
    site.images[0].modtime = now
    site.reserve_ids("image", 0)
    site.templates[0] = SimVmTemplate(0, "ubuntu-22.04", 0, 0, [
        ("CONTEXT", [("NETWORK", "YES"), ("SSH_PUBLIC_KEY", "$USER[SSH_PUBLIC_KEY]")]),
        ("CPU", "1"), ("DISK", [("IMAGE_ID", "0")]), ("GRAPHICS", [("LISTEN", "0.0.0.0"), ("TYPE", "VNC")]),
        ("MEMORY", "2048"), ("NIC", [("NETWORK_ID", "0")]), ("OS", [("ARCH", "x86_64")]), ("VCPU", "2"),
    ], regtime=now, perms=Permissions(1, 1, 0, 1, 0, 0, 1, 0, 0))
    site.reserve_ids("template", 0)
    site.system_config.update(_SYSTEM_CONFIG)


def seed_fresh(site: SimSite) -> None:
    seed_identities(site)
    seed_infrastructure(site)
    seed_base_content(site)
    seed_marketplaces(site)


def seed_bulk_vms(site: SimSite, count: int) -> None:
    """`count` ordinary RUNNING VMs over the usable x86_64 hosts, leases from a /16 of their own."""
    if count <= 0:
        return
    hosts = [h for h in site.hosts.values() if h.state == HostState.MONITORED and ("ARCH", "x86_64") in h.template]
    image = site.images[0]
    bulk_id = site.next_id("vnet")
    ar = SimAddressRange(0, "10.200.0.1", mac_for_ip("10.200.0.1"), 65_000)
    vnet = SimVnet(bulk_id, "load-net", "br-load", "bridge", _vnet_template({
        "BRIDGE": "br-load", "DESCRIPTION": "network of the load VMs", "MTU": "1500",
        "NETWORK_ADDRESS": "10.200.0.0", "NETWORK_MASK": "255.255.0.0", "VN_MAD": "bridge"}), [ar])
    site.vnets[bulk_id] = vnet
    stime = int(time.time()) - 3_600
    graphics = [("LISTEN", "0.0.0.0"), ("TYPE", "VNC")]
    disk_common = [("CLONE", "YES"), ("DATASTORE", "default"), ("DATASTORE_ID", "1"), ("DEV_PREFIX", "vd"),
                   ("DISK_TYPE", "FILE"), ("DRIVER", "qcow2"), ("IMAGE", image.name), ("IMAGE_ID", str(image.id)),
                   ("IMAGE_UNAME", "oneadmin"), ("SIZE", str(image.size_mb)), ("TARGET", "vda"), ("TM_MAD", "ssh"),
                   ("TYPE", "FILE")]
    for n in range(count):
        vm_id = site.next_id("vm")
        host = hosts[n % len(hosts)]
        nic: list[tuple[str, str]] = [("AR_ID", "0"), ("BRIDGE", "br-load"), ("NAME", "NIC0"), ("NETWORK", "load-net"),
                                      ("NETWORK_ID", str(bulk_id)), ("NIC_ID", "0"), ("SECURITY_GROUPS", "0"),
                                      ("TARGET", f"one-{vm_id}-0"), ("VN_MAD", "bridge")]
        if n < ar.size:
            ar.leases[n] = vm_id
            nic += [("IP", ip_at(ar, n)), ("MAC", mac_at(ar, n))]
        template: Template = [
            ("CPU", "0.5"), ("DISK", disk_common + [("DISK_ID", "0")]), ("GRAPHICS", graphics), ("MEMORY", "1024"),
            ("NIC", nic), ("TEMPLATE_ID", "0"), ("TM_MAD_SYSTEM", "ssh"), ("VCPU", "1"), ("VMID", str(vm_id)),
        ]
        vm = SimVm(vm_id, f"load-{n:05d}", 0, 0, 3, 3, template, [("LABELS", "load")],
                   [SimHistory(0, host.id, host.name, stime, ds_id=0)], stime=stime, deploy_id=f"one-{vm_id}")
        vm.last_poll = stime
        site.vms[vm_id] = vm
        image.vm_ids.append(vm_id)
    image.running_vms += count
    image.state = ImageState.USED


def seed(site: SimSite, *, repositories_in_background: bool = False,
         repositories_on_request: bool = False) -> threading.Thread | None:
    """Seed the scenario `site.config.scenario` names, then the extra VMs, then the repositories
    (in the thread returned when `repositories_in_background`, started only on request with
    `repositories_on_request`; see tui.sim.repos)."""
    scenario = site.config.scenario
    if scenario not in ("fresh", "deployed"):
        raise ValueError(f"unknown scenario {scenario!r}: use fresh or deployed")
    seed_fresh(site)
    if scenario == "deployed":
        from tui.sim.flow_api import deploy_toolkit_now

        deploy_toolkit_now(site)
    seed_bulk_vms(site, site.config.extra_vms)
    # the sites repository, component library, demo vault password file
    return seed_site_repositories(site, background=repositories_in_background, on_request=repositories_on_request)
