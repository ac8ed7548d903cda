"""Reading the appliance marketplaces: records, where they come from, and what the site has.

Marketplaces are read over HTTP from two places: those the cloud has registered (an ENABLED
MARKETPLACE whose TEMPLATE/ENDPOINT is an HTTP address; a disabled one is not monitored and holds
no app, so it does not count) and those listed in the settings (`[marketplace] urls`). Each is listed concurrently; one that fails (404, 500, invalid JSON, a
timeout) is reported in `MarketCatalog.failures` and never hides the others. Records the
marketplace lists for another platform series are left out (servers already filter on the
User-Agent; this catches those that do not), except when none of a marketplace's records lists
this series: appmarket-simple answers a series it does not know (a new release such as 7.4, or a
development build such as 7.3.80) with its latest series' list (`src/controllers/appmarket-server.rb`),
and those records are the ones the cloud's own market driver imports, so they are all kept and the
marketplace is named in `MarketCatalog.other_series`.

The install status of each record comes from the images' marketplace attributes
(`domain.upgrades.appliance_statuses`). What the cloud holds for each record comes from its
marketplace apps (`domain.marketapps.cloud_app_for`): the cloud keeps one app per name across its
marketplaces, its content from the marketplace it monitored last, so of two registered
marketplaces listing the same name only one record is exportable at a time; the others say
why. These are reads: no preview, no audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from tui.domain.appliances import ApplianceRecord, Listing, platform_series
from tui.domain.images import ImageInfo
from tui.domain.marketapps import CloudAppMatch, MarketApp, Marketplace, cloud_app_for
from tui.domain.upgrades import ApplianceStatus, InstallState, appliance_statuses
from tui.errors import SiteError
from tui.procedures.concurrent import gather

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

ORIGIN_CLOUD = "cloud"
ORIGIN_SETTINGS = "settings"


def normalize_url(url: str) -> str:
    """Marketplace URLs compare without a trailing slash."""
    return url.strip().rstrip("/")


@dataclass(frozen=True)
class MarketplaceSource:
    """One marketplace read over HTTP: its URL, a display name and why it is read."""

    url: str
    name: str
    #: "cloud" (registered in the cloud), "settings" (config file) or "cloud+settings"
    origin: str
    #: the cloud's MARKETPLACE id, when registered there
    marketplace_id: int | None = None

    @property
    def registered(self) -> bool:
        return self.marketplace_id is not None

    def as_json(self) -> dict[str, object]:
        return {"url": self.url, "name": self.name, "origin": self.origin, "marketplace_id": self.marketplace_id}


@dataclass(frozen=True)
class SourceFailure:
    """A marketplace that could not be listed, with the operator-facing reason."""

    source: MarketplaceSource
    title: str
    detail: str
    retryable: bool = False

    def as_json(self) -> dict[str, object]:
        return {"source": self.source.as_json(), "title": self.title, "detail": self.detail,
                "retryable": self.retryable}


@dataclass(frozen=True)
class CatalogEntry:
    """One record of one marketplace with its install status on this site."""

    record: ApplianceRecord
    source: MarketplaceSource
    status: ApplianceStatus
    #: what the cloud holds for it: the app a download exports, or why none (None: not read)
    cloud: CloudAppMatch | None = None

    @property
    def key(self) -> str:
        """Unique across marketplaces: `<marketplace url>#<record id>`."""
        return f"{self.record.marketplace_url}#{self.record.id}"

    @property
    def state(self) -> InstallState:
        return self.status.state

    def detail_rows(self) -> list[tuple[str, str]]:
        """(label, value) rows of the appliance's detail (`sitetk market show`, the detail pane)."""
        record = self.record
        version = record.parsed_version
        rows = [
            ("name", record.name),
            ("id", record.id),
            ("version", record.version or "(none)"),
            ("software version", version.software or "-"),
            ("build stamp", version.stamp or "-"),
        ]
        if not version.conforming:
            rows.append(("version problem", version.reason))
        rows += [
            ("publisher", record.publisher or "-"),
            ("type", record.type.value),
        ]
        if record.roles:
            rows.append(("roles", ", ".join(f"{role}: {name}" for role, name in record.roles.items())))
        if record.disks:
            rows.append(("disks", ", ".join(record.disks)))
        rows += [
            ("platform versions", ", ".join(record.platform_versions) or "any"),
            ("download", record.download_url),
            ("marketplace", f"{self.source.name} ({record.marketplace_url})"),
            ("status", self.status.label),
        ]
        if self.cloud is not None:
            rows.append(("cloud app", self.cloud.label))
            if self.cloud.app is None:
                rows.append(("cloud app problem", f"{self.cloud.title}. {self.cloud.detail}"))
        if self.status.images:
            rows.append(("images", "\n".join(f"{t.image.id} {t.image.name} ({t.version.label})"
                                              for t in self.status.images)))
        if self.status.untagged:
            rows.append(("untagged look-alikes", "\n".join(f"{i.id} {i.name}" for i in self.status.untagged)))
        if self.status.note:
            rows.append(("note", self.status.note))
        if record.size is not None:
            rows.append(("size", f"{record.size / 2**30:.1f} GiB"))
        if record.os_id or record.os_release or record.os_arch:
            rows.append(("os", " ".join(p for p in (record.os_id, record.os_release, record.os_arch) if p)))
        if record.tags:
            rows.append(("tags", ", ".join(record.tags)))
        for warning in record.warnings:
            rows.append(("record warning", warning))
        for key in sorted(record.extra):
            rows.append((f"extra field {key}", str(record.extra[key])))
        return rows

    def as_json(self) -> dict[str, object]:
        record = self.record
        version = record.parsed_version
        return {
            "id": record.id,
            "key": self.key,
            "name": record.name,
            "version": record.version,
            "software_version": version.software,
            "build_stamp": version.stamp,
            "version_conforming": version.conforming,
            "version_problem": version.reason,
            "publisher": record.publisher,
            "type": record.type.value,
            "marketplace": self.source.name,
            "marketplace_url": record.marketplace_url,
            "download_url": record.download_url,
            "platform_versions": list(record.platform_versions),
            "roles": dict(record.roles),
            "disks": list(record.disks),
            "status": self.status.state.value,
            "status_label": self.status.label,
            "installed_version": self.status.installed.raw if self.status.installed else None,
            "image_ids": [t.image.id for t in self.status.images],
            "untagged_image_ids": [image.id for image in self.status.untagged],
            "note": self.status.note,
            "warnings": list(record.warnings),
            "cloud_app": self.cloud.as_json() if self.cloud is not None else None,
        }


