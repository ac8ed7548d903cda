"""The platform's state and type codes: one vocabulary for the console and the embedded site.

Each enum is the platform's, named and numbered as its source declares it (cited on each); the
tables map a code to its name (and the CLI's short name) for the parsers, which look codes up with
`.get` so that a code a later release adds is still read (never `XState(code)`).

VMs. Codes and names are the platform's (`include/VirtualMachine.h` `enum VmState` and `enum LcmState`:
lines 53-145 at release-6.10.0, 54-146 at release-7.0.2, 55-147 at release-7.4.0, the same codes up to
RESTORE = 71); the short names are the CLI's (`onevm list`: release-7.4.0
`src/oca/ruby/opennebula/virtual_machine.rb` 153 `SHORT_VM_STATES`, 168 `SHORT_LCM_STATES`).
"""

from __future__ import annotations

from enum import IntEnum


class VmState(IntEnum):
    """A VM's STATE."""
    INIT = 0
    PENDING = 1
    HOLD = 2
    ACTIVE = 3
    STOPPED = 4
    SUSPENDED = 5
    DONE = 6
    FAILED = 7
    POWEROFF = 8
    UNDEPLOYED = 9
    CLONING = 10
    CLONING_FAILURE = 11


class LcmState(IntEnum):
    """A VM's LCM_STATE, meaningful while its STATE is ACTIVE."""
    LCM_INIT = 0
    PROLOG = 1
    BOOT = 2
    RUNNING = 3
    MIGRATE = 4
    SAVE_STOP = 5
    SAVE_SUSPEND = 6
    SAVE_MIGRATE = 7
    PROLOG_MIGRATE = 8
    PROLOG_RESUME = 9
    EPILOG_STOP = 10
    EPILOG = 11
    SHUTDOWN = 12
    CANCEL = 13
    FAILURE = 14
    CLEANUP_RESUBMIT = 15
    UNKNOWN = 16
    HOTPLUG = 17
    SHUTDOWN_POWEROFF = 18
    BOOT_UNKNOWN = 19
    BOOT_POWEROFF = 20
    BOOT_SUSPENDED = 21
    BOOT_STOPPED = 22
    CLEANUP_DELETE = 23
    HOTPLUG_SNAPSHOT = 24
    HOTPLUG_NIC = 25
    HOTPLUG_SAVEAS = 26
    HOTPLUG_SAVEAS_POWEROFF = 27
    HOTPLUG_SAVEAS_SUSPENDED = 28
    SHUTDOWN_UNDEPLOY = 29
    EPILOG_UNDEPLOY = 30
    PROLOG_UNDEPLOY = 31
    BOOT_UNDEPLOY = 32
    HOTPLUG_PROLOG_POWEROFF = 33
    HOTPLUG_EPILOG_POWEROFF = 34
    BOOT_MIGRATE = 35
    BOOT_FAILURE = 36
    BOOT_MIGRATE_FAILURE = 37
    PROLOG_MIGRATE_FAILURE = 38
    PROLOG_FAILURE = 39
    EPILOG_FAILURE = 40
    EPILOG_STOP_FAILURE = 41
    EPILOG_UNDEPLOY_FAILURE = 42
    PROLOG_MIGRATE_POWEROFF = 43
    PROLOG_MIGRATE_POWEROFF_FAILURE = 44
    PROLOG_MIGRATE_SUSPEND = 45
    PROLOG_MIGRATE_SUSPEND_FAILURE = 46
    BOOT_UNDEPLOY_FAILURE = 47
    BOOT_STOPPED_FAILURE = 48
    PROLOG_RESUME_FAILURE = 49
    PROLOG_UNDEPLOY_FAILURE = 50
    DISK_SNAPSHOT_POWEROFF = 51
    DISK_SNAPSHOT_REVERT_POWEROFF = 52
    DISK_SNAPSHOT_DELETE_POWEROFF = 53
    DISK_SNAPSHOT_SUSPENDED = 54
    DISK_SNAPSHOT_REVERT_SUSPENDED = 55
    DISK_SNAPSHOT_DELETE_SUSPENDED = 56
    DISK_SNAPSHOT = 57
    DISK_SNAPSHOT_REVERT = 58
    DISK_SNAPSHOT_DELETE = 59
    PROLOG_MIGRATE_UNKNOWN = 60
    PROLOG_MIGRATE_UNKNOWN_FAILURE = 61
    DISK_RESIZE = 62
    DISK_RESIZE_POWEROFF = 63
    DISK_RESIZE_UNDEPLOYED = 64
    HOTPLUG_NIC_POWEROFF = 65
    HOTPLUG_RESIZE = 66
    HOTPLUG_SAVEAS_UNDEPLOYED = 67
    HOTPLUG_SAVEAS_STOPPED = 68
    BACKUP = 69
    BACKUP_POWEROFF = 70
    RESTORE = 71


