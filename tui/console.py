"""`sitetk` without a noun: build the settings (or start the embedded demo site), run the console.

With `--demo` the embedded simulated site starts in a child process (`tui.demo_site.SimChild`)
before Textual is even imported, so its start overlaps the console's on another core; the
console connects once the site announces its endpoints, and the child is stopped and its state
directory removed when the console exits (also on SIGTERM or SIGHUP). `--read-only` hides every
mutating action. The exit code is the app's (0 after a normal quit).
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from tui.errors import SiteError

if TYPE_CHECKING:  # pragma: no cover - annotations only: the console imports these when it runs
    from tui.app import SiteToolkitApp
    from tui.demo_site import SimChild, SimEndpoints
    from tui.procedures.connection import SiteConnection
    from tui.settings import Settings
    from tui.sim.server import SimServer
    from tui.sim.state import SimSite

#: how long the demo waits for its site's git repositories at most
_REPOSITORIES_TIMEOUT_S = 60.0


def demo_settings(server: SimServer, base: Settings | None) -> Settings:
    """Settings pointing at a running embedded site (endpoints and session from the server, its
    sites repository, component library and vault password file, working clones in its state dir)."""
    from dataclasses import replace

    from tui.settings import Settings

    settings = Settings.for_site(
        endpoint=server.xmlrpc_url,
        session=server.session,
        flow_url=server.flow_url,
        marketplace_urls=(server.market_url,),
        base=base,
    )
    settings = replace(settings, guest_proxy=server.market_url)
    sim_site = server.site
    if sim_site.sites_repo is None:
        return settings
    return replace(
        settings,
        sites_repo=str(sim_site.sites_repo),
        library_repo=str(sim_site.library_repo),
        vault_password_file=sim_site.vault_password_file,
        sites_token_file=None,
        library_token_file=None,
        repos_dir=Path(sim_site.state_dir) / "clones",
    )


async def _demo_repositories(sim_site: SimSite) -> None:
    """Wait until the demo site's repositories are built (`repositories_ready` of its connection)."""
    import asyncio

    ready = sim_site.repositories_ready
    if not ready.is_set() and not await asyncio.to_thread(ready.wait, _REPOSITORIES_TIMEOUT_S):
        raise SiteError("Demo repositories not ready",
                        f"The demo site did not build its git repositories within {_REPOSITORIES_TIMEOUT_S:g} s.")
    if sim_site.repositories_error is not None:
        error = sim_site.repositories_error
        raise SiteError("Demo repositories could not be built", f"{type(error).__name__}: {error}")


def _run_app(app: SiteToolkitApp) -> int:
    """Run the app; under the start-up benchmark hook (tui.app.BENCH_EXIT_ENV), print when its first
    rows were painted, now that the terminal is restored."""
    from tui.app import BENCH_EXIT_ENV, BENCH_MARK

    code = int(app.run() or 0)
    if os.environ.get(BENCH_EXIT_ENV) == "1" and app.first_rows_at is not None:
        print(f"{BENCH_MARK} {app.first_rows_at:.6f} cpu {app.first_rows_cpu:.6f}", file=sys.stderr, flush=True)
    return code


def demo_state(base: Settings, state_dir: Path) -> Settings:
    """`base` with every file the console writes (audit log, toolkit records, move journal, locks,
    working clones) under `<state_dir>/console`: the demo's own temporary folder, which its site
    removes on exit. Before, `--demo` wrote its audit records, toolkit records and move journal
    into the operator's real state folder (issue 20 item 10)."""
    from dataclasses import replace

    console = Path(state_dir) / "console"
    return replace(base, state_dir=console, audit_log=console / "audit.log", repos_dir=Path(state_dir) / "clones")


