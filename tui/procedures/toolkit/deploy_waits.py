"""Why a toolkit deployment waits: each role that is not RUNNING, what it waits for, VM by VM.

`explain_roles(site, service)` reads the VMs of every role that is not RUNNING (by the IDs of the
service's role nodes) and says, for each, what the role waits for and why it has not got it:

- a role with no VM yet waits for its parent roles;
- a VM that is not running yet: its state (and the scheduler's message, SCHED_MESSAGE);
- a VM that runs but has not reported READY=YES (the service's ready gate waits for it): a
  document-database VM whose CPU verdict puts it at risk (its host lacks AVX or SSE4.2, or the
  verdict is unknown while it is not ready, `tui.procedures.hosts.cpu_inventory.DbVmRow.at_risk`) is named with
  its host and the verdict, and the move that fixes it (`sitetk hosts move <id>`, key `m` in the
  deployment view or on the hosts screen); any other VM is waiting for its appliance. Reads only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tui.domain.services import Service, ServiceRole
from tui.domain.vm_detail import VmDetail
from tui.errors import AuthenticationFailed, SiteError
from tui.procedures.concurrent import gather
from tui.procedures.hosts.cpu_inventory import db_vm_rows, host_rows

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

RUNNING = "RUNNING"


@dataclass(frozen=True)
class VmWait:
    """One VM of a waiting role and why it holds the role back."""

    role: str
    vm_id: int
    name: str
    #: the VM's long state (RUNNING, PENDING, PROLOG, ...) or "unreadable"
    status: str
    host: str
    why: str
    #: a document-database VM whose host cannot run its database: the move fixes it
    move_vm_id: int | None = None

    @property
    def move_command(self) -> str:
        return f"sitetk hosts move {self.move_vm_id}" if self.move_vm_id is not None else ""

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "vm_id": self.vm_id, "name": self.name, "status": self.status, "host": self.host,
                "why": self.why, "move": self.move_command or None}


@dataclass(frozen=True)
class RoleWait:
    """A role that is not RUNNING: what it waits for and which VMs hold it back."""

    role: str
    state: str
    waits_for: str
    vms: tuple[VmWait, ...] = ()

    @property
    def moves(self) -> tuple[VmWait, ...]:
        return tuple(vm for vm in self.vms if vm.move_vm_id is not None)

    def lines(self) -> list[str]:
        return [f"role {self.role} {self.state}: waits for {self.waits_for}"] + [f"  {vm.why}" for vm in self.vms]

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "state": self.state, "waits_for": self.waits_for,
                "vms": [vm.as_json() for vm in self.vms]}


async def _vm(site: "SiteConnection", vm_id: int) -> VmDetail | SiteError:
    try:
        return await site.cloud.vm_info(vm_id)
    except AuthenticationFailed:
        raise
    except SiteError as error:
        return error


def _waits_for(role: ServiceRole) -> str:
    if not role.nodes:
        parents = ", ".join(role.parents)
        return f"roles {parents} to be RUNNING before its VMs are created" if parents else "its VMs to be created"
    return "its VMs to run and report READY=YES"


async def explain_roles(site: "SiteConnection", service: Service) -> tuple[RoleWait, ...]:
    """Every role of `service` that is not RUNNING, with what holds it back (module docstring)."""
    waiting = [role for role in service.roles if role.state_name != RUNNING]
    ids = [node.vm_id for role in waiting for node in role.nodes]
    if not waiting:
        return ()
    found = dict(zip(ids, await gather(*(_vm(site, i) for i in ids)), strict=True))
    vms = [vm for vm in found.values() if isinstance(vm, VmDetail)]
    risky = await _database_risks(site, vms)
    out: list[RoleWait] = []
    for role in waiting:
        items: list[VmWait] = []
        for node in role.nodes:
            vm = found.get(node.vm_id)
            if isinstance(vm, SiteError) or vm is None:
                title = vm.title if isinstance(vm, SiteError) else "not read"
                items.append(VmWait(role.name, node.vm_id, node.vm_name, "unreadable", "",
                                    f"{role.name} VM {node.vm_id}: cannot be read ({title})"))
                continue
            item = _vm_wait(role.name, vm, risky.get(vm.id))
            if item is not None:
                items.append(item)
        out.append(RoleWait(role.name, role.state_name, _waits_for(role), tuple(items)))
    return tuple(out)


def _vm_wait(role: str, vm: VmDetail, risk: str | None) -> VmWait | None:
    summary = vm.summary
    host = f"host {summary.host_id} {summary.host}" if summary.host_id is not None else "no host"
    if summary.running and vm.ready:
        return None  # this VM is up; the role waits for another
    if risk is not None:
        return VmWait(role, vm.id, vm.name, summary.status, host,
                      f"{role} VM {vm.id} is on {host}: {risk}; its database cannot start, so READY=YES never "
                      f"comes. Move it: `sitetk hosts move {vm.id}` (key m here or on the hosts screen)", vm.id)
    if summary.running:
        return VmWait(role, vm.id, vm.name, summary.status, host,
                      f"{role} VM {vm.id} runs on {host} but has not reported READY=YES yet (its appliance reports "
                      "it once its software is up)")
    sched = vm.user_template.get("SCHED_MESSAGE")
    return VmWait(role, vm.id, vm.name, summary.status, host,
                  f"{role} VM {vm.id} is {summary.status}" + (f" on {host}" if summary.host_id is not None else "")
                  + (f" ({sched})" if sched else ""))


async def _database_risks(site: "SiteConnection", vms: list[VmDetail]) -> dict[int, str]:
    """VM id -> why its database cannot start, for the document-database VMs at risk among `vms`."""
    naming = site.naming
    known_good = site.settings.known_good_cpu_models
    if not vms:
        return {}
    try:
        hosts = host_rows(await site.cloud.list_hosts(), known_good)
    except AuthenticationFailed:
        raise
    except SiteError:
        return {}
    rows = db_vm_rows(vms, hosts, naming, known_good)
    return {row.id: row.risk for row in rows if row.at_risk}