_VM_SHORT = {0: "init", 1: "pend", 2: "hold", 3: "actv", 4: "stop", 5: "susp", 6: "done", 7: "fail", 8: "poff", 9: "unde", 10: "clon", 11: "fail"}
_LCM_SHORT = {0: "init", 1: "prol", 2: "boot", 3: "runn", 4: "migr", 5: "save", 6: "save", 7: "save", 8: "migr", 9: "prol", 10: "epil", 11: "epil", 12: "shut", 13: "shut", 14: "fail", 15: "clea", 16: "unkn", 17: "hotp", 18: "shut", 19: "boot", 20: "boot", 21: "boot", 22: "boot", 23: "clea", 24: "snap", 25: "hotp", 26: "hotp", 27: "hotp", 28: "hotp", 29: "shut", 30: "epil", 31: "prol", 32: "boot", 33: "hotp", 34: "hotp", 35: "boot", 36: "fail", 37: "fail", 38: "fail", 39: "fail", 40: "fail", 41: "fail", 42: "fail", 43: "migr", 44: "fail", 45: "migr", 46: "fail", 47: "fail", 48: "fail", 49: "fail", 50: "fail", 51: "snap", 52: "snap", 53: "snap", 54: "snap", 55: "snap", 56: "snap", 57: "snap", 58: "snap", 59: "snap", 60: "migr", 61: "fail", 62: "drsz", 63: "drsz", 64: "drsz", 65: "hotp", 66: "hotp", 67: "hotp", 68: "hotp", 69: "back", 70: "back", 71: "rest"}

#: STATE code -> (name, CLI short name); ACTIVE's short name comes from the LCM state
VM_STATES: dict[int, tuple[str, str]] = {int(s): (s.name, _VM_SHORT[s]) for s in VmState}
#: LCM_STATE code -> (name, CLI short name)
LCM_STATES: dict[int, tuple[str, str]] = {int(s): (s.name, _LCM_SHORT[s]) for s in LcmState}
#: the LCM states a failed operation leaves a VM in (every `*_FAILURE` name; the old FAILURE = 14 is
#: not one the platform still enters)
FAILURE_LCM_STATES: frozenset[int] = frozenset(s for s in LcmState if s.name.endswith("_FAILURE"))


# hosts ---------------------------------------------------------------------------------------
class HostState(IntEnum):
    """A host's STATE (`include/Host.h` `enum HostState`: line 48 at release-6.10.0, 49 at 7.0.2 and
    7.4.0). The MONITORING_* codes (1, 5, 6, 7) are commented out there and still listed in
    `share/doc/xsd/host.xsd` and the CLI's `HOST_STATES` (`src/oca/ruby/opennebula/host.rb` 37)."""
    INIT = 0
    MONITORING_MONITORED = 1
    MONITORED = 2
    ERROR = 3
    DISABLED = 4
    MONITORING_ERROR = 5
    MONITORING_INIT = 6
    MONITORING_DISABLED = 7
    OFFLINE = 8


#: the CLI's short names (`onehost list`: release-7.4.0 `src/oca/ruby/opennebula/host.rb` 40 `SHORT_HOST_STATES`)
_HOST_SHORT = {0: "init", 1: "update", 2: "on", 3: "err", 4: "dsbl", 5: "retry", 6: "init", 7: "dsbl", 8: "off"}
#: HOST STATE code -> (name, CLI short name)
HOST_STATES: dict[int, tuple[str, str]] = {int(s): (s.name, _HOST_SHORT[s]) for s in HostState}


