"""Shared plumbing of the headless subcommands: running procedures, printing, exit codes.

Exit codes: 0 success, 1 the operation failed (SiteError), 2 bad usage or input,
3 a check found problems (e.g. `hosts check` with a database VM at risk), 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, TypeVar

from tui.adapters.errors import SiteError
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

T = TypeVar("T")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_FINDINGS = 3
EXIT_INTERRUPTED = 130


def emit_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2, sort_keys=False, default=str))


def print_error(error: SiteError, as_json: bool) -> None:
    if as_json:
        emit_json({"ok": False, "error": {"title": error.title, "detail": error.detail, "retryable": error.retryable, "code": error.code}})
    else:
        print(f"error: {error.title}", file=sys.stderr)
        if error.detail:
            print(f"  {error.detail}", file=sys.stderr)


def run_async(factory: Callable[[], Awaitable[int]], as_json: bool = False) -> int:
    """Run a coroutine to completion, turning SiteError and ctrl+c into exit codes."""
    try:
        return asyncio.run(factory())  # type: ignore[arg-type]
    except SiteError as error:
        print_error(error, as_json)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


async def follow(progress: AsyncIterator[Progress], as_json: bool) -> list[Progress]:
    """Consume a procedure's progress events: one line each on stderr (text mode), collected for JSON."""
    events: list[Progress] = []
    async for event in progress:
        events.append(event)
        if not as_json:
            mark = {"done": "ok", "failed": "FAILED", "skipped": "skip"}.get(event.state, "..")
            tail = f" {event.message}" if event.message else ""
            print(f"[{mark:>6}] {event.step} ({event.done}/{event.total}){tail}", file=sys.stderr)
    return events


def print_preview(preview: Preview, as_json: bool) -> None:
    if as_json:
        emit_json({"ok": True, "dry_run": True, "preview": preview.as_json()})
    else:
        print(preview.as_text())


def confirm(prompt: str, assume_yes: bool) -> bool:
    """Ask on the terminal unless --yes was given; a non-interactive stdin without --yes refuses."""
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        print(f"{prompt}: refusing without --yes (stdin is not a terminal)", file=sys.stderr)
        return False
    answer = input(f"{prompt} [y/N] ").strip().lower()
    return answer in ("y", "yes")


async def collecting(source: AsyncIterator[Progress], sink: list[Progress]) -> AsyncIterator[Progress]:
    """Pass a procedure's events through, keeping them in `sink` (so a failure can still report
    what happened before it)."""
    async for event in source:
        sink.append(event)
        yield event


def positive_seconds(text: str) -> float:
    """argparse type of a time limit in seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be positive")
    return value


def site_command(handler: Callable[[argparse.Namespace, "SiteConnection"], Awaitable[int]]
                 ) -> Callable[[argparse.Namespace], int]:
    """A subcommand on the site: settings from the environment and the platform's files (as the
    console), a connected `SiteConnection` (closed afterwards), failures as exit codes."""

    def run(args: argparse.Namespace) -> int:
        from tui.procedures.connection import SiteConnection
        from tui.settings import Settings

        as_json = bool(getattr(args, "json", False))
        try:
            settings = Settings.load()
        except SiteError as error:  # a malformed config file or environment value
            print_error(error, as_json)
            return EXIT_USAGE

        async def work() -> int:
            site = SiteConnection(settings)
            try:
                await site.connect()
                return await handler(args, site)
            finally:
                await site.close()

        return run_async(work, as_json)

    return run
