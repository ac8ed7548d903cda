"""What the real frontend is populated with, taken from the embedded site's fresh scenario.

The hosts, networks, datastores, marketplace and cloud user of `tui.sim.scenarios` (seeded into
a throw-away `SimSite`, never served), so `sitetk hosts check` on the real frontend can be compared
host for host with the embedded site: the same host names in the same order (so the same IDs from
0), the same CPU facts, the same disabled and offline hosts, the same networks by name.

A host's facts go into a file per host name that the patched dummy system probe prints
(`realsite.patches.system_probe`), as a KVM host's probes publish them: `HYPERVISOR=kvm`, `ARCH`,
`MODELNAME`, `CPUSPEED`, `KVM_CPU_MODEL`, `KVM_CPU_MODELS`, `KVM_MACHINES` and `KVM_CPU_FEATURES`
in libvirt's spelling (`virsh cpu-baseline --features`, `kvm-probes.d/host/system/cpu_features.sh`
at release-7.0.2: `sse4.2`, `pclmuldq`), where the embedded scenario uses /proc/cpuinfo's
(`sse4_2`, `pclmulqdq`); the console accepts both (`tui/domain/cpu.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from realsite.conftext import quote
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.sim.catalog import MAIN_PREFIX, marketplace_names
from tui.sim.scenarios import AUTOMATION_USER, seed_infrastructure
from tui.sim.state import SimConfig, SimSite

#: host states of the platform (include/Host.h): what `one.host.status` sets for the others
HOST_MONITORED, HOST_DISABLED, HOST_OFFLINE = 2, 4, 8
#: one.host.status's argument per wanted state (ENABLED 0, DISABLED 1, OFFLINE 2)
STATUS_ARGUMENT = {HOST_DISABLED: 1, HOST_OFFLINE: 2}
#: /proc/cpuinfo flag -> libvirt feature name, where they differ (libvirt's cpu_map x86_features.xml)
LIBVIRT_FEATURE_NAMES = {"sse4_1": "sse4.1", "sse4_2": "sse4.2", "pclmulqdq": "pclmuldq",
                         "avx512vnni": "avx512-vnni"}
#: the facts a host's probes publish, in the order a fact file lists them
PROBE_FACTS = ("HYPERVISOR", "ARCH", "MODELNAME", "CPUSPEED", "TOTALCPU", "TOTALMEMORY", "KVM_CPU_MODEL",
               "KVM_CPU_MODELS", "KVM_CPU_FEATURES", "KVM_MACHINES")
#: what the image and file datastores' dummy monitor reports (the embedded site's default one:
#: tui/sim/scenarios.py, 4,000,000 MB of which 3,500,000 free); the toolkit needs about 39 GiB
DATASTORE_TOTAL_MB = 4_000_000
DATASTORE_FREE_MB = 3_500_000
#: the host-local system datastore figures a fact file adds (stock dummy: 20 GiB)
HOST_DS_TOTAL_MB = 2_000_000
HOST_DS_FREE_MB = 1_600_000


@dataclass(frozen=True)
class HostSpec:
    name: str
    state: int
    facts: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class VnetSpec:
    name: str
    template: tuple[tuple[str, str], ...]
    #: (IP, SIZE) of each IPv4 address range
    ranges: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Scenario:
    hosts: tuple[HostSpec, ...]
    vnets: tuple[VnetSpec, ...]
    market_name: str
    market_description: str
    automation_user: str


def libvirt_features(proc_flags: str) -> str:
    """A comma list of /proc/cpuinfo flags in libvirt's spelling."""
    flags = [f.strip() for f in proc_flags.split(",") if f.strip()]
    return ",".join(LIBVIRT_FEATURE_NAMES.get(f, f) for f in flags)


def scenario(one_version: str = "7.0.0", naming: NamingProfile = DEFAULT_NAMING) -> Scenario:
    """The embedded site's fresh infrastructure as specs for a real frontend."""
    site = SimSite(SimConfig(one_version=one_version), Path("/nonexistent"), naming)
    seed_infrastructure(site)
    hosts = []
    for host in sorted(site.hosts.values(), key=lambda h: h.id):
        template = {key: value for key, value in host.template if isinstance(value, str)}
        facts = []
        for key in PROBE_FACTS:
            value = template.get(key, "")
            if key == "KVM_CPU_FEATURES" and value:
                value = libvirt_features(value)
            if value:
                facts.append((key, value))
        hosts.append(HostSpec(host.name, host.state, tuple(facts)))
    vnets = []
    for vnet in sorted(site.vnets.values(), key=lambda v: v.id):
        items = [(k, v) for k, v in vnet.template if isinstance(v, str) and v]
        vnets.append(VnetSpec(vnet.name, tuple(items), tuple((ar.ip, ar.size) for ar in vnet.ars)))
    return Scenario(tuple(hosts), tuple(vnets), marketplace_names(naming)[MAIN_PREFIX],
                    "Appliances of the site toolkit and its components", AUTOMATION_USER)



def fact_file(host: HostSpec) -> str:
    """The probe output for one host: `KEY="value"` lines (the monitoring template format)."""
    lines = [f"{key}={quote(value)}" for key, value in host.facts]
    lines += [f"DS_LOCATION_USED_MB={HOST_DS_TOTAL_MB - HOST_DS_FREE_MB}", f"DS_LOCATION_TOTAL_MB={HOST_DS_TOTAL_MB}",
              f"DS_LOCATION_FREE_MB={HOST_DS_FREE_MB}"]
    return "\n".join(lines) + "\n"


def write_fact_files(directory: Path, hosts: tuple[HostSpec, ...]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for host in hosts:
        if "/" in host.name or host.name.startswith("."):
            raise ValueError(f"host name {host.name!r} cannot name a file")
        path = directory / host.name
        path.write_text(fact_file(host), encoding="utf-8")
        written.append(path)
    return written


def template_text(items: tuple[tuple[str, str], ...] | list[tuple[str, str]]) -> str:
    """Attributes as template text for an allocate or update call."""
    return "".join(f"{key}={quote(value)}\n" for key, value in items)


def vnet_template(vnet: VnetSpec) -> str:
    text = template_text([("NAME", vnet.name), *vnet.template])
    for ip, size in vnet.ranges:
        text += f"AR=[TYPE=\"IP4\",IP={quote(ip)},SIZE=\"{size}\"]\n"
    return text