# images --------------------------------------------------------------------------------------
class ImageState(IntEnum):
    """An image's STATE (`include/Image.h` `enum ImageState`: line 127 at release-6.10.0 and 7.0.2,
    131 at 7.4.0, the same codes)."""
    INIT = 0
    READY = 1
    USED = 2
    DISABLED = 3
    LOCKED = 4
    ERROR = 5
    CLONE = 6
    DELETE = 7
    USED_PERS = 8
    LOCKED_USED = 9
    LOCKED_USED_PERS = 10


#: the CLI's short names (`oneimage list`: release-7.4.0 `src/oca/ruby/opennebula/image.rb` 51 `SHORT_IMAGE_STATES`)
_IMAGE_SHORT = {0: "init", 1: "rdy", 2: "used", 3: "disa", 4: "lock", 5: "err", 6: "clon", 7: "dele", 8: "used",
                9: "lock", 10: "lock"}
#: IMAGE STATE code -> (name, CLI short name)
IMAGE_STATES: dict[int, tuple[str, str]] = {int(s): (s.name, _IMAGE_SHORT[s]) for s in ImageState}


# virtual networks ------------------------------------------------------------------------------
class VirtualNetworkState(IntEnum):
    """A virtual network's STATE (`include/VirtualNetwork.h` `enum VirtualNetworkState`, line 73 at
    release-6.10.0 and 7.0.2, 75 at 7.4.0)."""
    INIT = 0
    READY = 1
    LOCK_CREATE = 2
    LOCK_DELETE = 3
    DONE = 4
    ERROR = 5
    UPDATE_FAILURE = 6


#: VNET STATE code -> name
VNET_STATES: dict[int, str] = {int(s): s.name for s in VirtualNetworkState}


# marketplaces, their apps, datastores ------------------------------------------------------------
class MarketPlaceState(IntEnum):
    """A marketplace's STATE (`include/MarketPlace.h` `enum MarketPlaceState`, line 33 at release-6.10.0,
    7.0.2 and 7.4.0)."""
    ENABLED = 0
    DISABLED = 1


class MarketPlaceAppState(IntEnum):
    """A marketplace app's STATE (`include/MarketPlaceApp.h` `enum State`, line 68 at release-6.10.0,
    7.0.2 and 7.4.0)."""
    INIT = 0
    READY = 1
    LOCKED = 2
    ERROR = 3
    DISABLED = 4


class DatastoreState(IntEnum):
    """A datastore's STATE (`include/Datastore.h` `enum DatastoreState`, line 72 at release-6.10.0,
    7.0.2 and 7.4.0)."""
    READY = 0
    DISABLED = 1


#: MARKETPLACE STATE code -> name
MARKETPLACE_STATES: dict[int, str] = {int(s): s.name for s in MarketPlaceState}
#: MARKETPLACEAPP STATE code -> name
APP_STATES: dict[int, str] = {int(s): s.name for s in MarketPlaceAppState}
#: DATASTORE STATE code -> name
DATASTORE_STATES: dict[int, str] = {int(s): s.name for s in DatastoreState}


# object types ------------------------------------------------------------------------------------
class ImageType(IntEnum):
    """An image's TYPE (`include/Image.h` `enum ImageType`, line 37: OS to BACKUP = 6 at release-6.10.0
    and 7.0.2; FILESYSTEM = 7 from 7.4.0)."""
    OS = 0
    CDROM = 1
    DATABLOCK = 2
    KERNEL = 3
    RAMDISK = 4
    CONTEXT = 5
    BACKUP = 6
    FILESYSTEM = 7


class DatastoreType(IntEnum):
    """A datastore's TYPE (`include/Datastore.h` `enum DatastoreType`, line 37 at release-6.10.0, 7.0.2
    and 7.4.0)."""
    IMAGE_DS = 0
    SYSTEM_DS = 1
    FILE_DS = 2
    BACKUP_DS = 3


