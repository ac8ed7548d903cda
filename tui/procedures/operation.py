"""One shape for every change to the site: plan -> preview -> confirm -> run -> typed result.

An `Operation` is the unit the console's operation modal and the headless CLI runner both run:

- `plan(site)` reads the site and changes nothing; it returns the operation's own plan value;
- `preview(plan)` says what will change, with the equivalent platform CLI commands;
- `confirmation(plan)` is what the operator is asked (destructive ones name the object; the
  console defaults to Cancel, the CLI refuses without a terminal or `--yes`), or None when the
  plan changes nothing worth asking about;
- `execute(site, plan, context)` does it: progress events go to `context.report`, `context.cancel`
  asks it to stop between two platform calls, and it returns a typed result (a frozen dataclass).

`run_operation()` is the one place that refuses a mutating operation in read-only mode (and
audit-logs the refusal, naming the planned object), applies the overall time limit and turns a
cancel into `OperationCancelled`. It also writes the one audit record of a run: the operation
contributes the record's target and details (`audit_object`, `audit_target`, `audit_details` for a
run that changed something, `audit_failure` for one that failed, was cancelled or timed out), so an
operation's procedures do not record it again. What `execute` learns as it goes and a failure
record needs (what a rollback deleted, where a move stopped) is the operation's own typed record,
which it keeps with `context.keep(record)` and reads back in `audit_failure` with
`context.kept(RecordType)`: a download's `DownloadLedger`, a move's `MoveLedger`.
A procedure called outside an operation records its change itself only when a direct caller hands
it the audit log (see README "Audit log"); the guided setup's steps are operations.

Adding an operation is one file in its feature folder (the operation, its result and what it
runs), its CLI verb and its form, for instance:

    @dataclass(frozen=True)
    class RenameImage(Operation[ImageInfo, Renamed]):
        image_id: int
        name: str
        title: ClassVar[str] = "Rename an image"
        action: ClassVar[str] = "image.rename"

        async def plan(self, site): return await site.cloud.image_info(self.image_id)
        def preview(self, plan): return Preview(self.title, (Change(f"rename {plan.name!r}",
                                                f"oneimage rename {plan.id} {self.name}"),))
        async def execute(self, site, plan, context):
            await site.cloud.image_rename(plan.id, self.name)
            context.report(Progress("rename", 1, 1, f"image {plan.id} renamed", ProgressState.DONE))
            return Renamed(plan.id, self.name)

then `run_cli(args, site, RenameImage(...))` in a CLI verb and an `OperationModal` in the console.
A long operation's procedure takes the `RunContext` too and returns the typed result; the
operation calls it (no event is replayed, no result read back out of the events).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Generic, Mapping, Protocol, TypeVar, runtime_checkable

from tui import timing
from tui.errors import SiteError
from tui.procedures.audit import AuditUnwritable
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

PlanT = TypeVar("PlanT")
ResultT = TypeVar("ResultT")
RecordT = TypeVar("RecordT")
AnswerT = TypeVar("AnswerT")


@runtime_checkable
class JsonShaped(Protocol):
    """A value with its own `--json` form: plans, results, a failure's record (`MoveFailed`)."""

    def as_json(self) -> dict[str, Any]: ...


@runtime_checkable
class NamesSteps(Protocol):
    """A plan that names its steps before the run: the progress panel lists them."""

    @property
    def step_names(self) -> tuple[str, ...]: ...


@runtime_checkable
class StopsEarly(Protocol):
    """A result of a run that stops by returning (a deploy stops following its service): it says so."""

    cancelled: bool


def json_of(value: Any) -> Any:
    """A value in a JSON answer: its `as_json()` (`JsonShaped`), else the value itself."""
    return value.as_json() if isinstance(value, JsonShaped) else value


class ReadOnlyRefused(SiteError):
    """A mutating operation asked for in read-only mode; nothing was read or changed."""

    def __init__(self, title: str, why: str) -> None:
        super().__init__(f"Read-only mode: {title} is not available", f"read-only mode: {why}")


class OperationCancelled(SiteError):
    """The operator cancelled a running operation (what it had started is named in the detail)."""


@dataclass(frozen=True)
class Confirmation:
    """What the operator confirms before a run: "<verb> <target>?" with a detail.

    `destructive` confirmations name the object and default to Cancel in the console."""

    verb: str
    target: str
    detail: str = ""
    destructive: bool = False
    #: the equivalent platform CLI command, shown with the question
    command: str = ""

    @property
    def prompt(self) -> str:
        return f"{self.verb} {self.target}".strip()


async def _never(question: Confirmation) -> bool:
    """The answer where nobody can be asked: no."""
    return False


