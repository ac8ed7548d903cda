"""The connection to one site: its clients, naming profile and settings, and the start-up check.

`SiteConnection(settings)` is what every procedure takes as `site`: `site.cloud` (XML-RPC),
`site.flow` (OneFlow), `site.marketplace` (appliance marketplaces), `site.naming` and
`site.settings`. Clients are created on first use, inside the running event loop, and closed by
`close()`. `connect()` is the start-up check: it asks the platform version and who the session
is, and on failure raises one `SiteError` that says what was tried and how to fix it.
"""

from __future__ import annotations

import os
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable, cast

from tui.domain.endpoints import redact_endpoint
from tui.domain.naming import NamingProfile
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.reading_pass import ReadingPass, reading_pass
from tui.procedures.reading_pass import current as current_pass
from tui.settings import Settings

if TYPE_CHECKING:  # the clients are imported on first use (see `cloud`, `flow`, `marketplace`)
    from tui.adapters.cloud import CloudClient
    from tui.adapters.flow import FlowClient
    from tui.adapters.marketplace import MarketplaceClient
    from tui.procedures.audit import AuditLog

_INFO_HINT = "`sitetk info` lists every setting and where it came from; `sitetk --demo` runs against an embedded demo site."


def _home_relative(path: Path) -> str:
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class ConnectionInfo:
    """Who and where: what the start-up check learned."""

    endpoint: str
    version: str
    user: str
    user_id: int
    group: str


