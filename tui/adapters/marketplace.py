"""`MarketplaceClient`: the async client of appliance marketplaces over HTTP (httpx).

Requests carry `User-Agent: OpenNebula X.Y` (marketplaces list only the records made for that
platform series) and `Accept: application/json`. Records are read by `domain.appliances`: a bad
record is reported in `Listing.errors` and never hides the others. Downloads are not followed:
`download_info` reads where the redirect points and the size header. 404, 5xx, invalid JSON,
timeouts and connection failures become `SiteError`s.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx

from tui import timing
from tui.adapters.http_errors import MAX_RESPONSE_BYTES, ResponseTooLarge, bounded_request, malformed, transport_error
from tui.adapters.retry import DEFAULT_POLICY, RetryPolicy, retry_read
from tui.adapters.tls import client_context
from tui.domain.appliances import ApplianceRecord, Listing, RecordError, parse_listing, parse_record, platform_series
from tui.domain.bounded import BoundedInputError, load_json
from tui.errors import SiteError

SIZE_HEADER = "OpenNebula-AppMarket-Size"
_ERROR_BODY_BYTES = 64 * 1024
_SERVICE = "the marketplace"
_HINT = "the marketplace URLs in the config file ([marketplace] urls)"


@dataclass(frozen=True)
class DownloadInfo:
    """Where an appliance's file really comes from, without downloading it."""

    #: the address asked (`links.download.href`, with a file index when given)
    url: str
    #: the redirect target (the file's URL), or `url` when the server answered the file directly
    location: str
    #: size in bytes from the size header (or Content-Length of a direct answer), None if unknown
    size: int | None


class MarketplaceClient:
    """Async client of appliance marketplaces; one client serves any number of marketplace URLs."""

    def __init__(self, timeout: float = 30.0, platform_version: str = "7.0", *, verify_ssl: bool = True) -> None:
        self.timeout = float(timeout)
        self.platform_version = platform_version
        self.user_agent = f"OpenNebula {platform_series(platform_version)}"
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.timeout), verify=client_context(verify_ssl), follow_redirects=False,
            headers={"User-Agent": self.user_agent, "Accept": "application/json"},
        )
        #: how GETs are retried (`tui.adapters.retry`)
        self.retry_policy: RetryPolicy = DEFAULT_POLICY

    def __repr__(self) -> str:
        return f"MarketplaceClient(user_agent={self.user_agent!r}, timeout={self.timeout:g})"

    async def close(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> "MarketplaceClient":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # plumbing ----------------------------------------------------------------------------------
    async def _get(self, url: str, what: str) -> httpx.Response:
        """A GET: a read, retried while it can succeed (`tui.adapters.retry`), the body bounded."""
        return await retry_read(lambda deadline: self._get_once(url, what, deadline), timeout=self.timeout,
                                policy=self.retry_policy)

    async def _get_once(self, url: str, what: str, deadline: float) -> httpx.Response:
        try:
            response = await asyncio.wait_for(bounded_request(self._client, "GET", url, MAX_RESPONSE_BYTES),
                                              timing.left_until(deadline))
        except asyncio.CancelledError:
            raise
        except ResponseTooLarge as exc:
            raise malformed(url, _SERVICE, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SiteError
            raise transport_error(exc, service=_SERVICE, url=url, timeout=self.timeout, hint=_HINT) from None
        self._check_status(response, url, what)
        return response

    def _check_status(self, response: httpx.Response, url: str, what: str) -> None:
        status = response.status_code
        if status < 400:
            return
        text = response.text.strip()[:500]
        if status == 404:
            raise SiteError(f"{what} not found", f"{url} answered 404. {text}".strip(), code=404)
        if status >= 500:
            raise SiteError(f"Marketplace error reading {what}", f"{url} answered HTTP {status}. {text} "
                            "Retry later.".strip(), retryable=True, code=status)
        raise SiteError(f"Marketplace refused {what}", f"{url} answered HTTP {status}. {text}".strip(), code=status)

    def _json(self, response: httpx.Response, url: str) -> Any:
        try:
            return load_json(response.content, f"the answer of {url}", scan=False)
        except BoundedInputError as exc:
            raise malformed(url, _SERVICE, exc.message) from None
        except ValueError as exc:
            raise malformed(url, _SERVICE, f"invalid JSON ({exc})") from None

    # API ---------------------------------------------------------------------------------------
    async def list_appliances(self, marketplace_url: str) -> Listing:
        """Every record the marketplace lists for this platform series; bad ones in `errors`."""
        base = marketplace_url.rstrip("/")
        url = f"{base}/appliance"
        data = self._json(await self._get(url, "the appliance list"), url)
        try:
            return parse_listing(data, base)
        except RecordError as exc:
            raise malformed(url, _SERVICE, str(exc)) from None

    async def get_appliance(self, marketplace_url: str, appliance_id: str) -> ApplianceRecord:
        base = marketplace_url.rstrip("/")
        url = f"{base}/appliance/{appliance_id}"
        data = self._json(await self._get(url, f"Appliance {appliance_id}"), url)
        try:
            return parse_record(data, base)
        except RecordError as exc:
            raise SiteError(f"Unusable record for appliance {appliance_id}", f"{url}: {exc}") from None

    async def download_info(self, record: ApplianceRecord, file_index: int | None = None) -> DownloadInfo:
        """Follow nothing: ask the record's download address and read the redirect and size
        (retried as a read)."""
        url = record.download_url.rstrip("/") + (f"/{int(file_index)}" if file_index is not None else "")
        return await retry_read(lambda deadline: self._download_info_once(record, url, deadline),
                                timeout=self.timeout, policy=self.retry_policy)

    async def _download_info_once(self, record: ApplianceRecord, url: str, deadline: float) -> DownloadInfo:
        what = f"Download of {record.name}"
        try:
            async with asyncio.timeout_at(asyncio.get_running_loop().time() + timing.left_until(deadline)):
                async with self._client.stream("GET", url) as response:
                    self._check_status(response if response.status_code < 400 else await _read(response), url, what)
                    location = response.headers.get("location", "")
                    size_text = response.headers.get(SIZE_HEADER) or (
                        response.headers.get("content-length") if not response.is_redirect else None)
        except SiteError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SiteError
            raise transport_error(exc, service=_SERVICE, url=url, timeout=self.timeout, hint=_HINT) from None
        if response.is_redirect and not location:
            raise malformed(url, _SERVICE, "a redirect without a Location header")
        try:
            size = int(size_text) if size_text else None
        except ValueError:
            size = None
        return DownloadInfo(url=url, location=str(response.url.join(location)) if location else url, size=size)


async def _read(response: httpx.Response) -> httpx.Response:
    """An error answer's body, at most 64 KiB of it (its first lines go into the message)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > _ERROR_BODY_BYTES:
            break
    return httpx.Response(response.status_code, content=b"".join(chunks)[:_ERROR_BODY_BYTES], request=response.request)
