"""A VM's state codes: the part of the platform's vocabulary (tui.domain.one_states) the VM list needs.

Codes and names are the platform's (`include/VirtualMachine.h` `enum VmState` and `enum LcmState`:
lines 53-145 at release-6.10.0, 54-146 at release-7.0.2, 55-147 at release-7.4.0, the same codes up to
RESTORE = 71); the short names are the CLI's (`onevm list`: release-7.4.0
`src/oca/ruby/opennebula/virtual_machine.rb` 153 `SHORT_VM_STATES`, 168 `SHORT_LCM_STATES`).

Apart from the other objects' states so that the console's first screen creates only these two
enums: all thirteen (164 members) took 7.2-7.7 ms of CPU to import, these two 3.2-3.8 ms (15 runs,
load 6); the rest are created when a screen, verb or the embedded site imports
tui.domain.one_states (issue 24).
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
