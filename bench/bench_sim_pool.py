"""Issue 2: the simulator serving `one.vmpool.info` and the adapter's `list_vms` on top of it.

For each size the site runs in its own process (`sitetk sim --vms N`). In the same run, and
interleaved so that a busy machine slows both alike, this measures:

- the floor (bench.floor): a raw POST plus an lxml parse of the same answer; its POST part is
  the simulator serving `vmpool.info` (informative);
- `CloudClient.list_vms()`: the same POST through the adapter's transport, parsed into
  `VmSummary` models; judged as a ratio to the floor (target at 10,000 VMs: 2x), each side the
  best of its runs (`bench.floor.best_of`), their medians beside, informative.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from typing import Sequence

from bench.floor import FloorSample, best_of, floor_once, median_of
from bench.rows import Row, limit_row, ratio_row
from bench.sim_process import SimProcess
from tui.adapters.cloud import CloudClient

GROUP = "sim pool (issue 2)"
SIZES: tuple[int, ...] = (1_000, 10_000, 50_000)
#: timed runs per size (after one warm-up of each side)
RUNS: dict[int, int] = {1_000: 9, 10_000: 7, 50_000: 5}
#: the size judged, and the ratio it must stay within
TARGET_SIZE, TARGET_RATIO = 10_000, 2.0


async def _adapter_once(client: CloudClient) -> tuple[float, int]:
    start = time.perf_counter()
    vms = await client.list_vms()
    return time.perf_counter() - start, len(vms)


async def measure_size(sim: SimProcess, runs: int) -> tuple[list[FloorSample], list[float], int]:
    """Interleaved floor and adapter runs against one site; (floor samples, adapter seconds, VMs listed)."""
    client = CloudClient(sim.xmlrpc, sim.session, timeout=600.0)
    floors: list[FloorSample] = []
    adapter: list[float] = []
    listed = 0
    try:
        # warm-up: first connections, imports, lxml and the simulator's own caches
        await asyncio.to_thread(floor_once, sim.xmlrpc, sim.session)
        await _adapter_once(client)
        for _ in range(runs):
            gc.collect()
            sample, pool = await asyncio.to_thread(floor_once, sim.xmlrpc, sim.session)
            floors.append(sample)
            del pool
            gc.collect()
            seconds, listed = await _adapter_once(client)
            adapter.append(seconds)
    finally:
        await client.close()
    return floors, adapter, listed


def rows_for(size: int, floors: list[FloorSample], adapter: list[float], listed: int) -> list[Row]:
    floor = best_of(floors)
    adapter_s = min(adapter)
    label, runs = f"{size:,} VMs", len(adapter)
    target = TARGET_RATIO if size == TARGET_SIZE else None
    return [
        limit_row(GROUP, f"sim serves vmpool.info, {label} ({floor.size_bytes / 1e6:.1f} MB; best of {runs})",
                  floor.post_s * 1e3, "ms", None),
        limit_row(GROUP, f"floor: POST + lxml parse, {label} (best of {runs})", floor.total_s * 1e3, "ms", None),
        ratio_row(GROUP, f"adapter list_vms, {label} ({listed:,} listed; best of {runs}, interleaved with the floor's)",
                  adapter_s * 1e3, floor.total_s * 1e3, "ms", target),
        ratio_row(GROUP, f"medians of the same {runs}: adapter list_vms / floor, {label} (informative)",
                  statistics.median(adapter) * 1e3, median_of(floors).total_s * 1e3, "ms", None),
    ]


def run(sizes: Sequence[int] = SIZES, runs: int | None = None) -> list[Row]:
    rows: list[Row] = []
    for size in sizes:
        print(f"  sim pool: {size:,} VMs", file=sys.stderr, flush=True)
        with SimProcess(vms=size) as sim:
            floors, adapter, listed = asyncio.run(measure_size(sim, runs or RUNS.get(size, 5)))
        rows.extend(rows_for(size, floors, adapter, listed))
    return rows
