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

SHORT_OPS = 30
SHORT_SEED = 15


@pytest.mark.timeout(1200)
def test_short_soak_leaves_nothing_behind(tmp_path: Path) -> None:
    figures = soak(SHORT_OPS, SHORT_SEED, root=tmp_path / "soak")
    data = figures.as_json()
    assert data["operations"] == SHORT_OPS and data["commands"] >= SHORT_OPS
    assert sum(data["faults_injected"].values()) > 0
    problems = {kind: data["examples"].get(kind, []) for kind in ("crash", "leftover", "duplicate", "lost change")}
    assert (data["crashes"], data["leftovers"], data["duplicates"], data["lost_changes"]) == (0, 0, 0, 0), \
        json.dumps(problems, indent=1)
