"""The object store's data disk sized for trial networks: disk0 of the toolkit's object store VM
grown to a configurable size (default 30 GB, what the existing installer resizes it to; the
appliance ships it at 3 GB and the trial networks' files fill it).

`plan_disk(site, size_mb)` finds the VM (the live toolkit service's `objectstore` role, the
naming profile's word), reads disk0's SIZE and where the disk lives, and that datastore's free
space; nothing is changed. The disk lives where the platform creates it
(`VirtualMachineDisk::resize_quotas`' table, src/vm/VirtualMachineDisk.cc 528-539 at
release-7.0.2; its target is CLONE_TARGET for a cloned disk, else LN_TARGET, `get_tm_target`
83-100): SYSTEM in the VM's system datastore (its last host record's), SELF and NONE in the
image's datastore.

`ResizeObjectstoreDisk` is the operation (the pipeline of tui.procedures.operation: preview with
`onevm disk-resize <vm> 0 <size>`, confirmation, read-only refusal, one audit record). Its run
re-reads the VM, and:

- disk0 already at the size or more: nothing is sent (idempotent; a second run changes nothing);
- a resize already under way (DISK_RESIZE*, an earlier run or another operator): it is waited
  for, never asked again;
- the VM in a state the platform refuses (only RUNNING, POWEROFF and UNDEPLOYED may resize:
  `DispatchManager::disk_resize`, src/dm/DispatchManagerActions.cc 2219-2231), or the datastore
  without room for the growth: refused before anything is sent, saying what to do;
- else `one.vm.diskresize`, then the VM is followed through DISK_RESIZE (62), DISK_RESIZE_POWEROFF
  (63) or DISK_RESIZE_UNDEPLOYED (64) until it leaves them: disk0 at the size is done; back at
  its old size, the platform's driver failed it (`trigger_disk_resize_failure` restores SIZE).
  The wait says what it waits for and for how long, has a time limit, and a cancel stops the
  wait (the platform cannot stop a resize it started; running again picks it up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui import timing
from tui.domain.disk_size import DEFAULT_OBJECTSTORE_DISK_MB, format_mb, human_mb
from tui.domain.one_states import VmState
from tui.domain.vm_detail import Disk, VmDetail
from tui.errors import SiteError
from tui.procedures.operation import Confirmation, Operation, OperationCancelled, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.datastores import Datastore
    from tui.domain.services import Service
    from tui.procedures.connection import SiteConnection

#: the object store's data disk (the spec's "two object-store disks (disk0, disk1)")
DATA_DISK_ID = 0
#: LCM states of a resize under way (include/VirtualMachine.h 137-139 at release-7.0.2)
RESIZING_LCM = {62: "DISK_RESIZE", 63: "DISK_RESIZE_POWEROFF", 64: "DISK_RESIZE_UNDEPLOYED"}
#: states (the long status name) from which the platform resizes a disk
RESIZABLE = frozenset({"RUNNING", "POWEROFF", "UNDEPLOYED"})
DEFAULT_WAIT = timing.PROFILE.disk_resize_timeout


@dataclass(frozen=True)
class DiskRoom:
    """The datastore disk0 lives in and its free space (as the platform's monitoring last read it)."""

    datastore_id: int
    name: str
    kind: str
    free_mb: int

    def as_json(self) -> dict[str, Any]:
        return {"datastore_id": self.datastore_id, "name": self.name, "kind": self.kind, "free_mb": self.free_mb}


@dataclass(frozen=True)
class DiskPlan:
    service_id: int
    vm_id: int
    vm_name: str
    #: the VM's long state name (RUNNING, POWEROFF, DISK_RESIZE, ...)
    vm_state: str
    disk_id: int
    current_mb: int
    wanted_mb: int
    #: None when the datastore could not be told or read (`room_note` says why)
    room: DiskRoom | None
    room_note: str = ""

    @property
    def already(self) -> bool:
        """disk0 is at the size or more, and no resize is under way (whose SIZE is the asked one)."""
        return self.current_mb >= self.wanted_mb and not self.resizing

    @property
    def resizing(self) -> bool:
        return self.vm_state in RESIZING_LCM.values()

    @property
    def growth_mb(self) -> int:
        return max(self.wanted_mb - self.current_mb, 0)

    @property
    def problems(self) -> tuple[str, ...]:
        """What stops the resize now (empty: it can run); nothing when there is nothing to do."""
        if self.already or self.resizing:
            return ()
        found = []
        if self.vm_state not in RESIZABLE:
            found.append(f"VM {self.vm_id} is {self.vm_state}: the platform resizes a disk only when the VM is RUNNING, "
                         "POWEROFF or UNDEPLOYED (wait until it is RUNNING, or recover it, then run again)")
        if self.room is None:
            found.append(f"the datastore of disk {self.disk_id} could not be checked: {self.room_note}")
        elif self.room.free_mb < self.growth_mb:
            found.append(f"{self.room.kind} datastore {self.room.datastore_id} {self.room.name!r} has "
                         f"{human_mb(self.room.free_mb)} free; growing disk {self.disk_id} needs {human_mb(self.growth_mb)} "
                         "(free space there, or ask for a smaller size with --size)")
        return tuple(found)

    def cli(self) -> str:
        return f"onevm disk-resize {self.vm_id} {self.disk_id} {format_mb(self.wanted_mb)}"

    def describe(self) -> str:
        return f"disk {self.disk_id} of the object store VM {self.vm_id} {self.vm_name!r}"

    def preview(self) -> Preview:
        target = f"VM {self.vm_id} {self.vm_name} disk {self.disk_id}"
        title = f"Object store data disk to {format_mb(self.wanted_mb)}"
        if self.already:
            change = Change(f"{self.describe()} is {human_mb(self.current_mb)}, at least {human_mb(self.wanted_mb)}: "
                            "nothing to change", f"onevm show {self.vm_id}", "none")
            return Preview(title, (change,), target=target)
        if self.resizing:
            change = Change(f"{self.describe()} is being resized ({self.vm_state}): wait for it, nothing is sent",
                            f"onevm show {self.vm_id}", "none")
            return Preview(title, (change,), target=target)
        room = (f"; {self.room.kind} datastore {self.room.datastore_id} {self.room.name!r} has {human_mb(self.room.free_mb)} "
                "free" if self.room else "")
        change = Change(f"grow {self.describe()} ({self.vm_state}) from {human_mb(self.current_mb)} to "
                        f"{human_mb(self.wanted_mb)} (+{self.growth_mb} MB{room}); a disk cannot shrink again",
                        self.cli(), "update")
        return Preview(title, (change,), target=target, warnings=self.problems)

    def as_json(self) -> dict[str, Any]:
        return {"service_id": self.service_id, "vm_id": self.vm_id, "vm_name": self.vm_name, "vm_state": self.vm_state,
                "disk_id": self.disk_id, "size_mb": self.current_mb, "wanted_mb": self.wanted_mb,
                "already": self.already, "resizing": self.resizing, "growth_mb": self.growth_mb,
                "datastore": self.room.as_json() if self.room else None, "problems": list(self.problems),
                "command": self.cli()}


@dataclass(frozen=True)
class DiskResized:
    vm_id: int
    disk_id: int
    size_before_mb: int
    size_mb: int
    changed: bool
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"vm_id": self.vm_id, "disk_id": self.disk_id, "size_before_mb": self.size_before_mb,
                "size_mb": self.size_mb, "changed": self.changed, "seconds": round(self.seconds, 1)}


