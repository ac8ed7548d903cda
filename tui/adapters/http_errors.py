"""HTTP failures of the REST clients (OneFlow, marketplaces) as `SiteError`s.

Shared by `flow` and `marketplace`: timeouts, refused or dropped connections, TLS problems and
unreadable bodies read the same whichever service answered; `service` names it in the message
and `hint` says which setting points at it.
"""

from __future__ import annotations

import ssl

import httpx

from tui.errors import SiteError, redact


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
    """A `SiteError` for an exception raised while talking to `url` (no HTTP answer to read)."""
    text = redact(str(exc), secrets) or type(exc).__name__
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
    return SiteError(f"Malformed answer from {url}", f"{problem}. Is it really {service}?")
