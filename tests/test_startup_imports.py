"""The console's start-up path imports no heavy library it does not use before its first rows.

ansible (the vault) takes ~0.3 s to import on this project's machines; when the front door's check
(`toolkit_deployed`, now in tui/procedures/toolkit/service.py) pulled it in, `sitetk --demo` went from 1.45x to
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


#: what the demo site's child process (`sitetk sim`, tui.demo_site) loads before it announces itself:
#: `sitetk --demo` waits for that announcement before it can read its first rows
SIM_START_UP_MODULES = ("tui.cli.sim", "tui.sim.runner", "tui.sim.server", "tui.sim.scenarios")
#: libraries the site does not need to start: uuid pulls in `platform` (tui.sim.uuids writes the
#: site's UUIDs instead), xml.sax.saxutils pulls in urllib.request (~65 ms together at load 20)
SIM_NEEDLESS = ("uuid", "platform", "xml.sax.saxutils", "urllib.request")


def test_demo_site_start_up_imports_no_needless_library() -> None:
    script = (
        "import importlib, sys\n"
        f"for name in {SIM_START_UP_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in {SIM_NEEDLESS!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
