"""A stop signal while `sitetk` is still starting (building its parser, importing the command's
module): the shell's exit status and one line, never a traceback or a death without a status.

The soak (bench.soak) found both: ctrl+c in the first second printed a KeyboardInterrupt
traceback, SIGTERM and SIGHUP (a dropped SSH session) ended the process by the default action.
Here the signal is sent by the process to itself while the command's module is being imported,
so it lands there every time. The soak also found the other end: a stop arriving once the command
was done, while the interpreter exits, ended a successful command by the signal's default action.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tui.cli.exit_codes import EXIT_HANGUP, EXIT_INTERRUPTED, EXIT_TERMINATED

#: `sitetk market list --json`, signalling itself in the middle of importing tui.cli.market
_SELF_SIGNALLING = """
import importlib, os, signal, sys
# as an interactive shell starts it: a job started in the background (`make test &`, CI runners)
# inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler
signal.signal(signal.SIGINT, signal.default_int_handler)
import tui.__main__ as entry
real = importlib.import_module
def import_module(name, *args):
    if name == "tui.cli.market":
        os.kill(os.getpid(), {signum})
    return real(name, *args)
entry.importlib.import_module = import_module
sys.exit(entry.main(["market", "list", "--json"]))
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, EXIT_INTERRUPTED), (signal.SIGTERM, EXIT_TERMINATED),
                                              (signal.SIGHUP, EXIT_HANGUP)], ids=["INT", "TERM", "HUP"])
def test_stop_signal_while_starting_exits_with_the_shells_status(signum: int, code: int) -> None:
    done = subprocess.run([sys.executable, "-c", _SELF_SIGNALLING.format(signum=int(signum))], capture_output=True,
                          text=True, timeout=120, check=False)
    assert (done.returncode, "Traceback" in done.stderr) == (code, False), done.stderr
    assert f"interrupted ({signal.Signals(signum).name}) while starting: nothing was done" in done.stderr
    assert done.stdout == ""


#: `sitetk info --json`, as the process's entry, signalling itself once the command is
#: done and the interpreter exits (atexit runs in that moment)
_SIGNAL_AT_EXIT = """
import atexit, os, sys
import tui.__main__ as entry
atexit.register(lambda: os.kill(os.getpid(), {signum}))
sys.argv = ["sitetk", "info", "--json"]
sys.exit(entry.main())
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_stop_signal_once_the_command_is_done_keeps_its_status(signum: int, tmp_path: Path) -> None:
    """A stop arriving while the process exits (threads joined, atexit) does not turn a finished
    command into a death by signal or a traceback."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_STATE_HOME": str(tmp_path / "state"), "SITETK_AUDIT_LOG": str(tmp_path / "audit.log")}
    for name in ("SITETK_CONFIG", "ONE_XMLRPC", "ONE_AUTH", "ONEFLOW_URL"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-c", _SIGNAL_AT_EXIT.format(signum=int(signum))], capture_output=True,
                          text=True, timeout=120, check=False, env=env)
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr
