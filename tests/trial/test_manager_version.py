"""The manager's version the console was checked against is said: in the preview's login line and
its JSON, and next to a state the manager's source (TNLCM v0.5.2 STATE_MACHINE) does not define."""

from __future__ import annotations

from tui.adapters.manager_api import CHECKED_AGAINST
from tui.procedures.trial.network import STATES, state_said


def test_known_states_are_said_as_they_are_and_an_unknown_one_names_the_version_checked() -> None:
    assert CHECKED_AGAINST.startswith("TNLCM v0.5.2")
    for state in STATES:
        assert state_said(state) == state
    assert state_said("(gone)") == "(gone)"
    said = state_said("suspended")  # commented out of v0.5.2's STATE_MACHINE: a newer manager may send it
    assert said.startswith("suspended (a state TNLCM v0.5.2") and "does not define" in said
