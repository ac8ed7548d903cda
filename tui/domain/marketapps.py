"""Marketplaces and their apps as the cloud registers them (MARKETPLACE, MARKETPLACEAPP).

An app's APPTEMPLATE64 is base64 of the image attributes (IMAGE apps), of the VM template
(VMTEMPLATE apps) or of the service template JSON (SERVICE_TEMPLATE apps); `app_template` holds
it decoded. Service apps list `ROLE=[NAME, APP]` and VM-template apps `DISK=[NAME, APP]`.

How the platform keeps them (OpenNebula/one, file and lines at release-7.0.2):

- A fresh cloud has marketplace 0 "OpenNebula Public" (MARKET_MAD=one without ENDPOINT: the
  driver's built-in public marketplace) and 1 "Linux Containers" (DISABLED); user marketplaces
  start at 100 (`src/market/MarketPlacePool.cc` 36-103).
- A DISABLED marketplace is not monitored (`MarketPlaceManager.cc` 231-236) and disabling one
  drops its apps (`RequestManagerMarketPlace.cc` 47-51, 88-110): it is not counted as registered.
- The cloud holds ONE app per name (owned by oneadmin) across all its marketplaces: a monitored
  record whose name an app holds already is not imported again, that app is rebuilt in place
  when the VERSION, MD5 or SOURCE differ (`MarketPlaceAppPool::import`, `MarketPlaceAppPool.cc`
  211-223; 6.10.0 233-247; 7.4.0 141-153). The app stays in the marketplace that first imported
  it, and its content (VERSION, SOURCE, TEMPLATE/LINK, TEMPLATE/IMPORT_ID) is that of the
  marketplace monitored last: `origin_url` reads which, from its LINK (`<ENDPOINT>appliance/<id>`,
  the `one` driver's `fetch_appliances`).
- The `one` driver of 6.10.0-6.10.2 builds that LINK and the app's SOURCE from the ENDPOINT as it
  is (`src/market_mad/remotes/one/monitor` line 170 at release-6.10.0); 6.10.3 adds a missing
  slash (line 42). On those versions an ENDPOINT without a trailing slash breaks every app's
  download (`endpoint_slash_problem`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Sequence

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes
from tui.domain.one_states import APP_STATES, APP_TYPES, MARKETPLACE_STATES, MarketPlaceState


def decode_apptemplate64(value: str) -> str:
    """APPTEMPLATE64 decoded as UTF-8 text; "" when empty or not valid base64."""
    if not value.strip():
        return ""
    try:
        return base64.b64decode(value.strip(), validate=False).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return ""


@dataclass(frozen=True)
class Marketplace:
    id: int
    name: str
    uname: str
    state: int
    market_mad: str
    zone_id: int
    app_ids: tuple[int, ...]
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def state_name(self) -> str:
        return MARKETPLACE_STATES.get(self.state, f"STATE_{self.state}")

    @property
    def endpoint(self) -> str:
        """TEMPLATE/ENDPOINT: the HTTP marketplace this one mirrors ("" when it has none)."""
        return self.template.get("ENDPOINT")

    @property
    def enabled(self) -> bool:
        """ENABLED: monitored, and holding its apps (a DISABLED one holds none)."""
        return self.state == MarketPlaceState.ENABLED

    @property
    def source_label(self) -> str:
        """Where its apps come from, in words: its ENDPOINT, or what a marketplace without one is."""
        if self.endpoint:
            return self.endpoint
        if self.market_mad == "one":
            return "the driver's built-in public marketplace (not read by this console)"
        if self.market_mad == "linuxcontainers":
            return "the linuxcontainers.org image server"
        return f"a {self.market_mad or 'marketplace'} store of the cloud"


@dataclass(frozen=True)
class MarketApp:
    id: int
    name: str
    uname: str
    type: int
    state: int
    version: str
    description: str
    marketplace_id: int
    marketplace: str
    format: str
    size_mb: int
    md5: str
    source: str
    regtime: int
    zone_id: int
    origin_id: int
    #: the raw APPTEMPLATE64 and its decoded text
    apptemplate64: str
    app_template: str
    #: (role name, app name) of a SERVICE_TEMPLATE app's ROLE vectors
    roles: tuple[tuple[str, str], ...]
    #: (disk name, app name) of a VMTEMPLATE app's DISK vectors
    disks: tuple[tuple[str, str], ...]
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def type_name(self) -> str:
        return APP_TYPES.get(self.type, f"TYPE_{self.type}")

    @property
    def state_name(self) -> str:
        return APP_STATES.get(self.state, f"STATE_{self.state}")

    @property
    def vmtemplate64(self) -> str:
        """TEMPLATE/VMTEMPLATE64 of an IMAGE app (the VM template to create beside the image)."""
        return self.template.get("VMTEMPLATE64")

    @property
    def import_id(self) -> str:
        """TEMPLATE/IMPORT_ID: the record id of the marketplace it was imported from last."""
        return self.template.get("IMPORT_ID")

    @property
    def link(self) -> str:
        """TEMPLATE/LINK: `<ENDPOINT>appliance/<record id>`, as the `one` driver writes it."""
        return self.template.get("LINK")

    @property
    def origin_url(self) -> str:
        """The HTTP marketplace (without a trailing slash) whose record the app's content came
        from: its LINK without `/appliance/<IMPORT_ID>`; "" when the LINK is not of that form (an
        app of another driver, or a link the 6.10.0-6.10.2 driver built without the slash)."""
        suffix = f"/appliance/{self.import_id}"
        link = self.link.strip()
        if not self.import_id or not link.endswith(suffix):
            return ""
        return link[: -len(suffix)].rstrip("/")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def endpoint_slash_problem(platform_version: str, market: Marketplace) -> str:
    """Why the platform's `one` driver breaks this marketplace's app links ("" when it does not):
    6.10.0-6.10.2 build `<ENDPOINT>appliance/<id>` without adding the slash an ENDPOINT lacks."""
    endpoint = market.endpoint.strip()
    if market.market_mad != "one" or not endpoint or endpoint.endswith("/") or not market.enabled:
        return ""
    if not (6, 10, 0) <= _version_key(platform_version)[:3] < (6, 10, 3):
        return ""
    return (f"its ENDPOINT {endpoint} lacks a trailing slash, and the market driver of OpenNebula "
            f"{platform_version} (6.10.0-6.10.2) builds every app's link and download from it as it is "
            f"({endpoint}appliance/<id>): the apps of marketplace {market.id} cannot be downloaded")


def endpoint_slash_fix(market: Marketplace) -> str:
    """The fix of `endpoint_slash_problem`: the platform CLI's update adding the slash."""
    return (f"Add the slash: `onemarket update {market.id} <file> --append` with the line "
            f"ENDPOINT=\"{market.endpoint.strip()}/\" in the file (or upgrade to 6.10.3 or later); the "
            "cloud's next marketplace monitoring rebuilds the apps with working links.")


