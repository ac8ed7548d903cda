"""A process running the console headless until its VM list shows the site's VMs, then reporting
its peak resident memory: the console side of the memory figure (bench.floor is the other).

    ONE_XMLRPC=... ONE_AUTH=<file with user:password> python -m bench.console_probe

Settings resolve as `sitetk` resolves them (the platform CLI's variables and files). Prints one
JSON line: {"vms": rows in the list, "peak_rss_kb": ...}.
"""

from __future__ import annotations

import asyncio
import json
import sys

from bench.console_driver import bench_settings, running_console
from bench.floor import peak_rss_kb
from tui.settings import Settings


async def _probe() -> int:
    async with running_console(bench_settings(Settings.load())) as console:
        return console.screen.table.row_count


def main() -> int:
    vms = asyncio.run(_probe())
    print(json.dumps({"vms": vms, "peak_rss_kb": peak_rss_kb()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
