"""Start the simulated site in-process: build the state, listen, seed the scenario.

The same entry serves `sitetk sim`, `sitetk --demo` and the test fixtures. The server listens
before seeding because the marketplaces' ENDPOINTs name the site's own URL. The state directory
receives everything the CLI needs to reach the site:

- `one_auth` (the oneadmin session, mode 0600), `one_endpoint` and `oneflow_endpoint`, laid out
  like a frontend's ~/.one;
- `config.toml`, the console's config file for this site: the sites and library repositories and
  the vault password file (`[site]`), the console's own state under `<state_dir>/console`;
- `env`, the shell lines that point the CLI at all of it (`ONE_AUTH`, `ONE_XMLRPC`, `ONEFLOW_URL`,
  `SITETK_CONFIG`): `. <state_dir>/env && sitetk market list`.
"""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.sim.scenarios import seed
from tui.sim.server import SimServer
from tui.sim.state import SimConfig, SimSite


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(path, 0o600)


def start_sim(config: SimConfig, state_dir: Path | None = None, host: str = "127.0.0.1", port: int = 0,
              naming: NamingProfile = DEFAULT_NAMING, *, repositories_in_background: bool = False,
              repositories_on_request: bool = False, listen_host: str | None = None) -> SimServer:
    """A started, seeded simulated site; stop it with `SimServer.stop()`. With
    `repositories_in_background` its git repositories are built in a thread: wait for
    `server.site.repositories_ready` before using them; with `repositories_on_request` too, the
    thread starts at `tui.sim.repos.request_repositories(server.site)` (tui.sim.repos). Its URLs name
    `host`; it listens on `listen_host` when given (`SimServer`)."""
    if config.time_scale <= 0:
        raise ValueError(f"time_scale must be positive, not {config.time_scale}")
    if config.extra_vms < 0:
        raise ValueError(f"the number of extra VMs cannot be negative ({config.extra_vms})")
    directory = Path(state_dir) if state_dir is not None else Path(tempfile.mkdtemp(prefix="sitetk-sim-"))
    directory.mkdir(parents=True, exist_ok=True)
    site = SimSite(config, directory, naming)
    server = SimServer(site, host, port, listen_host=listen_host).start()
    try:
        with site.lock:
            seed(site, repositories_in_background=repositories_in_background,
                 repositories_on_request=repositories_on_request)
    except BaseException:
        server.stop()
        raise
    _write_private(directory / "one_auth", server.session + "\n")
    (directory / "one_endpoint").write_text(server.xmlrpc_url + "\n")
    write_client_files(server)
    return server


def _toml_string(value: str) -> str:
    """A TOML basic string (backslashes and quotes escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_client_files(server: SimServer) -> None:
    """`oneflow_endpoint`, `config.toml` and `env` in the state directory (see the module docstring)."""
    site = server.site
    directory = site.state_dir
    (directory / "oneflow_endpoint").write_text(server.flow_url + "\n")
    lines = ["# the console's config file for the embedded site (sitetk sim)",
             f"state_dir = {_toml_string(str(directory / 'console'))}", "", "[site]"]
    # the VMs' services (the route manager, the trial-network manager) are reached through that port as
    # through an HTTP proxy (tui.sim.route_manager, tui.sim.manager_api)
    for key, value in (("sites_repo", site.sites_repo), ("library_repo", site.library_repo),
                       ("vault_password_file", site.vault_password_file), ("guest_proxy", server.market_url)):
        if value:
            lines.append(f"{key} = {_toml_string(str(value))}")
    (directory / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    exports = {"ONE_AUTH": directory / "one_auth", "ONE_XMLRPC": server.xmlrpc_url,
               "ONEFLOW_URL": server.flow_url, "SITETK_CONFIG": directory / "config.toml"}
    (directory / "env").write_text(
        "# point sitetk at the embedded site: . <this file>\n"
        + "".join(f"export {name}={shlex.quote(str(value))}\n" for name, value in exports.items()),
        encoding="utf-8")
