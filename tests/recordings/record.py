"""Record the scenario against a site: `make record REAL_ENV=<state dir>/env`.

    python -m tests.recordings.record --env <state dir>/env     # a real frontend (realsite harness)
    python -m tests.recordings.record --sim 7.0.0               # the embedded site, started here
    python -m tests.recordings.record --replay tests/recordings/7.0.2.json   # every difference, as the test sees them
    python -m tests.recordings.record --env ENV --raw /tmp/raw.json   # keep the raw run (0600)...
    python -m tests.recordings.record --from-raw /tmp/raw.json --out X # ...and normalise it again later
    python -m tests.recordings.record --env ENV --db-backend mysql     # a frontend on MariaDB: <version>-mysql.json

writes `tests/recordings/<version>.json` (the version the site answers to `one.system.version`;
`--out` to choose the file): the normalised exchanges (tests.recordings.normalise) with the
embedded-site version the replay runs as (`closest_embedded`). `--compare` prints, instead of
writing, the differences from the stored recording of that version.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.recordings.compare import compare, judge, load_allowed, recording_label
from tests.recordings.normalise import normalise_run
from tests.recordings.scenario import scenario
from tests.recordings.wire import Endpoints, Exchange, Run, read_env_file
from tui.sim.platform import EMULATED_VERSIONS, series, version_key

HERE = Path(__file__).parent
FORMAT = 1


def closest_embedded(version: str) -> str:
    """The embedded-site version a recording of `version` replays on: the recorded version itself
    when the embedded site emulates its series (it follows the patch releases' differences by
    version: `tui.sim.platform`, e.g. the 6.10.4+ market driver), else the nearest emulated one."""
    if any(series(v) == series(version) for v in EMULATED_VERSIONS):
        return version
    key = version_key(version)
    return min(EMULATED_VERSIONS, key=lambda v: abs(version_key(v)[0] * 100 + version_key(v)[1] - key[0] * 100 - key[1]))


async def record(endpoints: Endpoints, *, poll: float = 0.5, wait_limit: float = 600.0,
                 raw: Path | None = None) -> tuple[str, list[dict[str, Any]]]:
    """Run the scenario; the site's version and the normalised calls (the raw run kept in `raw`,
    0600: it holds the sessions, for normalising again with `--raw`)."""
    run = Run(endpoints, poll=poll, wait_limit=wait_limit)
    try:
        await scenario(run)
    finally:
        await run.close()
        if raw is not None:
            save_raw(run, raw)
    return result(run)


def result(run: Run) -> tuple[str, list[dict[str, Any]]]:
    calls = normalise_run(run)
    version = next(c["answer"].get("text", "") for c in calls if c["call"] == "one.system.version")
    return version, calls


def save_raw(run: Run, path: Path) -> None:
    data = {"token": run.token, "sessions": run.sessions,
            "bindings": {"ids": [[k, i, v] for (k, i), v in run.bindings.ids.items()],
                         "created": sorted(run.bindings.created), "strings": run.bindings.strings,
                         "names": run.bindings.names, "placed": sorted(run.bindings.placed),
                         "values": [[t, v, p] for (t, v), p in run.bindings.values.items()]},
            "exchanges": [{"step": e.step, "kind": e.kind, "verb": e.verb, "path": e.path, "status": e.status,
                           "request": base64.b64encode(e.request).decode(), "answer": base64.b64encode(e.answer).decode()}
                          for e in run.exchanges]}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle)


def load_raw(path: Path) -> Run:
    data = json.loads(path.read_text(encoding="utf-8"))
    run = Run(Endpoints("http://unused/RPC2", "http://unused", "unused:unused"))
    run.token, run.sessions = data["token"], data["sessions"]
    b = data["bindings"]
    run.bindings.ids = {(k, i): v for k, i, v in b["ids"]}
    run.bindings.created, run.bindings.strings, run.bindings.names = set(b["created"]), b["strings"], b["names"]
    run.bindings.placed = set(b["placed"])
    run.bindings.values = {(t, v): p for t, v, p in b["values"]}
    run.exchanges = [Exchange(e["step"], e["kind"], base64.b64decode(e["request"]), base64.b64decode(e["answer"]),
                              verb=e["verb"], path=e["path"], status=e["status"]) for e in data["exchanges"]]
    return run


def document(version: str, source: str, calls: list[dict[str, Any]], db_backend: str = "sqlite") -> dict[str, Any]:
    data: dict[str, Any] = {"format": FORMAT, "version": version, "embedded_version": closest_embedded(version),
                            "source": source}
    if db_backend != "sqlite":
        data["db_backend"] = db_backend
    return {**data, "calls": calls}


def write(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.recordings.record", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--env", type=Path, help="the env file of a frontend (ONE_XMLRPC, ONE_AUTH, ONEFLOW_URL)")
    where.add_argument("--sim", metavar="VERSION", choices=EMULATED_VERSIONS, help="record the embedded site")
    where.add_argument("--replay", type=Path, metavar="RECORDING",
                       help="replay a recording on the embedded site and print every difference (what the test does)")
    where.add_argument("--from-raw", type=Path, metavar="RAW", help="normalise a raw run kept with --raw again")
    parser.add_argument("--raw", type=Path, help="also keep the raw run here (0600: it holds the sessions; never commit it)")
    parser.add_argument("--out", type=Path, help="the recording to write (default tests/recordings/<version>.json)")
    parser.add_argument("--source", default="", help="what the recording was made on (stored in the file)")
    parser.add_argument("--compare", action="store_true", help="print the differences from the stored recording")
    parser.add_argument("--db-backend", choices=("sqlite", "mysql"), default="sqlite",
                        help="the database the frontend runs on (stored in the recording; the replay runs the "
                             "embedded site with it)")
    args = parser.parse_args(argv)

    server = None
    source = args.source
    started = time.monotonic()
    stored = None
    if args.replay:
        stored = json.loads(args.replay.read_text(encoding="utf-8"))
        args.sim, args.out, args.compare = stored["embedded_version"], args.replay, True
        args.db_backend = stored.get("db_backend", "sqlite")
    if args.sim:
        from tui.sim.runner import start_sim
        from tui.sim.state import SimConfig

        server = start_sim(SimConfig(one_version=args.sim, time_scale=0.01, db_backend=args.db_backend),
                           Path(tempfile.mkdtemp(prefix="sitetk-rec-")))
        endpoints = Endpoints(server.xmlrpc_url, server.flow_url, server.session)
        source = args.source or f"embedded site {args.sim} (sitetk sim, fresh scenario)"
    elif args.env:
        endpoints = read_env_file(args.env)
        source = args.source or "real frontend (realsite harness)"
    try:
        if args.from_raw:
            version, calls = result(load_raw(args.from_raw))
        else:
            version, calls = asyncio.run(record(endpoints, poll=0.02 if server else 0.5, raw=args.raw))
    finally:
        if server is not None:
            server.stop()
    elapsed = time.monotonic() - started
    label = recording_label(version, args.db_backend)
    out = args.out or HERE / f"{label.replace('+', '-')}.json"
    if args.compare:
        stored = stored or json.loads(out.read_text(encoding="utf-8"))
        allowed = load_allowed()
        label = recording_label(stored["version"], stored.get("db_backend", "sqlite"))
        verdict = judge(label, compare(stored["calls"], calls), allowed)
        for difference, allowance in verdict.allowed:
            print(f"allowed ({allowance.reason}): {difference}")
        for difference in verdict.unexplained:
            print(f"UNEXPLAINED: {difference}")
        used = {allowance.line for _, allowance in verdict.allowed}
        for allowance in allowed:
            if allowance.covers(label) and allowance.line not in used:
                print(f"UNUSED: allowed.txt line {allowance.line} explains nothing in {label}")
        print(f"{len(calls)} calls, {len(verdict.allowed)} allowed, {len(verdict.unexplained)} unexplained, "
              f"{elapsed:.1f} s", file=sys.stderr)
        return 1 if verdict.unexplained else 0
    write(out, document(version, source, calls, args.db_backend))
    print(f"{out}: {len(calls)} calls of {version} in {elapsed:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
