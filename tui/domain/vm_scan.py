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
143-150): `end_id < -1` makes the answer `ORDER BY oid [DESC] LIMIT start_id, -end_id`, so
`start_id` is a ROW OFFSET into the listing and `-end_id` the page size; the oid range filter is
then off. `end_id >= -1` is an oid range instead (`oid >= start_id [AND oid <= end_id]`,
whatever the count). The order is descending by default (src/template/OpenNebulaTemplate.cc
`set_conf_single("API_LIST_ORDER", "DESC")`, line 384 at 7.0.2), ascending when oned.conf's
API_LIST_ORDER says anything else, so the reader learns it from the pages. `start_id` -1 with a
page size is `LIMIT -1,N`, which sqlite reads as offset 0 and MySQL refuses, so the first page is
asked for at offset 0. The platform's
own client pages the same way (src/oca/ruby/opennebula/pool.rb `info_paginated`, `get_page`:
`current` from 0, `-size`).

Why the pages overlap. An offset counts the VMs listed before it, and that count changes while
the pages are read: a VM that reaches DONE (or is deleted) leaves the listing, a new VM joins it
(at the end in ascending order, at the start in descending order). A VM leaving a page already
read shifts every later VM one place back, and a plain `offset += size` would skip the first VM
of the next page: the very VM the caller may be looking for. So each page is asked for one place
before the end of the previous one (`offset += size - 1`) and must show the last VM taken (the
anchor) or something listed before it; when it starts past the anchor, VMs were lost from view
and the page is asked for again further back. VMs listed up to the anchor are dropped (read
already). Every VM listed during the whole read is then taken exactly once; a VM created meanwhile
may or may not be.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.vms import VmDetail

#: give up when a page has to be asked for again this many times in a row (the pool keeps shrinking
#: under the reader faster than it steps back)
MAX_STEPS_BACK = 64


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


class PoolChanging(Exception):
    """The pool shrank under the reader faster than it could step back (MAX_STEPS_BACK in a row)."""


class PoolOutOfOrder(Exception):
    """A page's VM ids are not strictly ordered, or contradict the order of earlier pages."""


@dataclass
class PageStitcher:
    """Offsets to ask for, and which VMs of each answer are new (see the module docstring).

        stitcher = PageStitcher(size)
        while not stitcher.done:
            ids = <ids of the VMs of page(stitcher.offset, size), in the order listed>
            for index in stitcher.take(ids): <VM ids[index] is new>
    """

    size: int
    offset: int = 0
    done: bool = False
    #: the last VM taken (None before the first full page)
    anchor: int | None = None
    #: None until a page lists two VMs
    descending: bool | None = None
    #: pages taken, and pages read again further back (in all; in a row)
    pages: int = 0
    steps_back: int = 0
    _in_a_row: int = 0

    def __post_init__(self) -> None:
        if self.size < 2:
            # end_id -1 means "no limit" to the platform: a page size is 2 or more
            raise ValueError(f"a page holds at least 2 VMs, not {self.size}")

    def _after(self, vm_id: int, anchor: int) -> bool:
        return vm_id < anchor if self.descending else vm_id > anchor

    def _learn_order(self, ids: Sequence[int]) -> None:
        if len(ids) < 2:
            return
        descending = ids[1] < ids[0]
        steps = zip(ids, ids[1:])
        if not all((b < a) if descending else (b > a) for a, b in steps):
            raise PoolOutOfOrder(f"the VM ids of a page are not in one order: {list(ids)[:20]}")
        if self.descending is not None and self.descending != descending:
            raise PoolOutOfOrder("a page lists VMs in the opposite order of the pages before it")
        self.descending = descending

    def take(self, ids: Sequence[int]) -> list[int]:
        """The indices in `ids` (the page read at `self.offset`) of the VMs not taken yet; moves
        `offset` to the next page to read, or sets `done`. An empty list with `done` still False
        may mean the page is to be read again further back (`steps_back` counts those)."""
        if self.done:
            raise ValueError("the pool has been read to its end")
        if len(ids) > self.size:
            raise PoolOutOfOrder(f"a page of {self.size} VMs listed {len(ids)}: the platform did not page")
        self._learn_order(ids)
        anchor = self.anchor
        if anchor is not None and self.offset > 0 and (not ids or self._after(ids[0], anchor)):
            # VMs listed before this offset have left the listing since the last page: one or
            # more VMs after the anchor moved in front of the offset. Read again further back.
            self.steps_back += 1
            self._in_a_row += 1
            if self._in_a_row > MAX_STEPS_BACK:
                raise PoolChanging(f"the VM pool kept shrinking while it was read ({self._in_a_row} pages read "
                                   "again in a row)")
            self.offset = max(0, self.offset - (self.size - 1))
            return []
        self.pages += 1
        self._in_a_row = 0
        fresh = [i for i, vm_id in enumerate(ids) if anchor is None or self._after(vm_id, anchor)]
        if len(ids) < self.size:
            self.done = True
            return fresh
        if fresh:
            self.anchor = ids[fresh[-1]]
        self.offset += self.size - 1
        return fresh


@dataclass(frozen=True)
class VmScan:
    """What a paged read of the VM pool gave: the VMs that passed the prefilter (full records, in
    the order listed) and how the read went."""

    vms: tuple["VmDetail", ...]
    #: VMs listed in all (each counted once), pages taken, pages read again further back
    listed: int
    pages: int
    steps_back: int
    page_size: int