async def objectstore_vm_id(site: "SiteConnection", service_id: int | None = None) -> tuple["Service", int]:
    """The toolkit service (the live one, or `service_id`) and its object store role's first VM."""
    from tui.procedures.toolkit.service import toolkit_service

    role_name = site.naming.role_objectstore
    if service_id is not None:
        service: Service | None = await site.flow.get_service(service_id)
    else:
        service = toolkit_service(tuple(await site.flow.list_services()), site.naming)
    if service is None:
        raise SiteError("No toolkit service", "OneFlow has no live service with the toolkit's roles: deploy the toolkit "
                        "first (`sitetk setup run --input FILE` or `sitetk toolkit deploy`), or name it with --service ID.")
    role = service.role(role_name)
    if role is None or not role.vm_ids:
        raise SiteError(f"Service {service.id} has no {role_name} VM",
                        f"Its roles: {', '.join(f'{r.name} ({len(r.vm_ids)} VM)' for r in service.roles) or 'none'}. "
                        f"The object store is the {role_name!r} role's VM; wait until the service has deployed it.")
    return service, role.vm_ids[0]


def data_disk(vm: VmDetail, disk_id: int = DATA_DISK_ID) -> Disk:
    disk = next((d for d in vm.disks if d.disk_id == disk_id), None)
    if disk is None or disk.size_mb is None:
        raise SiteError(f"VM {vm.id} has no disk {disk_id}" if disk is None else f"Disk {disk_id} of VM {vm.id} has no SIZE",
                        f"The object store VM's disks: {', '.join(f'{d.disk_id} {d.image or d.type}' for d in vm.disks) or 'none'}"
                        f" (onevm show {vm.id}).")
    return disk


