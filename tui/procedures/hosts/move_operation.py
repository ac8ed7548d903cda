"""Operation 7 as operations (tui.procedures.operation): move VMs, put one back, resume a move.

- `MoveVms(vm_ids)`: one VM (to `host_id`, or the best compatible host), or every flagged
  document-database VM (`vm_ids=None`; those that cannot be planned are `skipped`);
- `RedeployVm(vm_id, host_id, cpu_model)`: deploy a VM on a host with a CPU model (put it back);
- `ResumeMoves(plans)`: the same moves again, re-planned from the VMs as they are now (done steps
  are skipped).

All three plan a `MoveSet`, preview it with every step's platform CLI command, confirm naming the
VMs (destructive: the VMs stop), run `move_many` and return `Moved`. A cancel (the console's
Cancel, or INT/TERM/HUP in the CLI) stops between two platform calls: `MoveCancelled` and the audit
record name the step, the VM's state and the commands that finish the move or put the VM back.

The run's one audit record (`hosts.move`, `hosts.redeploy` for a put-back) comes from the run's
`MoveLedger`: for one VM its details at the top, for several each under `vms`; each VM's
`changes` (undeploy, CPU model, READY reset, deploy, recover, each with its platform CLI) and
`steps`. A run that stops says where (`step`), the VM's state, what is `left` and the commands
that finish the move (`resume`) or put the VM back (`put_back`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui.errors import SiteError
from tui.procedures.hosts.move_plan import (
    AUDIT_MOVE,
    AUDIT_REDEPLOY,
    DEFAULT_TIMEOUTS,
    MovePlan,
    MoveTimeouts,
    plan_flagged,
    plan_move,
    plan_redeploy,
    preview_many,
)
from tui.procedures.hosts.move_vm import MoveLedger, move_many
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Preview

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection
    from tui.procedures.hosts.cpu_inventory import DbVmRow


@dataclass(frozen=True)
class MoveSet:
    """The moves to run, one after the other, and the flagged VMs left out (with why)."""

    plans: tuple[MovePlan, ...]
    skipped: tuple[tuple["DbVmRow", SiteError], ...] = ()

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(f"VM {row.id} {row.name} is left out: {error.title}: {error.detail}" for row, error in self.skipped)

    @property
    def step_names(self) -> tuple[str, ...]:
        many = len(self.plans) > 1
        return tuple(f"VM {p.vm_id}: {s}" if many else s for p in self.plans for s in p.steps)

    def skipped_json(self) -> list[dict[str, Any]]:
        return [{"vm_id": row.id, "name": row.name, "reason": f"{error.title}: {error.detail}"}
                for row, error in self.skipped]

    def as_json(self) -> dict[str, Any]:
        return {"plans": [p.as_json() for p in self.plans], "skipped": self.skipped_json()}


@dataclass(frozen=True)
class Moved:
    """Where every VM runs now."""

    plans: tuple[MovePlan, ...]
    #: what the run did, VM by VM (the `MoveLedger`'s entries, for the audit record)
    runs: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    def lines(self) -> tuple[str, ...]:
        return tuple(f"{p.label} runs on {p.target_label} with CPU model {p.cpu_model or '(none)'}." for p in self.plans)

    def as_json(self) -> dict[str, Any]:
        return {"moved": [{"vm_id": p.vm_id, "host_id": p.target_host_id, "cpu_model": p.cpu_model}
                          for p in self.plans]}


class MoveOperation(Operation[MoveSet, Moved]):
    """What every move operation shares: preview, confirmation, run."""

    timeouts: MoveTimeouts
    title: ClassVar[str] = "Move a VM"
    refusal: ClassVar[str] = "moving a VM changes the cloud"
    action: ClassVar[str] = AUDIT_MOVE
    cancels_itself: ClassVar[bool] = True
    resumable: ClassVar[bool] = True
    # a move undoes nothing (issue 22 item 10): it stops after the platform call in flight and says
    # where the VM is and the commands that finish the move or put it back
    on_stop: ClassVar[str] = ("stopping after the platform call in flight; a move undoes nothing: the VM's "
                              "state and the commands that finish the move or put it back follow")
    still_stopping: ClassVar[str] = ("still stopping after the platform call in flight (SIGKILL would leave the "
                                     "move without its record)")

    def preview(self, plan: MoveSet) -> Preview:
        return preview_many(plan.plans, self.timeouts)

    def confirmation(self, plan: MoveSet) -> Confirmation | None:
        if not plan.plans:
            return None
        preview = self.preview(plan)
        verb = "Redeploy" if plan.plans[0].redeploy else "Move"
        targets = "; ".join(f"{p.label} to {p.target_label} with CPU model {p.cpu_model or '(none)'}"
                            for p in plan.plans)
        detail = f"{verb} {targets}."
        if preview.warnings:
            detail += "\n" + "\n".join(f"⚠ {w}" for w in preview.warnings)
        return Confirmation(verb, preview.target, detail, destructive=True)

    async def execute(self, site: "SiteConnection", plan: MoveSet, context: RunContext) -> Moved:
        runs = await move_many(site, plan.plans, context, timeouts=self.timeouts, ledger=context.keep(MoveLedger()))
        return Moved(plan.plans, runs)

    def audit_details(self, plan: MoveSet, result: Moved) -> Mapping[str, Any] | None:
        if not result.runs:
            return None  # no VM to move
        runs = [dict(entry) for entry in result.runs]
        return runs[0] if len(runs) == 1 else {"vms": runs}

    def audit_failure(self, plan: MoveSet, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        ledger = context.kept(MoveLedger)
        runs = [dict(entry) for entry in ledger.vms] if ledger is not None else []
        started = {entry["vm_id"] for entry in runs}
        waiting = [p.label for p in plan.plans if p.vm_id not in started]
        if not runs:
            return {"left": "nothing was changed: no move had started", "not_started": waiting}
        stopped = runs[-1]
        state = stopped.get("vm_state") or "in a state not read"
        left = f"VM {stopped['vm_id']} {stopped['vm_name']} is {state}; finish the move with `{stopped['resume']}`"
        if stopped.get("put_back") and not stopped.get("redeploy"):
            left += f" or put it back with `{stopped['put_back']}`"
        out: dict[str, Any] = {**stopped, "left": left, "not_started": waiting}
        if len(runs) > 1:
            out["vms"] = runs
        return out


@dataclass(frozen=True)
class MoveVms(MoveOperation):
    """Move one VM, or every flagged one (`vm_ids=None`), to a compatible host."""

    vm_ids: tuple[int, ...] | None
    host_id: int | None = None
    passthrough: bool = False
    hard: bool = False
    timeouts: MoveTimeouts = DEFAULT_TIMEOUTS

    async def plan(self, site: "SiteConnection") -> MoveSet:
        if self.vm_ids is None:
            plans, problems = await plan_flagged(site, hard=self.hard)
            return MoveSet(plans, problems)
        return MoveSet(tuple([await plan_move(site, vm_id, self.host_id, passthrough=self.passthrough, hard=self.hard)
                              for vm_id in self.vm_ids]))


@dataclass(frozen=True)
class RedeployVm(MoveOperation):
    """Deploy a VM on `host_id` with `cpu_model` (None: its model before its last move)."""

    vm_id: int
    host_id: int
    cpu_model: str | None = None
    timeouts: MoveTimeouts = DEFAULT_TIMEOUTS
    title: ClassVar[str] = "Redeploy a VM"
    refusal: ClassVar[str] = "redeploying a VM changes the cloud"
    action: ClassVar[str] = AUDIT_REDEPLOY

    async def plan(self, site: "SiteConnection") -> MoveSet:
        return MoveSet((await plan_redeploy(site, self.vm_id, self.host_id, self.cpu_model),))


@dataclass(frozen=True)
class ResumeMoves(MoveOperation):
    """The same moves again, planned from the VMs as they are now."""

    plans: tuple[MovePlan, ...]
    timeouts: MoveTimeouts = DEFAULT_TIMEOUTS

    async def plan(self, site: "SiteConnection") -> MoveSet:
        fresh = []
        for plan in self.plans:
            if plan.redeploy:
                fresh.append(await plan_redeploy(site, plan.vm_id, plan.target_host_id, plan.cpu_model))
            else:
                fresh.append(await plan_move(site, plan.vm_id, plan.target_host_id, passthrough=plan.passthrough,
                                             hard=plan.hard))
        return MoveSet(tuple(fresh))
