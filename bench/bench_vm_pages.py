"""Issue 24: the VM list's page size. `CloudClient.list_vms` reads the pool in pages (the first by
offset, the rest by id range, each parsed while it arrives: tui.domain.vm_scan, tui.adapters.
pool_stream); the page size trades the time to the first page (shown at once) against the number
of calls. Measured against the embedded site in its own process, at 50,000 VMs:

- the whole read: wall-clock time and this process's CPU time, against one unpaged call read the
  same way (`list_vms(start=-1, end=-1)`);
- the first page: wall-clock time from asking until it has been read and parsed;
- the calls made.

Informative (no target): the size is chosen from these figures (README: Benchmarks).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from typing import Sequence

from bench.rows import Row, limit_row, ratio_row
from bench.sim_process import SimProcess
from tui.adapters.cloud import CloudClient

GROUP = "vm list pages (issue 24)"
SIZES: tuple[int, ...] = (50_000,)
PAGES: tuple[int, ...] = (500, 1_000, 2_000, 5_000, 10_000)
RUNS = 2


async def _read(client: CloudClient, page: int | None) -> tuple[float, float, float, int, int]:
    """(wall s, CPU s, first page s, calls, VMs) of one whole read; `page` None: one unpaged call."""
    gc.collect()
    pages: list[float] = []
    wall, cpu = time.perf_counter(), time.process_time()
    if page is None:
        vms = await client.list_vms(start=-1, end=-1)
        pages.append(time.perf_counter())
    else:
        vms = await client.list_vms(page_size=page, on_page=lambda _: pages.append(time.perf_counter()))
    return time.perf_counter() - wall, time.process_time() - cpu, pages[0] - wall, len(pages), len(vms)


async def measure(sim: SimProcess, size: int, pages: Sequence[int], runs: int) -> list[Row]:
    client = CloudClient(sim.xmlrpc, sim.session, timeout=600.0)
    label = f"{size:,} VMs"
    try:
        await _read(client, None)  # warm-up: connections, the site's render caches
        timings: dict[int | None, list[tuple[float, float, float, int, int]]] = {p: [] for p in (None, *pages)}
        for _ in range(runs):
            for page in (None, *pages):  # interleaved: a busy spell slows all alike
                timings[page].append(await _read(client, page))
    finally:
        await client.close()
    one_wall = statistics.median(t[0] for t in timings[None]) * 1e3
    one_cpu = statistics.median(t[1] for t in timings[None]) * 1e3
    rows = [limit_row(GROUP, f"one call, {label}: wall", one_wall, "ms", None),
            limit_row(GROUP, f"one call, {label}: client CPU", one_cpu, "ms", None)]
    for page in pages:
        wall = statistics.median(t[0] for t in timings[page]) * 1e3
        cpu = statistics.median(t[1] for t in timings[page]) * 1e3
        first = statistics.median(t[2] for t in timings[page]) * 1e3
        calls, listed = timings[page][-1][3], timings[page][-1][4]
        name = f"pages of {page:,}, {label} ({calls} calls, {listed:,} VMs)"
        rows += [ratio_row(GROUP, f"{name}: wall", wall, one_wall, "ms", None),
                 ratio_row(GROUP, f"{name}: client CPU", cpu, one_cpu, "ms", None),
                 limit_row(GROUP, f"{name}: first page read", first, "ms", None)]
    return rows


def run(sizes: Sequence[int] = SIZES, pages: Sequence[int] = PAGES, runs: int = RUNS) -> list[Row]:
    rows: list[Row] = []
    for size in sizes:
        print(f"  vm list pages: {size:,} VMs", file=sys.stderr, flush=True)
        with SimProcess(vms=size) as sim:
            rows.extend(asyncio.run(measure(sim, size, pages, runs)))
    return rows
