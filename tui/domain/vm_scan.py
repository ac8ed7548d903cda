"""Reading the whole VM pool in pages: which pages to ask for, and which VMs are worth parsing.

Why pages. Finding VMs by what their template says cannot be left to the platform: the pool
methods' query argument (`one.vmpool.info[extended]`, sixth argument) is refused on sqlite, the
platform's default backend ("JSON query search is not supported by the SQL backend", INTERNAL),
and on MySQL it is a JSON path into the VM body matched as a substring (`LIKE '%value%'`). So the
console reads the pool and decides itself, with exact equality. A page keeps every call small and
bounded by the client's timeout however large the site.

How the platform pages (the same in 6.0.0 through 7.4.0; 6.10.0-7.0.2
src/rm/RequestManagerPoolInfoFilter.cc `dump` 223-246, 7.4.0 src/rm/api/PoolSharedAPI.cc 149-171,
src/pool/PoolSQL.cc `dump` 168-193 and `oid_filter` 412-428, include/SqlDB.h `limit_string`
143-150), by the `start_id` and `end_id` arguments:

- `end_id < -1`: `ORDER BY oid [DESC] LIMIT start_id, -end_id`: `start_id` is a ROW OFFSET into
  the listing and `-end_id` the page size; no id range. The database steps over every row before
  the offset, so offset pages cost it quadratically (at 50,000 VMs its sqlite spent 5 s on pages of
  2,000, 0.9 s on one unpaged read). `start_id` -1 is `LIMIT -1,N`: sqlite reads offset 0, MySQL
  refuses it; offset 0 is asked for instead.
- `end_id >= -1` and `start_id != -1`: an ID RANGE, `oid >= start_id [AND oid <= end_id]` (no
  upper bound when `end_id` is -1), whatever the count. A range is an index range of the primary
  key: its cost is its own rows, wherever it lies.
- `start_id` -1 (and `end_id >= -1`): the whole pool.

The order is by oid, descending by default (src/template/OpenNebulaTemplate.cc
`set_conf_single("API_LIST_ORDER", "DESC")`, line 384 at 7.0.2), ascending when oned.conf's
API_LIST_ORDER says anything else; the reader learns it from the first page.

How the console pages (`PoolPager`). The first page is `LIMIT 0, size`: the newest VMs (the oldest
in ascending order), cheap for the database, shown at once. The rest is read by id ranges of
`size` ids next to it: descending, from just below the first page's last id down to id 0;
ascending, from just above it up, until a range lists nothing, then one open range (`oid >= next`)
for whatever lies above (ids freed by DONE VMs leave gaps, and the top id is not known). Ranges
partition the ids, so every VM listed throughout the read is taken exactly once, whatever reaches
DONE, is deleted or is created between two pages (a VM created meanwhile has a higher id: it is
in the open range in ascending order, not read in descending order), and no page can repeat or hide
a VM of another (offset pages had to overlap and step back for that). A range of `size` ids lists
at most `size` VMs; where DONE VMs leave the ids sparse, a range listing less than half of that
doubles the next one (up to `MAX_WIDTH_PAGES` pages' worth), so a site whose oid space is mostly
DONE VMs is still read in few calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.vm_detail import VmDetail

@dataclass(frozen=True)
class VmPrefilter:
    """Which VM bodies of a page are worth building into models: a cheap test on the raw body
    that must hold for every VM the caller will keep (it only saves work; the caller decides
    with exact equality on the models). A VM passes when any of these holds:

    - `texts`: a ROLE_NAME (USER_TEMPLATE or TEMPLATE) or the VM's NAME contains one of them
      (a superset of "ROLE_NAME equals" and of the role in a `<role>_<n>_(service_<id>)` name);
    - `attributes`: USER_TEMPLATE or TEMPLATE has an attribute of that exact name;
    - `ids`: the VM's ID is one of them.
    """

    texts: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        # "contains ''" holds for every VM: an empty text would turn the test off, so refuse it
        if any(not text for text in self.texts) or any(not name for name in self.attributes):
            raise ValueError("VmPrefilter texts and attribute names must not be empty")

    @property
    def empty(self) -> bool:
        """No VM can pass (nothing to look for)."""
        return not (self.texts or self.attributes or self.ids)


class PoolOutOfOrder(Exception):
    """A page's VM ids are not strictly ordered, lie outside the range asked for, or contradict
    the order of the first page: the platform did not page as its source says."""


#: a range read after sparse ones grows up to this many pages' worth of ids
MAX_WIDTH_PAGES = 32


@dataclass(frozen=True)
class PageAsk:
    """The platform's `start_id` and `end_id` arguments of one page (see the module docstring)."""

    start: int
    end: int

    @property
    def is_range(self) -> bool:
        return self.end >= -1


