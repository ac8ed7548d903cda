"""Virtual machines: state tables, the list row (`VmSummary`) and the full record (`VmDetail`).

The state tables are the console's own (pyone's enums stop at LCM state 68 and raise on newer
codes). Short names are the platform CLI's (`onevm list`): `runn`, `pend`, `poff`, `unde`, ...
Unknown codes never raise: they read `STATE_<n>` / `?<n>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.permissions import Permissions

#: VM STATE code -> (name, CLI short name); ACTIVE's short name comes from the LCM state
VM_STATES: dict[int, tuple[str, str]] = {
    0: ("INIT", "init"),
    1: ("PENDING", "pend"),
    2: ("HOLD", "hold"),
    3: ("ACTIVE", "actv"),
    4: ("STOPPED", "stop"),
    5: ("SUSPENDED", "susp"),
    6: ("DONE", "done"),
    7: ("FAILED", "fail"),
    8: ("POWEROFF", "poff"),
    9: ("UNDEPLOYED", "unde"),
    10: ("CLONING", "clon"),
    11: ("CLONING_FAILURE", "fail"),
}

ACTIVE = 3

#: LCM_STATE code -> (name, CLI short name), meaningful while STATE is ACTIVE
LCM_STATES: dict[int, tuple[str, str]] = {
    0: ("LCM_INIT", "init"),
    1: ("PROLOG", "prol"),
    2: ("BOOT", "boot"),
    3: ("RUNNING", "runn"),
    4: ("MIGRATE", "migr"),
    5: ("SAVE_STOP", "save"),
    6: ("SAVE_SUSPEND", "save"),
    7: ("SAVE_MIGRATE", "save"),
    8: ("PROLOG_MIGRATE", "migr"),
    9: ("PROLOG_RESUME", "prol"),
    10: ("EPILOG_STOP", "epil"),
    11: ("EPILOG", "epil"),
    12: ("SHUTDOWN", "shut"),
    13: ("CANCEL", "shut"),
    14: ("FAILURE", "fail"),
    15: ("CLEANUP_RESUBMIT", "clea"),
    16: ("UNKNOWN", "unkn"),
    17: ("HOTPLUG", "hotp"),
    18: ("SHUTDOWN_POWEROFF", "shut"),
    19: ("BOOT_UNKNOWN", "boot"),
    20: ("BOOT_POWEROFF", "boot"),
    21: ("BOOT_SUSPENDED", "boot"),
    22: ("BOOT_STOPPED", "boot"),
    23: ("CLEANUP_DELETE", "clea"),
    24: ("HOTPLUG_SNAPSHOT", "snap"),
    25: ("HOTPLUG_NIC", "hotp"),
    26: ("HOTPLUG_SAVEAS", "hotp"),
    27: ("HOTPLUG_SAVEAS_POWEROFF", "hotp"),
    28: ("HOTPLUG_SAVEAS_SUSPENDED", "hotp"),
    29: ("SHUTDOWN_UNDEPLOY", "shut"),
    30: ("EPILOG_UNDEPLOY", "epil"),
    31: ("PROLOG_UNDEPLOY", "prol"),
    32: ("BOOT_UNDEPLOY", "boot"),
    33: ("HOTPLUG_PROLOG_POWEROFF", "hotp"),
    34: ("HOTPLUG_EPILOG_POWEROFF", "hotp"),
    35: ("BOOT_MIGRATE", "boot"),
    36: ("BOOT_FAILURE", "fail"),
    37: ("BOOT_MIGRATE_FAILURE", "fail"),
    38: ("PROLOG_MIGRATE_FAILURE", "fail"),
    39: ("PROLOG_FAILURE", "fail"),
    40: ("EPILOG_FAILURE", "fail"),
    41: ("EPILOG_STOP_FAILURE", "fail"),
    42: ("EPILOG_UNDEPLOY_FAILURE", "fail"),
    43: ("PROLOG_MIGRATE_POWEROFF", "migr"),
    44: ("PROLOG_MIGRATE_POWEROFF_FAILURE", "fail"),
    45: ("PROLOG_MIGRATE_SUSPEND", "migr"),
    46: ("PROLOG_MIGRATE_SUSPEND_FAILURE", "fail"),
    47: ("BOOT_UNDEPLOY_FAILURE", "fail"),
    48: ("BOOT_STOPPED_FAILURE", "fail"),
    49: ("PROLOG_RESUME_FAILURE", "fail"),
    50: ("PROLOG_UNDEPLOY_FAILURE", "fail"),
    51: ("DISK_SNAPSHOT_POWEROFF", "snap"),
    52: ("DISK_SNAPSHOT_REVERT_POWEROFF", "snap"),
    53: ("DISK_SNAPSHOT_DELETE_POWEROFF", "snap"),
    54: ("DISK_SNAPSHOT_SUSPENDED", "snap"),
    55: ("DISK_SNAPSHOT_REVERT_SUSPENDED", "snap"),
    56: ("DISK_SNAPSHOT_DELETE_SUSPENDED", "snap"),
    57: ("DISK_SNAPSHOT", "snap"),
    58: ("DISK_SNAPSHOT_REVERT", "snap"),
    59: ("DISK_SNAPSHOT_DELETE", "snap"),
    60: ("PROLOG_MIGRATE_UNKNOWN", "migr"),
    61: ("PROLOG_MIGRATE_UNKNOWN_FAILURE", "fail"),
    62: ("DISK_RESIZE", "drsz"),
    63: ("DISK_RESIZE_POWEROFF", "drsz"),
    64: ("DISK_RESIZE_UNDEPLOYED", "drsz"),
    65: ("HOTPLUG_NIC_POWEROFF", "hotp"),
    66: ("HOTPLUG_RESIZE", "hotp"),
    67: ("HOTPLUG_SAVEAS_UNDEPLOYED", "hotp"),
    68: ("HOTPLUG_SAVEAS_STOPPED", "hotp"),
    69: ("BACKUP", "back"),
    70: ("BACKUP_POWEROFF", "back"),
    71: ("RESTORE", "rest"),
}

#: LCM_STATE codes of a running guest (the only ones `ready` can be true in)
RUNNING = 3

StateKind = Literal["running", "transient", "off", "failed", "done", "unknown"]

_OFF_SHORT = {"poff", "unde", "stop", "susp", "hold", "init"}


def state_names(state: int, lcm_state: int) -> tuple[str, str]:
    """(long name, CLI short name) of a VM: the LCM state's while ACTIVE, else the STATE's."""
    if state == ACTIVE:
        return LCM_STATES.get(lcm_state, (f"LCM_STATE_{lcm_state}", f"?{lcm_state}"))
    return VM_STATES.get(state, (f"STATE_{state}", f"?{state}"))


def state_kind(state: int, lcm_state: int) -> StateKind:
    """A coarse class for colour and glyph: running, transient, off, failed, done, unknown."""
    long_name, short = state_names(state, lcm_state)
    if short.startswith("?") or short == "unkn":
        return "unknown"
    if short == "fail" or long_name.endswith("FAILURE"):
        return "failed"
    if short == "runn":
        return "running"
    if short == "done":
        return "done"
    if short in _OFF_SHORT:
        return "off"
    return "transient"


_SERVICE_NAME = re.compile(r"^(?P<role>.+)_(?P<index>\d+)_\(service_(?P<service>\d+)\)$")


def service_from_name(name: str) -> tuple[int | None, str]:
    """(service id, role) from a role VM's name `<role>_<n>_(service_<id>)`, else (None, "")."""
    match = _SERVICE_NAME.match(name)
    if not match:
        return None, ""
    return int(match.group("service")), match.group("role")


@dataclass(frozen=True)
class VmSummary:
    """One row of the VM list, from the pool's short VM body."""

    id: int
    name: str
    uid: int
    gid: int
    owner: str
    group: str
    state: int
    lcm_state: int
    #: long name: the LCM state's while ACTIVE (`RUNNING`, `BOOT_UNDEPLOY`), else the STATE's
    status: str
    #: the platform CLI's short name (`runn`, `pend`, `poff`, `unde`, ...)
    state_name: str
    host: str
    host_id: int | None
    ips: tuple[str, ...]
    cpu: float
    vcpu: int
    memory_mb: int
    #: monitored usage, when the pool carries it
    cpu_usage: float | None
    memory_usage_kb: int | None
    service_id: int | None
    role_name: str
    stime: int

    @property
    def kind(self) -> StateKind:
        return state_kind(self.state, self.lcm_state)

    @property
    def running(self) -> bool:
        return self.state == ACTIVE and self.lcm_state == RUNNING


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
