"""The appliance marketplace over HTTP, as the embedded site serves it.

Two marketplaces share the server: the site's own at the root (`/appliance...`) and a community
one under `/community` (`/community/appliance...`). Routes (reference/marketplace.md):

- `GET /appliance`: `{"sEcho": 1, "appliances": [...]}`, filtered by a User-Agent starting with
  `OpenNebula X.Y`: the records whose `opennebula_version` list has X.Y; a series no record lists,
  or no such User-Agent, gets the latest series' list (appmarket-simple
  `src/controllers/appmarket-server.rb`, `src/models/appliances.rb` `latest_one_version`);
- `GET /appliance/<id>`: the record as JSON for `Accept: application/json` or an OpenNebula
  User-Agent, a small HTML page otherwise; 404 when unknown;
- `GET /appliance/<id>/download[/<i>]`: 302 to the file's URL with `OpenNebula-AppMarket-Size`;
  404 when the record has no such file;
- `GET /appliance/<id>/files/<i>/<name>` (where downloads redirect to): a small stand-in for the
  file, 404 for a broken appliance.

URLs in records are made absolute from the server's own configured address (`site.base_url`, as
appmarket-simple builds `links.download.href` from APPMARKET_URL in `src/lib/appliance.rb`), never
from the request's Host header.
`site.faults.market_faults` makes a record (or the listing, key "") answer 500, invalid JSON, or
slowly; a key naming a marketplace's prefix ("/" for the site's own, "/community") makes every
request of that one marketplace do so. Generic faults (latency, failure rate) are the HTTP server's business, not this module's.
"""

from __future__ import annotations

import html
import json
import time
from typing import Any, Mapping

from tui.sim import catalog
from tui.sim.market_series import served_for
from tui.sim.state import SimSite

Response = tuple[int, dict[str, str], bytes]

_JSON = {"Content-Type": "application/json"}
_HTML = {"Content-Type": "text/html; charset=utf-8"}
_TEXT = {"Content-Type": "text/plain; charset=utf-8"}
#: what a downloaded file holds here: a qcow2 magic and padding, not a real disk
_FILE_HEAD = b"QFI\xfb\x00\x00\x00\x03"


