"""Time as the procedures measure it: one clock, which a test can drive.

The waits of the procedures (following a deployment, waiting for the automation key) measure their
deadlines and heartbeats with `monotonic()`. It is `time.monotonic()` plus an offset that only a
test moves (`CLOCK.advance(seconds)`, tests/conftest.py `driven_clock`): a test of what happens at
a timeout lets the embedded site reach the situation it wants, then moves the clock past the
deadline instead of waiting the timeout out. The pauses between polls stay real (`asyncio.sleep`):
the site is polled as it runs. A screenshot scene stops it (`CLOCK.stop()`, then `advance`) so the
elapsed seconds it shows are the same every time; `CLOCK.resume()` lets it run again from there.
"""

from __future__ import annotations

import threading
import time


class Clock:
    """`time.monotonic()` plus an offset that a test advances (never goes back)."""

    def __init__(self) -> None:
        self._offset = 0.0
        #: the real time the clock was stopped at (None: it runs)
        self._stopped: float | None = None
        self._lock = threading.Lock()

    def monotonic(self) -> float:
        with self._lock:
            return (time.monotonic() if self._stopped is None else self._stopped) + self._offset

    def stop(self) -> None:
        """Stop the clock where it is: it then moves only with `advance` (a picture's elapsed seconds)."""
        with self._lock:
            if self._stopped is None:
                self._stopped = time.monotonic()

    def resume(self) -> None:
        """Let a stopped clock run again from where it stands (it never goes back)."""
        with self._lock:
            if self._stopped is not None:
                self._offset -= time.monotonic() - self._stopped
                self._stopped = None

    def advance(self, seconds: float) -> None:
        """Move the clock `seconds` forward: every deadline measured with it comes that much closer."""
        if seconds < 0:
            raise ValueError("the clock never goes back")
        with self._lock:
            self._offset += seconds


#: the clock of this process
CLOCK = Clock()


def monotonic() -> float:
    """The time the procedures' deadlines and heartbeats are measured in (seconds, monotonic)."""
    return CLOCK.monotonic()