@dataclass(frozen=True)
class MarketCatalog:
    """Everything the marketplace screen and `sitetk market list` show."""

    platform_version: str
    sources: tuple[MarketplaceSource, ...]
    entries: tuple[CatalogEntry, ...]
    failures: tuple[SourceFailure, ...] = ()
    #: records a marketplace served that could not be read (named field, record id)
    record_errors: tuple[str, ...] = ()
    #: records left out because they do not list this platform series
    hidden_other_versions: int = 0
    images: tuple[ImageInfo, ...] = ()
    #: marketplaces (name, the series their records list) that list nothing for this platform
    #: series and answered their latest series' list instead; those records are kept
    other_series: tuple[tuple[str, str], ...] = ()

    @property
    def records(self) -> tuple[ApplianceRecord, ...]:
        return tuple(entry.record for entry in self.entries)

    @property
    def all_failed(self) -> bool:
        return bool(self.sources) and len(self.failures) == len(self.sources)

    def find(self, ref: str) -> CatalogEntry:
        """The entry `ref` names: a key (`<marketplace url>#<id>`), `<marketplace name or url>#<id
        or name>`, or a record id or name (case-insensitive) that exactly one marketplace holds.

        Ambiguity is an error, never a guess: an id or name several marketplaces hold, or any
        marketplace that did not answer (it may hold it too, perhaps a newer build), raises
        `AmbiguousAppliance` naming them and the keys to choose from. Nothing matching raises
        `SiteError`.
        """
        wanted = ref.strip()
        for entry in self.entries:
            if entry.key == wanted:
                return entry
        market, sep, rest = wanted.rpartition("#")
        if sep and market:
            found = self._find_in(market.strip(), rest.strip(), wanted)
            if found is not None:
                return found
        matches = _matching(self.entries, wanted)
        if len(matches) == 1 and not self.failures:
            return matches[0]
        if not matches and not self.failures:
            raise SiteError(f"No appliance {wanted!r} in the marketplaces",
                            "Give a record id, a name or a key as `sitetk market list` shows them.")
        raise AmbiguousAppliance(wanted, tuple(matches), self.failures)

    def _find_in(self, market: str, ref: str, wanted: str) -> CatalogEntry | None:
        """`ref` in the one marketplace named (by name or URL) `market`; None when no marketplace
        has that name (the `#` is then part of a record's name)."""
        url = normalize_url(market)
        sources = [s for s in self.sources if s.url == url or s.name.casefold() == market.casefold()]
        if not sources:
            return None
        failed = [f for f in self.failures if f.source in sources]
        if failed:
            raise SiteError(f"Marketplace {failed[0].source.name} did not answer",
                            f"{failed[0].title}. {failed[0].detail}".strip() + " Retry when it answers.",
                            retryable=failed[0].retryable)
        matches = _matching([e for e in self.entries if e.source in sources], ref)
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise SiteError(f"No appliance {ref!r} in {sources[0].name}",
                            "Give a record id, a name or a key as `sitetk market list` shows them.")
        raise AmbiguousAppliance(wanted, tuple(matches), ())

    def newest(self, record_id: str) -> CatalogEntry:
        """The newest build of a record id (or name) across marketplaces, for ids a definition
        names (a component's public.yaml). A marketplace that did not answer may hold a newer
        build: then `AmbiguousAppliance`, never an older build in silence."""
        matches = _matching(self.entries, record_id.strip())
        if self.failures:
            raise AmbiguousAppliance(record_id.strip(), tuple(matches), self.failures)
        if not matches:
            raise SiteError(f"No appliance {record_id!r} in the marketplaces",
                            "Give a record id, a name or a key as `sitetk market list` shows them.")
        return _newest_entries(matches)[0]


