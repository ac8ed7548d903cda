"""Issue 23 item 3: every change the console makes runs one way, an `OperationRun`
(tui.screens.operation_run): the operation modal's run and the screens' inline runs
(`SiteScreen.run_change`) alike, each with progress and a cancel.

The static checks fail when a screen runs a change any other way: calling `run_operation` or an
operation's `execute` itself, or calling a procedure that an operation's `execute` drives (its
generator, which would run the change without the read-only refusal, the audit record, the
progress and the cancel). The runtime checks hold the run's promises: progress in order, a cancel
that stops it between two steps, the runs under way listed for the stop signal.

No exception: the guided setup's screen runs its step as `RunSetup` through `run_change` too (a stop
signal during it: tests/setup/test_screen.py).
"""

from __future__ import annotations

import ast
import asyncio
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widgets import Input
from textual.worker import Worker

from tests.ui.conftest import SIZE, console_app, rendered_text, wait_for, wait_vms_loaded
from tui.procedures.operation import Operation, OperationCancelled, ReadOnlyRefused, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress
from tui.screens.base import CANCEL_CHANGE, SiteScreen
from tui.screens.operation_run import OperationRun, runs_on
from tui.screens.registry import SCREENS, ScreenSpec
from tui.screenshots import wait_for_screen
from widgets.key_bar import KeyBar

ROOT = Path(__file__).resolve().parent.parent.parent
#: the one module that runs an operation
RUNNER = ROOT / "tui" / "screens" / "operation_run.py"
VMS = next(s for s in SCREENS if s.name == "vms")
#: where a `RunContext` may be built outside the runner, and why
READS_WITH_A_CONTEXT = {
    # following a recorded deployment again changes nothing (`follow_deployment` reads the service)
    "tui/screens/toolkit_deploy_actions.py",
}


def _console_modules() -> list[Path]:
    return sorted([*ROOT.joinpath("tui", "screens").glob("*.py"), ROOT / "tui" / "app.py"])


def _async_functions(module: str) -> set[str]:
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    if not path.is_file():
        path = ROOT.joinpath(*module.split("."), "__init__.py")
    if not path.is_file():
        return set()
    return {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.AsyncFunctionDef)}


def operation_drivers() -> dict[str, set[str]]:
    """Every async procedure an `Operation` subclass's `execute` calls, by name -> the operations."""
    drivers: dict[str, set[str]] = {}
    for path in ROOT.joinpath("tui", "procedures").rglob("*.py"):
        tree = ast.parse(path.read_text())
        here = path.relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
        local = {node.name for node in tree.body if isinstance(node, ast.AsyncFunctionDef)}
        imported: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    imported[alias.asname or alias.name] = node.module
        for cls in (node for node in tree.body if isinstance(node, ast.ClassDef)):
            if not any(ast.unparse(base).split("[")[0].endswith("Operation") for base in cls.bases):
                continue
            for method in cls.body:
                if not (isinstance(method, ast.AsyncFunctionDef) and method.name == "execute"):
                    continue
                for node in ast.walk(method):
                    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                        continue
                    name = node.func.id
                    if name in local or (name in imported and name in _async_functions(imported[name])):
                        drivers.setdefault(name, set()).add(f"{here}.{cls.name}")
    return drivers


def test_the_discovery_finds_the_procedures_operations_drive() -> None:
    """Guards the check below against finding nothing (a renamed base class, a moved folder)."""
    drivers = operation_drivers()
    assert {"grant_ssh_key", "deploy_toolkit", "create_site", "submit_site", "run_setup"} <= set(drivers), sorted(drivers)


def test_no_screen_runs_a_change_outside_the_one_path() -> None:
    drivers = operation_drivers()
    found = []
    for path in _console_modules():
        if path == RUNNER:
            continue
        name = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tui.procedures"):
                for alias in node.names:
                    if alias.name == "run_operation":
                        found.append(f"{name}:{node.lineno} imports run_operation")
                    elif alias.name in drivers:
                        found.append(f"{name}:{node.lineno} imports {alias.name}, which "
                                     f"{', '.join(sorted(drivers[alias.name]))} runs")
                    elif alias.name == "RunContext" and name not in READS_WITH_A_CONTEXT:
                        found.append(f"{name}:{node.lineno} builds its own RunContext")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "execute":
                found.append(f"{name}:{node.lineno} calls .execute() itself")
    assert not found, "a screen runs a change outside OperationRun:\n" + "\n".join(found)


# ---------------------------------------------------------------------- the run's promises


class _Audit:
    def __init__(self) -> None:
        self.records: list[tuple[str, str, str]] = []

    def check_writable(self) -> None:
        pass

    def record(self, action: str, target: str, outcome: str, details: Any = None) -> None:
        self.records.append((action, target, outcome))


def _site(read_only: bool = False) -> Any:
    return SimpleNamespace(read_only=read_only, audit=_Audit())


