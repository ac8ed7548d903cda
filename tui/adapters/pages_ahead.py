"""The pages of a paged pool read asked for ahead of their turn (issue 24): while the client reads
one page, the site prepares the next ones and the parsing threads build them.

`PagesAhead` keeps a task per page asked for, by its `PageAsk`; the reader takes the one it needs
(`take`), drops the guesses it will not read (`keep_only`) and asks for the next (`ask`). A page
that failed is asked for again the usual way (`settled` gives None); a guess dropped after it
failed has its error looked at, so none is reported as never retrieved. `ParsedPage` is a page
already built into items in a parsing thread.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generic, Iterable, TypeVar

from tui.errors import SiteError

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.vm_scan import PageAsk

T = TypeVar("T")


class ParsedPage(Generic[T]):
    """A page fetched, parsed and built ahead in a parsing thread: its items."""

    __slots__ = ("items",)

    def __init__(self, items: list[T]) -> None:
        self.items = items


class PagesAhead:
    """The pages of a paged read asked for ahead: a task fetching (and parsing) each, by its ask."""

    def __init__(self, fetch: "Callable[[PageAsk], Awaitable[Any]]") -> None:
        self._fetch = fetch
        self._tasks: "dict[PageAsk, asyncio.Task[Any]]" = {}

    def ask(self, asks: "Iterable[PageAsk]") -> None:
        """Ask for each of `asks` not asked for yet."""
        for ask in asks:
            if ask not in self._tasks:
                task = self._tasks[ask] = asyncio.ensure_future(self._fetch(ask))
                # a guess dropped after it failed: its error is not lost unseen, it was never needed
                task.add_done_callback(_seen_once)

    def take(self, ask: "PageAsk") -> "asyncio.Task[Any] | None":
        """The task asking for `ask` (no longer kept here), or None."""
        return self._tasks.pop(ask, None)

    def keep_only(self, asks: "Iterable[PageAsk]") -> None:
        """Drop (cancel) every page asked for but those of `asks`."""
        kept = set(asks)
        for ask in [ask for ask in self._tasks if ask not in kept]:
            self._tasks.pop(ask).cancel()


async def settled(fetched: "asyncio.Task[T] | None") -> "T | None":
    """What a page asked for ahead gave; None when there is none or asking for it failed."""
    if fetched is None:
        return None
    try:
        return await fetched
    except SiteError:
        return None


def _seen_once(task: "asyncio.Task[Any]") -> None:
    if not task.cancelled():
        task.exception()