class AmbiguousAppliance(SiteError):
    """An appliance reference several marketplaces hold, or that an unanswered one may hold."""

    def __init__(self, ref: str, matches: tuple[CatalogEntry, ...], failures: tuple[SourceFailure, ...]) -> None:
        self.ref = ref
        self.matches = matches
        self.failures = failures
        holders = "; ".join(f"{e.source.name}: {e.record.name} {e.record.version or '(no version)'}, key {e.key}"
                            for e in matches)
        silent = "; ".join(f"{f.source.name} ({f.source.url}): {f.title}" for f in failures)
        if failures:
            title = (f"Marketplace {failures[0].source.name} did not answer" if len(failures) == 1
                     else f"{len(failures)} marketplaces did not answer")
            detail = (f"It may hold {ref!r} too (perhaps a newer build): {silent}. "
                      + (f"Answered: {holders}. Give the key of the one you mean (`<marketplace url>#<id>`), "
                         "or retry when every marketplace answers." if matches
                         else "Retry when every marketplace answers."))
        else:
            title = f"Appliance {ref!r} is in several marketplaces"
            detail = (f"{holders}. Give the key of the one you mean (`<marketplace url>#<id>`, or "
                      "`<marketplace name>#<id>`).")
        super().__init__(title, detail, retryable=bool(failures))

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(e.key for e in self.matches)


def _matching(entries: Sequence[CatalogEntry], wanted: str) -> list[CatalogEntry]:
    """Entries whose record id is `wanted`, else whose name is (case-insensitive)."""
    matches = [e for e in entries if e.record.id == wanted]
    return matches or [e for e in entries if e.record.name.casefold() == wanted.casefold()]


def _newest_entries(entries: Sequence[CatalogEntry]) -> list[CatalogEntry]:
    """The entries holding the newest build (several when two marketplaces hold the same one)."""
    best = max(entries, key=lambda e: e.record.parsed_version.semantic_key()).record.parsed_version
    return [e for e in entries if e.record.parsed_version.same_release(best)]


