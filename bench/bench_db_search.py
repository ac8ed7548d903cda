"""Issue 19: the database-VM search reads the whole VM pool in pages; which page size.

The console finds document-database VMs by reading `one.vmpool.infoextended` page after page (the
first by offset, `(-2, 0, -size, -1)`, the rest by id range, `(-2, low, high, -1)`) and judging
each VM itself (tui.domain.vm_scan). The page size trades the number
of calls against the size of each answer. Both sides are measured, for pools of 10,000 and
50,000 VMs:

- **client**: `CloudClient.scan_vms_detail` with the console's prefilter against the embedded
  site in its own process (`sitetk sim --vms N`): wall-clock time of the whole scan, and the CPU
  time this process spent (transfer, XML parse, prefilter, stitching; the site's own work runs in
  the other process and is not counted). Baseline: the same scan in one call (a page larger
  than the pool).
- **platform's database**: what oned's sqlite runs for each page (src/pool/PoolSQL.cc `dump` and
  `oid_filter`: `SELECT body FROM vm_pool WHERE (state <> 6) ORDER BY oid DESC LIMIT 0,size`, then
  `WHERE (oid >= low AND oid <= high) AND (state <> 6)`), on a table of the platform's schema
  (src/sql/OneDB.cc `vm_db_bootstrap`) filled with the site's own VM bodies: an id range is an
  index range, so pages cost the database about what one unpaged SELECT does (offset pages skipped
  `offset` rows each: quadratic). Its time for all pages of one scan, against one unpaged SELECT.
- the largest answer a page brings (the memory one call holds, as text; the parsed tree is a
  few times larger).
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from bench.rows import Row, limit_row, ratio_row
from bench.sim_process import SimProcess
from tui.adapters.cloud import CloudClient
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.vm_scan import PoolPager
from tui.procedures.hosts.cpu_inventory import document_db_prefilter

GROUP = "database-VM search (issue 19)"
SIZES: tuple[int, ...] = (10_000, 50_000)
PAGES: dict[int, tuple[int, ...]] = {10_000: (50, 100, 200, 500, 1_000, 2_000), 50_000: (200, 500, 1_000, 2_000)}
RUNS: dict[int, int] = {10_000: 3, 50_000: 1}
#: the VM schema of src/sql/OneDB.cc `vm_db_bootstrap` (release-7.0.2 lines 63-67)
SCHEMA = ("CREATE TABLE IF NOT EXISTS vm_pool (oid INTEGER PRIMARY KEY, name VARCHAR(128), body MEDIUMTEXT, "
          "uid INTEGER, gid INTEGER, state INTEGER, lcm_state INTEGER, resched INTEGER, owner_u INTEGER, "
          "group_u INTEGER, other_u INTEGER, short_body MEDIUMTEXT, body_json JSON)")


async def _scan(client: CloudClient, page_size: int) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds of this process, pages, VMs listed) of one scan."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    scan = await client.scan_vms_detail(document_db_prefilter(DEFAULT_NAMING), page_size=page_size)
    return time.perf_counter() - wall, time.process_time() - cpu, scan.pages, scan.listed


async def _bodies(client: CloudClient) -> list[str]:
    """The full body of every VM of the site, as the platform stores them (one text per VM)."""
    text = await client.raw("one.vmpool.infoextended", -2, -1, -1, -1)
    inner = text[len("<VM_POOL>"):-len("</VM_POOL>")]
    return ["<VM>" + piece + "</VM>" for piece in inner[len("<VM>"):-len("</VM>")].split("</VM><VM>")]


def _sqlite_pages(bodies: Sequence[str], sizes: Sequence[int]) -> dict[int | None, tuple[float, int]]:
    """Seconds sqlite spends on every page of one scan (None: one unpaged SELECT), and the largest
    page in bytes, on a database file of the platform's schema."""
    out: dict[int | None, tuple[float, int]] = {}
    with tempfile.TemporaryDirectory(prefix="sitetk-bench-sqlite-") as folder:
        db = sqlite3.connect(str(Path(folder) / "one.db"))
        db.execute(SCHEMA)
        db.executemany("INSERT INTO vm_pool (oid, name, body, uid, gid, state, lcm_state, resched, owner_u, "
                       "group_u, other_u, short_body, body_json) VALUES (?, ?, ?, 0, 0, 3, 3, 0, 1, 0, 0, '', '')",
                       ((oid, f"vm-{oid}", body) for oid, body in enumerate(bodies)))
        db.commit()
        db.execute("SELECT count(*) FROM vm_pool WHERE (state <> 6)").fetchone()  # warm the page cache
        start = time.perf_counter()
        rows = db.execute("SELECT body FROM vm_pool WHERE (state <> 6) ORDER BY oid").fetchall()
        out[None] = (time.perf_counter() - start, sum(len(r[0]) for r in rows))
        del rows
        for size in sizes:
            # the statements oned runs for the console's pages (PoolSQL.cc `dump`, `oid_filter`):
            # the first by offset, the rest by id range, newest first (API_LIST_ORDER DESC)
            pager = PoolPager(size)
            largest = 0
            start = time.perf_counter()
            while pager.ask is not None:
                ask = pager.ask
                where = "(state <> 6)" if not ask.is_range else \
                    f"(oid >= {ask.start}{'' if ask.end == -1 else f' AND oid <= {ask.end}'}) AND (state <> 6)"
                limit = f" LIMIT {ask.start},{-ask.end}" if not ask.is_range else ""
                page = db.execute(f"SELECT oid, body FROM vm_pool WHERE {where} ORDER BY oid DESC{limit}").fetchall()
                largest = max(largest, sum(len(r[1]) for r in page))
                pager.take([r[0] for r in page])
            out[size] = (time.perf_counter() - start, largest)
        db.close()
    return out