def handle_market(site: SimSite, method: str, path: str, headers: Mapping[str, str]) -> Response:
    """Answer one marketplace request: (status, headers, body)."""
    lower = {k.lower(): v for k, v in headers.items()}
    path = path.split("?", 1)[0].rstrip("/") or "/"
    prefix, rest = _split_prefix(path)
    if method not in ("GET", "HEAD"):
        return _text(405, "Method Not Allowed")
    base = site.base_url.rstrip("/")
    parts = [p for p in rest.split("/") if p]
    fault_key = "" if parts == ["appliance"] else (parts[1] if len(parts) > 1 else None)
    fault = site.faults.market_faults.get(prefix or "/", "")  # the whole marketplace
    if not fault and fault_key is not None:
        fault = site.faults.market_faults.get(fault_key, "")
    if fault.startswith("slow:"):
        # outside the site lock: other requests go on while this one waits
        delay = fault.split(":", 1)[1]
        time.sleep(int(delay) / 1000 if delay.isdigit() else 1.0)
    elif fault == "error":
        return _text(500, "Internal Server Error")
    with site.lock:
        status, out_headers, body = _route(site, prefix, parts, lower, base)
    if fault == "invalid_json" and out_headers.get("Content-Type") == _JSON["Content-Type"]:
        body = body[: max(1, len(body) // 2)]
    return status, out_headers, body  # for HEAD the HTTP server sends the headers only


def _split_prefix(path: str) -> tuple[str, str]:
    for prefix in sorted(catalog.PREFIXES, key=len, reverse=True):
        if prefix and (path == prefix or path.startswith(prefix + "/")):
            return prefix, path[len(prefix) :] or "/"
    return catalog.MAIN_PREFIX, path


def _route(site: SimSite, prefix: str, parts: list[str], headers: dict[str, str], base: str) -> Response:
    records = site.market_records.get(prefix)
    if records is None or not parts:
        return _text(404, "Not Found")
    if parts[0] == "appliance":
        if len(parts) == 1:
            return _listing(records, headers, base)
        record = catalog.find_record(site, prefix, record_id=parts[1])
        if record is None:
            return _text(404, f"Appliance {parts[1]} not found")
        if len(parts) == 2:
            return _record(record, headers, base)
        if parts[2] == "download" and len(parts) <= 4:
            return _download(record, parts[3] if len(parts) == 4 else "0", base)
        if parts[2] == "files" and len(parts) == 5:
            return _file(site, prefix, record, parts[3], parts[4])
    return _text(404, "Not Found")


def _wants_json(headers: dict[str, str]) -> bool:
    # the HTML route passes an OpenNebula User-Agent on to the JSON one (appmarket-server.rb)
    return "application/json" in headers.get("accept", "") or "opennebula" in headers.get("user-agent", "").lower()


def _wants_html(headers: dict[str, str]) -> bool:
    accept = headers.get("accept", "")
    return "text/html" in accept and "application/json" not in accept


def _listing(records: list[dict[str, Any]], headers: dict[str, str], base: str) -> Response:
    records = served_for(records, headers.get("user-agent", ""))
    appliances = [catalog.absolute(r, base) for r in records]
    if _wants_html(headers):
        items = "".join(
            f'<li><a href="{html.escape(a["links"]["download"]["href"].rsplit("/download", 1)[0])}">'
            f"{html.escape(str(a.get('name', '')))}</a> {html.escape(str(a.get('version', '')))}</li>"
            for a in appliances
        )
        return 200, dict(_HTML), f"<!DOCTYPE html><html><body><h1>Appliances</h1><ul>{items}</ul></body></html>".encode()
    return 200, dict(_JSON), json.dumps({"sEcho": 1, "appliances": appliances}).encode()


def _record(record: dict[str, Any], headers: dict[str, str], base: str) -> Response:
    full = catalog.absolute(record, base)
    if _wants_json(headers):
        return 200, dict(_JSON), json.dumps(full).encode()
    name = html.escape(str(full.get("name", "")))
    rows = "".join(
        f"<tr><th>{html.escape(key)}</th><td>{html.escape(str(full[key]))}</td></tr>"
        for key in ("version", "publisher", "short_description", "opennebula_version")
        if key in full
    )
    href = html.escape(full["links"]["download"]["href"])
    page = (
        f"<!DOCTYPE html><html><head><title>{name}</title></head><body><h1>{name}</h1>"
        f'<table>{rows}</table><p><a href="{href}">Download</a></p></body></html>'
    )
    return 200, dict(_HTML), page.encode()


def _download(record: dict[str, Any], index_text: str, base: str) -> Response:
    files = record.get("files") or []
    if not index_text.isdigit() or int(index_text) >= len(files):
        return _text(404, f"Appliance {record['_id']['$oid']} has no file {index_text}")
    item = files[int(index_text)]
    url = item["url"]
    location = base + url if url.startswith("/") else url
    headers = {**_TEXT, "Location": location, "OpenNebula-AppMarket-Size": str(item.get("size", 0))}
    return 302, headers, f"Redirecting to {location}".encode()


def _file(site: SimSite, prefix: str, record: dict[str, Any], index_text: str, name: str) -> Response:
    files = record.get("files") or []
    if not index_text.isdigit() or int(index_text) >= len(files):
        return _text(404, "Not Found")
    if files[int(index_text)].get("name") != name or catalog.is_broken(site, prefix, record["_id"]["$oid"]):
        return _text(404, "Not Found")
    body = _FILE_HEAD + name.encode() + b"\x00" * 32
    return 200, {"Content-Type": "application/octet-stream"}, body


def _text(status: int, message: str) -> Response:
    return status, dict(_TEXT), message.encode()
