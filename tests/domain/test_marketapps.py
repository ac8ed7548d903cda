"""What the cloud can export for a marketplace record, as the platform keeps its apps
(`tui.domain.marketapps.cloud_app_for`): one app per name across marketplaces
(src/market/MarketPlaceAppPool.cc 211-223 at release-7.0.2), disabled marketplaces holding none,
and the 6.10.0-6.10.2 driver's missing slash (src/market_mad/remotes/one/monitor line 170 at
release-6.10.0)."""

from __future__ import annotations

import pytest

from tui.domain.attributes import Attributes
from tui.domain.marketapps import MarketApp, Marketplace, cloud_app_for, endpoint_slash_problem

MAIN, OTHER = "http://market.example:8080", "http://other.example"


def _market(market_id: int, endpoint: str, *, state: int = 0, mad: str = "one") -> Marketplace:
    template = Attributes.from_template([("ENDPOINT", endpoint)] if endpoint else [])
    return Marketplace(market_id, f"market {market_id}", "oneadmin", state, mad, 0, (), template)


def _app(app_id: int, name: str, version: str, origin: str, record_id: str = "rec", market_id: int = 100) -> MarketApp:
    template = Attributes.from_template([("IMPORT_ID", record_id), ("LINK", f"{origin}appliance/{record_id}")])
    return MarketApp(app_id, name, "oneadmin", 1, 1, version, "", market_id, f"market {market_id}", "qcow2", 1, "",
                     f"{origin}appliance/{record_id}/download/0", 0, 0, -1, "", "", (), (), template)


def _find(apps: list[MarketApp], markets: list[Marketplace], url: str = MAIN, version: str = "v2",
          platform: str = "7.0.2") -> object:
    return cloud_app_for(url, "rec", "App", version, markets, apps, platform)


def test_the_app_holding_this_record_at_this_version_is_exported() -> None:
    found = _find([_app(7, "App", "v2", MAIN + "/")], [_market(100, MAIN + "/")])
    assert found.app is not None and found.app.id == 7 and found.label == "app 7"  # type: ignore[attr-defined]


def test_why_not_each_reason_with_its_fix() -> None:
    markets = [_market(100, MAIN + "/"), _market(101, OTHER + "/")]
    cases = {
        "not registered": _find([], [_market(100, OTHER)]),
        "disabled": _find([], [_market(100, MAIN + "/", state=1)]),
        "not imported": _find([], markets),
        "another version": _find([_app(7, "App", "v1", MAIN + "/")], markets),
        "other marketplace": _find([_app(7, "App", "v1", OTHER + "/")], markets),
        "unknown origin": _find([_app(7, "App", "v2", "http://gone.example/")], markets),
    }
    assert all(c.app is None for c in cases.values())  # type: ignore[attr-defined]
    assert "onemarket create" in cases["not registered"].detail  # type: ignore[attr-defined]
    assert "onemarket enable 100" in cases["disabled"].detail  # type: ignore[attr-defined]
    assert cases["another version"].title == "The cloud has another version of App"  # type: ignore[attr-defined]
    other = cases["other marketplace"]
    assert other.title == "The cloud holds App from another marketplace"  # type: ignore[attr-defined]
    assert other.label == "app 7 holds v1 from market 101"  # type: ignore[attr-defined]
    assert f"`{OTHER}#rec`" in other.detail and "onemarket disable 101" in other.detail  # type: ignore[attr-defined]
    unknown = cases["unknown origin"]
    assert unknown.title == "App 7 (App) holds a build of no registered marketplace"  # type: ignore[attr-defined]
    assert "onemarketapp show 7" in unknown.detail  # type: ignore[attr-defined]


@pytest.mark.parametrize(("platform", "broken"), [("6.10.0", True), ("6.10.2", True), ("6.10.0.1", True),
                                                  ("6.10.3", False), ("7.0.2", False), ("6.8.0", False)])
def test_an_endpoint_without_its_slash_only_before_6_10_3(platform: str, broken: bool) -> None:
    assert bool(endpoint_slash_problem(platform, _market(100, MAIN))) is broken
    assert not endpoint_slash_problem(platform, _market(100, MAIN + "/"))
    assert not endpoint_slash_problem(platform, _market(100, MAIN, state=1))  # not monitored
    assert not endpoint_slash_problem(platform, _market(0, ""))  # the built-in public URL
    link_base = MAIN if broken else MAIN + "/"  # what that version's driver builds the LINK from
    found = _find([_app(7, "App", "v2", link_base)], [_market(100, MAIN)], platform=platform)
    assert (found.app is None) is broken  # type: ignore[attr-defined]


def test_origin_is_read_from_the_link() -> None:
    assert _app(1, "A", "v", MAIN + "/").origin_url == MAIN
    assert _app(1, "A", "v", MAIN + "/community/").origin_url == MAIN + "/community"
    assert _app(1, "A", "v", MAIN).origin_url == ""  # the 6.10.0 driver's `http://host:portappliance/<id>`
    assert _market(0, "", mad="one").source_label.startswith("the driver's built-in public marketplace")
