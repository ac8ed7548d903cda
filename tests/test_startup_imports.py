"""The console's start-up path imports no heavy library it does not use before its first rows.

ansible (the vault) takes ~0.3 s to import on this project's machines; when the front door's check
(`toolkit_deployed`, then in tui/procedures/setup_facts.py) pulled it in, `sitetk --demo` went from 1.45x to
2.84x the bare Textual app in `make bench`. This guards the cause rather than timing anything.
"""

from __future__ import annotations

import subprocess
import sys

#: what the console loads before its first rows, and the screen the front door opens on a fresh site
START_UP_MODULES = (
    "tui.console",
    "tui.app",
    "tui.procedures.setup.facts",
    "tui.procedures.toolkit.service",
    "tui.screens.setup",
    "tui.screens.vms",
)


def test_start_up_does_not_import_ansible() -> None:
    script = (
        "import importlib, sys\n"
        f"for name in {START_UP_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m == 'ansible' or m.startswith('ansible.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