@dataclass(frozen=True)
class Steps(Operation[int, int]):
    """Reports `plan` steps; waits at `hold` (a step number) until released."""

    hold: int = -1
    title: ClassVar[str] = "Count"
    action: ClassVar[str] = "test.count"

    async def plan(self, site: Any) -> int:
        return 3

    def preview(self, plan: int) -> Preview:
        return Preview(self.title, (Change(f"count to {plan}"),))

    async def execute(self, site: Any, plan: int, context: RunContext) -> int:
        for n in range(plan):
            if context.cancel.is_set():
                raise OperationCancelled("Cancelled", f"after {n} steps")
            context.report(Progress(step=f"step {n}", done=n + 1, total=plan, message=f"step {n} done"))
            if n == self.hold:
                await context.cancel.wait()
        return plan


async def test_a_run_reports_every_step_in_order_and_returns_the_result() -> None:
    seen: list[str] = []
    run = OperationRun(_site(), Steps(), 3, on_step=lambda event: seen.append(event.step))
    assert await run.run() == 3
    assert seen == ["step 0", "step 1", "step 2"] and [e.step for e in run.events] == seen
    assert not run.running and not run.cancel(), "a finished run has nothing to cancel"


async def test_cancel_stops_a_run_between_two_steps_and_it_is_listed_while_under_way() -> None:
    site = _site()
    run = OperationRun(site, Steps(hold=0), 3)
    task = asyncio.ensure_future(run.run())
    while not run.events:  # the first step is reported, then the run holds
        await asyncio.sleep(0)
    assert runs_on(site) == [run] and runs_on(_site()) == [], "listed for its own site only"
    assert run.cancel() and run.cancelling and not run.cancel(), "a second cancel changes nothing"
    with pytest.raises(OperationCancelled):
        await task
    assert [e.step for e in run.events] == ["step 0"] and runs_on(site) == []


async def test_a_run_in_read_only_mode_is_refused_before_its_first_step() -> None:
    site = _site(read_only=True)
    run = OperationRun(site, Steps(), 3)
    with pytest.raises(ReadOnlyRefused):
        await run.run()
    assert run.events == [] and site.audit.records == [("test.count", "Count", "refused")]


async def test_a_question_open_when_the_run_is_cancelled_is_given_up_and_stops_the_run() -> None:
    """A stop signal while the operator is asked something (after a hang-up nobody is left to
    answer): the run stops instead of waiting for ever, and the question is withdrawn."""
    context = RunContext(emit=lambda _event: None)
    assert await context.answer(asyncio.sleep(0, result="yes")) == "yes", "answered: the answer"
    never: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    context.cancel.set()
    with pytest.raises(OperationCancelled):
        await context.answer(never)
    assert never.cancelled()


# ---------------------------------------------------------------------- a screen's inline run


class ProbeScreen(SiteScreen):
    """A screen that runs `Steps(hold=0)` inline, with a text field holding the focus."""

    SCREEN_NAME = "probe"
    BINDINGS: ClassVar[list[BindingType]] = [CANCEL_CHANGE]
    AUTO_FOCUS = "#probe-field"

    def __init__(self) -> None:
        super().__init__()
        self.outcome: object = None
        self.steps: list[str] = []

    def compose_body(self) -> ComposeResult:
        yield Input(id="probe-field")

    def change_step(self, event: Progress) -> None:
        self.steps.append(event.step)

    @work(exclusive=True, group="probe", exit_on_error=False)
    async def start(self) -> None:
        self.outcome = await self.run_change(Steps(hold=0), 3)

    def worker_failed(self, worker: Worker[Any], error: BaseException) -> None:
        self.outcome = error


async def test_esc_cancels_a_change_a_screen_runs_even_from_a_text_field(sim_factory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory()
    probe = ScreenSpec("probe", "Probe", f"{__name__}:ProbeScreen")
    app = console_app(server, screens=(VMS, probe))
    async with app.run_test(size=SIZE) as pilot:
        await wait_vms_loaded(pilot)
        app.open_screen("probe")
        screen = await wait_for_screen(pilot, ProbeScreen, what="the probe screen")
        keys = screen.query_one(KeyBar)
        assert "Cancel" not in rendered_text(keys), "esc Cancel shows only while a change runs"
        screen.start()
        await wait_for(pilot, lambda: screen.steps == ["step 0"] and screen.changing, what="the first step")
        await wait_for(pilot, lambda: "esc Cancel" in rendered_text(keys), what="esc Cancel in the key bar")
        assert isinstance(app.focused, Input), "the field has the focus: esc must still reach the run"
        await pilot.press("escape")
        await wait_for(pilot, lambda: screen.outcome is not None, what="the run to stop")
        assert isinstance(screen.outcome, OperationCancelled) and screen.steps == ["step 0"]
        await wait_for(pilot, lambda: "Cancel" not in rendered_text(keys), what="esc Cancel gone")
        await pilot.press("escape")  # nothing runs: esc reaches the field again, nothing breaks
        assert not screen.changing and runs_on(app.site) == []