async def measure(sim: SimProcess, size: int, runs: int, pages: Sequence[int]) -> list[Row]:
    client = CloudClient(sim.xmlrpc, sim.session, timeout=600.0)
    rows: list[Row] = []
    label = f"{size:,} VMs"
    try:
        bodies = await _bodies(client)
        await _scan(client, size + 1)  # warm-up: connections, imports, the site's render caches
        timings: dict[int, list[tuple[float, float, int, int]]] = {p: [] for p in (*pages, size + 1)}
        for _ in range(runs):
            for page in (size + 1, *pages):  # interleaved, so that a busy spell slows all alike
                timings[page].append(await _scan(client, page))
    finally:
        await client.close()
    sqlite = _sqlite_pages(bodies, pages)
    one_wall = statistics.median(t[0] for t in timings[size + 1])
    one_cpu = statistics.median(t[1] for t in timings[size + 1])
    one_sql, whole = sqlite[None]
    rows.append(limit_row(GROUP, f"one call, {label} ({whole / 1e6:.0f} MB answer): wall", one_wall * 1e3, "ms", None))
    rows.append(limit_row(GROUP, f"one call, {label}: client CPU", one_cpu * 1e3, "ms", None))
    rows.append(limit_row(GROUP, f"one call, {label}: sqlite SELECT", one_sql * 1e3, "ms", None))
    for page in pages:
        wall = statistics.median(t[0] for t in timings[page])
        cpu = statistics.median(t[1] for t in timings[page])
        calls, listed = timings[page][-1][2], timings[page][-1][3]
        assert listed == len(bodies), f"page {page}: {listed} listed of {len(bodies)}"
        sql, largest = sqlite[page]
        name = f"pages of {page}, {label} ({calls} calls, largest {largest / 1e6:.1f} MB)"
        rows.append(ratio_row(GROUP, f"{name}: wall", wall * 1e3, one_wall * 1e3, "ms", None))
        rows.append(ratio_row(GROUP, f"{name}: client CPU", cpu * 1e3, one_cpu * 1e3, "ms", None))
        rows.append(ratio_row(GROUP, f"{name}: sqlite SELECTs", sql * 1e3, one_sql * 1e3, "ms", None))
    return rows


def run(sizes: Sequence[int] = SIZES, runs: int | None = None, pages: Sequence[int] | None = None) -> list[Row]:
    rows: list[Row] = []
    for size in sizes:
        print(f"  db search: {size:,} VMs", file=sys.stderr, flush=True)
        with SimProcess(vms=size) as sim:
            rows.extend(asyncio.run(measure(sim, size, runs or RUNS.get(size, 1),
                                            pages or PAGES.get(size, (200, 2_000)))))
    return rows
