"""The simulated scheduler's host choice: MONITORED hosts that meet SCHED_REQUIREMENTS, least loaded first.

SCHED_REQUIREMENTS is read as the platform's scheduler reads the common forms: terms
`ATTR = value`, `ATTR != value`, `ATTR > n`, `ATTR < n` and `ATTR @> value` (the value is one of
the words of a space/comma separated attribute) joined by `&` and `|` (`&` binds tighter), with
`*` wildcards in values. Attributes are the host's ID, NAME, HOSTNAME, CLUSTER_ID, CLUSTER and
every HOST/TEMPLATE attribute. A VM whose OS names an ARCH only goes to hosts of that ARCH.
"""

from __future__ import annotations

import fnmatch
import re

from tui.domain.one_states import HostState, VmState
from tui.domain.template_text import first, scalar
from tui.sim.state import SimHost, SimSite, SimVm

_TERM = re.compile(r"^\s*!?\s*([A-Za-z0-9_]+)\s*(!=|@>|=|>|<)\s*\"?([^\"]*)\"?\s*$")


class RequirementError(ValueError):
    """SCHED_REQUIREMENTS could not be read."""


def _host_value(host: SimHost, name: str) -> str:
    special = {
        "ID": str(host.id),
        "NAME": host.name,
        "HOSTNAME": scalar(host.template, "HOSTNAME", host.name),
        "CLUSTER_ID": str(host.cluster_id),
        "CLUSTER": host.cluster,
    }
    if name in special:
        return special[name]
    return scalar(host.template, name, "")


def _term_holds(host: SimHost, term: str) -> bool:
    match = _TERM.match(term)
    if not match:
        raise RequirementError(f"cannot read the requirement term '{term.strip()}'")
    name, op, wanted = match.group(1).upper(), match.group(2), match.group(3).strip()
    value = _host_value(host, name)
    if op == "=":
        return fnmatch.fnmatchcase(value, wanted)
    if op == "!=":
        return not fnmatch.fnmatchcase(value, wanted)
    if op == "@>":
        return wanted in re.split(r"[\s,]+", value)
    try:
        number, limit = float(value), float(wanted)
    except ValueError:
        return False
    return number > limit if op == ">" else number < limit


def meets(host: SimHost, requirements: str) -> bool:
    """Whether the host meets the expression (an empty expression is always met)."""
    text = requirements.strip()
    if not text:
        return True
    if "(" in text or ")" in text:
        text = text.replace("(", " ").replace(")", " ")
    return any(
        all(_term_holds(host, term) for term in alternative.split("&") if term.strip())
        for alternative in text.split("|")
    )


def vm_arch(vm: SimVm) -> str:
    os_attr = first(vm.template, "OS")
    if isinstance(os_attr, list):
        return next((v for k, v in os_attr if k == "ARCH"), "")
    return ""


def candidates(site: SimSite, vm: SimVm) -> list[SimHost]:
    """MONITORED hosts meeting the VM's requirements, least loaded (fewest VMs) first."""
    requirements = scalar(vm.user_template, "SCHED_REQUIREMENTS", "")
    arch = vm_arch(vm)
    load: dict[int, int] = {}
    for other in site.vms.values():
        if other.state in (VmState.ACTIVE, VmState.SUSPENDED, VmState.POWEROFF) and other.history and not other.history[-1].etime:
            load[other.history[-1].host_id] = load.get(other.history[-1].host_id, 0) + 1
    hosts = [
        h for h in site.hosts.values()
        if h.state == HostState.MONITORED and meets(h, requirements) and (not arch or scalar(h.template, "ARCH", "") == arch)
    ]
    return sorted(hosts, key=lambda h: (load.get(h.id, 0), h.id))