def disk_datastore(vm: VmDetail, disk: Disk) -> tuple[int | None, str]:
    """(datastore id, "system" or "image") where the disk lives; id None when it cannot be told."""
    attrs = disk.attributes
    clone = attrs.get("CLONE", "").upper() == "YES"
    target = attrs.get("CLONE_TARGET" if clone else "LN_TARGET", "").upper()
    if disk.image_id is None or target in ("SYSTEM", ""):
        # a volatile disk, or one the platform copies into the system datastore
        host = vm.last_host
        return (host.datastore_id if host is not None and host.datastore_id >= 0 else None), "system"
    return disk.datastore_id, "image"


async def plan_disk(site: "SiteConnection", size_mb: int = DEFAULT_OBJECTSTORE_DISK_MB, *,
                    service_id: int | None = None, disk_id: int = DATA_DISK_ID) -> DiskPlan:
    """Read the object store VM, its disk and that disk's datastore; change nothing."""
    service, vm_id = await objectstore_vm_id(site, service_id)
    vm = await site.cloud.vm_info(vm_id)
    return await _plan_for(site, service.id, vm, size_mb, disk_id)


def disk_plan(service_id: int, vm: VmDetail, datastores: "tuple[Datastore, ...] | None", size_mb: int,
              disk_id: int = DATA_DISK_ID, datastores_note: str = "") -> DiskPlan:
    """The plan from what was read (pure): the VM, the datastores (None: not read, `datastores_note`
    says why); SiteError when the VM has no such disk."""
    disk = data_disk(vm, disk_id)
    ds_id, kind = disk_datastore(vm, disk)
    room: DiskRoom | None = None
    note = ""
    if ds_id is None:
        note = f"VM {vm.id} has no host record naming its system datastore yet"
    elif datastores is None:
        note = datastores_note or "the datastores could not be read"
    else:
        found = next((d for d in datastores if d.id == ds_id), None)
        if found is not None:
            room = DiskRoom(found.id, found.name, kind, found.free_mb)
        else:
            note = f"datastore {ds_id} is not in the datastore list"
    assert disk.size_mb is not None
    return DiskPlan(service_id, vm.id, vm.name, vm.summary.status, disk_id, disk.size_mb, size_mb, room, note)


async def _plan_for(site: "SiteConnection", service_id: int, vm: VmDetail, size_mb: int, disk_id: int) -> DiskPlan:
    try:
        datastores: tuple[Datastore, ...] | None = await site.cloud.list_datastores()
        note = ""
    except SiteError as error:
        datastores, note = None, f"the datastores could not be read ({error.title})"
    return disk_plan(service_id, vm, datastores, size_mb, disk_id, note)


@dataclass
class _ResizeRecord:
    """What a resize run did so far, for its failure record."""

    before_mb: int
    sent: bool = False
    #: the size read after a resize the platform's driver failed
    after_mb: int | None = None