class SiteConnection:
    """Clients, naming and settings of one site (see the module docstring)."""

    def __init__(self, settings: Settings, *,
                 repositories_ready: Callable[[], Awaitable[None]] | None = None,
                 settings_ready: Callable[[], Awaitable[Settings]] | None = None,
                 warm_up: Callable[[], None] | None = None, read_only: bool = False,
                 audit_from_env: bool = True) -> None:
        self.settings = settings
        #: False: the audit log is the settings' even when $SITETK_AUDIT_LOG is set (the demo keeps
        #: its records in its own temporary folder)
        self._audit_from_env = audit_from_env
        #: `--read-only`: every operation (tui.procedures.operation) that changes the site is refused
        self.read_only = read_only
        #: gives the real settings once the site is up (the demo site starting in a child process);
        #: `connect()` awaits it first, until then `settings` only names what is starting
        self._settings_ready = settings_ready
        #: waits until the configured git repositories exist (the demo site builds its own in the
        #: background while the console starts); None: they are remote and always there
        self._repositories_ready = repositories_ready
        #: starts work later screens need and the first frame does not (the demo site's git
        #: repositories); `warm_up()` runs it once
        self._warm_up = warm_up
        self.info: ConnectionInfo | None = None
        self._cloud: CloudClient | None = None
        self._flow: FlowClient | None = None
        self._marketplace: MarketplaceClient | None = None
        self._audit: AuditLog | None = None
        #: changes made without an audit entry of their own (the pipeline records the run once)
        self._unrecorded = 0

    def __repr__(self) -> str:
        return f"SiteConnection({self.endpoint!r}, user={self.settings.one_user!r})"

    @property
    def endpoint(self) -> str:
        """The XML-RPC endpoint for display: credentials in the URL shown as `***@`."""
        return redact_endpoint(self.settings.xmlrpc_url)

    @property
    def naming(self) -> NamingProfile:
        return self.settings.naming

    @property
    def cloud(self) -> CloudClient:
        """The XML-RPC client; raises `SiteError` when there are no usable credentials. Inside a
        reading pass of this connection (`reading_pass`), its reads shared by the pass."""
        reading = current_pass(self)
        if reading is not None:
            return cast("CloudClient", reading)
        if self._cloud is None:
            if not self.settings.has_credentials:
                raise self._no_credentials()
            # imported on first use: the client and the domain models it parses into are ~50 ms,
            # which the app spends while it waits for the site (see SiteToolkitApp.connect)
            from tui.adapters.cloud import CloudClient

            self._cloud = CloudClient(
                self.settings.xmlrpc_url, self.settings.session, self.settings.xmlrpc_timeout,
                verify_ssl=self.settings.ssl_verify,
                cert_dir=str(self.settings.cert_dir) if self.settings.cert_dir else None,
            )
        return self._cloud

    @property
    def flow(self) -> FlowClient:
        if self._flow is None:
            # imported on first use: httpx costs ~0.1 s of the console's start-up, and the first
            # screen (the VM list) needs neither OneFlow nor the marketplaces
            from tui.adapters.flow import FlowClient

            s = self.settings
            self._flow = FlowClient(s.flow_url, s.flow_user, s.flow_password, s.xmlrpc_timeout, verify_ssl=s.ssl_verify)
        return self._flow

    @property
    def marketplace(self) -> MarketplaceClient:
        """The marketplace client; it announces the platform version learned by `connect()`."""
        if self._marketplace is None:
            from tui.adapters.marketplace import MarketplaceClient  # on first use, as in `flow`

            kwargs = {"platform_version": self.info.version} if self.info and self.info.version else {}
            self._marketplace = MarketplaceClient(self.settings.xmlrpc_timeout, verify_ssl=self.settings.ssl_verify,
                                                  **kwargs)
        return self._marketplace

    @property
    def audit(self) -> AuditLog:
        """The audit log mutating procedures record to (`$SITETK_AUDIT_LOG`, else the settings' path)."""
        if self._audit is None:
            from tui.procedures.audit import AUDIT_ENV, AuditLog  # on first use: the first screen reads only

            override = os.environ.get(AUDIT_ENV, "") if self._audit_from_env else ""
            self._audit = AuditLog(Path(override).expanduser() if override else self.settings.audit_log)
        return self._audit

    @property
    def changes(self) -> int:
        """How many changes this connection has made (audit entries, and changes procedures made,
        `note_change`): screens that show derived state (install statuses) reload when it moved
        since their last load."""
        return (self._audit.changes if self._audit is not None else 0) + self._unrecorded

    def note_change(self) -> None:
        """A procedure changed the site (its operation's run is recorded once, by the pipeline)."""
        self._unrecorded += 1

    def warm_up(self) -> None:
        """Start, in the background, what later screens need and the first frame did not (the app
        calls this once its first screen is painted); only the first call does anything."""
        warm_up, self._warm_up = self._warm_up, None
        if warm_up is not None:
            warm_up()

    async def wait_for_repositories(self) -> None:
        """Return once the sites repository and component library can be cloned (at once unless
        the site is still building them); raises `SiteError` when building them failed."""
        if self._repositories_ready is not None:
            await self._repositories_ready()

    def describe(self) -> list[tuple[str, str]]:
        """What the connection uses, with where each value came from; no secret appears."""
        s = self.settings
        src = s.sources

        def sourced(value: str, key: str) -> str:
            origin = src.get(key, "")
            return f"{value}  ({origin})" if origin else value

        session = f"{s.one_user}:***" if s.one_user else "(none)"
        rows = [
            ("XML-RPC endpoint", sourced(redact_endpoint(s.xmlrpc_url), "xmlrpc_url")),
            ("session", sourced(session, "session")),
            ("timeout", sourced(f"{s.xmlrpc_timeout:g} s", "xmlrpc_timeout")),
            ("OneFlow endpoint", sourced(redact_endpoint(s.flow_url), "flow_url")),
            ("config file", _home_relative(s.config_path) + ("" if s.config_found else "  (not found: defaults)")),
        ]
        if s.credentials_problem:
            rows.append(("credentials", s.credentials_problem))
        for warning in (*s.warnings, *s.endpoint_credential_warnings()):
            rows.append(("warning", warning))
        return rows

    def _tried(self) -> str:
        s = self.settings
        user = s.one_user or "(no user)"
        return (f"Tried: {redact_endpoint(s.xmlrpc_url)} ({s.sources.get('xmlrpc_url', 'default')}) as {user} "
                f"({s.sources.get('session', 'no credentials')}), timeout {s.xmlrpc_timeout:g} s.")

    def _no_credentials(self) -> SiteError:
        return SiteError(
            "No credentials for the cloud",
            f"{self.settings.credentials_problem}\n{self._tried()}\n"
            f"How to fix: put one line user:password in ~/.one/one_auth (chmod 600) or set ONE_AUTH to such a "
            f"file, then retry. {_INFO_HINT}",
            retryable=False)

    def reading_pass(self) -> AbstractAsyncContextManager[ReadingPass]:
        """`async with site.reading_pass():` reads each pool once for every check inside it
        (`tui.procedures.reading_pass`): a status pass, never a step's run."""
        return reading_pass(self, self.cloud)

    async def connect(self) -> ConnectionInfo:
        """Check the site answers and the session is accepted; learn version and user."""
        if self._settings_ready is not None:
            # a site that could not start explains itself: its SiteError is passed on as it is
            self.settings = await self._settings_ready()
            self._settings_ready = None
        try:
            cloud = self.cloud
            version, user = await gather(cloud.version(), cloud.whoami())
        except SiteError as error:
            raise self._explain(error) from None
        self.info = ConnectionInfo(self.endpoint, version, user.name, user.id, user.gname)
        return self.info

    def _explain(self, error: SiteError) -> SiteError:
        if error.title == "No credentials for the cloud":
            return error
        from tui.domain.error_codes import AUTHENTICATION

        if error.code == AUTHENTICATION:
            fix = ("How to fix: check the user and password in the credentials file (ONE_AUTH, else "
                   "~/.one/one_auth: one line user:password) and that the user is enabled.")
        elif error.retryable:
            fix = ("How to fix: point ONE_XMLRPC (or ~/.one/one_endpoint) at the frontend, e.g. "
                   "http://frontend:2633/RPC2, check that oned runs and the port is reachable from here; "
                   "raise ONE_XMLRPC_TIMEOUT for a slow frontend.")
        else:
            fix = "How to fix: check ONE_XMLRPC and ONE_AUTH."
        detail = "\n".join(part for part in (error.detail, self._tried(), f"{fix} {_INFO_HINT}") if part)
        return type(error)(f"Cannot connect: {error.title}", detail, retryable=error.retryable, code=error.code)

    async def use(self, settings: Settings) -> None:
        """Point at other settings (e.g. read again after the operator fixed a file); the clients
        reopen on next use."""
        await self.close()
        self.settings = settings
        self.info = None

    async def close(self) -> None:
        """Close every client that was opened (safe to call more than once)."""
        cloud, flow, market = self._cloud, self._flow, self._marketplace
        self._cloud = self._flow = self._marketplace = None
        if cloud is not None:
            await cloud.close()
        if flow is not None:
            await flow.close()
        if market is not None:
            await market.close()
