"""The output of every verb: printed text through `EscapingStream` (tui.cli.common's docstring).

Apart from tui.cli.common so that the entry point (tui.__main__) wraps every command's output
without importing the procedures' plumbing that common brings: `sitetk sim`, the demo's site,
starts (and announces itself to `sitetk --demo`) without it.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any, Iterator, TextIO

from tui.domain.printable import escape_controls


class EscapingStream(io.TextIOBase):
    """A text stream that escapes control characters and survives a reader that went away.

    After the first BrokenPipeError the underlying descriptor is pointed at /dev/null and the
    rest of the output is dropped: the command still finishes what it was doing (a download is
    not left half-made because `head` had read enough).
    """

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        try:
            self.stream.write(escape_controls(text))
        except BrokenPipeError:
            self._reader_gone()
        return len(text)

    def write_raw(self, text: str) -> None:
        """Write `text` unchanged (data such as a decrypted file, never remote text for a terminal)."""
        if self.broken:
            return
        try:
            self.stream.write(text)
        except BrokenPipeError:
            self._reader_gone()

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._reader_gone()
        except ValueError:  # closed underneath us
            pass

    def _reader_gone(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        # what a library asks of a real stream (`buffer`, `reconfigure`, ...): the wrapped one's
        return getattr(self.stream, name)

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)


@contextlib.contextmanager
def guarded_output() -> Iterator[None]:
    """Every print of a verb goes through an `EscapingStream` (stdout and stderr)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingStream(sys.stdout), EscapingStream(sys.stderr)
    try:
        yield
    except BrokenPipeError:  # a write that went around the wrappers
        pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = saved
