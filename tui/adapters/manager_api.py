"""The trial-network manager's REST API client (6G-SANDBOX/TNLCM, v0.5.2 read; port 5000).

The calls the existing installer's last step makes, and what following a trial network needs
(routes: core/routes/user.py 88-120 and core/routes/trial_network.py at v0.5.2; the embedded
site's tui.sim.manager_api cites each line):

- `login(user, password)`: `POST /api/v1/user/login` with HTTP Basic, 201 `{access_token, ...}`;
  the access token is then sent as `Authorization: Bearer ...` and never shown;
- `create(...)`: `POST /api/v1/trial-network?validate=True`, multipart (the descriptor as a file,
  the sites branch, deployment site and the vault token in the form body, never in the URL);
- `get`, `activate` (`PUT .../activate`: the manager answers when the deploy pipeline has
  finished, so its time limit is the caller's), `destroy`, `purge`, `log`, `report`.

Every failure is a `SiteError` naming the call: the manager's own `message` (or flask-jwt's
`msg`) is quoted with any secret of the call masked; a wrong admin password is an
`AuthenticationFailed`.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Mapping

import httpx

from tui.adapters.http_errors import ResponseTooLarge, bounded_request, malformed, transport_error
from tui.adapters.tls import client_context
from tui.errors import AuthenticationFailed, SiteError, redact

API = "/api/v1"
#: the manager's source this client (and the embedded site's manager) was checked against: its newest
#: tag and its main branch, which differ only by a route the console does not call (README, "Proving
#: the site works": the differences, file and line); the previews and unknown states name it
CHECKED_AGAINST = "TNLCM v0.5.2 (and main be212ac of 2025-06-30)"
#: what says where the manager is, in the errors
HINT = "the manager's address (the manager VM's, port 5000; SITETK_MANAGER_URL or manager_url in [site])"
SERVICE = "the trial-network manager"
#: the log can be long (the pipelines' consoles): 8 MiB at most
LOG_LIMIT = 8 * 1024 * 1024


class ManagerError(SiteError):
    """An answer of the manager that refuses the call (`code` is the HTTP status)."""


class ManagerApi:
    def __init__(self, base_url: str, *, timeout: float = 30.0, secrets: tuple[str, ...] = (), proxy: str = "",
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.proxy = proxy
        self._secrets = tuple(s for s in secrets if s)
        self._token = ""
        self._client = httpx.AsyncClient(timeout=timeout, transport=transport, follow_redirects=False,
                                         proxy=proxy or None, trust_env=not proxy,
                                         verify=client_context(trust_env=not proxy))

    async def close(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> "ManagerApi":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def url(self, path: str) -> str:
        return f"{self.base_url}{API}{path}"

    def _hide(self, text: str) -> str:
        return redact(text, self._secrets + ((self._token,) if self._token else ()))

    async def _call(self, method: str, path: str, what: str, *, timeout: float | None = None, limit: int = 1024 * 1024,
                    **kwargs: Any) -> tuple[int, Any]:
        url = self.url(path)
        headers = dict(kwargs.pop("headers", {}))
        if self._token and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {self._token}"
        wait = timeout if timeout is not None else self.timeout
        try:
            response = await bounded_request(self._client, method, url, limit, headers=headers,
                                             timeout=httpx.Timeout(self.timeout, read=wait), **kwargs)
        except ResponseTooLarge as error:
            raise malformed(url, SERVICE, f"{what}: {error}") from None
        except httpx.HTTPError as error:
            raise transport_error(error, service=SERVICE, url=url, timeout=wait, hint=HINT, secrets=self._secrets) from None
        if self.proxy and response.status_code in (502, 503, 504) and "json" not in response.headers.get(
                "content-type", ""):  # the proxy's own answer: it could not reach the manager
            raise SiteError(f"Nothing answering at {url} (through the proxy {self.proxy})",
                            f"The proxy could not connect ({response.status_code}: "
                            f"{self._hide(response.text.strip()[:200])}): is {SERVICE} running? Check {HINT}.",
                            retryable=True)
        try:
            payload = json.loads(response.content or b"null")
        except (ValueError, UnicodeDecodeError):
            payload = None
        return response.status_code, payload

    def _refused(self, what: str, status: int, payload: Any) -> ManagerError:
        said = ""
        if isinstance(payload, Mapping):
            said = str(payload.get("message") or payload.get("msg") or "")
            errors = payload.get("errors")
            if isinstance(errors, Mapping):
                said += " (" + "; ".join(f"{k}: {v}" for k, v in errors.items()) + ")"
        said = self._hide(said) or "no message"
        return ManagerError(f"The manager refused {what} (HTTP {status})", said, code=status,
                            retryable=status >= 500)

    async def login(self, user: str, password: str) -> None:
        """`POST /user/login` with Basic credentials; keeps the access token (201)."""
        self._secrets += (password,)
        basic = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        status, payload = await self._call("POST", "/user/login", "the login", headers={"Authorization": f"Basic {basic}"})
        if status in (401, 404):
            said = self._hide(str(payload.get("message", "")) if isinstance(payload, Mapping) else "")
            raise AuthenticationFailed(f"The manager refused the login of {user!r} (HTTP {status})",
                                       f"{said or 'no message'}. The admin user and password are the toolkit's manager "
                                       "inputs (the input file's, else the manager VM's CONTEXT).", code=status)
        if status != 201 or not isinstance(payload, Mapping) or not isinstance(payload.get("access_token"), str):
            raise self._refused("the login", status, payload)
        self._token = payload["access_token"]

    async def create(self, tn_id: str, descriptor: str, descriptor_name: str, library_type: str, library_value: str,
                     sites_branch: str, deployment_site: str, site_token: str) -> dict[str, Any]:
        """`POST /trial-network?validate=True` (201: validated)."""
        self._secrets += (site_token,)
        form = {"tn_id": tn_id, "library_reference_type": library_type, "library_reference_value": library_value,
                "sites_branch": sites_branch, "deployment_site": deployment_site, "deployment_site_token": site_token}
        status, payload = await self._call("POST", "/trial-network", f"the trial network {tn_id}",
                                           params={"validate": "True"}, data=form,
                                           files={"descriptor": (descriptor_name, descriptor.encode(), "text/yaml")})
        if status != 201 or not isinstance(payload, Mapping):
            raise self._refused(f"the trial network {tn_id}", status, payload)
        return dict(payload)

    async def get(self, tn_id: str) -> dict[str, Any] | None:
        """`GET /trial-networks/<tn_id>`; None when the manager has none (404)."""
        status, payload = await self._call("GET", f"/trial-networks/{tn_id}", f"reading {tn_id}")
        if status == 404:
            return None
        if status != 200 or not isinstance(payload, Mapping):
            raise self._refused(f"reading {tn_id}", status, payload)
        return dict(payload)

    async def list(self) -> list[dict[str, Any]]:
        status, payload = await self._call("GET", "/trial-networks", "the list of trial networks")
        items = payload.get("trial_networks") if isinstance(payload, Mapping) else None
        if status != 200 or not isinstance(items, list):
            raise self._refused("the list of trial networks", status, payload)
        return [dict(i) for i in items if isinstance(i, Mapping)]

    async def _action(self, method: str, tn_id: str, action: str, timeout: float | None = None) -> str:
        status, payload = await self._call(method, f"/trial-networks/{tn_id}/{action}", f"{action} of {tn_id}",
                                           timeout=timeout)
        if status != 200:
            raise self._refused(f"the {action} of {tn_id}", status, payload)
        return self._hide(str(payload.get("message", ""))) if isinstance(payload, Mapping) else ""

    async def activate(self, tn_id: str, timeout: float) -> str:
        """`PUT .../activate`: answers once the deploy pipeline has finished (or failed)."""
        return await self._action("PUT", tn_id, "activate", timeout)

    async def destroy(self, tn_id: str, timeout: float) -> str:
        return await self._action("DELETE", tn_id, "destroy", timeout)

    async def purge(self, tn_id: str) -> str:
        return await self._action("DELETE", tn_id, "purge")

    async def log(self, tn_id: str) -> str:
        status, payload = await self._call("GET", f"/trial-networks/{tn_id}/log/content", f"the log of {tn_id}",
                                           limit=LOG_LIMIT)
        if status != 200 or not isinstance(payload, Mapping):
            raise self._refused(f"the log of {tn_id}", status, payload)
        return self._hide(str(payload.get("log_content", "")))

    async def report(self, tn_id: str) -> str:
        status, payload = await self._call("GET", f"/trial-networks/{tn_id}/report/content", f"the report of {tn_id}")
        if status != 200 or not isinstance(payload, Mapping):
            raise self._refused(f"the report of {tn_id}", status, payload)
        return self._hide(str(payload.get("report_content", "")))
