"""Record the scenario against a site: `make record REAL_ENV=<state dir>/env`.

    python -m tests.recordings.record --env <state dir>/env     # a real frontend (realsite harness)
    python -m tests.recordings.record --sim 7.0.0               # the embedded site, started here

writes `tests/recordings/<version>.json` (the version the site answers to `one.system.version`;
`--out` to choose the file): the normalised exchanges (tests.recordings.normalise) with the
embedded-site version the replay runs as (`closest_embedded`). `--compare` prints, instead of
writing, the differences from the stored recording of that version.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.recordings.compare import compare, judge, load_allowed
from tests.recordings.normalise import normalise_run
from tests.recordings.scenario import scenario
from tests.recordings.wire import Endpoints, Run, read_env_file
from tui.sim.platform import EMULATED_VERSIONS, series, version_key

HERE = Path(__file__).parent
FORMAT = 1


def closest_embedded(version: str) -> str:
    """The embedded-site version a recording of `version` replays on: the same series, else the nearest."""
    same = [v for v in EMULATED_VERSIONS if series(v) == series(version)]
    if same:
        return same[0]
    key = version_key(version)
    return min(EMULATED_VERSIONS, key=lambda v: abs(version_key(v)[0] * 100 + version_key(v)[1] - key[0] * 100 - key[1]))


async def record(endpoints: Endpoints, *, poll: float = 0.5, wait_limit: float = 600.0) -> tuple[str, list[dict[str, Any]]]:
    """Run the scenario; the site's version and the normalised calls."""
    run = Run(endpoints, poll=poll, wait_limit=wait_limit)
    try:
        await scenario(run)
    finally:
        await run.close()
    calls = normalise_run(run)
    version = next(c["answer"].get("text", "") for c in calls if c["call"] == "one.system.version")
    return version, calls


def document(version: str, source: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": FORMAT, "version": version, "embedded_version": closest_embedded(version), "source": source,
            "calls": calls}


def write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.recordings.record", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--env", type=Path, help="the env file of a frontend (ONE_XMLRPC, ONE_AUTH, ONEFLOW_URL)")
    where.add_argument("--sim", metavar="VERSION", choices=EMULATED_VERSIONS, help="record the embedded site")
    parser.add_argument("--out", type=Path, help="the recording to write (default tests/recordings/<version>.json)")
    parser.add_argument("--source", default="", help="what the recording was made on (stored in the file)")
    parser.add_argument("--compare", action="store_true", help="print the differences from the stored recording")
    args = parser.parse_args(argv)

    server = None
    started = time.monotonic()
    if args.sim:
        from tui.sim.runner import start_sim
        from tui.sim.state import SimConfig

        server = start_sim(SimConfig(one_version=args.sim, time_scale=0.01), Path(tempfile.mkdtemp(prefix="sitetk-rec-")))
        endpoints = Endpoints(server.xmlrpc_url, server.flow_url, server.session)
        source = args.source or f"embedded site {args.sim} (sitetk sim, fresh scenario)"
    else:
        endpoints = read_env_file(args.env)
        source = args.source or "real frontend (realsite harness)"
    try:
        version, calls = asyncio.run(record(endpoints, poll=0.02 if server else 0.5))
    finally:
        if server is not None:
            server.stop()
    elapsed = time.monotonic() - started
    out = args.out or HERE / f"{version}.json"
    if args.compare:
        stored = json.loads(out.read_text(encoding="utf-8"))
        verdict = judge(stored["version"], compare(stored["calls"], calls), load_allowed())
        for difference, allowance in verdict.allowed:
            print(f"allowed ({allowance.reason}): {difference}")
        for difference in verdict.unexplained:
            print(f"UNEXPLAINED: {difference}")
        print(f"{len(calls)} calls, {len(verdict.allowed)} allowed, {len(verdict.unexplained)} unexplained, "
              f"{elapsed:.1f} s", file=sys.stderr)
        return 1 if verdict.unexplained else 0
    write(out, document(version, source, calls))
    print(f"{out}: {len(calls)} calls of {version} in {elapsed:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
