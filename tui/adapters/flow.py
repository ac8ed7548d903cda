"""`FlowClient`: the async client of OneFlow's REST API (multi-VM services), over httpx.

HTTP Basic auth on every request (never in the URL). Envelopes carry string values ("ID": "5")
and a single document in a pool is still a list (tolerated as an object too); they become the
same `Document` the cloud adapter reads, then `ServiceTemplate` / `Service`. Error answers are
read by `tui.adapters.flow_errors` (the body tells refused credentials from a refused action; a
500 that can never succeed is not retryable), plus timeouts (bounded in total, not per phase),
refused connections and invalid JSON, all as `SiteError`.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Mapping

import httpx

from tui import timing
from tui.adapters.flow_errors import flow_http_error
from tui.adapters.http_errors import MAX_RESPONSE_BYTES, ResponseTooLarge, bounded_request, malformed, transport_error
from tui.adapters.retry import DEFAULT_POLICY, RetryPolicy, deadline_after, reconciled_write, retry_read
from tui.adapters.tls import client_context
from tui.domain.bounded import BoundedInputError, load_json
from tui.domain.documents import Document
from tui.domain.endpoints import endpoint_secrets, redact_endpoint, without_credentials
from tui.domain.permissions import PERMISSION_TAGS, Permissions
from tui.domain.services import Service, ServiceTemplate, service_from_document, service_template_from_document
from tui.errors import SiteError, redact

_HINT = "ONEFLOW_URL (or ~/.one/oneflow_endpoint)"
_SERVICE = "OneFlow"

def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def document_from_envelope(doc: Mapping[str, Any]) -> Document:
    """A `{"ID": "5", ..., "TEMPLATE": {"BODY": {...}}}` envelope as a `Document`."""
    template = doc.get("TEMPLATE") or {}
    body = template.get("BODY") if isinstance(template, Mapping) else None
    if isinstance(body, str):  # some servers send the body as JSON text
        try:
            body = load_json(body, "a document body", scan=False)
        except ValueError:
            body = None
    perms = doc.get("PERMISSIONS") or {}
    return Document(
        id=_int(doc.get("ID"), -1),
        name=str(doc.get("NAME", "")),
        uid=_int(doc.get("UID")),
        gid=_int(doc.get("GID")),
        uname=str(doc.get("UNAME", "")),
        gname=str(doc.get("GNAME", "")),
        type=_int(doc.get("TYPE")),
        permissions=Permissions(*(_int(perms.get(k)) for k in PERMISSION_TAGS))
        if isinstance(perms, Mapping) else Permissions(),
        body_text=json.dumps(body) if isinstance(body, Mapping) else "",
        body=dict(body) if isinstance(body, Mapping) else None,
    )


class FlowClient:
    """Async client of one OneFlow server (`http://host:2474`)."""

    def __init__(self, url: str, user: str, password: str, timeout: float = 30.0, *, verify_ssl: bool = True,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """`transport` replaces httpx's own (the recorder captures the wire with it, tests/recordings)."""
        #: the URL as messages show it (credentials written into it as `***@`)
        self.url = redact_endpoint(url.rstrip("/"))
        self.user = user
        self.timeout = float(timeout)
        self._secrets = ((password,) if password else ()) + endpoint_secrets(url)
        self._client = httpx.AsyncClient(
            base_url=without_credentials(url.rstrip("/")), auth=httpx.BasicAuth(user, password), timeout=httpx.Timeout(self.timeout),
            verify=client_context(verify_ssl), follow_redirects=False, transport=transport,
            headers={"Accept": "application/json", "User-Agent": "sitetk"},
        )
        #: how GETs are retried and writes reconciled (`tui.adapters.retry`)
        self.retry_policy: RetryPolicy = DEFAULT_POLICY

    def __repr__(self) -> str:
        return f"FlowClient({self.url!r}, user={self.user!r}, timeout={self.timeout:g})"

    async def close(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> "FlowClient":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # plumbing ----------------------------------------------------------------------------------
    async def _request(self, method: str, path: str, body: Any = None, *, secrets: tuple[str, ...] = ()) -> httpx.Response:
        """One request; a GET is a read, retried while it can succeed (`tui.adapters.retry`)."""
        if method == "GET":
            return await retry_read(lambda deadline: self._attempt(method, path, body, deadline, secrets),
                                    timeout=self.timeout, policy=self.retry_policy)
        return await self._attempt(method, path, body, deadline_after(self.timeout), secrets)

    async def _attempt(self, method: str, path: str, body: Any, deadline: float,
                       secrets: tuple[str, ...]) -> httpx.Response:
        hidden = self._secrets + tuple(s for s in secrets if s)
        try:
            response = await asyncio.wait_for(
                bounded_request(self._client, method, path, MAX_RESPONSE_BYTES, json=body),
                timing.left_until(deadline))
        except asyncio.CancelledError:
            raise
        except ResponseTooLarge as exc:
            raise malformed(self.url, _SERVICE, f"{method} {path}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SiteError
            raise transport_error(exc, service=_SERVICE, url=self.url, timeout=self.timeout, hint=_HINT,
                                  secrets=hidden) from None
        if response.status_code >= 400:
            text = redact(response.text.strip(), hidden)[:2000]
            raise flow_http_error(method, path, response.status_code, text)
        return response

    def _json(self, response: httpx.Response, path: str) -> Any:
        try:
            return load_json(response.content, f"the answer to {path}", scan=False)
        except BoundedInputError as exc:
            raise malformed(self.url, _SERVICE, exc.message) from None
        except ValueError as exc:
            raise malformed(self.url, _SERVICE, f"{path} answered invalid JSON ({exc})") from None

    def _document(self, data: Any, path: str) -> Document:
        doc = data.get("DOCUMENT") if isinstance(data, Mapping) else None
        if not isinstance(doc, Mapping):
            raise malformed(self.url, _SERVICE, f"{path} answered no DOCUMENT object")
        return document_from_envelope(doc)

    def _pool(self, data: Any, path: str) -> tuple[Document, ...]:
        pool = data.get("DOCUMENT_POOL") if isinstance(data, Mapping) else None
        if not isinstance(pool, Mapping):
            raise malformed(self.url, _SERVICE, f"{path} answered no DOCUMENT_POOL object")
        docs = pool.get("DOCUMENT", [])
        if isinstance(docs, Mapping):
            docs = [docs]
        if not isinstance(docs, list):
            raise malformed(self.url, _SERVICE, f"{path}: DOCUMENT_POOL.DOCUMENT is not a list")
        return tuple(document_from_envelope(d) for d in docs if isinstance(d, Mapping))

    def _template(self, doc: Document, path: str) -> ServiceTemplate:
        try:
            return service_template_from_document(doc)
        except ValueError as exc:
            raise malformed(self.url, _SERVICE, f"{path}: {exc}") from None

    def _service(self, doc: Document, path: str) -> Service:
        try:
            return service_from_document(doc)
        except ValueError as exc:
            raise malformed(self.url, _SERVICE, f"{path}: {exc}") from None

    # service templates -------------------------------------------------------------------------
    async def list_service_templates(self) -> tuple[ServiceTemplate, ...]:
        path = "/service_template"
        docs = self._pool(self._json(await self._request("GET", path), path), path)
        return tuple(self._template(doc, path) for doc in docs)

    async def get_service_template(self, template_id: int) -> ServiceTemplate:
        path = f"/service_template/{int(template_id)}"
        return self._template(self._document(self._json(await self._request("GET", path), path), path), path)

    async def create_service_template(self, body: Mapping[str, Any]) -> ServiceTemplate:
        """Register a service template from its body (`name`, `roles`, ...). Never sent twice
        blindly: after a failure whose outcome is unknown, a template of that name that was not
        there before is the one this call made (`tui.adapters.retry.reconciled_write`)."""
        path = "/service_template"
        name = str(body.get("name", ""))

        async def write(deadline: float) -> ServiceTemplate:
            response = await self._attempt("POST", path, dict(body), deadline, ())
            return self._template(self._document(self._json(response, path), path), path)

        if not name:
            return await write(deadline_after(self.timeout))
        before = {t.id for t in await self.list_service_templates() if t.name == name}

        async def read_back() -> ServiceTemplate | None:
            new = [t for t in await self.list_service_templates() if t.name == name and t.id not in before]
            if len(new) > 1:
                raise SiteError(f"Several new service templates named {name!r}",
                                "The request may have run twice (or another operator made one at the same time): "
                                f"ids {', '.join(str(t.id) for t in new)}.")
            return new[0] if new else None

        return await reconciled_write(write, read_back, timeout=self.timeout,
                                      what=f"a service template named {name!r}", policy=self.retry_policy)

    async def delete_service_template(self, template_id: int) -> None:
        """Delete a service template; after a failure whose outcome is unknown it is read back
        (404: the delete happened)."""
        path = f"/service_template/{int(template_id)}"

        async def write(deadline: float) -> bool:
            await self._attempt("DELETE", path, None, deadline, ())
            return True

        async def read_back() -> bool | None:
            try:
                await self.get_service_template(template_id)
            except SiteError as error:
                if error.code == 404:
                    return True
                raise
            return None

        await reconciled_write(write, read_back, timeout=self.timeout, what=f"service template {template_id}",
                               policy=self.retry_policy)

    async def instantiate(self, template_id: int, merge_template: Mapping[str, Any],
                          secrets: tuple[str, ...] = ()) -> Service:
        """Instantiate a service template; `merge_template` holds `name`, the input values
        (`user_inputs_values` or `custom_attrs_values`), `networks_values`, optional `roles`.
        `secrets` (input values) are redacted from any error the server sends back."""
        path = f"/service_template/{int(template_id)}/action"
        payload = {"action": {"perform": "instantiate", "params": {"merge_template": dict(merge_template)}}}
        response = await self._request("POST", path, payload, secrets=secrets)
        return self._service(self._document(self._json(response, path), path), path)

    async def service_template_action(self, template_id: int, perform: str,
                                      params: Mapping[str, Any] | None = None) -> ServiceTemplate | None:
        """chown, chgrp, chmod, rename (None) or clone (the new template) on a service template."""
        path = f"/service_template/{int(template_id)}/action"
        response = await self._request("POST", path, {"action": {"perform": perform, "params": dict(params or {})}})
        if response.status_code == 204 or not response.content.strip():
            return None
        return self._template(self._document(self._json(response, path), path), path)

    # services ----------------------------------------------------------------------------------
    async def list_services(self) -> tuple[Service, ...]:
        path = "/service"
        docs = self._pool(self._json(await self._request("GET", path), path), path)
        return tuple(self._service(doc, path) for doc in docs)

    async def get_service(self, service_id: int) -> Service:
        path = f"/service/{int(service_id)}"
        return self._service(self._document(self._json(await self._request("GET", path), path), path), path)

    async def delete_service(self, service_id: int) -> None:
        """`oneflow delete`: undeploy a service (terminates its VMs). OneFlow refuses it (500
        "Service cannot be undeployed in state: X") for a failed or transient service; that one
        goes with `recover_delete`."""
        await self._request("DELETE", f"/service/{int(service_id)}")

    async def recover_delete(self, service_id: int) -> None:
        """`oneflow recover --delete`: `{"action": {"perform": "recover", "params": {"delete": true}}}`
        (src/cli/oneflow release-7.4.0 202-219; oneflow-server.rb 375-380), which undeploys the
        service whatever its state."""
        await self.service_action(service_id, "recover", {"delete": True})

    async def service_action(self, service_id: int, perform: str, params: Mapping[str, Any] | None = None) -> None:
        """recover, chown, ..., or a VM action applied to the service's VMs."""
        path = f"/service/{int(service_id)}/action"
        await self._request("POST", path, {"action": {"perform": perform, "params": dict(params or {})}})
