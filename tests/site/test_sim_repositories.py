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
