"""The C heap kept between the VM list's pages (issue 24).

Each page of the VM list is parsed into an lxml tree of ~13 MB (1,000 VMs) and freed once read.
glibc's malloc hands memory freed at the top of a heap back to the kernel as soon as more than
128 KiB lie free there (`M_TRIM_THRESHOLD`), so every page's tree was faulted in afresh: ~3,300
minor page faults a page, ~40% of its parse's CPU time (10,000 VMs, one thread, best of 4:
245 -> 134-152 ms). `keep_heap` raises that threshold, once per process, so freed pages stay
mapped and the next page reuses them. The peak of memory does not grow (what is kept was in use
a moment before and is reused, not added to); what the process holds between refreshes stays
near that peak instead of falling back. Elsewhere than glibc (no `mallopt`) nothing changes.

It is set by the first page of at least `KEEP_HEAP_FROM_BYTES`, not at start-up: a smaller page
faults in too little to matter, and a site whose pages are all small (the demo site's 100 VMs, a
page of ~0.3 MB) never pays for loading `ctypes` (~1.5 ms of the console's start, issue 24).
"""

from __future__ import annotations

import threading

#: glibc's `mallopt` parameter numbers (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: the size of a page's answer from which the heap is kept (a page of 1,000 VMs is ~2.4 MB)
KEEP_HEAP_FROM_BYTES = 2**20
#: free memory a heap may keep at its top before giving it back
TRIM_THRESHOLD = 256 * 2**20
#: allocations at least this large get a mapping of their own (glibc's default grows to 32 MiB on
#: its own; setting the trim threshold stops that, so it is set to the same here): a page's body
#: (~2 MB) and a stylesheet's text come from the heap, not a fresh mapping each time
MMAP_THRESHOLD = 32 * 2**20

_lock = threading.Lock()
#: None until tried; then whether the allocator took the thresholds
_kept: bool | None = None


def keep_heap() -> bool:
    """Raise glibc's trim threshold (and fix its mmap threshold), tried once per process; whether
    this process's allocator took them (False where there is no glibc `mallopt`)."""
    global _kept
    with _lock:
        if _kept is None:
            import ctypes  # here: ~1.5-3 ms of import, only once a large page comes

            try:
                mallopt = ctypes.CDLL(None).mallopt
            except (OSError, AttributeError):
                _kept = False
            else:
                mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
                mallopt.restype = ctypes.c_int
                _kept = bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and bool(
                    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
        return _kept
