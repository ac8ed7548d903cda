"""The baseline of the start-up figure: a bare Textual app that paints a few rows of text.

`python -m bench.minimal_app` runs it in the terminal. With `SITETK_BENCH_EXIT_ON_FIRST_ROWS=1`
it behaves as `sitetk` does under that variable (see tui/app.py): it exits right after its rows
are first painted and prints `sitetk-bench first-rows <time.monotonic()> cpu <time.process_time()>`
to stderr once the terminal is restored, so both start-ups are measured the same way.
"""

from __future__ import annotations

import os
import sys
import time

from textual.app import App, ComposeResult
from textual.widgets import Static

BENCH_EXIT_ENV = "SITETK_BENCH_EXIT_ON_FIRST_ROWS"
BENCH_MARK = "sitetk-bench first-rows"


class MinimalApp(App[int]):
    """One static block of rows; notes when they first reach the screen."""

    def __init__(self) -> None:
        super().__init__()
        self.first_rows_at: float | None = None
        self.first_rows_cpu: float | None = None
        self._exit_on_first_rows = os.environ.get(BENCH_EXIT_ENV) == "1"

    def compose(self) -> ComposeResult:
        yield Static("\n".join(f"{n:>5}  row {n}" for n in range(1, 21)), id="rows")

    def on_mount(self) -> None:
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        if self.first_rows_at is None:
            self.first_rows_at = time.monotonic()
            self.first_rows_cpu = time.process_time()
            if self._exit_on_first_rows:
                self.exit(0)


def main() -> int:
    app = MinimalApp()
    code = app.run() or 0
    if app.first_rows_at is not None and os.environ.get(BENCH_EXIT_ENV) == "1":
        print(f"{BENCH_MARK} {app.first_rows_at:.6f} cpu {app.first_rows_cpu:.6f}", file=sys.stderr, flush=True)
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
