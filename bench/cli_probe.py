"""A process running one `sitetk` command against a site, then reporting its peak resident memory:
the `setup status` and `hosts check` side of the memory figures (bench.bench_vm_list).

    ONE_XMLRPC=... ONE_AUTH=<file with user:password> python -m bench.cli_probe setup status

The command's own output is discarded; prints one JSON line: {"exit": its exit code,
"peak_rss_kb": ...}.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

from bench.floor import peak_rss_kb


def main(argv: list[str]) -> int:
    from tui.__main__ import main as sitetk

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = sitetk(argv)
    print(json.dumps({"exit": code, "peak_rss_kb": peak_rss_kb()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
