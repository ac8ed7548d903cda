"""Virtual machines: state tables, the list row (`VmSummary`) and the full record (`VmDetail`).

The state tables are `tui.domain.one_states`, shared with the embedded site (pyone's enums stop at
LCM state 68 and raise on newer codes). Short names are the platform CLI's (`onevm list`): `runn`, `pend`, `poff`, `unde`, ...
Unknown codes never raise: they read `STATE_<n>` / `?<n>`.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, fields, make_dataclass
from typing import TYPE_CHECKING, Literal

from tui.domain.vm_states import LCM_STATES, VM_STATES, LcmState, VmState

ACTIVE = VmState.ACTIVE

#: LCM_STATE codes of a running guest (the only ones `ready` can be true in)
RUNNING = LcmState.RUNNING

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
    if not name.endswith((")", ")\n")):  # most names: no regex run (`$` also matches before a final \n)
        return None, ""
    match = _SERVICE_NAME.match(name)
    if not match:
        return None, ""
    return int(match.group("service")), match.group("role")


@dataclass(frozen=True, slots=True)
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


def _become_summary(draft: object) -> None:
    draft.__class__ = VmSummary


# `new_vm_summary(...)` is `VmSummary(...)` for the pool's builder (every VM on every refresh),
# about 3 us cheaper a VM: a frozen dataclass's `__init__` sets each of the 21 fields through
# `object.__setattr__` (a call each), so the fields are set on a mutable twin with the same slots
# (plain attribute stores) which then becomes a `VmSummary` (`__class__` assignment, which
# Python allows only between classes of the same layout: it raises, never builds a wrong
# object, if the two ever differ). Type checkers see `VmSummary` itself, so every call is checked.
if TYPE_CHECKING:
    new_vm_summary = VmSummary
else:
    # the twin copies the fields only: a check or a default VmSummary gained would be skipped
    if hasattr(VmSummary, "__post_init__") or any(f.default is not MISSING or f.default_factory is not MISSING
                                                  for f in fields(VmSummary)):
        raise TypeError("VmSummary has a __post_init__ or a default: new_vm_summary must be VmSummary itself")
    new_vm_summary = make_dataclass(
        "_VmSummaryDraft", [(field.name, field.type) for field in fields(VmSummary)], slots=True, eq=False,
        repr=False, match_args=False, namespace={"__post_init__": _become_summary})