def _norm(url: str) -> str:
    return url.strip().rstrip("/")


@dataclass(frozen=True)
class CloudAppMatch:
    """What the cloud holds for one marketplace record: the app a download exports, or why none.

    `label` is short (the marketplace list's detail); `title` and `detail` say why there is no
    app to export and what to do (empty when `app` is set)."""

    app: MarketApp | None
    label: str
    title: str = ""
    detail: str = ""

    def as_json(self) -> dict[str, object]:
        return {"app_id": self.app.id if self.app else None, "label": self.label,
                **({"problem": self.title, "fix": self.detail} if self.app is None else {})}


def cloud_app_for(url: str, record_id: str, name: str, version: str, marketplaces: Sequence[Marketplace],
                  apps: Sequence[MarketApp], platform_version: str) -> CloudAppMatch:
    """The app the cloud would export for the record `record_id` (`name`, `version`) of the HTTP
    marketplace at `url`, as the platform keeps apps (see the module docstring): the app of that
    name whose content came from this record at this version. Otherwise why not: the marketplace
    is not registered, or disabled, or its ENDPOINT breaks the links (6.10.0-6.10.2), no app of that
    name is imported yet, the app holds another version of it, or it holds another marketplace's
    record (the cloud keeps one app per name)."""
    wanted = _norm(url)
    registered = [m for m in marketplaces if _norm(m.endpoint) == wanted]
    enabled = [m for m in registered if m.enabled]
    if not registered:
        return CloudAppMatch(None, "marketplace not registered in the cloud",
                             f"Marketplace {wanted} is not registered in the cloud",
                             "The cloud downloads appliances from the marketplaces it has registered. Register it "
                             f"(`onemarket create` with MARKET_MAD=one and ENDPOINT={wanted}/), wait for its apps to be "
                             "imported, then retry.")
    if not enabled:
        market = registered[0]
        return CloudAppMatch(None, f"marketplace {market.id} is disabled",
                             f"Marketplace {market.id} ({market.name}) is disabled",
                             f"The cloud does not monitor a disabled marketplace and holds none of its apps. Enable it "
                             f"(`onemarket enable {market.id}`: the cloud imports its apps at once), then retry.")
    for market in enabled:
        problem = endpoint_slash_problem(platform_version, market)
        if problem:
            return CloudAppMatch(None, f"marketplace {market.id}: ENDPOINT lacks its trailing slash",
                                 f"Marketplace {market.id} ({market.name}) gives its apps broken links",
                                 f"{problem[0].upper()}{problem[1:]}. {endpoint_slash_fix(market)}")
    market = enabled[0]
    holders = [a for a in apps if a.name == name]
    if not holders:
        return CloudAppMatch(None, "not imported",
                             f"The cloud has no app for {name}",
                             f"Marketplace {wanted} is registered ({market.name}, ID {market.id}) but no app of that "
                             "name is imported: the cloud imports the records the marketplace lists for its version, "
                             "a new marketplace's at its next monitoring (every MONITORING_INTERVAL_MARKET seconds, "
                             "600 by default). Retry after it.")
    mine = [a for a in holders if a.origin_url == wanted and a.import_id == record_id]
    same = [a for a in mine if a.version == version]
    if same:
        return CloudAppMatch(same[0], f"app {same[0].id}")
    if mine:
        app = mine[0]
        return CloudAppMatch(None, f"app {app.id} holds {app.version or '(no version)'}",
                             f"The cloud has another version of {name}",
                             f"The marketplace lists {version}; the cloud's app {app.id} holds {app.version}: the cloud "
                             "has not monitored the marketplace since it changed. Retry after its next marketplace "
                             "monitoring (every MONITORING_INTERVAL_MARKET seconds, 600 by default), or download app "
                             f"{app.id} as it is by its ID.")
    app = holders[0]
    origin = app.origin_url
    other = next((m for m in marketplaces if origin and _norm(m.endpoint) == origin), None)
    if other is None:
        return CloudAppMatch(None, f"app {app.id} holds {app.version or '(no version)'} of "
                             f"{origin or 'no readable origin'}",
                             f"App {app.id} ({name}) holds a build of no registered marketplace",
                             f"The cloud keeps one app per name across its marketplaces; app {app.id} (of marketplace "
                             f"{app.marketplace or app.marketplace_id}) holds {app.version or '(no version)'} with the link "
                             f"{app.link or '(none)'}, not {version} of {market.name}. Look at it (`onemarketapp show "
                             f"{app.id}`): an app created by hand, or one whose marketplace is gone, keeps the name.")
    where = f"{other.name} ({origin})"
    fix = (f"Download that build instead (`{origin}#{app.import_id}`), or disable marketplace {other.id} "
           f"(`onemarket disable {other.id}`: its own apps go with it) and retry after the cloud's next monitoring of "
           f"{market.name}.")
    return CloudAppMatch(None, f"app {app.id} holds {app.version or '(no version)'} from {other.name}",
                         f"The cloud holds {name} from another marketplace",
                         f"The cloud keeps one app per name across its marketplaces: the first marketplace to import "
                         f"a name keeps the app, whose content follows the marketplace it monitored last. App {app.id} "
                         f"(of marketplace {app.marketplace or app.marketplace_id}) holds {app.version or '(no version)'} "
                         f"from {where}, so the cloud cannot export {version} of {market.name} while both list "
                         f"{name!r}. {fix}")