def demo_settings_for(endpoints: SimEndpoints, base: Settings) -> Settings:
    """Settings pointing at the demo site running in a child process (`tui.demo_site.SimEndpoints`),
    its state kept in the site's temporary folder (`demo_state`)."""
    from dataclasses import replace

    from tui.settings import Settings

    settings = Settings.for_site(endpoint=endpoints.xmlrpc, session=endpoints.session, flow_url=endpoints.oneflow,
                                 marketplace_urls=(endpoints.marketplace,), base=demo_state(base, endpoints.state_dir))
    settings = replace(settings, guest_proxy=endpoints.marketplace)
    if not endpoints.sites_repo:
        return settings
    return replace(settings, sites_repo=endpoints.sites_repo, library_repo=endpoints.library_repo,
                   vault_password_file=Path(endpoints.vault_password_file), sites_token_file=None,
                   library_token_file=None, repos_dir=endpoints.state_dir / "clones")


def demo_connection(child: SimChild, settings: Settings) -> SiteConnection:
    """The console's connection to the demo site in `child` (a started `SimChild`): its settings
    once the site announced itself, every file the console writes in the child's temporary folder
    (`demo_state`; `$SITETK_AUDIT_LOG` is not followed either), removed with it."""
    from tui.procedures.connection import SiteConnection
    from tui.settings import Settings

    async def settings_ready() -> Settings:
        return demo_settings_for(await child.endpoints(), settings)

    if child.state_dir is None:
        raise RuntimeError("the demo site's child process was not started")
    starting = Settings.for_site(endpoint="the demo site (starting)", session="", flow_url="",
                                 base=demo_state(settings, child.state_dir))
    return SiteConnection(starting, settings_ready=settings_ready, repositories_ready=child.repositories,
                          warm_up=child.request_repositories, audit_from_env=False)


def _start_demo_site(args: argparse.Namespace) -> SimChild:
    """Spawn the demo site's child process (it starts while the console imports Textual)."""
    from tui.demo_site import SimChild

    return SimChild(("--scenario", str(args.scenario), "--vms", str(max(0, int(args.vms or 0))))).start()


def _stop_on_signals(child: SimChild, app: SiteToolkitApp) -> dict[int, Any]:
    """On SIGTERM or SIGHUP stop the demo site at once, then let the app exit (the terminal is
    restored, `finally` blocks run); returns the handlers replaced."""

    def handle(signum: int, _frame: FrameType | None) -> None:
        import asyncio

        child.close()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise SystemExit(128 + signum) from None
        loop.call_soon_threadsafe(app.exit, 128 + signum)

    return {sig: signal.signal(sig, handle) for sig in (signal.SIGTERM, signal.SIGHUP)}


def run_console(args: argparse.Namespace) -> int:
    """Run the console; returns the process exit code."""
    # No garbage collection while the console imports and starts: its imports make few cycles,
    # and full collections over them cost ~20 ms of the start-up; the app re-enables the
    # collector (with its own thresholds, the start-up objects frozen) once its first rows are
    # painted (SiteToolkitApp.on_mount).
    gc.disable()
    # the demo site starts first: its imports and seeding overlap the console's own on another core
    child = _start_demo_site(args) if getattr(args, "demo", False) else None
    try:
        return _run_console(args, child)
    finally:
        if child is not None:
            child.close()


def _run_console(args: argparse.Namespace, child: SimChild | None) -> int:
    from tui.app import SiteToolkitApp
    from tui.procedures.connection import SiteConnection
    from tui.settings import Settings

    try:
        settings = Settings.load()
    except SiteError as error:
        print(f"error: {error.title}", file=sys.stderr)
        if error.detail:
            print(f"  {error.detail}", file=sys.stderr)
        return 2
    read_only = bool(getattr(args, "read_only", False))
    if child is None:
        return _run_app(SiteToolkitApp(SiteConnection(settings), read_only=read_only, reload_settings=Settings.load,
                                       front_door=True))
    app = SiteToolkitApp(demo_connection(child, settings), read_only=read_only, front_door=True)
    previous = _stop_on_signals(child, app)
    try:
        return _run_app(app)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
