"""`sitetk sim`: run the embedded simulated site in the foreground.

The first line on stdout is one JSON object naming the endpoints, the session, the state
directory, the sites repository, the component library and the demo vault password file; the
site then serves until SIGINT or SIGTERM and exits 0. With `--repositories-later` the line comes
as soon as the site listens (`"repositories": "building"`) and a second line follows once its git
repositories are built (`{"repositories": "ready"}`, or `"failed"` with an `"error"`); with
`--repositories-on-request` the build starts only once the line `repositories` arrives on stdin
(the demo console asks after its first frame, so the build does not slow the site's first answers);
with `--exit-on-stdin-eof` the site also stops when its stdin closes (its parent process is gone);
with `--remove-state-dir` it removes its state directory when it stops (a throw-away site).
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from tui.cli.exit_codes import EXIT_OK, EXIT_USAGE
from tui.sim.platform import DEFAULT_VERSION, EMULATED_VERSIONS
from tui.sim.state import SimConfig


def _number(kind: type, problem: Callable[[Any], str]) -> Callable[[str], Any]:
    """An argparse type: `kind(text)`, refused with `problem(value)` when that says something."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {'whole number' if kind is int else 'number'}") from None
        reason = problem(value)
        if reason:
            raise argparse.ArgumentTypeError(reason)
        return value

    return parse


_non_negative_int = _number(int, lambda v: f"{v} is negative; give 0 or more" if v < 0 else "")
_positive_float = _number(
    float, lambda v: f"{v} must be above 0 (1.0 is real time, 0.05 twenty times faster)" if v <= 0 else "")
_probability = _number(
    float, lambda v: f"{v} is not a probability; give a value from 0 to 1" if not 0.0 <= v <= 1.0 else "")