def sources_from(marketplaces: Sequence[Marketplace], configured: Sequence[str]) -> tuple[MarketplaceSource, ...]:
    """The HTTP marketplaces to read: the cloud's enabled ones (with an ENDPOINT) first, in the order
    they were registered (by ID: the platform lists its pools newest first by default, API_LIST_ORDER
    DESC, and a site may set either), then the settings'."""
    found: dict[str, MarketplaceSource] = {}
    for market in sorted(marketplaces, key=lambda m: m.id):
        endpoint = normalize_url(market.endpoint)
        if not market.enabled or not endpoint.startswith(("http://", "https://")) or endpoint in found:
            continue
        found[endpoint] = MarketplaceSource(endpoint, market.name, ORIGIN_CLOUD, market.id)
    for url in configured:
        endpoint = normalize_url(url)
        if not endpoint:
            continue
        known = found.get(endpoint)
        if known is None:
            found[endpoint] = MarketplaceSource(endpoint, endpoint, ORIGIN_SETTINGS)
        elif known.origin == ORIGIN_CLOUD:
            found[endpoint] = MarketplaceSource(endpoint, known.name, f"{ORIGIN_CLOUD}+{ORIGIN_SETTINGS}",
                                                known.marketplace_id)
    return tuple(found.values())


async def marketplace_sources(site: "SiteConnection") -> tuple[MarketplaceSource, ...]:
    """The cloud's registered HTTP marketplaces and the configured ones, without duplicates."""
    return sources_from(await site.cloud.list_marketplaces(), site.settings.marketplace_urls)


async def _list_source(site: "SiteConnection", source: MarketplaceSource) -> Listing | SourceFailure:
    try:
        return await site.marketplace.list_appliances(source.url)
    except SiteError as error:
        return SourceFailure(source, error.title, error.detail, error.retryable)


async def load_catalog(site: "SiteConnection", *, all_versions: bool = False) -> MarketCatalog:
    """List every marketplace concurrently and compute each record's install status.

    `all_versions` keeps records that do not list this platform series (servers that filter on
    the User-Agent never send them anyway).
    """
    platform_version = site.marketplace.platform_version
    marketplaces, images, apps = await gather(site.cloud.list_marketplaces(), site.cloud.list_images(),
                                              _apps_or_none(site))
    sources = sources_from(marketplaces, site.settings.marketplace_urls)
    listings = await gather(*(_list_source(site, source) for source in sources))
    failures: list[SourceFailure] = []
    record_errors: list[str] = []
    chosen: list[tuple[ApplianceRecord, MarketplaceSource]] = []
    hidden = 0
    other_series: list[tuple[str, str]] = []
    series = platform_series(platform_version)
    for source, listing in zip(sources, listings, strict=True):
        if isinstance(listing, SourceFailure):
            failures.append(listing)
            continue
        record_errors.extend(f"{source.name}: {error}" for error in listing.errors)
        fallback = bool(listing.records) and not any(r.supports_platform(series) for r in listing.records)
        if fallback:
            listed = sorted({v for r in listing.records for v in r.platform_versions}, key=_series_key)
            other_series.append((source.name, ", ".join(listed)))
        for record in listing.records:
            if not all_versions and not fallback and not record.supports_platform(series):
                hidden += 1
                continue
            chosen.append((record, source))
    statuses = appliance_statuses([record for record, _ in chosen], images, site.naming)
    entries = tuple(
        CatalogEntry(record, source, status, None if apps is None else cloud_app_for(
            record.marketplace_url, record.id, record.name, record.version, marketplaces, apps, platform_version))
        for (record, source), status in zip(chosen, statuses, strict=True))
    return MarketCatalog(platform_version, sources, entries, tuple(failures), tuple(record_errors), hidden,
                         tuple(images), tuple(other_series))


async def _apps_or_none(site: "SiteConnection") -> tuple[MarketApp, ...] | None:
    """The cloud's marketplace apps; None when they cannot be read (the list still shows the records)."""
    try:
        return await site.cloud.list_marketapps()
    except SiteError:
        return None


def _series_key(series: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else 0 for part in series.split("."))


async def appliance_record(site: "SiteConnection", marketplace_url: str, record_id: str) -> ApplianceRecord:
    """One record read fresh from its marketplace (`GET {url}/appliance/<id>`)."""
    return await site.marketplace.get_appliance(normalize_url(marketplace_url), record_id)