@dataclass(frozen=True)
class ResizeObjectstoreDisk(Operation[DiskPlan, DiskResized]):
    """Grow disk0 of the object store VM to `size_mb` (see the module docstring)."""

    size_mb: int = DEFAULT_OBJECTSTORE_DISK_MB
    service_id: int | None = None
    wait_timeout: float = DEFAULT_WAIT
    poll_interval: float = timing.PROFILE.poll_interval

    title: ClassVar[str] = "Resize the object store's data disk"
    refusal: ClassVar[str] = "resizing a disk changes the object store VM"
    action: ClassVar[str] = "vm.disk.resize"
    resumable: ClassVar[bool] = True

    async def plan(self, site: "SiteConnection") -> DiskPlan:
        return await plan_disk(site, self.size_mb, service_id=self.service_id)

    def preview(self, plan: DiskPlan) -> Preview:
        return plan.preview()

    def confirmation(self, plan: DiskPlan) -> Confirmation | None:
        if plan.already or plan.resizing:
            return None
        return Confirmation("Resize", plan.describe(),
                            f"{human_mb(plan.current_mb)} -> {human_mb(plan.wanted_mb)}; a disk cannot be shrunk back",
                            command=plan.cli())

    async def execute(self, site: "SiteConnection", plan: DiskPlan, context: RunContext) -> DiskResized:
        total = 3
        label = plan.describe()
        context.report(Progress("read VM", 0, total, f"reading VM {plan.vm_id}"))
        vm = await site.cloud.vm_info(plan.vm_id)
        current = await _plan_for(site, plan.service_id, vm, plan.wanted_mb, plan.disk_id)
        record = context.keep(_ResizeRecord(current.current_mb))
        context.report(Progress("read VM", 1, total, f"{label}: {human_mb(current.current_mb)}, VM {current.vm_state}",
                                ProgressState.DONE, {"size_mb": current.current_mb, "state": current.vm_state}))
        if current.already:
            context.report(Progress("resize", 3, total, f"{label} is already {human_mb(current.current_mb)}: nothing sent",
                                    ProgressState.SKIPPED, {"changed": False}))
            return DiskResized(plan.vm_id, plan.disk_id, current.current_mb, current.current_mb, False)
        started = timing.monotonic()
        if current.resizing:
            context.report(Progress("resize", 2, total, f"a resize of VM {plan.vm_id} is already under way "
                                    f"({current.vm_state}): waiting for it, nothing sent", ProgressState.SKIPPED))
        else:
            if current.problems:
                raise SiteError(f"Disk {plan.disk_id} of VM {plan.vm_id} cannot be resized now",
                                "\n".join(current.problems) + "\nNothing was sent.")
            context.report(Progress("resize", 1, total, current.cli()))
            record.sent = True
            try:
                await site.cloud.vm_disk_resize(plan.vm_id, plan.disk_id, plan.wanted_mb)
            finally:
                site.note_change()
            context.report(Progress("resize", 2, total, f"the platform accepted the resize of {label}", ProgressState.DONE))
        after = await self._wait(site, current, context, started)
        size = data_disk(after, plan.disk_id).size_mb or 0
        seconds = timing.monotonic() - started
        if size < plan.wanted_mb:
            record.after_mb = size
            context.report(Progress("wait", 2, total, f"{label} is {human_mb(size)} after the resize: the platform's "
                                    "driver failed it", ProgressState.FAILED, {"size_mb": size}))
            raise SiteError(f"The resize of disk {plan.disk_id} of VM {plan.vm_id} failed",
                            f"The VM left the resize ({after.summary.status}) with the disk at {human_mb(size)}: the "
                            f"platform's driver failed it and put the old size back. Its reason is in the VM's log "
                            f"(`onevm show {plan.vm_id}`; /var/log/one/{plan.vm_id}.log on the frontend); fix it and run "
                            "again.")
        context.report(Progress("wait", 3, total, f"{label} is {human_mb(size)} ({seconds:.0f} s)", ProgressState.DONE,
                                {"size_mb": size, "changed": True}))
        return DiskResized(plan.vm_id, plan.disk_id, current.current_mb, size, True, seconds)

    async def _wait(self, site: "SiteConnection", plan: DiskPlan, context: RunContext, started: float) -> VmDetail:
        """Follow the VM until it leaves the DISK_RESIZE* states (timeout, cancel)."""
        while True:
            vm = await site.cloud.vm_info(plan.vm_id)
            elapsed = timing.monotonic() - started
            lcm = vm.summary.lcm_state if vm.summary.state == VmState.ACTIVE else -1
            if lcm not in RESIZING_LCM:
                return vm
            context.report(Progress("wait", 2, 3, f"VM {plan.vm_id} {RESIZING_LCM[lcm]}: waiting for the platform to grow "
                                    f"disk {plan.disk_id} ({elapsed:.0f} s of at most {self.wait_timeout:.0f} s)"))
            if elapsed >= self.wait_timeout:
                raise SiteError(f"VM {plan.vm_id} is still {RESIZING_LCM[lcm]} after {elapsed:.0f} s",
                                "The platform goes on with the resize (it cannot be stopped). Check it with `onevm show "
                                f"{plan.vm_id}`; running this again waits for it and sends nothing twice.", retryable=True)
            await context.pause(self.poll_interval)
            if not context.cancel.is_set():
                continue
            raise OperationCancelled("Cancelled", f"stopped waiting for the resize of disk {plan.disk_id} of VM "
                                     f"{plan.vm_id}: the platform goes on with it (it cannot be stopped); running "
                                     "this again waits for it", retryable=True)

    def audit_details(self, plan: DiskPlan, result: DiskResized) -> Mapping[str, Any] | None:
        if not result.changed:
            return None
        return {"vm_id": plan.vm_id, "disk_id": plan.disk_id, "service_id": plan.service_id,
                "size_before_mb": result.size_before_mb, "size_mb": result.size_mb,
                "datastore_id": plan.room.datastore_id if plan.room else None, "seconds": round(result.seconds, 1)}

    def audit_failure(self, plan: DiskPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        record = context.kept(_ResizeRecord) or _ResizeRecord(plan.current_mb)
        return {"vm_id": plan.vm_id, "disk_id": plan.disk_id, "wanted_mb": plan.wanted_mb,
                "size_before_mb": record.before_mb, "request_sent": record.sent,
                **({"size_after_mb": record.after_mb} if record.after_mb is not None else {}),
                "fix": f"`onevm show {plan.vm_id}`, then `sitetk toolkit disk --size {format_mb(plan.wanted_mb)} --apply` "
                       "(it sends nothing when the disk is already at the size)"}

    def audit_object(self, plan: DiskPlan) -> str:
        return f"VM {plan.vm_id} disk {plan.disk_id}"
