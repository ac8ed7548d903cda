"""HTTP failures of the REST clients (OneFlow, marketplaces) as `SiteError`s, and their bounded read.

Shared by `flow` and `marketplace`: timeouts, refused or dropped connections, TLS problems and
unreadable bodies read the same whichever service answered; `service` names it in the message
and `hint` says which setting points at it. `bounded_request` reads an answer's body streamed,
at most `MAX_RESPONSE_BYTES` of it (`ResponseTooLarge` beyond): a server that sends gigabytes
never fills the console's memory.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx

from tui.domain.bounded import MAX_RESPONSE_BYTES, size_text
from tui.domain.endpoints import endpoint_secrets, redact_endpoint
from tui.errors import SiteError, redact

__all__ = ["MAX_RESPONSE_BYTES", "ResponseTooLarge", "bounded_request", "malformed", "transport_error"]


class ResponseTooLarge(ValueError):
    """An answer whose body is larger than the limit."""


async def bounded_request(client: httpx.AsyncClient, method: str, url: str, limit: int = MAX_RESPONSE_BYTES,
                          **kwargs: Any) -> httpx.Response:
    """`client.request(...)` with the body read streamed and at most `limit` bytes long."""
    request = client.build_request(method, url, **kwargs)
    response = await client.send(request, stream=True)
    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise ResponseTooLarge(f"the answer is {size_text(int(declared))}, more than the {size_text(limit)} "
                                   "accepted")
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():  # decoded: a compressed bomb counts at its real size
            size += len(chunk)
            if size > limit:
                raise ResponseTooLarge(f"the answer is larger than the {size_text(limit)} accepted")
            chunks.append(chunk)
    finally:
        await response.aclose()
    headers = [(key, value) for key, value in response.headers.multi_items()
               if key.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
    return httpx.Response(response.status_code, headers=headers, content=b"".join(chunks), request=request,
                          extensions=response.extensions)


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def transport_error(exc: BaseException, *, service: str, url: str, timeout: float, hint: str,
                    secrets: tuple[str, ...] = ()) -> SiteError:
    """A `SiteError` for an exception raised while talking to `url` (no HTTP answer to read);
    credentials written into `url` never appear (`tui.domain.endpoints`)."""
    text = redact(str(exc), secrets + endpoint_secrets(url)) or type(exc).__name__
    url = redact_endpoint(url)
    if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
        return SiteError(f"No answer from {url} within {timeout:g} s",
                         f"{service} did not answer in time: it may be overloaded or unreachable.", retryable=True)
    if isinstance(exc, httpx.ConnectError):
        if _caused_by(exc, ConnectionRefusedError) or "refused" in text.lower():
            return SiteError(f"Nothing listening at {url}",
                             f"The connection was refused: is {service} running? Check {hint}.", retryable=True)
        if _caused_by(exc, ssl.SSLError):
            return SiteError(f"TLS handshake with {url} failed", f"{text}. Check the certificate of {service}.")
        return SiteError(f"Cannot reach {url}", f"{text}. Check the network and {hint}.", retryable=True)
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return SiteError(f"Connection to {url} dropped",
                         f"{service} closed the connection ({text}). Retry; if it persists, check {service}.",
                         retryable=True)
    if isinstance(exc, httpx.InvalidURL) or isinstance(exc, httpx.UnsupportedProtocol):
        return SiteError(f"Bad URL {url}", f"{text}. Check {hint}.")
    if isinstance(exc, httpx.HTTPError):
        return SiteError(f"Request to {url} failed", f"{text}.", retryable=True)
    return SiteError(f"Unexpected failure talking to {url}", f"{type(exc).__name__}: {text}")


def malformed(url: str, service: str, problem: str) -> SiteError:
    return SiteError(f"Malformed answer from {redact_endpoint(url)}",
                     f"{redact(problem, endpoint_secrets(url))}. Is it really {service}?")
