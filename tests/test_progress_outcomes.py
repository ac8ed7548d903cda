"""Results travel as typed outcomes (`Progress.outcome`), never read back out of `Progress.data`.

`data` is the `--json` event log's detail; a screen, a CLI verb or an operation that parsed it
back (`event.data["service_id"]`) would turn a typed result into an untyped dict again. This
scans the console's sources for such reads.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "tui"
#: reading a progress event's data: `event.data[...]`, `e.data.get(...)`, `"x" in event.data`,
#: `= events[-1].data` (passing an event's detail on to a wrapping event is no read)
_EVENT = r"(?:event|e|step|events\[-1\]|message\.event)"
READ = re.compile(rf"\b{_EVENT}\.data(?:\[|\.get\b)|\bin {_EVENT}\.data\b|=\s*{_EVENT}\.data\s*$")
#: none left: the guided setup reads a checklist step's typed `SetupStep.found`, not its `data`
NOT_YET: set[str] = set()


def test_no_layer_reads_results_back_out_of_progress_data() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("sim/") or relative in NOT_YET:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if READ.search(line):
                found.append(f"tui/{relative}:{number}: {line.strip()}")
    assert not found, "read the typed Progress.outcome instead:\n" + "\n".join(found)


def test_the_scan_sees_a_read() -> None:
    assert READ.search('service_id = event.data.get("service_id")')
    assert READ.search('if "values" in event.data:')
    assert READ.search("    site = events[-1].data")
    assert not READ.search("config.data.get(key)")
    assert not READ.search("                               event.data)")