_port = _number(int, lambda v: f"{v} is not a TCP port (0-65535, 0 picks a free one)" if not 0 <= v <= 65535 else "")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("sim", help="run the embedded simulated site in the foreground",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("fresh", "deployed"), default="fresh",
                        help="fresh: before the toolkit; deployed: after a toolkit deployment")
    parser.add_argument("--vms", type=_non_negative_int, default=0, help="add N ordinary running VMs for scale")
    parser.add_argument("--one-version", choices=EMULATED_VERSIONS, default=DEFAULT_VERSION,
                        help="the platform version the site reports and behaves as (README: how faithful "
                             "the embedded site is)")
    parser.add_argument("--db-backend", choices=("sqlite", "mysql"), default="sqlite",
                        help="the database the site's oned runs on: sqlite (the platform's default) refuses the "
                             "VM pool's query argument, mysql answers it as a JSON path matched as a substring")
    parser.add_argument("--time-scale", type=_positive_float, default=1.0,
                        help="simulated durations multiplied by this (1.0 real time)")
    parser.add_argument("--latency-ms", type=_non_negative_int, default=0, help="delay added to every request")
    parser.add_argument("--fail-rate", type=_probability, default=0.0,
                        help="probability that a request fails (internal error or dropped connection)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=_port, default=0, help="port to listen on (0 picks a free one)")
    parser.add_argument("--state-dir", default=None, help="directory for the site's files (default: a new temp dir)")
    parser.add_argument("--repositories-later", action="store_true",
                        help="announce the endpoints before the git repositories are built, then a second line")
    parser.add_argument("--repositories-on-request", action="store_true",
                        help="with --repositories-later: build them only when the line `repositories` arrives on stdin")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when stdin closes (for a parent process that keeps it as a pipe)")
    parser.add_argument("--remove-state-dir", action="store_true", help="remove the state directory on exit")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # no garbage collection until the site has announced itself (the demo console waits for it):
    # seeding makes few cycles; then what exists is frozen and the collector runs again
    gc.disable()
    try:
        return _serve(args)
    finally:
        gc.enable()


def _serve(args: argparse.Namespace) -> int:
    from tui.sim.repos import request_repositories  # the simulator loads only for this command
    from tui.sim.runner import start_sim

    config = SimConfig(one_version=args.one_version, time_scale=args.time_scale, scenario=args.scenario,
                       extra_vms=args.vms, db_backend=args.db_backend)
    try:
        server = start_sim(config, Path(args.state_dir) if args.state_dir else None, args.host, args.port,
                           repositories_in_background=args.repositories_later or args.repositories_on_request,
                           repositories_on_request=args.repositories_on_request)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    server.site.faults.latency_ms = args.latency_ms
    server.site.faults.fail_rate = args.fail_rate
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    site = server.site
    try:
        if args.exit_on_stdin_eof or args.repositories_on_request:
            threading.Thread(target=_read_stdin, args=(stop if args.exit_on_stdin_eof else None,
                                                       lambda: request_repositories(site)),
                             name="sitetk-sim-stdin", daemon=True).start()
        print(json.dumps({
            "xmlrpc": server.xmlrpc_url,
            "oneflow": server.flow_url,
            "marketplace": server.market_url,
            "session": server.session,
            "state_dir": str(server.site.state_dir),
            "sites_repo": str(server.site.sites_repo or ""),
            "library_repo": str(server.site.library_repo or ""),
            "vault_password_file": str(server.site.vault_password_file or ""),
            "repositories": ("on request" if args.repositories_on_request
                             else "building" if args.repositories_later else "ready"),
        }), flush=True)
        gc.freeze()
        gc.enable()
        threading.Thread(target=_warm_first_page, args=(site,), name="sitetk-sim-warm", daemon=True).start()
        if args.repositories_later or args.repositories_on_request:
            threading.Thread(target=_announce_repositories, args=(site,), name="sitetk-sim-announce",
                             daemon=True).start()
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        build = site.repositories_build
        if build is not None and build.ident is not None:
            build.join(timeout=60)  # a build still running writes into the state dir
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if args.remove_state_dir:
            shutil.rmtree(site.state_dir, ignore_errors=True)
    return EXIT_OK


#: the VMs whose pool bodies are rendered ahead (`_warm_first_page`): the VM list's first page
#: (tui.adapters.cloud.VM_LIST_PAGE_SIZE)
WARM_VMS = 1_000


def _warm_first_page(site: Any) -> None:
    """Render the short bodies (`one.vmpool.info`) of the VMs with the lowest IDs, as many as a
    console's first page reads, into the site's render cache, right after the site announced
    itself: `sitetk --demo` asks for them a few hundred ms later, once its own start-up is done,
    and rendering them then was on its way to the first rows (~40 ms of the first
    `one.vmpool.info` of 100 VMs at load 10). The cache is keyed by each VM's revision and state
    (tui.sim.xml_render), so an answer is the same whether its bodies were rendered now or on
    request; the lock keeps a request from seeing the cache half-filled."""
    from tui.sim.xml_render import vm_xml_escaped

    with site.lock:
        vms = site.vms
        for vm_id in sorted(vms)[:WARM_VMS]:
            vm_xml_escaped(site, vms[vm_id], full=False)


def _read_stdin(stop: threading.Event | None, build_repositories: Callable[[], None]) -> None:
    """Build the repositories when the line `repositories` arrives; set `stop` (if given) once
    stdin reaches end of file (the parent closed it or exited). Other lines are ignored."""
    try:
        for line in sys.stdin.buffer:
            if line.strip() == b"repositories":
                build_repositories()
    except (OSError, ValueError):
        pass
    finally:
        if stop is not None:
            stop.set()


def _announce_repositories(site: Any) -> None:
    """The second stdout line of `--repositories-later`, once the site's repositories are built."""
    site.repositories_ready.wait()
    error = site.repositories_error
    line = ({"repositories": "ready"} if error is None
            else {"repositories": "failed", "error": f"{type(error).__name__}: {error}"})
    print(json.dumps(line), flush=True)
