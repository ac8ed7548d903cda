"""The setup's table of steps (`tui.procedures.setup.steps`): one row per step in the checklist's
order, a planner for each step the console runs and none for the operator's, and the form the
checklist writes (`sitetk setup run --only <step>`) only for a step the run can do."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.setup.conftest import point_at, run, steps
from tui.domain.setup_steps import STEP_ORDER, SetupStep, StepId, StepState
from tui.procedures.setup.run import SetupStopped, plan_step
from tui.procedures.setup.step_plan import RunOptions
from tui.procedures.setup.steps import BY_ID, STEPS
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)

#: the steps only the operator does (the platform, its networks, the input file, the sites repository)
OPERATORS = {StepId.PLATFORM, StepId.SERVICES, StepId.CLI_HELPER, StepId.GATE, StepId.DATASTORES,
             StepId.DEFAULT_NETWORK, StepId.TRIAL_NETWORK, StepId.FORWARDED, StepId.INPUTS, StepId.REPOSITORY}


def test_one_row_per_step_in_the_checklists_order() -> None:
    assert tuple(row.id for row in STEPS) == STEP_ORDER
    assert set(BY_ID) == set(StepId)


def test_the_console_runs_every_step_but_the_operators() -> None:
    assert {row.id for row in STEPS if row.plan is None} == OPERATORS
    assert BY_ID[StepId.INPUTS].command == ""
    assert BY_ID[StepId.GRANT].command == "sitetk setup run --input FILE --only grant"


@pytest.mark.parametrize("step_id", sorted(OPERATORS, key=STEP_ORDER.index))
def test_a_step_only_the_operator_does_stops_the_run_with_its_fix(step_id: StepId) -> None:
    step = SetupStep(step_id, "A step", StepState.TODO, ("what was read",), "the fix")

    async def ask(names: list[str]) -> dict[str, str]:
        raise AssertionError("nothing is asked for a step the run cannot do")

    none: Any = None
    with pytest.raises(SetupStopped) as stopped:
        asyncio.run(plan_step(none, none, none, step, RunOptions(), ask))
    assert stopped.value.step is step_id
    assert stopped.value.title == "Setup stopped at 'A step': needs the operator"
    assert stopped.value.detail == "what was read\nFix: the fix"


def test_a_step_names_setup_run_only_for_a_step_the_run_does(sim_factory, monkeypatch: pytest.MonkeyPatch,
                                                            capsys) -> None:
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch)
    code, data, _ = run(capsys, "setup", "status", "--json")
    assert code == 3
    named = {step_id: step["command"] for step_id, step in steps(data).items() if "setup run" in step["command"]}
    assert len(named) >= 3, named  # the deployed site has steps to do: grant, database-host, components, ...
    for step_id, command in named.items():
        assert command == BY_ID[StepId(step_id)].command, (step_id, command)
