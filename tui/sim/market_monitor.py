"""The cloud's marketplace monitoring: what oned does with the `one` market driver's answers.

As OpenNebula/one does it (file and lines at release-7.0.2 unless said; 6.10.0 and 7.4.0 the same
unless said):

- Every MONITORING_INTERVAL_MARKET seconds oned monitors every marketplace, in ID order
  (`src/market/MarketPlaceManager.cc` `timer_action`, lines 154-196); a DISABLED one is not
  monitored (lines 231-236, again in `_monitor`, `MarketPlaceManagerProtocol.cc` 235-240).
- The `one` driver lists `<ENDPOINT>/appliance` with `User-Agent: OpenNebula <version> (Market
  Driver)` and prints one APP per record (`tui.sim.market_driver.monitor_app`). Here it reaches
  only this site's own marketplace server: an ENDPOINT elsewhere (or none: the driver's built-in
  public URL, never contacted) is a failed monitor, which changes nothing (`_monitor` lines
  204-210), as are a listing that answers an error or JSON the driver cannot parse.
- `MarketPlaceManager::_monitor` (`MarketPlaceManagerProtocol.cc` 194-319) imports each APP with
  `MarketPlaceAppPool::import` (`src/market/MarketPlaceAppPool.cc` 177-238; 6.10.0 195-265; 7.4.0
  107-169): an app name that is not valid becomes `imported-<ORIGIN_ID>`; an app of that name
  owned by oneadmin already in the pool, imported by ANY marketplace, is not imported again
  (answer -2, lines 211-223; 6.10.0 233-247; 7.4.0 141-153): it stays in its marketplace, and
  when its VERSION, MD5 or SOURCE differ it is rebuilt in place from this APP
  (`from_template64`). So the cloud holds one app per name, its content that of the marketplace
  monitored last, and a second marketplace's record of that name is never one of its apps
  (`_monitor` lines 266-286 add only new apps to the marketplace).
- `MarketPlaceApp::from_template64` (`src/market/MarketPlaceApp.cc` 434-487): the APP becomes the
  app's TEMPLATE; TYPE and ORIGIN_ID are removed, NAME, SOURCE, SIZE, MD5, FORMAT and REGTIME are
  moved out of it, DESCRIPTION, VERSION and APPTEMPLATE64 are read and KEPT in TEMPLATE; the app
  is READY.
- An app of the monitored marketplace missing from its answer is counted (`test_map_check`,
  `MarketPlaceAppPool.cc` 289-330: a miss after any answer that listed it starts from -1) and
  dropped at the third count (MAX_MISSING_MONITORS); an answer with no APP at all drops nothing
  (`_monitor` line 288).
"""

from __future__ import annotations

from typing import Any

from tui.domain.one_states import MarketPlaceAppState, MarketPlaceAppType, MarketPlaceState
from tui.domain.template_text import Template, scalar
from tui.sim.market_driver import driver_url, monitor_app
from tui.sim.market_series import served_for
from tui.sim.platform import invalid_name_chars, market_driver_user_agent
from tui.sim.rpc_errors import name_refusal
from tui.sim.state import SimMarketApp, SimMarketplace, SimSite

#: MarketPlaceApp TYPE words (`MarketPlaceApp::str_to_type`)
APP_TYPES = {t.name: t for t in (MarketPlaceAppType.IMAGE, MarketPlaceAppType.VMTEMPLATE, MarketPlaceAppType.SERVICE_TEMPLATE)}
#: `MarketPlaceAppPool::MAX_MISSING_MONITORS`
MAX_MISSING_MONITORS = 3
#: the interval when the system configuration names none (oned.conf's default)
DEFAULT_INTERVAL = 600.0
#: the names the built-in template moves out of TEMPLATE, and those it removes
_MOVED = ("NAME", "SOURCE", "SIZE", "MD5", "FORMAT", "REGTIME")
_REMOVED = ("TYPE", "ORIGIN_ID")


class MonitorFailed(Exception):
    """The driver could not list the marketplace (oned logs it and changes nothing)."""


def records_for(site: SimSite, endpoint: str) -> tuple[str, list[dict[str, Any]]]:
    """(prefix, records) of this site's marketplace server that `endpoint` names, as the driver's
    listing request reaches it; `MonitorFailed` when it names no marketplace of this site, or
    when the listing fails (a fault answering 500 or a truncated JSON body)."""
    from tui.sim import catalog  # the catalogue imports this module's monitor for seeding

    if not endpoint.strip():
        raise MonitorFailed("no ENDPOINT: the driver's built-in public marketplace, never contacted from here")
    url = driver_url(endpoint, site.config.one_version) + "/appliance"
    base = site.base_url.rstrip("/")
    if base and url.startswith(base + "/"):
        path = url[len(base):]
    elif url.startswith("/"):  # a site seeded before its server listens: ENDPOINTs are still relative
        path = url
    else:
        raise MonitorFailed(f"{endpoint or 'the public marketplace'} is not reachable from this site")
    parts = [p for p in path.split("/") if p]
    if not parts or parts[-1] != "appliance":
        raise MonitorFailed(f"{url}: 404 Not Found")
    prefix = "/" + "/".join(parts[:-1]) if len(parts) > 1 else catalog.MAIN_PREFIX
    if prefix not in site.market_records:
        raise MonitorFailed(f"{url}: 404 Not Found")
    fault = site.faults.market_faults.get(prefix or "/", "") or site.faults.market_faults.get("", "")
    if fault in ("error", "invalid_json"):
        raise MonitorFailed(f"{url}: {fault}")
    user_agent = market_driver_user_agent(site.config.one_version)
    return prefix, served_for(site.market_records[prefix], user_agent)


