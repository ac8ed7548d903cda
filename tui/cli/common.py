"""Shared plumbing of the headless subcommands: running procedures, printing, exit codes.

Exit codes: 0 success, 1 the operation failed (SiteError), 2 bad usage or input,
3 a check found problems (e.g. `hosts check` with a database VM at risk), 130 interrupted.

Output: `guarded_output()` (entered once by the entry point around every verb) wraps stdout and
stderr in an `EscapingStream`: remote text (record names, image names, template values) reaches
the terminal with its control characters escaped (`tui.domain.printable`), whoever prints it; and
a reader that goes away (`sitetk market list | head`) ends the output quietly, without a
BrokenPipeError traceback and without interrupting an operation under way. File contents meant as
data (`site decrypt` to a file or pipe) go out unchanged through `write_data`.

A subcommand's function is one of `site_command(handler)` (settings and a connected site),
`settings_command(handler)` (settings only) or `local_command(handler)` (the handler connects
where it needs to, with `connect_site`). Handlers raise `UsageError` for bad input. A mutating
verb calls `show_preview` (which answers a `--dry-run`), then `confirm`, then `follow`.

A noun module names its verbs' handlers with `verb("tui.cli.<module>", "<handler>")`: the module
that implements a verb (and the procedures under it) is imported when that verb runs, not for
every verb of the noun nor for `--help` (issue 24: `sitetk site --help` imported every site verb's
procedures, ~0.35 s of CPU).
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import signal
import sys
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Mapping, TypeVar

# re-exported (`X as X`): the commands and their tests take the exit codes from here
from tui.cli.exit_codes import EXIT_FAILED as EXIT_FAILED
from tui.cli.exit_codes import EXIT_FINDINGS as EXIT_FINDINGS
from tui.cli.exit_codes import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from tui.cli.exit_codes import EXIT_OK as EXIT_OK
from tui.cli.exit_codes import EXIT_USAGE as EXIT_USAGE
from tui.cli.output import EscapingStream as EscapingStream
from tui.cli.output import guarded_output as guarded_output
from tui.errors import SiteError
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.stop_signals import StopRequests, exit_code_for, on_stop_signals, signal_name

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection
    from tui.settings import Settings

T = TypeVar("T")


class UsageError(Exception):
    """Bad input on the command line or in an input file: exit code 2 with this message."""


def write_data(text: str) -> None:
    """File contents on stdout: unchanged into a file or pipe (the bytes are the file), with
    control characters escaped on a terminal."""
    stream = sys.stdout
    if isinstance(stream, EscapingStream) and not stream.isatty():
        stream.write_raw(text)
    else:
        stream.write(text)


def table_console() -> Any:
    """A rich Console for the CLI's tables on stdout: plain text (no styling escapes, so the
    escaping stream has nothing of its own to mangle), as wide as the terminal, 400 when piped."""
    from rich.console import Console

    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else 400
    return Console(file=sys.stdout, width=width, force_terminal=False, color_system=None, highlight=False,
                   soft_wrap=False)


def emit_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, sort_keys=False, default=str))


def error_json(error: SiteError) -> dict[str, Any]:
    """The `error` member of a failed command's JSON answer."""
    return {"title": error.title, "detail": error.detail, "retryable": error.retryable, "code": error.code}


def print_error(error: SiteError, as_json: bool, **extra: Any) -> None:
    """Report a failure: JSON `{"ok": false, "error": ..., **extra}`, or two lines on stderr."""
    if as_json:
        emit_json({"ok": False, "error": error_json(error), **extra})
    else:
        print(f"error: {error.title}", file=sys.stderr)
        if error.detail:
            print(f"  {error.detail}", file=sys.stderr)


