"""The route manager's REST API (6G-SANDBOX/route-manager-api v0.2.0), as far as the setup uses it.

`list_routes(address, token)` asks `GET http://<address>:8172/routes/` with `Authorization: Bearer
<token>` (app/routers/routes.py line 22, the trailing slash included: its README's "Beware the
trailing slash"; port 8172: marketplace-community appliances/routemanager/appliance.sh line 122 and
6G-Library .global/cac/routemanager_add.yaml line 4) and returns what it lists: the routes of its
database and of the VM's routing table (routes.py lines 41-47). A refused token is
`RouteManagerRefused` (401 `Invalid or expired token`, app/services/auth.py lines 24-26; 403 when
no bearer credentials reached it); no answer at all is `RouteManagerUnreachable`.

The token travels only in the header: never in the URL, the errors or a log line. The VMs are
reached directly, or through `proxy` (`Settings.guest_proxy`) when the console does not sit on the
default network (the embedded site is reached that way).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from tui.adapters.tls import client_context
from tui.errors import SiteError, redact

PORT = 8172
ROUTES_PATH = "/routes/"
#: the answer of a listing is small; a larger one is not a route manager
_LIMIT = 4 * 1024 * 1024


class RouteManagerUnreachable(SiteError):
    """Nothing answered at the API's address."""


class RouteManagerRefused(SiteError):
    """The API answered and refused the token (401 or 403)."""

    def __init__(self, title: str, detail: str, status: int) -> None:
        super().__init__(title, detail)
        self.status = status


@dataclass(frozen=True)
class RouteListing:
    """What `GET /routes/` listed."""

    url: str
    database_routes: tuple[dict[str, Any], ...]
    system_routes: tuple[str, ...]

    def summary(self) -> str:
        return (f"{len(self.database_routes)} route(s) in its database, {len(self.system_routes)} in the VM's "
                f"routing table")


def api_url(address: str, port: int = PORT) -> str:
    return f"http://{address}:{port}{ROUTES_PATH}"


async def list_routes(address: str, token: str, *, port: int = PORT, proxy: str = "",
                      timeout: float = 10.0) -> RouteListing:
    """`GET /routes/` with the token (module docstring)."""
    url = api_url(address, port)
    hint = f"that the VM runs and the frontend reaches {address} on port {port}" + (
        f" (through the proxy {proxy})" if proxy else "")
    try:
        async with httpx.AsyncClient(timeout=timeout, proxy=proxy or None, trust_env=not proxy,
                                     verify=client_context(trust_env=not proxy), follow_redirects=False) as client:
            response = await client.get(url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise RouteManagerUnreachable(f"The route manager at {url} did not answer",
                                      f"{redact(str(exc), (token,)) or type(exc).__name__}. Check {hint}.") from None
    if proxy and response.status_code in (502, 503, 504) and "json" not in response.headers.get("content-type", ""):
        raise RouteManagerUnreachable(f"The route manager at {url} did not answer",
                                      f"The proxy could not connect ({response.status_code}: "
                                      f"{redact(response.text.strip()[:200], (token,))}). Check {hint}.")
    if response.status_code in (401, 403):
        raise RouteManagerRefused(f"The route manager at {url} refused the token ({response.status_code})",
                                  f"It answered {_detail(response, token)!r}: the API does not take the token the VM "
                                  "published (ONEAPP_ROUTEMANAGER_APITOKEN).", response.status_code)
    if response.status_code != 200:
        raise SiteError(f"The route manager at {url} answered {response.status_code}",
                        f"{_detail(response, token)}; a GET of /routes/ answers 200 on route-manager-api v0.2.0.")
    if len(response.content) > _LIMIT:
        raise SiteError(f"The route manager at {url} sent more than {_LIMIT} bytes", "This is not its listing.")
    try:
        body = response.json()
        database = tuple(dict(r) for r in body["database_routes"])
        system = tuple(str(r) for r in body["system_routes"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SiteError(f"The route manager at {url} answered something else than its route listing",
                        f"{type(exc).__name__}: {redact(str(exc), (token,))}; route-manager-api v0.2.0 answers "
                        "{database_routes, system_routes}.") from None
    return RouteListing(url, database, system)


def _detail(response: httpx.Response, token: str) -> str:
    try:
        detail = response.json().get("detail", "")
    except (ValueError, AttributeError):
        detail = response.text[:200]
    return redact(str(detail), (token,))
