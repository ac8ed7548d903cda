"""Operation 7: move a document-database VM to a host whose CPU the database can use.

The spec's manual steps (undeploy; Update Configuration, OS & CPU, CPU model = the target host's
KVM_CPU_MODEL; deploy on that same host) as one procedure:

1. undeploy            `onevm undeploy [--hard] <id>`
2. wait undeployed     until STATE is UNDEPLOYED
3. set CPU model       `onevm updateconf <id> <file> --append` with `CPU_MODEL = [ MODEL = "<model>" ]`;
                       merge mode (append=1) so the VM's OS, CONTEXT and other sections stay; the
                       procedure reads the VM back and checks they did
4. deploy              `onevm deploy <id> <host>` (a READY=YES left in the user template by the
                       last boot is reset first, `onevm update <id> --append`, or the last wait
                       would trust it)
5. wait running        until LCM_STATE is RUNNING on that host
6. wait ready          until the appliance publishes READY=YES in the user template

The plan and its preview come from `tui.procedures.hosts.move_plan` (`plan_move`, `plan_redeploy`,
`plan_flagged`, `preview_move`). `move_vm(site, plan, context)` runs the steps; `move_many()` runs
several moves one after the other; both report to the run's context. Each step looks at the VM first and is skipped when already
done (`step_skips`), so running the same move again resumes where it stopped. A step that fails
or times out raises `MoveFailed`, naming the step and the state the VM is in, with the commands
that resume it or put it back where it was. A cancel (`context.cancel`: ctrl+c, SIGTERM, a dropped
session's SIGHUP, the console's Cancel) stops between two platform calls, never in the middle of
one: `MoveCancelled` names the step, the VM's state read at that moment and the two commands
(finish the move, or put the VM back). Before its first change a move writes the VM's origin to
the move journal (`tui.procedures.hosts.move_journal`) and clears it once the VM runs where it was sent,
so a VM is never left undeployed without a record of where it belongs, even after SIGKILL. A
move holds the VM's move lock (`tui.procedures.hosts.move_lock`) from before that first change to its
end: a second move of the same VM is refused at once (`MoveBusy`, naming the holder), and a lock
a killed move left is reported as stale and taken over.

Audit: a `MoveLedger` keeps, VM by VM, every change (undeploy, CPU model, READY reset, deploy,
recover), the steps done or skipped and where a move stopped with the VM's state read then (a hard
task cancellation keeps the last known state). The move operations (`tui.procedures.hosts.
move_operation`) keep it as the run's record; the pipeline writes the run's one record from it.

What the platform does that shapes it: a boot with a CPU model the host cannot give fails, since
the KVM driver asks libvirt for `<model fallback='forbid'>` (src/vmm/LibVirtDriverKVM.cc); after
an undeploy the VM is then in BOOT_UNDEPLOY_FAILURE, which the move reports with the platform's
ERROR and the put-back command (`sitetk hosts redeploy` on the origin host and model). A put-back
(or any move) that finds the VM in BOOT_UNDEPLOY_FAILURE on another host first closes that boot
(`onevm recover --success`, then `onevm undeploy --hard`): no other action leaves that state.
`updateconf`'s append flag exists from 6.2 on; on an older platform a move that sets a CPU model is
refused before anything changes, since replace mode there would erase the VM's other sections.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from tui import timing
from tui.domain.cpu import cpu_model_update_text
from tui.domain.one_states import LCM_STATES, LcmState
from tui.domain.template_text import render_template
from tui.domain.vm_detail import VmDetail
from tui.domain.vms import ACTIVE
from tui.errors import SiteError
from tui.procedures.hosts.move_journal import MoveJournal, MoveOrigin
from tui.procedures.hosts.move_lock import MoveLock
from tui.procedures.hosts.move_plan import (
    DEFAULT_TIMEOUTS,
    DEPLOYABLE,
    STEP_DEPLOY,
    STEP_SET_MODEL,
    STEP_UNDEPLOY,
    STEP_WAIT_READY,
    STEP_WAIT_RUNNING,
    STEP_WAIT_UNDEPLOYED,
    STEPS,
    UNDEPLOYABLE_LCM,
    VM_DONE,
    VM_POWEROFF,
    VM_STOPPED,
    VM_SUSPENDED,
    VM_UNDEPLOYED,
    MovePlan,
    MoveTimeouts,
    VmFacts,
    move_command,
    no_append_text,
    platform_version,
    ready_flag,
    redeploy_command,
    resume_hint,
    step_skips,
    updateconf_cli,
    updateconf_merges,
)
from tui.procedures.operation import RunContext
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: BOOT_FAILURE, BOOT_UNDEPLOY_FAILURE, BOOT_STOPPED_FAILURE: a boot that failed on the host
BOOT_FAILURES = frozenset({LcmState.BOOT_FAILURE, LcmState.BOOT_UNDEPLOY_FAILURE, LcmState.BOOT_STOPPED_FAILURE})
BOOT_UNDEPLOY_FAILURE = LcmState.BOOT_UNDEPLOY_FAILURE
#: `onevm recover --success`
RECOVER_SUCCESS = 1

#: sections `one.vm.updateconf` manages; with append=0 every one missing from the text is erased
UPDATECONF_SECTIONS: tuple[str, ...] = ("OS", "FEATURES", "INPUT", "GRAPHICS", "VIDEO", "RAW", "CPU_MODEL",
                                        "BACKUP_CONFIG", "CONTEXT")

class MoveFailed(SiteError):
    """A move stopped at `step`; `vm_state` is the state the VM was left in."""

    def __init__(self, plan: MovePlan, step: str, reason: str, vm_state: str, hint: str | None = None) -> None:
        self.plan = plan
        self.step = step
        self.reason = reason
        self.vm_state = vm_state
        detail = (f"{reason} {plan.label} is now {vm_state}. {hint if hint is not None else resume_hint(plan)}")
        super().__init__(f"Move of {plan.label} stopped at step “{step}”", detail, retryable=True)

    def as_json(self) -> dict[str, Any]:
        return {"step": self.step, "reason": self.reason, "vm_state": self.vm_state, "plan": self.plan.as_json(),
                "resume": move_command(self.plan), "redeploy": redeploy_command(self.plan)}


class MoveCancelled(MoveFailed):
    """The move was asked to stop; it stopped between two platform calls at `step`."""

    def __init__(self, plan: MovePlan, step: str, vm_state: str) -> None:
        super().__init__(plan, step, f"Stopped on request before “{step}” finished.", vm_state)
        self.title = f"Move of {plan.label} cancelled at step “{step}”"


# running ----------------------------------------------------------------------------------------

@dataclass
class MoveLedger:
    """What a run of moves did so far, one entry per VM started (see the module docstring): the
    plan's origin and target, `changes` made, `steps` done or skipped, and the `outcome` ("running",
    "done", "failed", "cancelled") with the `step` it stopped at and the `vm_state` read then."""

    vms: list[dict[str, Any]] = field(default_factory=list)

    def start(self, details: dict[str, Any]) -> dict[str, Any]:
        entry: dict[str, Any] = {**details, "outcome": "running", "changes": [], "steps": []}
        self.vms.append(entry)
        return entry


def _details(plan: MovePlan) -> dict[str, Any]:
    return {"vm_id": plan.vm_id, "vm_name": plan.vm_name, "origin_host_id": plan.origin_host_id,
            "origin_host_name": plan.origin_host_name, "origin_cpu_model": plan.origin_cpu_model,
            "target_host_id": plan.target_host_id, "target_host_name": plan.target_host_name,
            "cpu_model": plan.cpu_model, "hard": plan.hard, "passthrough": plan.passthrough}


def describe_state(vm: VmDetail) -> str:
    """"UNDEPLOYED (CPU model Broadwell-noTSX, last on host 1 node-1)" and the like."""
    summary = vm.summary
    parts = [f"CPU model {vm.cpu_model or '(none)'}"]
    if summary.host_id is not None:
        where = "on" if summary.state == ACTIVE else "last on"
        parts.append(f"{where} host {summary.host_id} {summary.host}")
    if summary.running:
        parts.append("application ready" if vm.ready else "application not ready")
    return f"{summary.status} ({', '.join(parts)})"


def _sections(vm: VmDetail, skip: str = "CPU_MODEL") -> list[tuple[str, Any]]:
    return [(name, value) for name, value in vm.template.to_template() if name in UPDATECONF_SECTIONS and name != skip]


class _Run:
    """The state of one running move, shared by its steps."""

    def __init__(self, site: "SiteConnection", plan: MovePlan, context: RunContext, timeouts: MoveTimeouts,
                 offset: int, total: int, entry: dict[str, Any]) -> None:
        self.site = site
        self.context = context
        self.plan = plan
        self.timeouts = timeouts
        self.entry = entry
        self.offset = offset
        self.total = total
        self.step = STEPS[0]
        self.index = 0
        self.vm: VmDetail | None = None

    def at(self, step: str) -> None:
        """The move is at `step` now."""
        self.step, self.index = step, STEPS.index(step)

    def report(self, state: ProgressState, message: str, **data: Any) -> None:
        """An event of the current step; a step done or skipped is kept in the ledger."""
        done = self.index + (1 if state in (ProgressState.DONE, ProgressState.SKIPPED) else 0)
        if state in (ProgressState.DONE, ProgressState.SKIPPED):
            self.entry["steps"].append({"step": self.step, "state": state})
        self.context.report(Progress(self.step, self.offset + done, self.total, message, state,
                                     {"vm_id": self.plan.vm_id, **data}))

    async def read(self) -> VmDetail:
        self.vm = await self.site.cloud.vm_info(self.plan.vm_id)
        return self.vm

    def change(self, action: str, details: dict[str, Any]) -> None:
        """A change made to the VM: kept in the ledger (the run's audit record lists it)."""
        self.entry["changes"].append({"action": action, **details})
        self.site.note_change()

    def checkpoint(self) -> None:
        """Stop here when a cancel was asked (called before each platform change and each poll)."""
        if self.context.cancel.is_set():
            raise MoveCancelled(self.plan, self.step, "")

    def fail(self, reason: str, hint: str | None = None) -> MoveFailed:
        state = describe_state(self.vm) if self.vm is not None else "in an unknown state"
        return MoveFailed(self.plan, self.step, reason, state, hint)

    async def state_after_error(self, error: SiteError) -> MoveFailed:
        try:
            await self.read()
        except SiteError:
            self.vm = None
        said = f"{error.title}: {error.detail}" if error.detail else error.title
        return self.fail(said if said.endswith((".", "!", "?")) else said + ".")

    async def wait(self, timeout: float, done: Callable[[VmDetail], bool], broken: Callable[[VmDetail], str],
                   what: str, on_timeout: str | Callable[[], str] = "") -> None:
        """Poll the VM until `done`; fail when `broken` says why, or after `timeout` seconds
        (adding `on_timeout`, a hint or what the appliance said)."""
        deadline = timing.deadline_after(timeout)
        last = ""
        pause = min(timing.PROFILE.first_poll, self.timeouts.poll_interval)
        while True:
            self.checkpoint()
            vm = await self._poll(deadline)
            if vm is not None:
                if done(vm):
                    return
                problem = broken(vm)
                if problem:
                    raise self.fail(problem)
                if vm.summary.status != last:
                    last = vm.summary.status
                    pause = min(timing.PROFILE.first_poll, self.timeouts.poll_interval)
                    self.report(ProgressState.RUNNING, f"waiting for {what}: VM is {last}", vm_state=last)
            if timing.monotonic() >= deadline:
                extra = on_timeout() if callable(on_timeout) else on_timeout
                raise self.fail(f"Waited {timeout:g} s for {what}." + (f" {extra}" if extra else ""))
            await self.context.pause(pause)
            pause = min(pause * 1.5, self.timeouts.poll_interval)

    async def _poll(self, deadline: float) -> VmDetail | None:
        """The VM read once; None when the site did not answer and may still (before the deadline)."""
        try:
            return await self.read()
        except SiteError as error:
            if not error.retryable or timing.monotonic() >= deadline:
                raise await self.state_after_error(error) from None
            return None


def _on_target(vm: VmDetail, plan: MovePlan) -> bool:
    return vm.summary.state == ACTIVE and vm.summary.host_id == plan.target_host_id


def _failed_lcm(vm: VmDetail) -> bool:
    return vm.summary.state == ACTIVE and LCM_STATES.get(vm.summary.lcm_state, ("", ""))[1] == "fail"


async def move_vm(site: "SiteConnection", plan: MovePlan, context: RunContext, *,
                  timeouts: MoveTimeouts = DEFAULT_TIMEOUTS, journal: MoveJournal | None = None,
                  ledger: MoveLedger | None = None, _offset: int = 0, _total: int | None = None) -> dict[str, Any]:
    """Run a move (or a redeploy) step by step, skipping steps already done, reporting to
    `context`; returns the ledger's entry of this VM. Raises `MoveFailed` (`MoveCancelled` when
    `context.cancel` is set: it stops before the next platform call).

    The VM's origin goes to `journal` (default: the settings' move journal) before the first
    change and leaves it when the move is done; `ledger` keeps what was done for the run's audit
    record."""
    journal = journal if journal is not None else MoveJournal.of(site.settings)
    ledger = ledger if ledger is not None else MoveLedger()
    lock = MoveLock(site, plan.vm_id, plan.label)
    await lock.acquire()  # MoveBusy: another process moves this VM; nothing changed
    try:
        return await _locked(site, plan, context, lock, timeouts, journal, ledger, _offset, _total)
    finally:
        await lock.release()


async def _locked(site: "SiteConnection", plan: MovePlan, context: RunContext, lock: MoveLock, timeouts: MoveTimeouts,
                  journal: MoveJournal, ledger: MoveLedger, _offset: int, _total: int | None) -> dict[str, Any]:
    """`move_vm` once it holds the VM's move lock."""
    steps = plan.steps
    journal.begin(MoveOrigin(plan.vm_id, plan.origin_host_id, plan.origin_host_name, plan.origin_cpu_model,
                             plan.target_host_id, plan.redeploy))
    entry = ledger.start({**_details(plan), "redeploy": plan.redeploy, "resume": move_command(plan),
                          "put_back": redeploy_command(plan)})
    run = _Run(site, plan, context, timeouts, _offset, _total if _total is not None else len(steps), entry)
    if lock.stale is not None:
        entry["stale_lock"] = lock.stale_text()
        context.report(Progress(steps[0], _offset, run.total, lock.stale_text(), ProgressState.RUNNING,
                                {"vm_id": plan.vm_id, "stale_lock": lock.stale.describe()}))
    try:
        await _steps(run)
    except asyncio.CancelledError:
        state = describe_state(run.vm) if run.vm is not None else "not read yet"
        entry.update(outcome="cancelled", step=run.step, vm_state=state)
        raise
    except MoveCancelled:
        stopped = await run.state_after_error(SiteError("cancelled"))
        cancelled = MoveCancelled(plan, run.step, stopped.vm_state)
        entry.update(outcome="cancelled", step=run.step, vm_state=cancelled.vm_state)
        context.report(Progress(run.step, run.offset + steps.index(run.step), run.total,
                                f"cancelled: {plan.label} is {cancelled.vm_state}", ProgressState.FAILED,
                                {"vm_id": plan.vm_id, "vm_state": cancelled.vm_state}))
        raise cancelled from None
    except SiteError as error:
        failure = error if isinstance(error, MoveFailed) else await run.state_after_error(error)
        entry.update(outcome="failed", step=failure.step, reason=failure.reason, vm_state=failure.vm_state)
        short = failure.reason if len(failure.reason) <= 100 else failure.reason[:99] + "…"
        context.report(Progress(failure.step, run.offset + steps.index(failure.step), run.total, short,
                                ProgressState.FAILED,
                                {"vm_id": plan.vm_id, "vm_state": failure.vm_state, "reason": failure.reason}))
        raise failure from None
    final = describe_state(run.vm) if run.vm is not None else ""
    entry.update(outcome="done", vm_state=final)
    journal.end(plan.vm_id)
    return entry


def boot_refused(vm: VmDetail, plan: MovePlan) -> str:
    """What to say when the VM failed to boot with the plan's CPU model (a BOOT_*_FAILURE)."""
    what = vm.summary.status
    said = vm.user_template.scalars().get("ERROR", "")
    model = plan.cpu_model or "(none)"
    return (f"The VM did not boot on {plan.target_label} with CPU model {model} ({what}): the platform asks "
            "libvirt for exactly that model (fallback='forbid'), and a host that cannot give it fails the boot."
            + (f" The platform says: {said}" if said else ""))


def boot_hint(plan: MovePlan) -> str:
    """What to run after a boot the host refused: never the same command (it would ask libvirt for
    the same model on the same host and fail the same way; issue 22 item 4), but the put-back, a
    model that host offers, or a host that offers the model."""
    model = plan.cpu_model
    options = []
    back = redeploy_command(plan)
    if back and (plan.origin_host_id != plan.target_host_id or plan.origin_cpu_model != model):
        options.append(f"put the VM back on {plan.origin_label} ({back})")
    if model:
        options.append(f"deploy it on a host that offers {model} (sitetk hosts redeploy {plan.vm_id} --host <host> "
                       f"--cpu-model {shlex.quote(model)}: the plan refuses a host whose KVM_CPU_MODELS does not list "
                       "it and names those that do)")
    options.append(f"or on {plan.target_label} with a model it offers (sitetk hosts redeploy {plan.vm_id} --host "
                   f"{plan.target_host_id} --cpu-model <model>; `onehost show {plan.target_host_id}` lists them as KVM_CPU_MODELS)")
    return "Running the same command again would fail the same way. Instead, " + "; ".join(options) + "."


async def _steps(run: _Run) -> None:
    """The six steps in order (the module docstring), each skipped when the VM has done it already."""
    vm = await _start(run)
    skips = step_skips(VmFacts.of(vm), run.plan)
    await _undeploy(run, vm, skips)
    await _wait_undeployed(run, skips)
    vm = await _set_cpu_model(run, run.vm or vm)
    await _deploy(run, vm)
    if await _wait_running(run) and run.plan.wait_ready:
        await _wait_ready(run)


async def _start(run: _Run) -> VmDetail:
    """Read the VM; refuse a terminated one, or a CPU model the platform cannot set in merge mode."""
    plan = run.plan
    vm = await run.read()
    if vm.summary.state == VM_DONE:
        raise run.fail("The VM was terminated.")
    if plan.cpu_model and vm.cpu_model != plan.cpu_model:
        version = await platform_version(run.site)
        if not updateconf_merges(version):
            raise run.fail(no_append_text(version) + " Nothing was changed. Set CPU_MODEL by hand with onevm "
                           "updateconf, giving the whole configuration, or upgrade the platform.")
    return vm


async def _undeploy(run: _Run, vm: VmDetail, skips: Mapping[str, str]) -> None:
    """Step 1: undeploy (or close a failed boot elsewhere first)."""
    plan, cloud = run.plan, run.site.cloud
    run.at(STEP_UNDEPLOY)
    state, lcm = vm.summary.state, vm.summary.lcm_state
    if state == ACTIVE and lcm == BOOT_UNDEPLOY_FAILURE and vm.summary.host_id != plan.target_host_id:
        await _close_failed_boot(run, vm)
    elif STEP_UNDEPLOY in skips:
        run.report(ProgressState.SKIPPED, skips[STEP_UNDEPLOY])
    elif (state == ACTIVE and lcm in UNDEPLOYABLE_LCM) or state == VM_POWEROFF:
        run.report(ProgressState.RUNNING, f"undeploying from {plan.origin_label}")
        run.checkpoint()
        await cloud.vm_action("undeploy-hard" if plan.hard else "undeploy", plan.vm_id)
        run.change("hosts.undeploy", {
            "vm_id": plan.vm_id, "hard": plan.hard, "cli": f"onevm undeploy{' --hard' if plan.hard else ''} {plan.vm_id}"})
        run.report(ProgressState.DONE, "undeploy requested")
    elif state == VM_SUSPENDED:
        raise run.fail(f"A SUSPENDED VM cannot be undeployed: resume it first (onevm resume {plan.vm_id}), then run "
                       "the move again.")
    else:
        raise run.fail(f"The VM is {vm.summary.status}, a state the move cannot start from: wait until it is RUNNING, "
                       f"POWEROFF or UNDEPLOYED (a failed VM needs onevm recover {plan.vm_id} first).")


async def _close_failed_boot(run: _Run, vm: VmDetail) -> None:
    """A boot that failed elsewhere (a CPU model that host cannot give): the platform leaves no way
    out of BOOT_UNDEPLOY_FAILURE but recover; --success closes the failed boot, then an undeploy
    --hard frees the host (the KVM driver's cancel is a no-op for a domain that is not there)."""
    plan, cloud = run.plan, run.site.cloud
    run.report(ProgressState.RUNNING, f"closing the failed boot on host {vm.summary.host_id} {vm.summary.host}")
    run.checkpoint()
    await cloud.vm_recover(plan.vm_id, RECOVER_SUCCESS)
    run.change("hosts.recover", {
        "vm_id": plan.vm_id, "operation": "success", "cli": f"onevm recover --success {plan.vm_id}"})
    await cloud.vm_action("undeploy-hard", plan.vm_id)
    run.change("hosts.undeploy", {
        "vm_id": plan.vm_id, "hard": True, "cli": f"onevm undeploy --hard {plan.vm_id}"})
    run.report(ProgressState.DONE, "failed boot closed (onevm recover --success), undeploy --hard requested")


async def _wait_undeployed(run: _Run, skips: Mapping[str, str]) -> None:
    """Step 2: wait until the VM is UNDEPLOYED."""
    plan = run.plan
    run.at(STEP_WAIT_UNDEPLOYED)
    if STEP_WAIT_UNDEPLOYED in skips:
        run.report(ProgressState.SKIPPED, skips[STEP_WAIT_UNDEPLOYED])
        return

    def undeploy_broken(current: VmDetail) -> str:
        if _failed_lcm(current):
            return f"The undeploy failed ({current.summary.status}); see onevm show {plan.vm_id}."
        if current.summary.state not in (ACTIVE, VM_POWEROFF, VM_UNDEPLOYED):
            return f"The VM left the undeploy in state {current.summary.status}."
        return ""

    await run.wait(run.timeouts.undeploy, lambda v: v.summary.state == VM_UNDEPLOYED, undeploy_broken, "UNDEPLOYED",
                   "" if plan.hard else "A guest that ignores the shutdown needs --hard.")
    run.report(ProgressState.DONE, "VM is UNDEPLOYED")


async def _set_cpu_model(run: _Run, vm: VmDetail) -> VmDetail:
    """Step 3: set the CPU model (merge mode), then check the VM's other sections stayed."""
    plan, cloud = run.plan, run.site.cloud
    run.at(STEP_SET_MODEL)
    if vm.cpu_model == plan.cpu_model:
        run.report(ProgressState.SKIPPED, f"CPU model already {plan.cpu_model or '(none)'}")
        return vm
    run.report(ProgressState.RUNNING, f"setting CPU model {plan.cpu_model or '(none)'}")
    run.checkpoint()
    before = _sections(vm)
    if plan.cpu_model:
        await cloud.vm_updateconf(plan.vm_id, cpu_model_update_text(plan.cpu_model), append=1)
    else:
        # removing a section takes replace mode: every other section goes back unchanged
        await cloud.vm_updateconf(plan.vm_id, render_template(before), append=0)
    run.change("hosts.set_cpu_model", {
        "vm_id": plan.vm_id, "cpu_model": plan.cpu_model, "previous": vm.cpu_model, "cli": updateconf_cli(plan)})
    vm = await run.read()
    if vm.cpu_model != plan.cpu_model:
        raise run.fail(f"The VM's CPU model reads {vm.cpu_model or '(none)'} after the update, "
                       f"not {plan.cpu_model or '(none)'}.")
    after = _sections(vm)
    if after != before:
        lost = sorted({name for name, _ in before} - {name for name, _ in after})
        changed = ", ".join(lost) if lost else "some of its sections"
        raise run.fail(f"The update changed the VM's other configuration ({changed}); check it with "
                       f"onevm show {plan.vm_id} before deploying.")
    run.report(ProgressState.DONE, f"CPU model {plan.cpu_model or '(none)'} set; other sections unchanged",
               cpu_model=plan.cpu_model)
    return vm


async def _deploy(run: _Run, vm: VmDetail) -> None:
    """Step 4: deploy on the target host (a READY=YES left by the last boot reset first)."""
    plan, cloud = run.plan, run.site.cloud
    run.at(STEP_DEPLOY)
    if _on_target(vm, plan):
        run.report(ProgressState.SKIPPED, f"already deployed on {plan.target_label}")
        return
    if vm.summary.state not in DEPLOYABLE:
        raise run.fail(f"The VM is {vm.summary.status}, not UNDEPLOYED: it cannot be deployed on {plan.target_label}.")
    run.report(ProgressState.RUNNING, f"deploying on {plan.target_label}")
    run.checkpoint()
    if plan.wait_ready and ready_flag(vm):
        # a READY=YES left from the last boot would end the last wait at once
        await cloud.vm_update(plan.vm_id, 'READY = "NO"', append=1)
        run.change("hosts.reset_ready", {
            "vm_id": plan.vm_id, "cli": f"onevm update {plan.vm_id} <READY = \"NO\"> --append"})
    await cloud.vm_deploy(plan.vm_id, plan.target_host_id)
    run.change("hosts.deploy", {
        "vm_id": plan.vm_id, "host_id": plan.target_host_id,
        "cli": f"onevm deploy {plan.vm_id} {plan.target_host_id}"})
    run.report(ProgressState.DONE, f"deploy on {plan.target_label} requested")


async def _wait_running(run: _Run) -> bool:
    """Step 5: wait until the VM runs on the target host; False when READY cannot be waited for."""
    plan = run.plan
    run.at(STEP_WAIT_RUNNING)

    def running_broken(current: VmDetail) -> str:
        if _failed_lcm(current) and current.summary.lcm_state in BOOT_FAILURES:
            # the same command again would fail the same way: the hint says what else to run
            raise run.fail(boot_refused(current, plan), boot_hint(plan))
        if _failed_lcm(current):
            return f"The deployment failed ({current.summary.status}); see onevm show {plan.vm_id}."
        if current.summary.state in (VM_UNDEPLOYED, VM_POWEROFF, VM_STOPPED, VM_SUSPENDED, VM_DONE):
            return f"The VM stopped being deployed: it is {current.summary.status}."
        if current.summary.state == ACTIVE and current.summary.host_id != plan.target_host_id:
            return f"The VM is on host {current.summary.host_id} {current.summary.host}, not {plan.target_label}."
        return ""

    await run.wait(run.timeouts.running, lambda v: v.summary.running and _on_target(v, plan), running_broken, "RUNNING")
    if plan.ready_unreported:
        # nothing in the VM can report READY (tui.domain.guest_ready): say so instead of waiting for ever
        run.entry["ready_not_waited"] = plan.ready_unreported
        run.report(ProgressState.DONE, f"VM is RUNNING on {plan.target_label}; not waiting for READY=YES: "
                   f"{plan.ready_unreported}", ready_not_waited=plan.ready_unreported)
        return False
    run.report(ProgressState.DONE, f"VM is RUNNING on {plan.target_label}")
    return True


async def _wait_ready(run: _Run) -> None:
    """Step 6: wait until the appliance publishes READY=YES."""
    run.at(STEP_WAIT_READY)

    def ready_broken(current: VmDetail) -> str:
        if not current.summary.running:
            return f"The VM stopped running while waiting for the application: it is {current.summary.status}."
        return ""

    await run.wait(run.timeouts.ready, lambda v: v.ready, ready_broken, "the application to be ready",
                   lambda: _appliance_errors(run.vm))
    run.report(ProgressState.DONE, "the application reports READY=YES")


def _appliance_errors(vm: VmDetail | None) -> str:
    """What the appliance published about a failure (user template attributes named *ERROR)."""
    if vm is None:
        return ""
    said = "; ".join(f"{name}={value}" for name, value in vm.user_template.scalars().items()
                     if name.endswith("ERROR") and value)
    return f"The appliance reports: {said}" if said else ""


async def move_many(site: "SiteConnection", plans: Sequence[MovePlan], context: RunContext, *,
                    timeouts: MoveTimeouts = DEFAULT_TIMEOUTS, journal: MoveJournal | None = None,
                    ledger: MoveLedger | None = None) -> tuple[dict[str, Any], ...]:
    """Run several moves one after the other; the first failure stops the rest (see `move_vm`).
    Returns each VM's ledger entry."""
    total = sum(len(plan.steps) for plan in plans)
    offset = 0
    runs: list[dict[str, Any]] = []
    for plan in plans:
        steps = context if len(plans) == 1 else context.relay(partial(_named, plan.vm_id))
        runs.append(await move_vm(site, plan, steps, timeouts=timeouts, journal=journal, ledger=ledger,
                                  _offset=offset, _total=total))
        offset += len(plan.steps)
    return tuple(runs)


def _named(vm_id: int, event: Progress) -> Progress:
    """An event of one of several moves, its step named with the VM."""
    return replace(event, step=f"VM {vm_id}: {event.step}")
