"""The embedded site's repositories and demo vault password file, seeded with every scenario."""

from __future__ import annotations

import stat
import subprocess

from tests.conftest import SimFactory
from tui.adapters.vault import read_password_file
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD


def branches(bare: object) -> list[str]:
    out = subprocess.run(["git", "--git-dir", str(bare), "branch", "--format=%(refname:short)"], capture_output=True, text=True, check=True)
    return sorted(out.stdout.split())


def test_every_site_gets_its_own_repositories(sim_factory: SimFactory) -> None:
    first, second = sim_factory(), sim_factory(scenario="deployed")
    for server in (first, second):
        site = server.site
        assert site.sites_repo is not None and site.library_repo is not None and site.vault_password_file is not None
        assert site.sites_repo.parent == site.state_dir and branches(site.sites_repo) == ["demo-site", "main"]
        assert stat.S_IMODE(site.vault_password_file.stat().st_mode) == 0o600
        assert read_password_file(site.vault_password_file).text == SIM_VAULT_PASSWORD
    # copies, not shared: a branch pushed to one site's repository is not in the other's
    subprocess.run(["git", "--git-dir", str(first.site.sites_repo), "branch", "extra", EXISTING_SITE], check=True)
    assert "extra" in branches(first.site.sites_repo) and "extra" not in branches(second.site.sites_repo)


def test_repositories_built_in_the_background_are_waited_for(tmp_path: object) -> None:
    """The demo's start-up: the repositories are built in a thread, the connection waits for them."""
    import asyncio
    from functools import partial
    from pathlib import Path

    from tui.console import _demo_repositories
    from tui.procedures.connection import SiteConnection
    from tui.settings import Settings
    from tui.sim.runner import start_sim
    from tui.sim.state import SimConfig

    server = start_sim(SimConfig(), state_dir=Path(str(tmp_path)) / "state", repositories_in_background=True)
    try:
        site = server.site
        assert site.sites_repo == site.state_dir / "sites.git" and site.library_repo == site.state_dir / "library.git"
        assert site.vault_password_file is not None and site.vault_password_file.exists()
        connection = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url),
                                    repositories_ready=partial(_demo_repositories, site))
        asyncio.run(connection.wait_for_repositories())
        assert site.repositories_ready.is_set() and site.repositories_error is None
        assert branches(site.sites_repo) == ["demo-site", "main"] and branches(site.library_repo) == ["main"]
    finally:
        server.stop()
        server.site.repositories_ready.wait(timeout=60)


def test_a_failed_background_build_is_reported_when_waited_for(tmp_path: object) -> None:
    import asyncio
    from pathlib import Path

    import pytest

    from tui.console import _demo_repositories
    from tui.errors import SiteError
    from tui.sim.state import SimConfig, SimSite

    site = SimSite(SimConfig(), Path(str(tmp_path)))
    site.repositories_error = RuntimeError("git: not found")
    site.repositories_ready.set()
    with pytest.raises(SiteError, match="could not be built") as caught:
        asyncio.run(_demo_repositories(site))
    assert "git: not found" in caught.value.detail
