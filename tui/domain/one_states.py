"""The platform's state and type codes: one vocabulary for the console and the embedded site.

Each enum is the platform's, named and numbered as its source declares it (cited on each); the
tables map a code to its name (and the CLI's short name) for the parsers, which look codes up with
`.get` so that a code a later release adds is still read (never `XState(code)`).

VMs: tui.domain.vm_states (re-exported here), apart so that the VM list's first screen creates
its two enums only (issue 24).
"""

from __future__ import annotations

from enum import IntEnum

from tui.domain.vm_states import FAILURE_LCM_STATES as FAILURE_LCM_STATES
from tui.domain.vm_states import LCM_STATES as LCM_STATES
from tui.domain.vm_states import VM_STATES as VM_STATES
from tui.domain.vm_states import LcmState as LcmState
from tui.domain.vm_states import VmState as VmState


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
