"""`sitetk` without a noun: build the settings (or start the embedded demo site), run the console.

With `--demo` the embedded simulated site starts in this process on free loopback ports, the
settings point at it, and it stops when the console exits. `--read-only` hides every mutating
action. The exit code is the app's (0 after a normal quit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from tui.adapters.errors import SiteError

#: how long the demo waits for its site's git repositories at most
_REPOSITORIES_TIMEOUT_S = 60.0


def demo_settings(server: Any, base: Any) -> Any:
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


async def _demo_repositories(sim_site: Any) -> None:
    """Wait until the demo site's repositories are built (`repositories_ready` of its connection)."""
    ready = sim_site.repositories_ready
    if not ready.is_set() and not await asyncio.to_thread(ready.wait, _REPOSITORIES_TIMEOUT_S):
        raise SiteError("Demo repositories not ready",
                        f"The demo site did not build its git repositories within {_REPOSITORIES_TIMEOUT_S:g} s.")
    if sim_site.repositories_error is not None:
        error = sim_site.repositories_error
        raise SiteError("Demo repositories could not be built", f"{type(error).__name__}: {error}")


def _run_app(app: Any) -> int:
    """Run the app; under the start-up benchmark hook (tui.app.BENCH_EXIT_ENV), print when its first
    rows were painted, now that the terminal is restored."""
    from tui.app import BENCH_EXIT_ENV, BENCH_MARK

    code = int(app.run() or 0)
    if os.environ.get(BENCH_EXIT_ENV) == "1" and app.first_rows_at is not None:
        print(f"{BENCH_MARK} {app.first_rows_at:.6f}", file=sys.stderr, flush=True)
    return code


def run_console(args: argparse.Namespace) -> int:
    """Run the console; returns the process exit code."""
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
    if not getattr(args, "demo", False):
        return _run_app(SiteToolkitApp(SiteConnection(settings), read_only=read_only, reload_settings=Settings.load))

    from tui.sim.runner import start_sim
    from tui.sim.state import SimConfig

    with tempfile.TemporaryDirectory(prefix="sitetk-demo-") as state_dir:
        # the site's git repositories (a few git commands and a vault encryption) are built in the
        # background: the first screen does not need them, the site screen waits for them
        server = start_sim(SimConfig(scenario=args.scenario, extra_vms=max(0, int(args.vms or 0))),
                           state_dir=Path(state_dir), repositories_in_background=True)
        try:
            connection = SiteConnection(demo_settings(server, settings),
                                        repositories_ready=partial(_demo_repositories, server.site))
            return _run_app(SiteToolkitApp(connection, read_only=read_only))
        finally:
            server.stop()
            # the temporary directory goes next: let a build still running finish first
            server.site.repositories_ready.wait(timeout=_REPOSITORIES_TIMEOUT_S)
