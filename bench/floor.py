"""The floor every VM-list figure is compared with: the least work any client must do.

One raw XML-RPC POST of `one.vmpool.info` (http.client, one connection per call, as the
adapter's transport gets from the simulator) plus an lxml parse of the same response: the
`methodResponse`, then the pool document carried in its string value. No domain objects, no
widgets. Timed with `time.perf_counter`; `median_of` gives the median of several runs (what the
refresh is judged by, bench_vm_list), `best_of` the least (what `list_vms` is judged by).

`python -m bench.floor` (with ONE_XMLRPC and ONE_AUTH pointing at a site) does one floor fetch
and parse, keeps the result alive, and prints one JSON line with its peak resident memory: the
baseline of the console's memory figure.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import xmlrpc.client
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from bench.sim_process import post_xmlrpc

#: one.vmpool.info(session, filter=-2 all, start=-1, end=-1, state=-1 any but DONE): what list_vms asks
VMPOOL_PARAMS = (-2, -1, -1, -1)


@dataclass(frozen=True)
class FloorSample:
    """One floor run: seconds spent on the POST and on the parse, the answer's size and VM count."""

    post_s: float
    parse_s: float
    size_bytes: int
    vms: int

    @property
    def total_s(self) -> float:
        return self.post_s + self.parse_s


@dataclass(frozen=True)
class FloorResult:
    """Medians over several runs."""

    post_s: float
    parse_s: float
    total_s: float
    size_bytes: int
    vms: int
    runs: int


def vmpool_body(session: str) -> bytes:
    return xmlrpc.client.dumps((session, *VMPOOL_PARAMS), "one.vmpool.info").encode("utf-8")


def parse_vmpool(raw: bytes) -> etree._Element:
    """The pool document inside a `methodResponse`, both parsed with lxml."""
    parser = etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)
    response = etree.fromstring(raw, parser=parser)
    values = response.find("params/param/value/array/data")
    if values is None or len(values) < 2 or values[0].findtext("boolean") != "1":
        raise RuntimeError(f"one.vmpool.info failed: {raw[:300]!r}")
    text = values[1].findtext("string")
    if not text:
        raise RuntimeError("one.vmpool.info answered no string")
    return etree.fromstring(text.encode("utf-8"), parser=parser)


def floor_once(endpoint: str, session: str) -> tuple[FloorSample, etree._Element]:
    """One floor run (and the parsed pool, which the caller may keep or drop)."""
    body = vmpool_body(session)
    start = time.perf_counter()
    raw = post_xmlrpc(endpoint, body)
    posted = time.perf_counter()
    pool = parse_vmpool(raw)
    parsed = time.perf_counter()
    return FloorSample(posted - start, parsed - posted, len(raw), len(pool)), pool


def median_of(samples: list[FloorSample]) -> FloorResult:
    return FloorResult(
        post_s=statistics.median(s.post_s for s in samples),
        parse_s=statistics.median(s.parse_s for s in samples),
        total_s=statistics.median(s.total_s for s in samples),
        size_bytes=samples[-1].size_bytes,
        vms=samples[-1].vms,
        runs=len(samples),
    )


def best_of(samples: list[FloorSample]) -> FloorResult:
    """The least of several runs (each part's and the total's): the floor is the least work any
    client must do, and the least of interleaved runs is what other processes on the machine
    disturbed least. The median of 5 moved by a third between runs (459 and 832 ms for the same
    10,000-VM floor in one `make bench`); the compared figure is taken the same way."""
    return FloorResult(
        post_s=min(s.post_s for s in samples),
        parse_s=min(s.parse_s for s in samples),
        total_s=min(s.total_s for s in samples),
        size_bytes=samples[-1].size_bytes,
        vms=samples[-1].vms,
        runs=len(samples),
    )


def measure_floor(endpoint: str, session: str, runs: int = 5) -> FloorResult:
    """Median of `runs` floor runs (after one warm-up run that is not counted)."""
    floor_once(endpoint, session)
    return median_of([floor_once(endpoint, session)[0] for _ in range(runs)])


def peak_rss_kb() -> int:
    """Peak resident memory of this process so far, in KiB: VmHWM of /proc/self/status, which
    starts afresh at exec (ru_maxrss does not: Linux carries the parent's peak across fork and
    exec, so a child would report the bench process's peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def _session_from_env() -> tuple[str, str]:
    endpoint = os.environ.get("ONE_XMLRPC", "")
    auth = os.environ.get("ONE_AUTH", "")
    if not endpoint or not auth:
        raise SystemExit("set ONE_XMLRPC and ONE_AUTH (a file holding user:password) to a running site")
    return endpoint, Path(auth).read_text().strip()


def main() -> int:
    endpoint, session = _session_from_env()
    sample, pool = floor_once(endpoint, session)
    print(json.dumps({"vms": len(pool), "total_s": sample.total_s, "peak_rss_kb": peak_rss_kb()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
