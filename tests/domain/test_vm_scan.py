"""The paged read of the VM pool (tui.domain.vm_scan): every VM listed throughout the read is
taken exactly once, whatever leaves or joins the listing between two pages, in either order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.domain.vm_scan import PageStitcher, PoolChanging, PoolOutOfOrder, VmPrefilter


class Listing:
    """A pool as the platform lists it: ids by oid, ascending or descending (API_LIST_ORDER),
    paged as `ORDER BY oid LIMIT offset, size`."""

    def __init__(self, ids: list[int], descending: bool) -> None:
        self.ids = sorted(ids)
        self.descending = descending
        self.next_id = max(ids, default=-1) + 1

    def page(self, offset: int, size: int) -> list[int]:
        ordered = sorted(self.ids, reverse=self.descending)
        return ordered[offset:offset + size]

    def remove(self, vm_id: int) -> None:
        self.ids.remove(vm_id)

    def create(self) -> int:
        self.ids.append(self.next_id)
        self.next_id += 1
        return self.next_id - 1


def read_all(listing: Listing, size: int, between: list[list[tuple[str, int]]] | None = None) -> tuple[list[int], PageStitcher]:
    """Read `listing` in pages; before page n, apply the changes `between[n]` ("remove", index
    into the current ids, or "create")."""
    stitcher = PageStitcher(size)
    taken: list[int] = []
    reads = 0
    while not stitcher.done:
        for kind, index in (between[reads] if between and reads < len(between) else []):
            if kind == "remove" and listing.ids:
                listing.remove(sorted(listing.ids)[index % len(listing.ids)])
            elif kind == "create":
                listing.create()
        reads += 1
        ids = listing.page(stitcher.offset, size)
        taken.extend(ids[i] for i in stitcher.take(ids))
        assert reads < 10_000, "the read does not end"
    return taken, stitcher


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("count", [0, 1, 4, 5, 9, 12, 13])
def test_a_quiet_pool_is_read_once_whole(descending: bool, count: int) -> None:
    listing = Listing(list(range(100, 100 + count)), descending)
    taken, stitcher = read_all(listing, 5)
    assert sorted(taken) == listing.ids and len(taken) == len(set(taken))
    # pages overlap by one VM: 4 new VMs per page after the first
    assert stitcher.pages == max(1, 1 + max(0, count - 1) // 4)
    assert stitcher.steps_back == 0


def test_a_vm_leaving_a_page_already_read_does_not_hide_the_next_one() -> None:
    """Without the overlap, the first VM of the second page (id 5) would be skipped: VM 1 reached
    DONE after page one, so every later VM moved one place back."""
    listing = Listing(list(range(12)), descending=False)
    taken, stitcher = read_all(listing, 5, between=[[], [("remove", 1)]])
    assert 5 in taken
    assert sorted(taken) == list(range(12))  # VM 1 was read before it left
    assert stitcher.steps_back >= 1


def test_many_vms_leaving_at_once_are_stepped_back_over() -> None:
    listing = Listing(list(range(40)), descending=True)
    removals = [("remove", 30)] * 9  # nine of the VMs already read leave
    taken, stitcher = read_all(listing, 5, between=[[], [], removals])
    survivors = set(listing.ids)
    assert survivors <= set(taken) and len(taken) == len(set(taken))
    assert stitcher.steps_back >= 2


@settings(max_examples=300, deadline=None)
@given(
    count=st.integers(0, 60),
    size=st.integers(2, 9),
    descending=st.booleans(),
    changes=st.lists(st.lists(st.tuples(st.sampled_from(["remove", "create"]), st.integers(0, 200)), max_size=6),
                     max_size=30),
)
def test_every_vm_listed_throughout_is_taken_exactly_once(count: int, size: int, descending: bool,
                                                           changes: list[list[tuple[str, int]]]) -> None:
    listing = Listing(list(range(count)), descending)
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
    assert set(taken) <= before | set(range(count, listing.next_id)), "a VM that never existed"


def test_an_out_of_order_page_is_refused() -> None:
    with pytest.raises(PoolOutOfOrder):
        PageStitcher(5).take([3, 1, 2])
    stitcher = PageStitcher(3)
    stitcher.take([1, 2, 3])
    with pytest.raises(PoolOutOfOrder):
        stitcher.take([9, 8, 7])  # the order flipped between pages


def test_a_server_that_does_not_page_is_refused() -> None:
    """An answer longer than the page asked for would be read again and again."""
    with pytest.raises(PoolOutOfOrder, match="did not page"):
        PageStitcher(3).take([1, 2, 3, 4])


def test_a_pool_that_keeps_shrinking_gives_up() -> None:
    stitcher = PageStitcher(3)
    stitcher.take([1, 2, 3])
    with pytest.raises(PoolChanging):
        for _ in range(100):
            stitcher.take([50, 51, 52])  # always past the anchor, at an offset that never reaches 0
            stitcher.offset = 10


def test_page_size_and_prefilter_bounds() -> None:
    with pytest.raises(ValueError):
        PageStitcher(1)  # -1 as end_id means "no limit" to the platform
    with pytest.raises(ValueError):
        VmPrefilter(texts=("",))  # contains("") holds for every VM
    assert VmPrefilter().empty and not VmPrefilter(ids=(3,)).empty