def from_template64(app: SimMarketApp, attrs: Template, site: SimSite) -> None:
    """`MarketPlaceApp::from_template64`: `attrs` become the app's TEMPLATE and fields."""
    app.state = MarketPlaceAppState.READY
    app.type = APP_TYPES.get(scalar(attrs, "TYPE", "IMAGE").upper(), MarketPlaceAppType.UNKNOWN)
    app.name = scalar(attrs, "NAME", "")
    app.source = scalar(attrs, "SOURCE", "")
    size = scalar(attrs, "SIZE", "0")
    app.size_mb = int(size) if size.isdigit() else 0
    app.md5 = scalar(attrs, "MD5", "")
    app.format = scalar(attrs, "FORMAT", "")
    regtime = scalar(attrs, "REGTIME", "")
    if regtime.isdigit():
        app.regtime = int(regtime)
    app.description = scalar(attrs, "DESCRIPTION", "")
    app.version = scalar(attrs, "VERSION", "")
    app.apptemplate64 = scalar(attrs, "APPTEMPLATE64", "")
    app.template = [a for a in attrs if a[0] not in _MOVED + _REMOVED]
    app.record_id = scalar(attrs, "IMPORT_ID", "")
    app.broken = app.type == MarketPlaceAppType.IMAGE and not _downloadable(site, app.source)


def _downloadable(site: SimSite, source: str) -> bool:
    """Whether a download of `source` gets a file from this site's marketplace server: a SOURCE
    `<endpoint>/appliance/<id>/download/0` of a record whose file is there. A link the 6.10.0
    driver built without the slash (`http://host:portappliance/...`) is no URL of the server."""
    from tui.sim import catalog

    base = site.base_url.rstrip("/")
    path = source[len(base):] if base and source.startswith(base + "/") else source
    if not path.startswith("/"):
        return False
    parts = [p for p in path.split("/") if p]
    if len(parts) < 4 or parts[-4] != "appliance" or parts[-2:] != ["download", "0"]:
        return False
    prefix = "/" + "/".join(parts[:-4]) if len(parts) > 4 else catalog.MAIN_PREFIX
    record = catalog.find_record(site, prefix, record_id=parts[-3])
    return record is not None and bool(record.get("files")) and not catalog.is_broken(site, prefix, parts[-3])


def import_app(site: SimSite, attrs: Template, market: SimMarketplace) -> tuple[int, int]:
    """`MarketPlaceAppPool::import`: (rc, app id); rc is the new app's id, or -2 when an app of
    that name (owned by oneadmin) was imported already, by this marketplace or another."""
    name = scalar(attrs, "NAME", "")
    if name_refusal(name, invalid_name_chars(site.config.one_version), 0) is not None:
        name = f"imported-{scalar(attrs, 'ORIGIN_ID', '-1')}"
        attrs = [a for a in attrs if a[0] != "NAME"] + [("NAME", name)]
    existing = next((a for a in sorted(site.marketapps.values(), key=lambda a: a.id)
                     if a.name == name and a.uid == 0), None)
    if existing is not None:
        if (existing.version != scalar(attrs, "VERSION", "") or existing.md5 != scalar(attrs, "MD5", "")
                or existing.source != scalar(attrs, "SOURCE", "")):
            from_template64(existing, attrs, site)
        return -2, existing.id
    app = SimMarketApp(id=site.next_id("marketapp"), name=name, marketplace_id=market.id, type=MarketPlaceAppType.UNKNOWN, version="",
                       description="", apptemplate64="", size_mb=0)
    from_template64(app, attrs, site)
    site.marketapps[app.id] = app
    return app.id, app.id


def monitor(site: SimSite, market_id: int) -> bool:
    """Monitor one marketplace (the driver's answer and `_monitor`); False when it was not
    (disabled, gone, not a `one` marketplace, or the driver failed)."""
    market = site.marketplaces.get(market_id)
    if market is None or market.state == MarketPlaceState.DISABLED or market.market_mad != "one":
        return False
    endpoint = scalar(market.template, "ENDPOINT", "") or market.endpoint
    try:
        prefix, records = records_for(site, endpoint)
    except MonitorFailed:
        return False
    url = driver_url(endpoint, site.config.one_version)
    mine = {a.id for a in site.marketapps.values() if a.marketplace_id == market.id}
    for record in records:
        if str(record.get("type") or "IMAGE") not in APP_TYPES:
            continue
        _, app_id = import_app(site, monitor_app(record, url, site.config.one_version), market)
        site.market_missing[app_id] = -1  # reset_map_check
        mine.discard(app_id)
    if records:
        for app_id in sorted(mine):
            count = site.market_missing.get(app_id)
            site.market_missing[app_id] = 1 if count is None else count + 1
            if count is not None and count + 1 >= MAX_MISSING_MONITORS:
                site.market_missing.pop(app_id, None)
                site.marketapps.pop(app_id, None)
    return True


def monitor_all(site: SimSite) -> None:
    """One monitoring round: every marketplace in ID order (`timer_action`)."""
    with site.lock:
        for market_id in sorted(site.marketplaces):
            monitor(site, market_id)


def start_monitoring(site: SimSite) -> None:
    """Monitor every MONITORING_INTERVAL_MARKET simulated seconds from now on (once per site)."""
    if site.market_monitoring:
        return
    site.market_monitoring = True
    text = site.system_config.get("MONITORING_INTERVAL_MARKET", "")
    interval = float(text) if text.replace(".", "", 1).isdigit() and float(text) > 0 else DEFAULT_INTERVAL

    def tick() -> None:
        monitor_all(site)
        site.after(interval, tick)

    site.after(interval, tick)

