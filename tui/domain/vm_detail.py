"""The full VM from `vm.info` (`VmDetail`) and its NICs, disks and history records.

Apart from `tui.domain.vms` (the list's `VmSummary`): the console's first screen shows the list
before any detail, and these four frozen dataclasses cost ~1.3 ms of CPU each to create at import
(issue 24); they are imported when a VM's detail is first read.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.permissions import Permissions
from tui.domain.vms import VmSummary


@dataclass(frozen=True)
class Nic:
    nic_id: int
    network: str
    network_id: int | None
    ip: str
    ip6: str
    mac: str
    bridge: str
    attributes: dict[str, str]


@dataclass(frozen=True)
class Disk:
    disk_id: int
    image: str
    image_id: int | None
    datastore_id: int | None
    size_mb: int | None
    target: str
    type: str
    attributes: dict[str, str]


@dataclass(frozen=True)
class HistoryRecord:
    seq: int
    host_id: int
    hostname: str
    datastore_id: int
    stime: int
    etime: int
    action: int


@dataclass(frozen=True)
class VmDetail:
    """The full VM from `vm.info`: the list row plus what only the full body carries."""

    summary: VmSummary
    prev_state: int
    prev_lcm_state: int
    etime: int
    deploy_id: str
    permissions: Permissions
    #: TEMPLATE/CPU_MODEL/MODEL, "" when the VM has no CPU model set
    cpu_model: str
    nics: tuple[Nic, ...]
    disks: tuple[Disk, ...]
    #: the CONTEXT vector's entries, in order
    context: tuple[tuple[str, str], ...]
    user_template: Attributes = EMPTY_ATTRIBUTES
    template: Attributes = EMPTY_ATTRIBUTES
    history: tuple[HistoryRecord, ...] = ()
    #: TEMPLATE/CPU_MODEL/FEATURES (comma-separated on the platform): CPU flags the VM requires
    cpu_features: tuple[str, ...] = ()

    @property
    def id(self) -> int:
        return self.summary.id

    @property
    def name(self) -> str:
        return self.summary.name

    @property
    def state_name(self) -> str:
        return self.summary.state_name

    @property
    def ready(self) -> bool:
        """Running, and the appliance published READY=YES in its USER_TEMPLATE."""
        return self.summary.running and self.user_template.get("READY").upper() == "YES"

    @property
    def last_host(self) -> HistoryRecord | None:
        return self.history[-1] if self.history else None
