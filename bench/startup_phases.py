"""Where a start-up's time goes: `sitetk --demo` or the bare app, run with marks at its phases.

    SITETK_BENCH_PHASES_OUT=<file> python -m bench.startup_phases console [--vms N]
    SITETK_BENCH_PHASES_OUT=<file> python -m bench.startup_phases bare

Run in a terminal with `SITETK_BENCH_EXIT_ON_FIRST_ROWS=1` (bench.terminal.first_rows does both),
the program starts as it always does, with a few of its methods wrapped from outside (nothing of
the console is changed for this): each wrapper notes the process's CPU time (all threads) and the
monotonic clock when a phase is reached. When the first rows are painted, one JSON object goes to
the file: `marks` (phase -> [CPU ms, wall ms] since this module's first line, which runs after the
interpreter's own start, the same for both programs), `frames` (count and CPU ms of the screen
updates: layouts and compositor refreshes, nested ones counted once) and `gc` (collections and their
CPU ms). bench.bench_vm_list's `phases` part runs both programs and tabulates the medians.

The console's phases, in order: `imported` (the console's modules and Textual), `mounted` (the app's
`on_mount`), `client` (the XML-RPC client made: its imports), `connected` (the start-up check
answered), `rows set` (a list showed its first rows), `rows painted`. The bare app's: `imported`,
`mounted`, `rows painted`.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
import time
from typing import Any, Callable

OUT_ENV = "SITETK_BENCH_PHASES_OUT"

_START = (time.process_time(), time.monotonic())
_marks: dict[str, list[float]] = {}
_frames = {"count": 0, "cpu_ms": 0.0}
_gc = {"count": 0, "cpu_ms": 0.0}
_gc_started = [0.0]
_frame_depth = 0


def mark(phase: str) -> None:
    """Note `phase` the first time it is reached."""
    if phase not in _marks:
        _marks[phase] = [round((time.process_time() - _START[0]) * 1e3, 2),
                         round((time.monotonic() - _START[1]) * 1e3, 2)]


def _write() -> None:
    path = os.environ.get(OUT_ENV)
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"marks": _marks, "frames": _frames, "gc": _gc}, out)


def _on_gc(phase: str, _info: dict[str, Any]) -> None:
    if phase == "start":
        _gc_started[0] = time.process_time()
    elif _gc_started[0]:
        _gc["count"] += 1
        _gc["cpu_ms"] += (time.process_time() - _gc_started[0]) * 1e3


def _wrap(owner: Any, name: str, before: Callable[[], None]) -> None:
    """Replace `owner.name` by a function calling `before`, then the original; with the original's
    signature (`functools.wraps`), which Textual reads to call a handler with its event or not."""
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        before()
        return original(self, *args, **kwargs)

    setattr(owner, name, wrapped)


def _count_frames() -> None:
    from textual.screen import Screen

    for name in ("_refresh_layout", "_compositor_refresh"):
        original = getattr(Screen, name)

        def timed(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            global _frame_depth
            if _frame_depth:
                return _original(self, *args, **kwargs)
            _frame_depth += 1
            started = time.process_time()
            try:
                return _original(self, *args, **kwargs)
            finally:
                _frame_depth -= 1
                _frames["count"] += 1
                _frames["cpu_ms"] += (time.process_time() - started) * 1e3

        setattr(Screen, name, timed)


def _painted() -> None:
    mark("rows painted")
    _write()


def console(argv: list[str]) -> int:
    """`sitetk --demo ...` with its phases marked (the console's own start-up, as `sitetk` runs it:
    the demo site spawned first, then the app's imports)."""
    gc.callbacks.append(_on_gc)
    import tui.console
    from tui import __main__ as entry

    run_console = tui.console._run_console

    def marked_run(args: Any, child: Any) -> int:
        from tui.app import SiteToolkitApp
        from tui.procedures.connection import SiteConnection

        mark("imported")
        _count_frames()
        _wrap(SiteToolkitApp, "on_mount", lambda: mark("mounted"))
        _wrap(SiteToolkitApp, "on_site_toolkit_app_connected", lambda: mark("connected"))
        _wrap(SiteToolkitApp, "rows_shown", lambda: mark("rows set"))
        _wrap(SiteToolkitApp, "_first_rows_painted", _painted)
        cloud = SiteConnection.cloud

        def made(self: Any) -> Any:
            client = cloud.fget(self)  # type: ignore[misc]
            mark("client")
            return client

        SiteConnection.cloud = property(made)  # type: ignore[method-assign,assignment]
        return int(run_console(args, child))

    tui.console._run_console = marked_run
    return int(entry.main(["--demo", *argv]))


def bare() -> int:
    """The bare app of the start-up figure (bench.minimal_app), its phases marked."""
    gc.callbacks.append(_on_gc)
    from bench import minimal_app

    mark("imported")
    _count_frames()
    _wrap(minimal_app.MinimalApp, "on_mount", lambda: mark("mounted"))
    _wrap(minimal_app.MinimalApp, "_painted", _painted)
    return minimal_app.main()


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("console", "bare"):
        print("usage: python -m bench.startup_phases console [sitetk options] | bare", file=sys.stderr)
        return 2
    return console(argv[1:]) if argv[0] == "console" else bare()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