class MarketPlaceAppType(IntEnum):
    """A marketplace app's TYPE (`include/MarketPlaceApp.h` `enum Type`, line 98 at release-6.10.0, 7.0.2
    and 7.4.0)."""
    UNKNOWN = 0
    IMAGE = 1
    VMTEMPLATE = 2
    SERVICE_TEMPLATE = 3


#: IMAGE TYPE code -> name
IMAGE_TYPES: dict[int, str] = {int(t): t.name for t in ImageType}
#: DATASTORE TYPE code -> name, as the CLI lists it (`src/oca/ruby/opennebula/datastore.rb` 37
#: `DATASTORE_TYPES` at release-7.4.0: IMAGE, SYSTEM, FILE, BACKUP)
DATASTORE_TYPES: dict[int, str] = {int(t): t.name.removesuffix("_DS") for t in DatastoreType}
#: MARKETPLACEAPP TYPE code -> name
APP_TYPES: dict[int, str] = {int(t): t.name for t in MarketPlaceAppType}


# OneFlow services and their roles ----------------------------------------------------------------
class ServiceState(IntEnum):
    """A service's state (OneFlow's `Service::STATE`, `src/flow/lib/models/service.rb` line 26 at
    release-6.10.0, 7.0.2 and 7.4.0)."""
    PENDING = 0
    DEPLOYING = 1
    RUNNING = 2
    UNDEPLOYING = 3
    WARNING = 4
    DONE = 5
    FAILED_UNDEPLOYING = 6
    FAILED_DEPLOYING = 7
    SCALING = 8
    FAILED_SCALING = 9
    COOLDOWN = 10
    DEPLOYING_NETS = 11
    UNDEPLOYING_NETS = 12
    FAILED_DEPLOYING_NETS = 13
    FAILED_UNDEPLOYING_NETS = 14
    HOLD = 15


class RoleState(IntEnum):
    """A service role's state (`Role::STATE`, `src/flow/lib/models/role.rb` line 57 at release-6.10.0,
    35 at 7.0.2 and 7.4.0): the service's codes up to COOLDOWN, then HOLD."""
    PENDING = 0
    DEPLOYING = 1
    RUNNING = 2
    UNDEPLOYING = 3
    WARNING = 4
    DONE = 5
    FAILED_UNDEPLOYING = 6
    FAILED_DEPLOYING = 7
    SCALING = 8
    FAILED_SCALING = 9
    COOLDOWN = 10
    HOLD = 11


#: service state code -> name
SERVICE_STATES: dict[int, str] = {int(s): s.name for s in ServiceState}
#: role state code -> name
ROLE_STATES: dict[int, str] = {int(s): s.name for s in RoleState}
#: `Service::TRANSIENT_STATES` and `FAILED_STATES` (service.rb release-7.4.0 64-79, the same at 6.10.0
#: and 7.0.2): a failed service does not leave its state by itself
SERVICE_TRANSIENT_STATES = frozenset({ServiceState.DEPLOYING, ServiceState.UNDEPLOYING, ServiceState.SCALING,
                                      ServiceState.COOLDOWN, ServiceState.DEPLOYING_NETS, ServiceState.UNDEPLOYING_NETS})
SERVICE_FAILED_STATES = frozenset({ServiceState.FAILED_DEPLOYING, ServiceState.FAILED_UNDEPLOYING,
                                   ServiceState.FAILED_SCALING, ServiceState.FAILED_DEPLOYING_NETS,
                                   ServiceState.FAILED_UNDEPLOYING_NETS})


def service_can_undeploy(state: object) -> bool:
    """`Service#can_undeploy?` (service.rb release-7.4.0 170-179): not in a transient state other
    than UNDEPLOYING, not DONE, not failed (`DELETE /service/<id>`, `oneflow delete`)."""
    return not ((state in SERVICE_TRANSIENT_STATES and state != ServiceState.UNDEPLOYING)
                or state == ServiceState.DONE or state in SERVICE_FAILED_STATES)
