"""The soak in its short form (bench.soak): randomised `sitetk` commands under faults, signals and
two at once against the embedded site; zero crashes, leftovers, duplicates and lost changes.

The full run (`make soak`, 500 operations) is the command; this one runs a few dozen operations
with a fixed seed so CI sees the same draws every time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.soak.run import soak
from tests.faults.processes import soak_run_here

SHORT_OPS = 30
SHORT_SEED = 15


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
    import os
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
    running = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and Path(os.readlink(proc / "cwd")).is_relative_to(root):
                running.append(proc.name)
        except OSError:
            continue
    assert running == []  # the sitetk commands run in the soak's root, each in a session of its own