@dataclass
class PoolPager:
    """Which page to ask for next, and a check of each answer (see the module docstring).

        pager = PoolPager(size)
        while pager.ask is not None:
            ids = <ids of the VMs of page(pager.ask.start, pager.ask.end), in the order listed>
            pager.take(ids)     # raises PoolOutOfOrder; every VM of every page is new
    """

    size: int
    #: the next page to read (None once the pool has been read to its end)
    ask: PageAsk | None = None
    #: None until the first page lists two VMs
    descending: bool | None = None
    #: pages read, VMs listed in all
    pages: int = 0
    listed: int = 0
    _width: int = 0

    def __post_init__(self) -> None:
        if self.size < 2:
            # end_id -1 means "no limit" to the platform: a page size is 2 or more
            raise ValueError(f"a page holds at least 2 VMs, not {self.size}")
        self._width = self.size
        self.ask = PageAsk(0, -self.size)

    def take(self, ids: Sequence[int]) -> None:
        ask = self.ask
        if ask is None:
            raise ValueError("the pool has been read to its end")
        self._check(ask, ids)
        self.pages += 1
        self.listed += len(ids)
        if not ask.is_range:  # the first page
            if len(ids) < self.size:
                self.ask = None
            elif self.descending:
                self.ask = self._below(ids[-1])
            else:
                self.ask = PageAsk(ids[-1] + 1, ids[-1] + self._width)
            return
        if ask.end == -1:  # the open range above: the rest of the pool
            self.ask = None
            return
        self._width = self.size if 2 * len(ids) >= self.size else min(2 * self._width, MAX_WIDTH_PAGES * self.size)
        if self.descending:
            self.ask = self._below(ask.start)
        elif ids:
            self.ask = PageAsk(ask.end + 1, ask.end + self._width)
        else:
            self.ask = PageAsk(ask.end + 1, -1)

    def guess_next(self) -> PageAsk | None:
        """The ask that will follow the current one if its page is as dense as the page before it
        (a range at least half full keeps the width of one page, a sparse one doubles it), known
        before the current page is read: the caller may ask for it meanwhile and use the answer
        only if `ask` turns out to equal it. None after the first page (its ids set the next
        range) and where nothing follows (an open range, or id 0 reached going down)."""
        guesses = self.guesses(1)
        return guesses[0] if guesses else None

    def guesses(self, count: int) -> list[PageAsk]:
        """Up to `count` asks that will follow the current one, each guessed as `guess_next`
        guesses the first (every page as dense as the one before it): the caller may ask for
        them all meanwhile and use each answer only if `ask` turns out to equal it."""
        out: list[PageAsk] = []
        ask, width = self.ask, self._width
        while len(out) < count:
            if ask is None or not ask.is_range or ask.end == -1 or self.descending is None:
                break
            width = self.size if width == self.size else min(2 * width, MAX_WIDTH_PAGES * self.size)
            if self.descending:
                top = ask.start - 1
                if top < 0:
                    break
                ask = PageAsk(max(0, top - width + 1), top)
            else:
                ask = PageAsk(ask.end + 1, ask.end + width)
            out.append(ask)
        return out

    def guesses_after_first(self, first_id: int, last_id: int, listed: int, count: int) -> list[PageAsk]:
        """Before the first page is read: up to `count` asks that would follow it, were it to list
        `listed` VMs from id `first_id` to id `last_id` (what a glance at its answer says, which
        only the read of the page can tell for sure), each guessed as `guesses` guesses them."""
        ask = self.ask
        if ask is None or ask.is_range or self.pages or listed < self.size or count < 1 or first_id == last_id:
            return []
        scratch = PoolPager(self.size)
        scratch.descending = last_id < first_id
        nxt = scratch._below(last_id) if scratch.descending else PageAsk(last_id + 1, last_id + self.size)
        if nxt is None:
            return []
        scratch.ask = nxt
        return [nxt, *scratch.guesses(count - 1)]

    def _below(self, lowest: int) -> PageAsk | None:
        top = lowest - 1
        return None if top < 0 else PageAsk(max(0, top - self._width + 1), top)

    def _check(self, ask: PageAsk, ids: Sequence[int]) -> None:
        if not ask.is_range and len(ids) > self.size:
            raise PoolOutOfOrder(f"a page of {self.size} VMs listed {len(ids)}: the platform did not page")
        if len(ids) >= 2:
            descending = ids[1] < ids[0]
            if not all((b < a) if descending else (b > a) for a, b in pairwise(ids)):
                raise PoolOutOfOrder(f"the VM ids of a page are not in one order: {list(ids)[:20]}")
            if self.descending is None:
                self.descending = descending
            elif self.descending != descending:
                raise PoolOutOfOrder("a page lists VMs in the opposite order of the first page")
        if ask.is_range and ids:
            low, high = min(ids[0], ids[-1]), max(ids[0], ids[-1])
            if low < ask.start or (ask.end != -1 and high > ask.end):
                raise PoolOutOfOrder(f"VM ids {low}..{high} answered for the id range {ask.start}..{ask.end}: the "
                                     "platform did not filter by id")


@dataclass(frozen=True)
class VmScan:
    """What a paged read of the VM pool gave: the VMs that passed the prefilter (full records, in
    the order listed) and how the read went."""

    vms: tuple["VmDetail", ...]
    #: VMs listed in all (each counted once), pages read
    listed: int
    pages: int
    page_size: int
