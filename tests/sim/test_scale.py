"""A site with thousands of VMs: bulk seeding, whole pools, pages, and the per-VM XML cache staying true."""

from __future__ import annotations

from tests.sim.one_client import call, one
from tests.waiting import wait_until
from tui.sim.server import SimServer

COUNT = 3000


def test_bulk_vms_run_on_usable_x86_hosts(sim_factory) -> None:
    sim: SimServer = sim_factory(vms=COUNT)
    client = one(sim)
    pool = client.vmpool.info(-2, -1, -1, -1).VM
    assert len(pool) == COUNT and {(vm.STATE, vm.LCM_STATE) for vm in pool} == {(3, 3)}
    hosts = {h.ID: h for h in client.hostpool.info().HOST}
    used = {vm.HISTORY_RECORDS.HISTORY[-1].HID for vm in pool}
    assert all(hosts[h].STATE == 2 and hosts[h].TEMPLATE["ARCH"] == "x86_64" for h in used)
    assert sum(h.HOST_SHARE.RUNNING_VMS for h in hosts.values()) == COUNT


def test_pages_cover_the_pool_exactly_once(sim_factory) -> None:
    sim: SimServer = sim_factory(vms=COUNT)
    client = one(sim)
    seen: list[int] = []
    offset = 0
    while True:
        page = client.vmpool.info(-2, offset, -700, -1).VM
        if not page:
            break
        seen += [vm.ID for vm in page]
        offset += len(page)
    assert seen == sorted(seen, reverse=True) and sorted(seen) == list(range(COUNT))


def test_a_changed_vm_is_rendered_again(sim_factory) -> None:
    sim: SimServer = sim_factory(vms=50)
    first = call(sim, "one.vmpool.info", -2, -1, -1, -1)[1]
    assert call(sim, "one.vmpool.info", -2, -1, -1, -1)[1] == first
    client = one(sim)
    client.vm.update(7, 'LABELS = "changed"', 1)
    assert one(sim).vmpool.info(-2, 7, 7, -1).VM[0].USER_TEMPLATE["LABELS"] == "changed"
    client.vm.action("poweroff", 9)
    wait_until(lambda: client.vmpool.info(-2, 9, 9, -1).VM[0].STATE == 8, what="the pool to show POWEROFF")
    client.vm.action("terminate-hard", 9)
    wait_until(lambda: client.vm.info(9).STATE == 6, what="DONE")
    assert 9 not in [vm.ID for vm in client.vmpool.info(-2, -1, -1, -1).VM]


def test_the_first_page_rendered_ahead_is_the_page_rendered_on_request(sim_factory, monkeypatch) -> None:
    """`sitetk sim` renders the first page's VM bodies once it has announced itself (issue 24: the
    demo console's first `one.vmpool.info` no longer renders them): the cache holds the lowest IDs'
    short bodies only, and the answers are those the same site gives with nothing rendered ahead."""
    from tui.cli import sim as sim_cli

    monkeypatch.setattr(sim_cli, "WARM_VMS", 30)
    sim: SimServer = sim_factory(vms=50)
    sim_cli._warm_first_page(sim.site)
    cache = sim.site.render_cache
    assert sorted(cache) == sorted(sim.site.vms)[:30]
    assert all(entry.short is not None and entry.full is None for entry in cache.values())
    pages = ((-1, -1), (0, 29), (25, 40))
    ahead = [call(sim, "one.vmpool.info", -2, start, end, -1)[1] for start, end in pages]
    cache.clear()
    assert [call(sim, "one.vmpool.info", -2, start, end, -1)[1] for start, end in pages] == ahead
