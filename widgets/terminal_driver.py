"""A Linux terminal driver that survives its terminal going away (a dropped SSH session).

When the terminal hangs up, the kernel sends the session SIGHUP and then SIGCONT
(drivers/tty/tty_jobctrl.c, `tty_signal_session_leader`). Textual's `LinuxDriver` (textual 8.x,
drivers/linux_driver.py) takes SIGCONT as "resumed after ctrl+z" and starts application mode
again: a second output thread whose first write to the hung-up terminal fails with EIO and ends
it. Its writes then pile up in that thread's bounded queue (30 items) until the app's shutdown
blocks for ever putting the stop marker in. The app's SIGHUP handling (which points the lost
terminal's descriptors at /dev/null, `tui.procedures.stop_signals`) runs on the event loop,
after SIGCONT's handler, so it cannot prevent that. Here:

- SIGCONT resumes only while the terminal still answers (`tcgetattr`; a hung-up terminal
  answers EIO);
- the output thread's writes to the terminal ignore the errors of a terminal that is gone
  (EIO, EPIPE, ENXIO), so that thread never ends early and the shutdown never waits on it.
"""

from __future__ import annotations

import errno
import sys
import termios
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver

#: what writing to a terminal that hung up fails with
_GONE = frozenset({errno.EIO, errno.EPIPE, errno.ENXIO})


class LostTerminalSafe:
    """A text stream over the terminal whose writes and flushes drop what a gone terminal
    cannot take (everything else is the wrapped stream's)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            if error.errno not in _GONE:
                raise
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            if error.errno not in _GONE:
                raise

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class HangupSafeDriver(LinuxDriver):
    """`LinuxDriver` that neither restarts on a hang-up's SIGCONT nor loses its output thread
    to a terminal that is gone (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._file is not None:
            self._file = LostTerminalSafe(self._file)  # type: ignore[assignment]

    def _sigcont_application(self, *args: Any) -> None:
        if not self._terminal_answers():
            return  # a hang-up's SIGCONT: nothing to resume on, the app is stopping
        super()._sigcont_application(*args)

    def _terminal_answers(self) -> bool:
        try:
            termios.tcgetattr(self.fileno)
        except (termios.error, OSError, ValueError):
            return False
        return True


def driver_class() -> type[LinuxDriver] | None:
    """The driver to use on this platform (None: Textual's own choice)."""
    return HangupSafeDriver if sys.platform != "win32" else None
