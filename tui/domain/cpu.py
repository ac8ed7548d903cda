"""CPU compatibility for the document database: hosts, VM CPU models and target-host ranking.

The spec's limits: a host running a VM with the document database must be x86_64 (64-bit) and
offer SSE4.2 and AVX; the manager VM should not use host-passthrough unless no compatible host
exists; the host's model is its KVM_CPU_MODEL. Models found compatible by the spec
(Cascadelake-Server-noTSX, Broadwell-IBRS, Broadwell-noTSX) are data (`DEFAULT_KNOWN_GOOD_MODELS`)
that settings can extend, passed in as a parameter.

Host verdict: INCOMPATIBLE when the architecture is wrong or a reported feature list lacks avx or
sse4_2; UNKNOWN when the host reports no features (the reason says whether its model is known to
have them); COMPATIBLE otherwise. Feature names are compared case-insensitively with `.` read as
`_` (libvirt says `sse4.2`, /proc/cpuinfo `sse4_2`). `evaluate_host` puts the host's state first:
a disabled, offline, failed or never monitored host is UNAVAILABLE (its verdict names the state;
it is never "compatible" and never a move target), and every verdict carries what was checked
and the fix.

VM verdict, from the VM's CPU_MODEL and its host: HOST_PASSTHROUGH (discouraged) when it passes the
host CPU through; MODEL_LACKS_FLAGS when the model (per `CPU_MODEL_TABLE`) or the host lacks
AVX or SSE4.2; FINE when the model is known to expose both (or is known good, or is host-model on
a compatible host); UNKNOWN otherwise (no model set: the hypervisor default decides; a model
not in the table). Whether an UNKNOWN verdict puts the VM at risk depends on its readiness,
which `tui.procedures.hosts.cpu_inventory` adds.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from enum import Enum
from typing import Iterable, Mapping, Sequence

from tui.domain.attributes import Attributes
from tui.domain.hosts import Host
from tui.domain.template_text import render_template

REQUIRED_FLAGS: tuple[str, ...] = ("sse4_2", "avx")
GOOD_ARCHES = frozenset({"x86_64", "amd64"})
HOST_PASSTHROUGH = "host-passthrough"
HOST_MODEL = "host-model"

#: Models the spec found compatible; settings may add their own.
DEFAULT_KNOWN_GOOD_MODELS: tuple[str, ...] = ("Cascadelake-Server-noTSX", "Broadwell-IBRS", "Broadwell-noTSX")


@dataclass(frozen=True)
class CpuModelInfo:
    """A libvirt CPU model (a `*` pattern covers a family) and the flags it exposes."""

    pattern: str
    avx: bool
    sse4_2: bool

    def matches(self, model: str) -> bool:
        return fnmatch.fnmatchcase(model.casefold(), self.pattern.casefold())

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(flag for flag, present in (("sse4_2", self.sse4_2), ("avx", self.avx)) if not present)


#: libvirt's x86 models; the first matching entry wins (exact names before families).
CPU_MODEL_TABLE: tuple[CpuModelInfo, ...] = (
    CpuModelInfo("qemu64", avx=False, sse4_2=False),
    CpuModelInfo("kvm64", avx=False, sse4_2=False),
    CpuModelInfo("qemu32", avx=False, sse4_2=False),
    CpuModelInfo("kvm32", avx=False, sse4_2=False),
    CpuModelInfo("cpu64-rhel*", avx=False, sse4_2=False),
    CpuModelInfo("486", avx=False, sse4_2=False),
    CpuModelInfo("pentium*", avx=False, sse4_2=False),
    CpuModelInfo("coreduo", avx=False, sse4_2=False),
    CpuModelInfo("core2duo", avx=False, sse4_2=False),
    CpuModelInfo("n270", avx=False, sse4_2=False),
    CpuModelInfo("athlon", avx=False, sse4_2=False),
    CpuModelInfo("phenom", avx=False, sse4_2=False),
    CpuModelInfo("Conroe", avx=False, sse4_2=False),
    CpuModelInfo("Penryn", avx=False, sse4_2=False),
    CpuModelInfo("Nehalem*", avx=False, sse4_2=True),
    CpuModelInfo("Westmere*", avx=False, sse4_2=True),
    CpuModelInfo("Snowridge*", avx=False, sse4_2=True),
    CpuModelInfo("Opteron_G1", avx=False, sse4_2=False),
    CpuModelInfo("Opteron_G2", avx=False, sse4_2=False),
    CpuModelInfo("Opteron_G3", avx=False, sse4_2=False),
    CpuModelInfo("Opteron_G4", avx=True, sse4_2=True),
    CpuModelInfo("Opteron_G5", avx=True, sse4_2=True),
    CpuModelInfo("SandyBridge*", avx=True, sse4_2=True),
    CpuModelInfo("IvyBridge*", avx=True, sse4_2=True),
    CpuModelInfo("Haswell*", avx=True, sse4_2=True),
    CpuModelInfo("Broadwell*", avx=True, sse4_2=True),
    CpuModelInfo("Skylake*", avx=True, sse4_2=True),
    CpuModelInfo("Cascadelake*", avx=True, sse4_2=True),
    CpuModelInfo("Cooperlake*", avx=True, sse4_2=True),
    CpuModelInfo("Icelake*", avx=True, sse4_2=True),
    CpuModelInfo("SapphireRapids*", avx=True, sse4_2=True),
    CpuModelInfo("GraniteRapids*", avx=True, sse4_2=True),
    CpuModelInfo("SierraForest*", avx=True, sse4_2=True),
    CpuModelInfo("EPYC*", avx=True, sse4_2=True),
    CpuModelInfo("Dhyana*", avx=True, sse4_2=True),
)


def model_info(model: str, table: Sequence[CpuModelInfo] = CPU_MODEL_TABLE) -> CpuModelInfo | None:
    for entry in table:
        if entry.matches(model):
            return entry
    return None


def is_known_good(model: str, known_good: Iterable[str] = DEFAULT_KNOWN_GOOD_MODELS) -> bool:
    return model.casefold() in {m.casefold() for m in known_good}


def normalize_flag(flag: str) -> str:
    return flag.strip().lower().replace(".", "_")


@dataclass(frozen=True)
class HostCpu:
    arch: str = ""
    model_name: str = ""
    kvm_cpu_model: str = ""
    kvm_cpu_models: tuple[str, ...] = ()
    #: normalized flags; None when the host reports no features
    features: frozenset[str] | None = None

    @classmethod
    def from_template(cls, template: Attributes | Mapping[str, object] | Iterable[tuple[str, object]]) -> HostCpu:
        """From HOST/TEMPLATE: ARCH, MODELNAME, KVM_CPU_MODEL, KVM_CPU_MODELS, KVM_CPU_FEATURES."""
        items = template.items() if isinstance(template, Mapping) else template
        scalars: dict[str, str] = {}
        for key, value in items:
            if isinstance(value, str):
                scalars.setdefault(key.upper(), value)
        raw_features = scalars.get("KVM_CPU_FEATURES", "")
        return cls(
            arch=scalars.get("ARCH", "").strip(),
            model_name=scalars.get("MODELNAME", "").strip(),
            kvm_cpu_model=scalars.get("KVM_CPU_MODEL", "").strip(),
            kvm_cpu_models=tuple(scalars.get("KVM_CPU_MODELS", "").split()),
            features=parse_features(raw_features) if raw_features.strip() else None,
        )

    @classmethod
    def from_host(cls, host: Host) -> HostCpu:
        return cls(
            arch=host.arch,
            model_name=host.model_name,
            kvm_cpu_model=host.kvm_cpu_model,
            kvm_cpu_models=host.kvm_cpu_models,
            features=None if host.kvm_cpu_features is None else frozenset(normalize_flag(f) for f in host.kvm_cpu_features if f.strip()),
        )

    def has(self, flag: str) -> bool | None:
        """Whether the host reports `flag`; None when it reports no features."""
        if self.features is None:
            return None
        return normalize_flag(flag) in self.features

    @property
    def has_avx(self) -> bool | None:
        return self.has("avx")

    @property
    def has_sse4_2(self) -> bool | None:
        return self.has("sse4_2")


def parse_features(text: str) -> frozenset[str]:
    """`sse4.2, avx,avx2` -> {"sse4_2", "avx", "avx2"} (commas and/or spaces separate)."""
    return frozenset(normalize_flag(f) for f in text.replace(",", " ").split() if f.strip())


class HostVerdictKind(str, Enum):
    COMPATIBLE = "compatible"
    INCOMPATIBLE = "incompatible"
    UNKNOWN = "unknown"
    #: the host's state (disabled, offline, error, not monitored) keeps every VM off it
    UNAVAILABLE = "unavailable"


#: what a CPU verdict looks at
CPU_CHECKED = "architecture (x86_64) and SSE4.2 and AVX in the host's KVM_CPU_FEATURES"
#: what a host's verdict looks at
HOST_CHECKED = f"host state (MONITORED), {CPU_CHECKED}"


@dataclass(frozen=True)
class HostVerdict:
    kind: HostVerdictKind
    reasons: tuple[str, ...] = ()
    #: the host's model is one of the known-good models
    known_good: bool = False
    #: what was checked
    checked: str = CPU_CHECKED
    #: how to make the host usable for the document database ("" when nothing is to fix)
    fix: str = ""
    #: UNAVAILABLE: the state's word ("disabled", "offline", ...) and the CPU verdict underneath
    state_word: str = ""
    cpu_kind: HostVerdictKind | None = None

    @property
    def text(self) -> str:
        return f"{self.kind.value}: {'; '.join(self.reasons)}" if self.reasons else self.kind.value

    @property
    def word(self) -> str:
        """The verdict as a list shows it: the state for an unavailable host, else the kind."""
        return self.state_word if self.kind is HostVerdictKind.UNAVAILABLE and self.state_word else self.kind.value


def host_verdict(cpu: HostCpu, known_good: Iterable[str] = DEFAULT_KNOWN_GOOD_MODELS) -> HostVerdict:
    """Can this host run the document database?"""
    good = bool(cpu.kvm_cpu_model) and is_known_good(cpu.kvm_cpu_model, known_good)
    arch = cpu.arch.lower()
    if arch and arch not in GOOD_ARCHES:
        return HostVerdict(HostVerdictKind.INCOMPATIBLE, (f"architecture {cpu.arch}, not x86_64 (64-bit)",), good)
    if cpu.features is None:
        reasons = ["the host reports no CPU features"]
        info = model_info(cpu.kvm_cpu_model) if cpu.kvm_cpu_model else None
        if good:
            reasons.append(f"its model {cpu.kvm_cpu_model} is one found compatible")
        elif info is not None and info.missing:
            lacking = " and ".join(_flag_label(f) for f in info.missing)
            reasons.append(f"its model {cpu.kvm_cpu_model} lacks {lacking}")
        elif info is not None:
            reasons.append(f"its model {cpu.kvm_cpu_model} exposes AVX and SSE4.2")
        return HostVerdict(HostVerdictKind.UNKNOWN, tuple(reasons), good)
    missing = [flag for flag in REQUIRED_FLAGS if flag not in cpu.features]
    if missing:
        return HostVerdict(HostVerdictKind.INCOMPATIBLE, tuple(f"no {_flag_label(f)}" for f in missing), good)
    if not arch:
        return HostVerdict(HostVerdictKind.UNKNOWN, ("the host reports no architecture",), good)
    return HostVerdict(HostVerdictKind.COMPATIBLE, (), good)


def evaluate_host(host: Host, known_good: Iterable[str] = DEFAULT_KNOWN_GOOD_MODELS) -> HostVerdict:
    """The host's verdict for the document database: its state first (a disabled, offline, failed
    or unmonitored host is UNAVAILABLE whatever its CPU), then its CPU (`host_verdict`); each
    verdict says what was checked, what was found and the fix."""
    cpu = host_verdict(HostCpu.from_host(host), known_good)
    unavailable = host.unavailable
    if unavailable is not None:
        cpu_part = f"its CPU: {cpu.text}"
        return HostVerdict(HostVerdictKind.UNAVAILABLE, (unavailable.reason, cpu_part), cpu.known_good,
                           HOST_CHECKED, unavailable.fix, unavailable.word, cpu.kind)
    return replace(cpu, checked=HOST_CHECKED, fix=_cpu_fix(cpu, host))


def _cpu_fix(verdict: HostVerdict, host: Host) -> str:
    if verdict.kind is HostVerdictKind.COMPATIBLE:
        return ""
    arch = host.arch.lower()
    if verdict.kind is HostVerdictKind.INCOMPATIBLE:
        if arch and arch not in GOOD_ARCHES:
            return "no CPU model can change the architecture: run document-database VMs on an x86_64 host"
        return ("no CPU model can add what the host's CPU lacks: run document-database VMs on a compatible host "
                "(`sitetk hosts move <VM_ID>`)")
    # UNKNOWN: the monitoring probes did not report ARCH or KVM_CPU_FEATURES
    # (src/im_mad/remotes/kvm-probes.d/host/system/cpu_features.sh reports the features)
    return (f"`onehost sync {host.id} --force` installs the KVM probes again; KVM_CPU_FEATURES appears at the next "
            f"monitoring (`onehost show {host.id}`)")


def _flag_label(flag: str) -> str:
    return {"sse4_2": "SSE4.2", "avx": "AVX"}.get(flag, flag.upper())


class VmVerdictKind(str, Enum):
    FINE = "fine"
    HOST_PASSTHROUGH = "host-passthrough (discouraged)"
    MODEL_LACKS_FLAGS = "lacks AVX or SSE4.2"
    UNKNOWN = "unknown"


#: what a VM's verdict looks at
VM_CHECKED = "the VM's CPU_MODEL (which flags the model exposes) and its host's CPU verdict"


@dataclass(frozen=True)
class VmVerdict:
    kind: VmVerdictKind
    reason: str = ""

    @property
    def at_risk(self) -> bool:
        """The database may not run (or runs with a discouraged model)."""
        return self.kind in (VmVerdictKind.MODEL_LACKS_FLAGS, VmVerdictKind.HOST_PASSTHROUGH)


def vm_verdict(
    cpu_model: str | None,
    host: HostCpu | None,
    *,
    known_good: Iterable[str] = DEFAULT_KNOWN_GOOD_MODELS,
    table: Sequence[CpuModelInfo] = CPU_MODEL_TABLE,
) -> VmVerdict:
    """Does the CPU a VM sees (its CPU_MODEL on its host) suit the document database?"""
    known_good = tuple(known_good)
    model = (cpu_model or "").strip()
    host_check = host_verdict(host, known_good) if host is not None else None
    if host_check is not None and host_check.kind is HostVerdictKind.INCOMPATIBLE:
        return VmVerdict(VmVerdictKind.MODEL_LACKS_FLAGS, f"its host is incompatible: {'; '.join(host_check.reasons)}")
    if model == HOST_PASSTHROUGH:
        return VmVerdict(
            VmVerdictKind.HOST_PASSTHROUGH,
            "host-passthrough is discouraged unless no compatible host exists; set the host's KVM_CPU_MODEL",
        )
    host_unknown = ""
    if host_check is not None and host_check.kind is HostVerdictKind.UNKNOWN:
        host_unknown = f"; its host: {'; '.join(host_check.reasons)}"
    elif host is None:
        host_unknown = "; the VM has no host (or its host is not listed)"
    if not model:
        return VmVerdict(VmVerdictKind.UNKNOWN,
                         "no CPU model set: the hypervisor's default model (often without AVX) applies" + host_unknown)
    if model == HOST_MODEL:
        if host_check is not None and host_check.kind is HostVerdictKind.COMPATIBLE:
            return VmVerdict(VmVerdictKind.FINE, "host-model on a compatible host")
        return VmVerdict(VmVerdictKind.UNKNOWN, "host-model: the flags depend on the host, whose features are unknown"
                         + host_unknown)
    if is_known_good(model, known_good):
        return VmVerdict(VmVerdictKind.FINE, f"{model} is a model found compatible")
    info = model_info(model, table)
    if info is None:
        return VmVerdict(VmVerdictKind.UNKNOWN, f"model {model} is not in the model table" + host_unknown)
    if info.missing:
        return VmVerdict(
            VmVerdictKind.MODEL_LACKS_FLAGS,
            f"model {model} hides {' and '.join(_flag_label(f) for f in info.missing)}",
        )
    return VmVerdict(VmVerdictKind.FINE, f"model {model} exposes AVX and SSE4.2")


@dataclass(frozen=True)
class RankedHost:
    host: Host
    verdict: HostVerdict


@dataclass(frozen=True)
class ExcludedHost:
    host: Host
    reason: str


@dataclass(frozen=True)
class HostRanking:
    #: compatible hosts with enough free capacity, best first
    eligible: tuple[RankedHost, ...]
    excluded: tuple[ExcludedHost, ...]

    @property
    def passthrough_allowed(self) -> bool:
        """host-passthrough may be offered only when no compatible host exists."""
        return not self.eligible


def rank_hosts(
    hosts: Iterable[Host],
    *,
    min_free_cpu: int = 0,
    min_free_cpu_percent: float = 0.0,
    min_free_mem_mib: int = 0,
    known_good: Iterable[str] = DEFAULT_KNOWN_GOOD_MODELS,
    exclude_host_id: int | None = None,
) -> HostRanking:
    """Targets for a document-database VM: usable, compatible hosts above the free thresholds.

    `min_free_cpu` is in the platform's CPU percent (100 per core), `min_free_cpu_percent` a share
    of the host's allocatable CPU (0-100, as the settings give it), `min_free_mem_mib` in MiB.
    Best first: most free CPU, then most free memory, then a known-good model, then lowest ID.
    """
    known_good = tuple(known_good)
    eligible: list[RankedHost] = []
    excluded: list[ExcludedHost] = []
    for host in hosts:
        verdict = evaluate_host(host, known_good)
        unavailable = host.unavailable
        reason = ""
        if host.id == exclude_host_id:
            reason = "the VM's current host"
        elif unavailable is not None:
            reason = f"{unavailable.reason} ({unavailable.fix})"
        elif verdict.kind is not HostVerdictKind.COMPATIBLE:
            reason = verdict.text
        elif host.free_cpu < min_free_cpu:
            reason = f"free CPU {host.free_cpu} below the threshold {min_free_cpu}"
        elif host.free_cpu_percent < min_free_cpu_percent:
            reason = f"free CPU {host.free_cpu_percent:.0f}% below the threshold {min_free_cpu_percent:g}%"
        elif host.free_mem_mib < min_free_mem_mib:
            reason = f"free memory {host.free_mem_mib} MiB below the threshold {min_free_mem_mib} MiB"
        if reason:
            excluded.append(ExcludedHost(host, reason))
        else:
            eligible.append(RankedHost(host, verdict))
    eligible.sort(key=lambda r: (-r.host.free_cpu, -r.host.free_mem_mib, not r.verdict.known_good, r.host.id))
    return HostRanking(tuple(eligible), tuple(excluded))


def cpu_model_update_text(model: str) -> str:
    """The `updateconf` text that sets a VM's CPU model (apply in merge mode, append=1)."""
    if not model.strip():
        raise ValueError("a CPU model name is required")
    return render_template([("CPU_MODEL", [("MODEL", model.strip())])])
