"""The paged read of the VM pool (tui.domain.vm_scan.PoolPager): every VM listed throughout the
read is taken exactly once, whatever leaves or joins the listing between two pages, in either
order; an answer that is not what was asked for is refused."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.domain.vm_scan import MAX_WIDTH_PAGES, PageAsk, PoolOutOfOrder, PoolPager, VmPrefilter


class Listing:
    """A pool as the platform lists it (src/pool/PoolSQL.cc `dump` and `oid_filter`, release-7.0.2
    168-193 and 412-428): ids by oid, ascending or descending (API_LIST_ORDER); `end < -1` is
    `LIMIT start, -end`, else `start != -1` is the id range `oid >= start [AND oid <= end]`."""

    def __init__(self, ids: list[int], descending: bool) -> None:
        self.ids = sorted(ids)
        self.descending = descending
        self.next_id = max(ids, default=-1) + 1
        self.asked: list[PageAsk] = []

    def page(self, ask: PageAsk) -> list[int]:
        self.asked.append(ask)
        ordered = sorted(self.ids, reverse=self.descending)
        if ask.end < -1:
            return ordered[max(ask.start, 0):max(ask.start, 0) - ask.end]
        if ask.start != -1:
            return [i for i in ordered if i >= ask.start and (ask.end == -1 or i <= ask.end)]
        return ordered

    def remove(self, vm_id: int) -> None:
        self.ids.remove(vm_id)

    def create(self) -> int:
        self.ids.append(self.next_id)
        self.next_id += 1
        return self.next_id - 1


def read_all(listing: Listing, size: int, between: list[list[tuple[str, int]]] | None = None) -> tuple[list[int], PoolPager]:
    """Read `listing` in pages; before page n, apply the changes `between[n]` ("remove", index
    into the current ids, or "create")."""
    pager = PoolPager(size)
    taken: list[int] = []
    reads = 0
    while pager.ask is not None:
        for kind, index in (between[reads] if between and reads < len(between) else []):
            if kind == "remove" and listing.ids:
                listing.remove(sorted(listing.ids)[index % len(listing.ids)])
            elif kind == "create":
                listing.create()
        reads += 1
        ids = listing.page(pager.ask)
        pager.take(ids)
        taken.extend(ids)
        assert reads < 10_000, "the read does not end"
    return taken, pager


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("count", [0, 1, 4, 5, 9, 12, 13])
def test_a_quiet_pool_is_read_once_whole(descending: bool, count: int) -> None:
    listing = Listing(list(range(100, 100 + count)), descending)
    taken, pager = read_all(listing, 5)
    assert sorted(taken) == listing.ids and len(taken) == len(set(taken))
    assert taken == sorted(taken, reverse=descending)  # in the site's order
    assert pager.listed == count
    assert listing.asked[0] == PageAsk(0, -5)  # the first page by offset (0: MySQL refuses -1)
    assert all(ask.is_range and ask.start >= 0 for ask in listing.asked[1:])  # the rest by id ranges


def test_descending_ranges_go_down_to_id_0_and_ascending_ends_with_an_open_range() -> None:
    down = Listing(list(range(12)), descending=True)
    read_all(down, 5)
    assert down.asked == [PageAsk(0, -5), PageAsk(2, 6), PageAsk(0, 1)]
    up = Listing(list(range(12)), descending=False)
    read_all(up, 5)
    assert up.asked == [PageAsk(0, -5), PageAsk(5, 9), PageAsk(10, 14), PageAsk(15, 24), PageAsk(25, -1)]
    # (10, 14) listed 2 of 5: the next range is twice as wide; an empty one ends with `oid >= 25`


def test_a_vm_leaving_a_page_already_read_does_not_hide_the_next_one() -> None:
    """Offsets would shift when VM 1 reaches DONE after page one; id ranges do not."""
    listing = Listing(list(range(12)), descending=False)
    taken, _ = read_all(listing, 5, between=[[], [("remove", 1)]])
    assert sorted(taken) == list(range(12))  # VM 1 was read before it left, VM 5 is not skipped


def test_sparse_ids_widen_the_ranges_and_a_dense_stretch_narrows_them_again() -> None:
    """DONE VMs leave most ids unused: ranges double while they list less than half a page."""
    ids = [0, 1, 2, 3] + list(range(4, 400, 40)) + list(range(400, 420))
    listing = Listing(ids, descending=True)
    taken, _ = read_all(listing, 4)
    assert sorted(taken) == sorted(ids)
    widths = [ask.end - ask.start + 1 for ask in listing.asked[1:]]
    assert max(widths) > 4 and max(widths) <= MAX_WIDTH_PAGES * 4
    assert len(listing.asked) < len(range(0, 420, 4))


@pytest.mark.parametrize("descending", [False, True])
def test_the_next_range_is_known_while_the_current_page_is_read(descending: bool) -> None:
    """`guess_next` (the read asks for it while it reads the current page): without gaps every
    range but the open end's is guessed right; nothing is guessed before the first page's ids set
    where the ranges start, nor once nothing can follow."""
    listing = Listing(list(range(23)), descending)
    pager = PoolPager(5)
    guesses = []
    while pager.ask is not None:
        guesses.append(pager.guess_next())
        pager.take(listing.page(pager.ask))
    assert guesses[0] is None and guesses[-1] is None
    hits = [guess == asked for guess, asked in zip(guesses[1:-1], listing.asked[2:], strict=True)]
    if descending:  # ranges (13, 17), (8, 12), (3, 7), (0, 2): each guessed while the one before is read
        assert listing.asked[2:] == [PageAsk(8, 12), PageAsk(3, 7), PageAsk(0, 2)] and all(hits)
    else:  # (25, 29) lists nothing: the open range (30, -1) follows, not the (30, 34) guessed
        assert listing.asked[-2:] == [PageAsk(25, 29), PageAsk(30, -1)] and hits == [True, True, True, True, False]


def test_a_sparse_stretch_is_guessed_as_wide_as_the_range_before_it_grows() -> None:
    """Where ranges double, the guess doubles too: only a change of density is guessed wrong (here
    the three ranges after which the width doubles from one page's or falls back to it; a guess of
    one page's width would miss the nine widened ranges)."""
    ids = list(range(380, 400)) + list(range(0, 380, 60))
    listing = Listing(ids, descending=True)
    pager = PoolPager(4)
    guesses = []
    while pager.ask is not None:
        guesses.append(pager.guess_next())
        pager.take(listing.page(pager.ask))
    misses = [asked for guess, asked in zip(guesses[1:-1], listing.asked[2:], strict=True) if guess != asked]
    assert len(listing.asked) == 17 and len(misses) == 3


@pytest.mark.parametrize("descending", [False, True])
def test_the_ranges_after_the_next_are_guessed_as_the_next_is(descending: bool) -> None:
    """`guesses(n)`: the next range and the ones after it, each as `guess_next` would guess it
    once the range before it had been read as dense as the last: its first is `guess_next`; over
    a pool without gaps every range it guesses is asked for later (but past the open end's)."""
    ids = list(range(380, 400)) + list(range(0, 380, 60))  # dense, then sparse (ranges doubling)
    for listing in (Listing(list(range(23)), descending), Listing(ids, descending)):
        pager = PoolPager(4)
        guessed: list[list[PageAsk]] = []
        while pager.ask is not None:
            guesses = pager.guesses(3)
            assert guesses[:1] == [guess for guess in [pager.guess_next()] if guess is not None]
            guessed.append(guesses)
            pager.take(listing.page(pager.ask))
        assert guessed[0] == [] and guessed[-1] == []
        if listing.ids == list(range(23)):  # no gaps: each guess is asked for (but the open end)
            later = listing.asked[2:]
            for n, guesses in enumerate(guessed[1:-1]):
                pairs = list(zip(guesses, later[n:], strict=False))  # guesses past the open end: never asked
                assert pairs and all(guess == asked or asked.end == -1 for guess, asked in pairs)
    pager = PoolPager(4)
    pager.take([399, 398, 397, 396])
    assert pager.guesses(2) == [PageAsk(388, 391), PageAsk(384, 387)]
    pager.take([395])  # sparse: the widths double from here
    assert pager.ask == PageAsk(384, 391) and pager.guesses(3) == [PageAsk(368, 383), PageAsk(336, 367), PageAsk(272, 335)]


def test_the_ranges_after_the_first_page_are_guessed_from_a_glance_at_it() -> None:
    """`guesses_after_first`: before the first page is read, from the first and last ids its
    answer seems to hold, the ranges `guesses` would give once it is read; none when it seems
    short of a page (nothing follows it), once it has been read, or when it shows one id."""
    for descending in (True, False):
        listing = Listing(list(range(23)), descending)
        pager = PoolPager(5)
        first = sorted(listing.ids, reverse=descending)[:5]
        early = pager.guesses_after_first(first[0], first[-1], len(first), 3)
        pager.take(listing.page(pager.ask))
        assert pager.ask is not None and early == [pager.ask, *pager.guesses(2)]
        assert pager.guesses_after_first(first[0], first[-1], 5, 3) == []  # the first page was read
    pager = PoolPager(5)
    assert pager.guesses_after_first(22, 19, 4, 3) == []  # a short page: the whole pool
    assert pager.guesses_after_first(22, 18, 5, 0) == [] and pager.guesses_after_first(7, 7, 5, 3) == []
    assert pager.guesses_after_first(4, 0, 5, 3) == []  # id 0 reached going down: nothing follows
    assert pager.guesses_after_first(9, 5, 5, 3) == [PageAsk(0, 4)]


@settings(max_examples=300, deadline=None)
@given(
    count=st.integers(0, 60),
    gaps=st.lists(st.integers(0, 30), max_size=60),
    size=st.integers(2, 9),
    descending=st.booleans(),
    changes=st.lists(st.lists(st.tuples(st.sampled_from(["remove", "create"]), st.integers(0, 200)), max_size=6),
                     max_size=30),
)
def test_every_vm_listed_throughout_is_taken_exactly_once(count: int, gaps: list[int], size: int, descending: bool,
                                                           changes: list[list[tuple[str, int]]]) -> None:
    ids, next_id = [], 0
    for n in range(count):  # ids with gaps, as DONE VMs leave them
        next_id += 1 + (gaps[n] if n < len(gaps) else 0)
        ids.append(next_id)
    listing = Listing(ids, descending)
    before = set(listing.ids)
    removed: set[int] = set()
    original_remove = listing.remove

    def remove(vm_id: int) -> None:
        removed.add(vm_id)
        original_remove(vm_id)
    listing.remove = remove  # type: ignore[method-assign]
    taken, _ = read_all(listing, size, between=changes)
    assert len(taken) == len(set(taken)), "a VM was taken twice"
    assert (before - removed) <= set(taken), "a VM listed from start to end was skipped"
    assert set(taken) <= before | set(range(max(ids, default=-1) + 1, listing.next_id)), "a VM that never existed"


def test_an_out_of_order_page_is_refused() -> None:
    with pytest.raises(PoolOutOfOrder):
        PoolPager(5).take([3, 1, 2])
    pager = PoolPager(3)
    pager.take([9, 8, 7])
    with pytest.raises(PoolOutOfOrder):
        pager.take([1, 2, 3])  # the order flipped between pages


def test_a_server_that_does_not_page_or_filter_by_id_is_refused() -> None:
    """An answer longer than the page asked for, or ids outside the range asked for."""
    with pytest.raises(PoolOutOfOrder, match="did not page"):
        PoolPager(3).take([1, 2, 3, 4])
    pager = PoolPager(3)
    pager.take([9, 8, 7])
    assert pager.ask == PageAsk(4, 6)
    with pytest.raises(PoolOutOfOrder, match="did not filter by id"):
        pager.take([9, 8])


def test_page_size_and_prefilter_bounds() -> None:
    with pytest.raises(ValueError):
        PoolPager(1)  # -1 as end_id means "no limit" to the platform
    with pytest.raises(ValueError):
        VmPrefilter(texts=("",))  # contains("") holds for every VM
    assert VmPrefilter().empty and not VmPrefilter(ids=(3,)).empty
