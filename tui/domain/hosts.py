"""Virtualization hosts: state table and the `Host` record with its CPU facts and capacity.

CPU facts come from HOST/TEMPLATE as a KVM host's monitoring reports them: ARCH, MODELNAME,
KVM_CPU_MODEL (the libvirt model a VM's CPU_MODEL should name), KVM_CPU_MODELS (space separated)
and KVM_CPU_FEATURES (comma separated flags; None when the host does not report them).
Capacity: CPU in percent (100 per core), memory in KiB, as the platform counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.one_states import HOST_STATES, HostState

#: states in which the scheduler may place VMs on the host
USABLE_STATES = frozenset({HostState.MONITORING_MONITORED, HostState.MONITORED})


def host_state_names(state: int) -> tuple[str, str]:
    return HOST_STATES.get(state, (f"STATE_{state}", f"?{state}"))


@dataclass(frozen=True)
class HostUnavailable:
    """Why a host in a state other than MONITORED takes no VM, and how to bring it back."""

    #: the verdict word: "disabled", "offline", "error", "not monitored"
    word: str
    reason: str
    fix: str


def host_unavailable(host_id: int, state: int) -> HostUnavailable | None:
    """None for a monitored host; else what its state means for a move.

    The platform's own table (include/Host.h, `HostState`, release-7.4.0 and 6.10): DISABLED hosts
    are monitored but the scheduler places nothing there; OFFLINE hosts are neither monitored nor
    deployed to; ERROR is a failed monitoring; INIT has not been monitored yet (its CPU facts and
    capacity are not known). The MONITORING_* states (1, 5, 6, 7), commented out in Host.h and still
    listed in share/doc/xsd/host.xsd, read as the state they come from.
    """
    name, _ = host_state_names(state)
    if state in USABLE_STATES:
        return None
    if state in (HostState.DISABLED, HostState.MONITORING_DISABLED):
        return HostUnavailable("disabled", f"host state {name}: the scheduler places no VM on a disabled host",
                               f"`onehost enable {host_id}` makes it a target again")
    if state == HostState.OFFLINE:
        return HostUnavailable("offline", f"host state {name}: the host is neither monitored nor deployed to",
                               f"`onehost enable {host_id}` once the host is back")
    if state in (HostState.ERROR, HostState.MONITORING_ERROR):
        return HostUnavailable("error", f"host state {name}: its monitoring failed, its facts may be stale",
                               f"`onehost show {host_id}` shows the error (ERROR_MESSAGE); fix the host, then "
                               f"`onehost sync {host_id} --force`")
    if state in (HostState.INIT, HostState.MONITORING_INIT):
        return HostUnavailable("not monitored", f"host state {name}: not monitored yet, its CPU facts and capacity "
                               "are not known", f"wait for its first monitoring (`onehost show {host_id}`)")
    return HostUnavailable(name.lower(), f"host state {name} is not one the platform documents",
                           f"`onehost show {host_id}`")


@dataclass(frozen=True)
class Host:
    id: int
    name: str
    state: int
    state_name: str
    im_mad: str
    vm_mad: str
    cluster_id: int
    cluster: str
    #: `uname -m`, e.g. x86_64, aarch64
    arch: str
    #: /proc/cpuinfo model name
    model_name: str
    kvm_cpu_model: str
    kvm_cpu_models: tuple[str, ...]
    #: None when the host reports no KVM_CPU_FEATURES at all
    kvm_cpu_features: tuple[str, ...] | None
    hypervisor: str
    total_cpu: int
    used_cpu: int
    max_cpu: int
    total_mem_kb: int
    used_mem_kb: int
    max_mem_kb: int
    running_vms: int
    vm_ids: tuple[int, ...]
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def usable(self) -> bool:
        return self.state in USABLE_STATES

    @property
    def unavailable(self) -> HostUnavailable | None:
        """Why the host takes no VM (its state), None when it is monitored."""
        return host_unavailable(self.id, self.state)

    @property
    def free_cpu(self) -> int:
        return max(self.max_cpu - self.used_cpu, 0)

    @property
    def free_cpu_percent(self) -> float:
        """Free share of the host's allocatable CPU, 0-100."""
        return 100.0 * self.free_cpu / self.max_cpu if self.max_cpu > 0 else 0.0

    @property
    def free_mem_mib(self) -> int:
        return max(self.max_mem_kb - self.used_mem_kb, 0) // 1024
