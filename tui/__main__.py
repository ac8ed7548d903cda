"""Command-line entry: `sitetk` (the console), `sitetk --demo`, `sitetk sim`, headless subcommands.

Each noun lives in its own module under `tui.cli` and exposes `register(subparsers)`, which adds
its parser and sets `func` to a callable taking the parsed arguments and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from typing import Any, Sequence

#: modules under tui.cli that register a noun (each: `register(subparsers) -> None`)
NOUNS: tuple[str, ...] = (
    "hosts",
    "info",
    "market",
    "setup",
    "sim",
    "site",
    "toolkit",
    "trial",
)


#: options of the console itself that take a value (skipped when looking for the noun)
_VALUE_OPTIONS = frozenset({"--scenario", "--vms"})


def nouns_for(argv: Sequence[str]) -> tuple[str, ...]:
    """The noun modules a command line needs: the one it names, none for the console itself
    (`sitetk`, `sitetk --demo ...`: importing every noun and its dependencies would add about a
    second to its start-up), all of them for help or an unknown word (argparse then lists them)."""
    args = list(argv)
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("-h", "--help", "--"):
            return NOUNS
        if arg in _VALUE_OPTIONS:
            index += 2
            continue
        if arg.startswith("-"):
            index += 1
            continue
        return (arg,) if arg in NOUNS else NOUNS
    return ()


def build_parser(nouns: Sequence[str] = NOUNS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sitetk", description="Site Toolkit Console")
    parser.add_argument("--demo", action="store_true", help="start the embedded demo site and connect to it")
    parser.add_argument("--scenario", default="fresh", choices=("fresh", "deployed"), help="demo scenario")
    parser.add_argument("--vms", type=int, default=0, help="demo: add N ordinary VMs for scale")
    parser.add_argument("--read-only", action="store_true", help="hide every mutating action")
    subparsers = parser.add_subparsers(dest="noun")
    for name in nouns:
        importlib.import_module(f"tui.cli.{name}").register(subparsers)
    return parser


class _StopBeforeStart(Exception):
    """SIGTERM or SIGHUP arrived while the command was still starting (nothing done yet)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop_before_start(signum: int, _frame: object) -> None:
    raise _StopBeforeStart(signum)


def _early_stop_handlers() -> dict[int, Any]:
    """Until a command installs its own (tui.cli.common.run_async), TERM and HUP end it as ctrl+c
    does: with a line on stderr and the shell's exit status (128 + the signal), never by the
    default action (no status, no message) or a traceback. Returns the handlers replaced."""
    previous: dict[int, Any] = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[signum] = signal.signal(signum, _stop_before_start)
        except (ValueError, OSError):  # not the main thread, or no such signal here
            pass
    return previous


def _interrupted(signum: int, started: bool) -> int:
    name = signal.Signals(signum).name
    print(f"interrupted ({name})" if started else f"interrupted ({name}) while starting: nothing was done", file=sys.stderr)
    return 128 + signum


def _finished() -> bool:
    """The command is done and the process only exits now (its threads joined, its files
    flushed): a stop signal in that moment is ignored, rather than ending the process by the default
    action (no status) or a KeyboardInterrupt traceback after the work succeeded."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(signum, signal.SIG_IGN)
        except (ValueError, OSError):
            pass
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: the process's own, which also makes this call the
    process's entry: see `_finished`)."""
    entry = argv is None
    previous = _early_stop_handlers()
    started = finished = False
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(nouns_for(argv))
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if func is not None:
            from tui.cli.output import guarded_output

            with guarded_output():  # control characters escaped, a closed pipe ends quietly
                started = True
                code = int(func(args) or 0)
            finished = entry and _finished()
            return code
    except KeyboardInterrupt:
        return _interrupted(signal.SIGINT, started)
    except _StopBeforeStart as stop:
        return _interrupted(stop.signum, started)
    finally:
        if not finished:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    from tui.console import run_console  # imported late: Textual is not needed headless

    return run_console(args)


if __name__ == "__main__":
    sys.exit(main())
