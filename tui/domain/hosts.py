"""Virtualization hosts: state table and the `Host` record with its CPU facts and capacity.

CPU facts come from HOST/TEMPLATE as a KVM host's monitoring reports them: ARCH, MODELNAME,
KVM_CPU_MODEL (the libvirt model a VM's CPU_MODEL should name), KVM_CPU_MODELS (space separated)
and KVM_CPU_FEATURES (comma separated flags; None when the host does not report them).
Capacity: CPU in percent (100 per core), memory in KiB, as the platform counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes

#: HOST STATE code -> (name, CLI short name)
HOST_STATES: dict[int, tuple[str, str]] = {
    0: ("INIT", "init"),
    1: ("MONITORING_MONITORED", "update"),
    2: ("MONITORED", "on"),
    3: ("ERROR", "err"),
    4: ("DISABLED", "dsbl"),
    5: ("MONITORING_ERROR", "retry"),
    6: ("MONITORING_INIT", "init"),
    7: ("MONITORING_DISABLED", "dsbl"),
    8: ("OFFLINE", "off"),
}

#: states in which the scheduler may place VMs on the host
USABLE_STATES = frozenset({1, 2})


def host_state_names(state: int) -> tuple[str, str]:
    return HOST_STATES.get(state, (f"STATE_{state}", f"?{state}"))


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
    def free_cpu(self) -> int:
        return max(self.max_cpu - self.used_cpu, 0)

    @property
    def free_cpu_percent(self) -> float:
        """Free share of the host's allocatable CPU, 0-100."""
        return 100.0 * self.free_cpu / self.max_cpu if self.max_cpu > 0 else 0.0

    @property
    def free_mem_mib(self) -> int:
        return max(self.max_mem_kb - self.used_mem_kb, 0) // 1024
