"""Exit codes of every `sitetk` command (kept apart from tui.cli.common so that `sitetk sim`,
which the demo starts as a child process, does not import asyncio and the procedures for them).

0 success, 1 the operation failed (SiteError), or a check could not read what it needs (an expired
session, a source that does not answer: `setup status` with a step it could not check), 2 bad usage
or input, 3 a check found problems (e.g. `hosts check` with a database VM at risk, `setup status`
with steps not done); stopped by a signal, the shell's status 128 + its
number: 130 interrupted (SIGINT, ctrl+c), 143 terminated (SIGTERM), 129 hung up (SIGHUP, a dropped
SSH session).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_FINDINGS = 3
EXIT_INTERRUPTED = 130
EXIT_HANGUP = 129
EXIT_TERMINATED = 143
