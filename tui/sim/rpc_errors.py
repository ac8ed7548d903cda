"""The one exception the simulated cloud raises, with a platform error code (`tui.domain.error_codes`).

Every failure the simulator answers is `[false, "[method] message", code, object_id, 0]`; the
method layer raises `OneError(code, message, oid)` and the dispatcher adds the `[method] ` prefix,
so the same errors serve the XML-RPC API and the in-process callers (OneFlow, scenarios).
"""

from __future__ import annotations

from tui.domain.error_codes import ACTION, AUTHORIZATION, NO_EXISTS
from tui.domain.object_names import name_problem

#: object names as the platform spells them in "Error getting <name> [<id>]."
OBJECT_NAMES: dict[str, str] = {
    "VM": "virtual machine",
    "HOST": "host",
    "NET": "virtual network",
    "IMAGE": "image",
    "USER": "user",
    "TEMPLATE": "virtual machine template",
    "GROUP": "group",
    "DATASTORE": "datastore",
    "CLUSTER": "cluster",
    "DOCUMENT": "document",
    "MARKETPLACE": "marketplace",
    "MARKETPLACEAPP": "marketplaceapp",
    "ACL": "ACL",
}


class OneError(Exception):
    """A platform error: `code` is one of `tui.domain.error_codes`, `oid` the object concerned."""

    def __init__(self, code: int, message: str, oid: int = -1) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.oid = oid


def no_exists(kind: str, oid: int) -> OneError:
    """`Error getting virtual machine [99].` for kind "VM"."""
    return OneError(NO_EXISTS, f"Error getting {OBJECT_NAMES.get(kind, kind.lower())} [{oid}].", oid)


def not_authorized(uid: int, operation: str, kind: str, oid: int) -> OneError:
    """`User [2] : Not authorized to perform MANAGE VM [5].`; without an object (`oid` -1) no brackets:
    `... MANAGE ACL.` (AuthRequest::add_auth, src/authm/AuthManager.cc 103-112 at release-7.0.0)."""
    target = f" [{oid}]" if oid != -1 else ""
    return OneError(AUTHORIZATION, f"User [{uid}] : Not authorized to perform {operation} {kind}{target}.", oid)


def action_error(action: str, detail: str, oid: int) -> OneError:
    """`Error performing action "undeploy": This action is not available for state HOLD` and the like."""
    return OneError(ACTION, f'Error performing action "{action}": {detail}', oid)


def name_refusal(name: str, invalid_chars: str, code: int, prefix: str = "") -> OneError | None:
    """The platform's refusal of an object name (`PoolObjectSQL::name_is_valid`), or None.

    How it reaches the caller depends on the method: allocate of most objects answers INTERNAL
    with the bare text (`TemplateAllocate::pool_allocate` and its siblings, src/rm/RequestManagerAllocate.cc
    release-7.0.0 740-760; src/rm/api/TemplateAPI.cc release-7.4.0 654-670), an image allocate or a
    template instantiate ALLOCATE with "Error allocating a new <object>." before it
    (src/rm/RequestManagerAllocate.cc 712-717, RequestManagerVMTemplate.cc 289-301;
    `Request::failure_message`), a rename ACTION (src/rm/RequestManagerRename.cc 100-108)."""
    problem = name_problem(name, invalid_chars)
    if problem is None:
        return None
    return OneError(code, f"{prefix}{problem}")


def name_taken(kind: str, oid: int, code: int, prefix: str = "", period: bool = True) -> OneError:
    """The platform's answer to a name another object holds: the pool's text `NAME is already taken
    by <kind> <id>.` (src/vm_template/VMTemplatePool.cc, src/image/ImagePool.cc, src/group/GroupPool.cc,
    src/um/UserPool.cc; src/market/MarketPlacePool.cc has no final period), under the code and
    prefix of the method that relays it (see `name_refusal`)."""
    return OneError(code, f"{prefix}NAME is already taken by {kind} {oid}{'.' if period else ''}")
