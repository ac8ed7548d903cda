"""Fixtures of the toolkit tests: a connection to the embedded site with the toolkit downloaded.

`toolkit_site(one_version="7.0.0")` starts a fresh embedded site, connects the way the console
does, downloads the toolkit appliance with the marketplace procedure (operation 2: its images,
VM templates and the service template) and returns `(server, site, template)`.

By default it also disables the hosts whose CPU cannot run the manager's document database
(no AVX, or no CPU features reported): the scheduler would otherwise place the manager there,
where it runs but never reports READY, and the service would stay DEPLOYING until the manager is
moved (operation 7, another screen). Tests of that situation pass `compatible_only=False`.

Every test gets its own HOME and XDG directories, so the state directory (site records) and the
audit log are private to it.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest

from tests.conftest import isolate_home
from tui.domain.input_file import InputFile
from tui.domain.services import ServiceTemplate
from tui.procedures.connection import SiteConnection
from tui.procedures.toolkit.service import ToolkitForm, find_toolkit_template
from tui.screenshots import download_newest_toolkit, only_database_hosts
from tui.settings import Settings
from tui.sim.server import SimServer

#: bounds for a site running at time_scale 0.02 (the toolkit reaches RUNNING in a few seconds)
FAST: dict[str, float] = {"timeout": 120.0, "key_timeout": 60.0, "poll_interval": 0.05}

ToolkitSite = Callable[..., Awaitable[tuple[SimServer, SiteConnection, ServiceTemplate]]]


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


def settings_for(server: SimServer) -> Settings:
    return Settings.for_site(server.xmlrpc_url, server.session, server.flow_url, (server.market_url,))


#: the screenshot scenes' helpers, shared so tests and pictures prepare the site the same way
compatible_hosts_only = only_database_hosts
download_toolkit = download_newest_toolkit


@pytest.fixture
async def toolkit_site(site_factory: Callable[..., SimServer]) -> AsyncIterator[ToolkitSite]:
    opened: list[SiteConnection] = []

    async def factory(one_version: str = "7.0.0", compatible_only: bool = True,
                      server: SimServer | None = None) -> tuple[SimServer, SiteConnection, ServiceTemplate]:
        server = server or site_factory(one_version=one_version)
        if compatible_only:
            compatible_hosts_only(server)
        site = SiteConnection(settings_for(server))
        opened.append(site)
        await site.connect()
        template_id = await download_toolkit(site)
        return server, site, await find_toolkit_template(site, template_id)

    yield factory
    for site in opened:
        await site.close()


def filled(form: ToolkitForm, name: str = "Site Toolkit v0.5.0 test", **overrides: str) -> tuple[InputFile, dict[str, str]]:
    """A valid input file for the form, and the secrets it uses (generated, held in memory)."""
    values = dict(form.skeleton().value_map())
    secret_values = {f.name: "S3cret-" + secrets.token_urlsafe(12) for f in form.fields if f.secret and f.mandatory}
    naming = form.naming
    values.update({
        naming.input_name(f"{naming.role_objectstore}_hostname"): "s3.site.org,*.s3.site.org",
        naming.input_name(f"{naming.role_manager}_sites_branch"): "demo-site",
        naming.input_name(f"{naming.role_manager}_deployment_site"): "demo-site",
        naming.input_name(f"{naming.role_automation}_cloud_username"): "tkauto",
    })
    values.update(secret_values)
    values.update(overrides)
    networks = tuple((spec.name, form.network_defaults.get(spec.name) or "0") for spec in form.networks)
    return InputFile(name, tuple(values.items()), networks), secret_values


async def eventually(probe: Callable[[], Awaitable[Any]], what: str, timeout: float = 60.0) -> Any:
    """Poll an async probe of the site (each call is a request, which also moves the embedded
    site's time forward) until it returns something truthy; fail naming `what` after `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while loop.time() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last: {last!r})")