def usage(message: str, as_json: bool) -> int:
    """Report bad usage and return its exit code (2)."""
    if as_json:
        emit_json({"ok": False, "error": {"title": "bad usage", "detail": message, "retryable": False, "code": None}})
    else:
        print(f"error: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_async(factory: Callable[[], Awaitable[int]], as_json: bool = False) -> int:
    """Run a coroutine to completion, turning UsageError, SiteError and ctrl+c into exit codes."""
    import asyncio  # here: `sitetk sim` (the demo's site) imports this module and runs no event loop

    stops = StopRequests()

    async def stoppable() -> int:
        task = asyncio.current_task()

        def stop(signum: int) -> None:  # TERM and HUP as ctrl+c: the command's task is cancelled
            stops.note(signum)
            if task is not None:
                task.cancel()

        with on_stop_signals(stop):
            return await factory()

    try:
        return asyncio.run(stoppable())
    except asyncio.CancelledError:
        signum = stops.first if stops.first is not None else signal.SIGINT
        print(f"interrupted ({signal_name(signum)})", file=sys.stderr)
        return exit_code_for(signum)
    except UsageError as error:
        return usage(str(error), as_json)
    except SiteError as error:
        print_error(error, as_json)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def counter(done: int, total: int) -> str:
    """`(done/total)`, or `(done)` when the total is not known or smaller than what is done: never
    a counter such as `(1/0)` (issue 20 item 11)."""
    return f"({done}/{total})" if total > 0 and done <= total else f"({done})"


_MARKS = {ProgressState.DONE: "ok", ProgressState.FAILED: "FAILED", ProgressState.SKIPPED: "skip"}


def print_event(event: Progress) -> None:
    """One progress line on stderr: `[    ok] step (done/total) message` (the `counter`)."""
    mark = _MARKS.get(event.state, "..")
    tail = f" {event.message}" if event.message else ""
    stderr_line(f"[{mark:>6}] {event.step} {counter(event.done, event.total)}{tail}")


def stderr_line(text: str) -> None:
    """A line on stderr that never fails (the terminal may be gone after a hang-up)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


async def follow(progress: AsyncIterator[Progress], as_json: bool) -> list[Progress]:
    """Consume a procedure's progress events: one line each on stderr (text mode), collected for JSON."""
    events: list[Progress] = []
    async for event in progress:
        events.append(event)
        if not as_json:
            print_event(event)
    return events


def print_preview(preview: Preview, as_json: bool, extra: Mapping[str, Any] | None = None) -> None:
    """A dry run's answer: the preview (JSON: with `extra`, e.g. the plan)."""
    if as_json:
        emit_json({"ok": True, "dry_run": True, "preview": preview.as_json(), **(extra or {})})
    else:
        print(preview.as_text())


def show_preview(preview: Preview, args: argparse.Namespace, extra: Mapping[str, Any] | None = None, *,
                 before: str = "", after: str = "") -> bool:
    """The preview step of a mutating verb; True when it was a `--dry-run` (the verb stops there).

    With --dry-run: the dry run's answer (`print_preview`). Otherwise the preview in text mode
    (a JSON answer waits for the result). `before` and `after` are text written around the
    preview in text mode.
    """
    as_json = bool(args.json)
    if not as_json and before:
        sys.stdout.write(before)
    if args.dry_run:
        print_preview(preview, as_json, extra)
    elif not as_json:
        print(preview.as_text())
    if not as_json and after:
        sys.stdout.write(after)
    return bool(args.dry_run)


def confirm(prompt: str, assume_yes: bool) -> bool:
    """Ask on the terminal unless --yes was given; a non-interactive stdin without --yes refuses."""
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        print(f"{prompt}: refusing without --yes (stdin is not a terminal)", file=sys.stderr)
        return False
    answer = input(f"{prompt} [y/N] ").strip().lower()
    return answer in ("y", "yes")


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None


def positive_seconds(text: str) -> float:
    """argparse type of a time limit in seconds."""
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def non_negative_seconds(text: str) -> float:
    """argparse type of a wait in seconds, where 0 means not to wait."""
    value = _seconds(text)
    if value < 0:
        raise argparse.ArgumentTypeError("seconds cannot be negative")
    return value


async def connect_site(settings: "Settings", *, read_only: bool = False) -> "SiteConnection":
    """A connected `SiteConnection` (the caller closes it); closed again when connecting fails.
    `read_only` (the `--read-only` option) makes every operation on it refuse to change the site."""
    from tui.procedures.connection import SiteConnection

    site = SiteConnection(settings, read_only=read_only)
    try:
        await site.connect()
    except BaseException:
        await site.close()
        raise
    return site


def _as_json(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "json", False))


def settings_command(handler: Callable[[argparse.Namespace, "Settings"], int]) -> Callable[[argparse.Namespace], int]:
    """A subcommand that needs the settings (environment, config file, the platform's files, as
    the console) but not the cloud; a malformed setting is bad usage."""

    def run(args: argparse.Namespace) -> int:
        from tui.settings import Settings

        try:
            settings = Settings.load()
        except SiteError as error:  # a malformed config file or environment value
            print_error(error, _as_json(args))
            return EXIT_USAGE
        return handler(args, settings)

    return run


def site_command(handler: Callable[[argparse.Namespace, "SiteConnection"], Awaitable[int]]
                 ) -> Callable[[argparse.Namespace], int]:
    """A subcommand on the site: the settings, a connected `SiteConnection` (closed afterwards),
    failures as exit codes."""

    def connected(args: argparse.Namespace, settings: "Settings") -> int:
        async def work() -> int:
            site = await connect_site(settings, read_only=bool(getattr(args, "read_only", False)))
            try:
                return await handler(args, site)
            finally:
                await site.close()

        return run_async(work, _as_json(args))

    return settings_command(connected)


def verb(module: str, name: str) -> Callable[..., Any]:
    """The handler `name` of the module `module`, imported when it is first called (the verb runs)."""

    def handler(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    handler.__name__ = handler.__qualname__ = name
    return handler


def local_command(handler: Callable[[argparse.Namespace], Awaitable[int]]) -> Callable[[argparse.Namespace], int]:
    """A subcommand that reads its own inputs and connects only where it needs to
    (`connect_site`); failures as exit codes."""

    def run(args: argparse.Namespace) -> int:
        return run_async(lambda: handler(args), _as_json(args))

    return run