@dataclass
class RunContext:
    """What a running operation gets besides its plan: where its events go and its cancel flag."""

    emit: Callable[[Progress], None]
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    #: asks the operator mid-run (a removal each upgrade step may do); False unless answered yes
    ask: Callable[[Confirmation], Awaitable[bool]] = field(default=_never)
    #: every event emitted so far (a failure still reports what happened before it)
    events: list[Progress] = field(default_factory=list)
    #: the run's typed record (`keep`, `kept`)
    _record: object = field(default=None, init=False, repr=False)

    def report(self, event: Progress) -> None:
        self.events.append(event)
        self.emit(event)

    async def pause(self, seconds: float) -> None:
        """Wait `seconds` between two polls, waking early when the run is cancelled."""
        await timing.sleep(seconds, cancel=self.cancel)

    def keep(self, record: RecordT) -> RecordT:
        """Keep the run's record: what `execute` did so far, kept as it goes (a run stopped hard,
        its task cancelled or timed out, still says what it created, deleted or left). The
        operation's `audit_failure` reads it back with `kept`."""
        self._record = record
        return record

    def kept(self, kind: type[RecordT]) -> RecordT | None:
        """The record `keep` kept, when it is a `kind` (None before the run kept one)."""
        record = self._record
        return record if isinstance(record, kind) else None

    async def answer(self, question: Awaitable[AnswerT]) -> AnswerT:
        """The operator's answer to `question` (a confirmation, a secret asked before a step), or
        `OperationCancelled` when the run is cancelled while it waits: a stop signal after the
        session dropped has nobody left to answer, and the run must still stop."""
        asking = asyncio.ensure_future(question)
        stopped = asyncio.ensure_future(self.cancel.wait())
        try:
            done, _ = await asyncio.wait((asking, stopped), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            if not asking.done():
                asking.cancel()
        if asking in done:
            return asking.result()
        raise OperationCancelled("Cancelled", "while a question was open: nothing was changed after it")

    def relay(self, adapt: Callable[[Progress], Progress | None]) -> "RunContext":
        """A context for a part of this run (an upgrade's download): the same cancel and
        questions; its events go through `adapt` (relabelled, or None: dropped) to this one."""
        def emit(event: Progress) -> None:
            adapted = adapt(event)
            if adapted is not None:
                self.report(adapted)

        return RunContext(emit, self.cancel, self.ask)


class Operation(ABC, Generic[PlanT, ResultT]):
    """A change to the site (see the module docstring). Subclasses are frozen dataclasses of the
    operation's inputs, plus the class constants below."""

    #: what the operation does, in a few words ("Download an appliance")
    title: ClassVar[str] = ""
    #: why read-only mode refuses it ("a download changes the cloud"); also its audit action
    refusal: ClassVar[str] = "it changes the site"
    #: the audit log's action name of a refusal or a time-out ("marketapp.export")
    action: ClassVar[str] = ""
    #: False for operations that change nothing on the site (writing a local file, say)
    mutating: ClassVar[bool] = True
    #: True when `execute` watches `context.cancel` itself (and cleans up with progress events);
    #: False: the runner cancels its task when the cancel is asked (it stops at the next await)
    cancels_itself: ClassVar[bool] = True
    #: running it again continues where an interrupted run stopped
    resumable: ClassVar[bool] = False
    #: what a stop (INT/TERM/HUP in the CLI) does to this run, said when it is asked, and when
    #: asked again while it is under way: true of this operation (a move undoes nothing)
    on_stop: ClassVar[str] = "stopping; what this run created is being undone"
    still_stopping: ClassVar[str] = "still undoing what this run created (SIGKILL would leave it half-done)"

    @abstractmethod
    async def plan(self, site: "SiteConnection") -> PlanT:
        """Read the site and decide what to do; change nothing."""

    @abstractmethod
    def preview(self, plan: PlanT) -> Preview:
        """What the run will change, with the equivalent platform CLI commands."""

    def confirmation(self, plan: PlanT) -> Confirmation | None:
        """What to ask before running; None when there is nothing to confirm."""
        preview = self.preview(plan)
        return Confirmation(self.title, preview.target, destructive=preview.destructive)

    def plan_json(self, plan: PlanT) -> dict[str, Any]:
        """The plan in a `--json` answer (default: its `as_json()` when it has one)."""
        return plan.as_json() if isinstance(plan, JsonShaped) else {}

    @abstractmethod
    async def execute(self, site: "SiteConnection", plan: PlanT, context: RunContext) -> ResultT:
        """Do it: emit progress, stop at `context.cancel`, return the typed result."""

    def audit_details(self, plan: PlanT, result: ResultT) -> Mapping[str, Any] | None:
        """The details of the run's one audit record (`run_operation` writes it under `action`);
        None when the run changed nothing, or while the procedure still records it itself."""
        return None

    def audit_failure(self, plan: PlanT, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        """The details of the one audit record of a run that failed, was cancelled or timed out
        (`run_operation` writes it under `action`, outcome "failed", "cancelled" or "timeout",
        with the error's title and the steps reached): what was undone, what is left and the
        command that removes it; None while the procedure still records it itself."""
        return None

    def audit_object(self, plan: PlanT) -> str:
        """What a refusal or a failure record names: the preview's target, else the title."""
        return self.preview(plan).target or self.title

    def audit_target(self, plan: PlanT, result: ResultT) -> str:
        """What the audit record names (a file, a branch, an id); default: `audit_object`."""
        return self.audit_object(plan)


_UNPLANNED: Any = object()


def refuse_if_read_only(site: "SiteConnection", operation: Operation[PlanT, Any], plan: PlanT = _UNPLANNED) -> None:
    """Raise `ReadOnlyRefused` (and audit-log it) when the site is read-only and the operation
    changes it: the one read-only check of every operation. Given the plan, the record names the
    planned object (`audit_object`); without it, the operation's title."""
    if operation.mutating and site.read_only:
        target = operation.title if plan is _UNPLANNED else operation.audit_object(plan)
        site.audit.record(operation.action or "operation", target, "refused", {"reason": "read-only mode"})
        raise ReadOnlyRefused(operation.title.lower() or "this operation", operation.refusal)


async def run_operation(site: "SiteConnection", operation: Operation[PlanT, ResultT], plan: PlanT,
                        context: RunContext, *, timeout: float | None = None) -> ResultT:
    """Run a planned operation: the read-only refusal, the time limit, the cancel, then `execute`.

    A cancel of an operation that does not watch `context.cancel` itself cancels its task, which
    stops at its next await; either way the caller gets `OperationCancelled`-like `SiteError`s."""
    refuse_if_read_only(site, operation, plan)
    if operation.mutating:
        site.audit.check_writable()  # AuditUnwritable: a change that cannot be recorded does not start
    task = asyncio.current_task()
    watcher: asyncio.Task[None] | None = None
    if not operation.cancels_itself and task is not None:
        async def cancel_on_request() -> None:
            await context.cancel.wait()
            task.cancel()

        watcher = asyncio.ensure_future(cancel_on_request())
    try:
        if timeout is None:
            result = await operation.execute(site, plan, context)
        else:
            async with timing.limit(timeout):
                result = await operation.execute(site, plan, context)
    except TimeoutError:
        stopped = SiteError(f"{operation.title}: no result within {timeout:g} s",
                            "The operation was stopped; running it again continues from what was done.",
                            retryable=True)
        _record_failure(site, operation, plan, stopped, context, "timeout", {"seconds": timeout})
        raise stopped from None
    except asyncio.CancelledError:
        if watcher is None or not context.cancel.is_set() or task is None:
            # cancelled from outside (a closed console, a time limit around us): still one record
            _record_failure(site, operation, plan, OperationCancelled("Cancelled", "the run was stopped"), context,
                            quiet=True)
            raise
        task.uncancel()
        step = context.events[-1].step if context.events else ""
        cancelled = OperationCancelled("Cancelled", f"during step “{step}”" if step else "before the first step",
                                       retryable=operation.resumable)
        _record_failure(site, operation, plan, cancelled, context)
        raise cancelled from None
    except SiteError as error:
        _record_failure(site, operation, plan, error, context)
        raise
    finally:
        if watcher is not None:
            watcher.cancel()
    details = operation.audit_details(plan, result)
    if details is not None:
        site.audit.record(operation.action or "operation", operation.audit_target(plan, result), "ok", details)
    return result


def _record_failure(site: "SiteConnection", operation: Operation[PlanT, Any], plan: PlanT, error: SiteError,
                    context: RunContext, outcome: str = "", extra: Mapping[str, Any] | None = None, *,
                    quiet: bool = False) -> None:
    """The audit record of a run that did not finish (`Operation.audit_failure`); a time-out is
    recorded even when the operation contributes nothing (its record says how long it ran)."""
    try:
        details = operation.audit_failure(plan, error, context)
        if details is None and not extra:
            return
        cancelled = isinstance(error, OperationCancelled) or context.cancel.is_set()
        outcome = outcome or ("cancelled" if cancelled else "failed")
        steps = [event.step for event in context.events if event.state is ProgressState.DONE]
        site.audit.record(operation.action or "operation", operation.audit_object(plan), outcome,
                          {**(extra or {}), "error": error.title, "steps_done": steps, **(details or {})})
    except AuditUnwritable as unkept:
        if not quiet:  # the run's own error first, then why its record is missing
            raise AuditUnwritable(error.title, f"{error.detail}\nNot recorded: {unkept.title}: {unkept.detail}",
                                  retryable=error.retryable, code=error.code) from None
    except Exception:  # noqa: BLE001 - a cancelled run's record must not hide the cancellation
        if not quiet:
            raise
