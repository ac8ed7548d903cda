"""The soak in its short form (bench.soak): randomised `sitetk` commands under faults, signals and
two at once against the embedded site; zero crashes, leftovers, duplicates and lost changes.

The full run (`make soak`, 500 operations) is the command; this one runs a few dozen operations
with a fixed seed so CI sees the same draws every time: a seed whose 18 steps (22 commands) draw
every kind of operation, fault, signal and race the soak has (pinned below); seed 15's 30 steps
(38 commands, ~30 CPU-s) drew fewer kinds (no outage, `site check`, unwritable audit directory or
two identical commands at once; issue 23).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bench.soak.operations import CATALOGUE
from bench.soak.run import AUDIT_BREAKS, SIGNALS, draw_step, soak
from tests.faults.processes import running_in, soak_run_here

SHORT_OPS = 18
SHORT_SEED = 21634


class _Paths:
    """What the draws read of a world: its files' paths and the appliances' keys."""
    appliance_keys: dict[str, str] = {}
    inputs = core = Path("/soak/file")


def drawn_kinds(ops: int, seed: int) -> set[tuple[str, ...]]:
    """The kinds of step `ops` steps of `seed` draw (the draws read no state of the site)."""
    rng, kinds, wrote = random.Random(seed), set[tuple[str, ...]](), False
    for index in range(ops):
        step = draw_step(rng, _Paths, index)  # type: ignore[arg-type]
        ops_ = step.operations
        kinds |= {("operation", op.name) for op in ops_}
        if len(ops_) > 1 and not step.same_vm:
            kinds.add(("twin", "same command" if ops_[0].argv == ops_[1].argv else
                       "same kind" if ops_[0].name == ops_[1].name else "other"))
        wrote = wrote or any(op.writes for op in ops_)
        flags = {"same VM": step.same_vm, "latency": step.latency_ms > 0, "failures": step.fail_rate > 0,
                 "market fault": bool(step.market), "lost answer": bool(step.lost), "outage": step.outage_after >= 0,
                 "session expiry": bool(step.expire_at), "submit after a write": wrote and any(op.submits for op in ops_)}
        kinds |= {(name,) for name, drawn in flags.items() if drawn}
        kinds |= {("signal", step.signal)} if step.signal else set()
        kinds |= {("audit", step.audit_broken)} if step.audit_broken else set()
    return kinds


def test_the_short_soak_draws_every_kind_of_step() -> None:
    """What the short soak proves holds for every kind of operation, fault, signal and race the
    soak draws: its steps draw them all (a change of the catalogue or the draws shows here)."""
    every = drawn_kinds(2000, 1)
    assert {("operation", make(random.Random(0), _Paths, "0").name) for _, make in CATALOGUE} <= every  # type: ignore[arg-type]
    assert {("operation", "site check"), ("outage",), ("audit", "directory"), ("twin", "same command")} <= every
    assert {("signal", name) for name, _ in SIGNALS} | {("audit", how) for how in AUDIT_BREAKS} <= every
    assert drawn_kinds(SHORT_OPS, SHORT_SEED) == every


@pytest.mark.timeout(1200)
@pytest.mark.slow  # 101 s in the whole run at load 4-8
def test_short_soak_leaves_nothing_behind(tmp_path: Path) -> None:
    figures = soak(SHORT_OPS, SHORT_SEED, root=tmp_path / "soak", prepare_run=soak_run_here)
    data = figures.as_json()
    assert data["operations"] == SHORT_OPS and data["commands"] >= SHORT_OPS
    assert sum(data["faults_injected"].values()) > 0
    problems = {kind: data["examples"].get(kind, []) for kind in ("crash", "leftover", "duplicate", "lost change")}
    assert (data["crashes"], data["leftovers"], data["duplicates"], data["lost_changes"]) == (0, 0, 0, 0), \
        json.dumps(problems, indent=1)


@pytest.mark.timeout(600)
def test_a_stopped_soak_writes_the_figures_of_its_steps_and_leaves_no_command_running(tmp_path: Path) -> None:
    """A 1,000-step run outlasted its window on a loaded machine, and a stop lost every figure:
    SIGTERM (SIGINT is ignored in a background job) now ends the step's commands, then prints and
    writes the figures of the steps run so far, saying where it stopped, and exits 1."""
    import re
    import signal
    import subprocess
    import sys

    root, out = tmp_path / "soak", tmp_path / "soak.json"
    repo = Path(__file__).resolve().parents[2]
    soak_run = subprocess.Popen([sys.executable, "-m", "bench.soak", "--ops", "50", "--seed", "1", "--json", str(out),
                                 "--keep", str(root)], cwd=repo, stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True)
    assert soak_run.stderr is not None
    for line in soak_run.stderr:  # the first step's line: the second step is drawn and running
        if line.startswith("[1/50]"):
            break
    soak_run.send_signal(signal.SIGTERM)
    stdout, _ = soak_run.communicate(timeout=300)
    assert soak_run.returncode == 1
    data = json.loads(out.read_text())
    stopped = re.fullmatch(r"stopped during step (\d+) of 50; (\d+) steps counted", data["stopped"])
    assert stopped and int(stopped[2]) == data["operations"] >= 1, data
    assert int(stopped[1]) in (data["operations"], data["operations"] + 1), data  # in its checks, or its commands
    assert data["stopped"] in stdout
    assert running_in(root) == []  # the sitetk commands run in the soak's root, each in a session of its own
