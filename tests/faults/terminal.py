"""A real pseudo-terminal for a `sitetk` process, and just enough of a terminal to read its
screen: the text at each cell after cursor moves (`ESC [ row ; col H`), carriage returns and line
feeds; colours and other control sequences are skipped. The process is its session's leader
with the terminal as its controlling terminal, as under an SSH login, so closing the terminal
(`hang_up`) makes the kernel send it SIGHUP (and SIGCONT)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
from dataclasses import dataclass, field
from pathlib import Path

from tests.waiting import wait_until

_TOKEN = re.compile(r"\x1b\[([0-9;?<>=$]*)([ -/]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]"
                    r"|\x1b.|([^\x1b]+)", re.S)
#: the child makes the terminal (its stdin) its controlling terminal, sends Python's own error
#: reports (tracebacks, "Exception ignored", asyncio's log) to the file $SITETK_TEST_ERRORS while
#: the screen stays on the terminal (Textual draws on sys.__stderr__), then runs `python -m tui`
LAUNCHER = ("import fcntl, os, runpy, sys, termios\n"
            "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
            "sys.stderr = open(os.environ.pop('SITETK_TEST_ERRORS'), 'a', buffering=1)\n"
            "sys.argv = ['sitetk', *sys.argv[1:]]\n"
            "runpy.run_module('tui', run_name='__main__', alter_sys=True)\n")


@dataclass
class Screen:
    rows: int
    cols: int
    grid: list[list[str]] = field(default_factory=list)
    row: int = 0
    col: int = 0
    _pending: str = ""

    def __post_init__(self) -> None:
        self.grid = [[" "] * self.cols for _ in range(self.rows)]

    def feed(self, data: bytes) -> None:
        text = self._pending + data.decode("utf-8", "replace")
        self._pending = ""
        last = text.rfind("\x1b")
        if last != -1 and not _TOKEN.match(text, last):
            text, self._pending = text[:last], text[last:]
        for match in _TOKEN.finditer(text):
            plain, final = match.group(4), match.group(3)
            if plain is not None:
                self._put(plain)
            elif final == "H" and not match.group(2):
                parts = (match.group(1) or "").split(";")
                self.row = int(parts[0]) - 1 if parts[0].isdigit() else 0
                self.col = int(parts[1]) - 1 if len(parts) > 1 and parts[1].isdigit() else 0
            elif final == "J" and match.group(1) == "2":
                self.grid = [[" "] * self.cols for _ in range(self.rows)]

    def _put(self, text: str) -> None:
        for char in text:
            if char == "\r":
                self.col = 0
            elif char == "\n":
                self.row = min(self.row + 1, self.rows - 1)
            elif char >= " ":
                if 0 <= self.row < self.rows and self.col < self.cols:
                    self.grid[self.row][self.col] = char
                self.col += 1

    def text(self) -> str:
        return "\n".join("".join(row).rstrip() for row in self.grid)


@dataclass
class Terminal:
    """`sitetk ARGV` on a pseudo-terminal of `rows` x `cols`; `errors` collects Python's reports."""

    process: subprocess.Popen[bytes]
    master: int
    screen: Screen
    errors: Path

    @classmethod
    def start(cls, argv: list[str], env: dict[str, str], errors: Path, cwd: Path,
              rows: int = 40, cols: int = 120) -> "Terminal":
        master, slave = os.openpty()
        try:
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            process = subprocess.Popen([sys.executable, "-c", LAUNCHER, *argv], stdin=slave, stdout=slave,
                                       stderr=slave, env={**env, "TERM": "xterm-256color",
                                                          "SITETK_TEST_ERRORS": str(errors)},
                                       cwd=cwd, start_new_session=True)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return cls(process, master, Screen(rows, cols), errors)

    def read(self) -> str:
        """Everything the process drew so far, as the screen now shows it (never blocks)."""
        if self.master >= 0:
            while select.select([self.master], [], [], 0)[0]:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    break
                if not data:
                    break
                self.screen.feed(data)
        return self.screen.text()

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        def shown() -> str | None:
            screen = self.read()
            if text in screen:
                return screen
            if self.process.poll() is not None:
                raise AssertionError(f"sitetk ended ({self.process.returncode}) before showing {text!r}:\n{screen}")
            return None

        return wait_until(shown, timeout, f"{text!r} on the terminal")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def hang_up(self) -> None:
        """The terminal goes away (its master side closed, as sshd does when the session drops)."""
        self.read()
        os.close(self.master)
        self.master = -1

    def close(self) -> None:
        if self.master >= 0:
            os.close(self.master)
            self.master = -1
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)
