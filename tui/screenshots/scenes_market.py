"""The marketplace screen's scenes: the catalog, an appliance, the download, upgrade and attributes modals."""

from __future__ import annotations

from typing import Any

from tui.screenshots.scene import SCENE_HOST, SCENE_PORT, Scene, SceneContext

#: the embedded site's second marketplace, which its cloud does not register (it lists older builds
#: under the names of the site's own appliances): listed in the settings of the scene that shows it
_WITH_COMMUNITY = {"marketplace_urls": (f"http://{SCENE_HOST}:{SCENE_PORT}",
                                        f"http://{SCENE_HOST}:{SCENE_PORT}/community")}


async def market_loaded(ctx: SceneContext, key: str | None = None, version: str = "") -> Any:
    """Open the marketplace screen, wait for its catalog (and put the cursor on `key`, a record id,
    of `version` when given)."""
    from tui.screens.marketplace import MarketplaceScreen

    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    ctx.app.open_screen("market")
    screen = await ctx.wait_for(lambda: isinstance(s := ctx.app.screen, MarketplaceScreen) and s.catalog is not None
                                and not s.reloading and s, what="the marketplace catalog")
    if key is not None:
        wanted = next(e.key for e in screen.catalog.entries
                      if e.record.id == key and (not version or e.record.version == version))
        screen.table.move_cursor_to_key(wanted)
        await ctx.wait_for(lambda: screen.shown_key == wanted, what="the appliance detail")
    await ctx.pilot.pause()
    return screen


async def prepare_market_normal(ctx: SceneContext) -> None:
    await market_loaded(ctx)


async def prepare_market_detail(ctx: SceneContext) -> None:
    await market_loaded(ctx, "service_container_cluster")


async def prepare_market_filtered(ctx: SceneContext) -> None:
    screen = await market_loaded(ctx)
    await ctx.pilot.press("slash", *"toolkit image")
    await ctx.wait_for(lambda: screen.table.filter_text == "toolkit image", what="the filter")
    await ctx.pilot.press("enter")


async def _download(ctx: SceneContext, key: str) -> None:
    from tui.screens.market_download import DownloadModal

    await market_loaded(ctx, key)
    await ctx.pilot.press("d")
    modal = await ctx.wait_for_screen(DownloadModal, what="the download form")
    await ctx.wait_for(lambda: modal.market_app is not None, what="the download form's appliance")
    await ctx.wait_for(lambda: not modal.query_one("#dl-review").disabled, what="a complete form")
    modal.review()
    await ctx.wait_for(lambda: modal.plan is not None, what="the download preview")
    modal.start()
    await ctx.wait_for(lambda: modal.has_class("-finished"), timeout=30, what="the end of the download")


async def prepare_market_review(ctx: SceneContext) -> None:
    """The download form before Review at 80x24: Download disabled, and the row says what enables it."""
    from tui.screens.market_download import DownloadModal

    await market_loaded(ctx, "service_toolkit")
    await ctx.pilot.press("d")
    modal = await ctx.wait_for_screen(DownloadModal, what="the download form")
    await ctx.wait_for(lambda: modal.market_app is not None, what="the download form's appliance")
    await ctx.wait_for(lambda: modal.query("#dl-why"), what="the reason Download is disabled")


async def prepare_market_download(ctx: SceneContext) -> None:
    await _download(ctx, "service_toolkit")


async def prepare_market_download_failed(ctx: SceneContext) -> None:
    await _download(ctx, "service_traffic_generator")


async def prepare_market_plan(ctx: SceneContext) -> None:
    from tui.screens.market_upgrades import UpgradePlanModal

    await market_loaded(ctx)
    await ctx.pilot.press("u")
    modal = await ctx.wait_for_screen(UpgradePlanModal, what="the upgrade plan modal")
    await ctx.wait_for(lambda: modal.plan is not None, what="the upgrade plan")


async def prepare_market_attributes(ctx: SceneContext) -> None:
    from tui.screens.market_attributes import AttributesModal

    # the deployed build, which the community marketplace (in the settings) still lists
    await market_loaded(ctx, "service_toolkit", "v0.4.0-20250219-2235")
    await ctx.pilot.press("a")
    modal = await ctx.wait_for_screen(AttributesModal, what="the attributes modal")
    await ctx.wait_for(lambda: modal.plan is not None, what="the attributes preview")


SCENES: list[Scene] = [
    Scene("market", "normal", prepare_market_normal, scenario="deployed"),
    Scene("market", "detail", prepare_market_detail),
    Scene("market", "filtered", prepare_market_filtered),
    Scene("market", "download", prepare_market_download),
    Scene("market", "download-failed", prepare_market_download_failed),
    Scene("market", "plan", prepare_market_plan, scenario="deployed"),
    Scene("market", "attributes", prepare_market_attributes, scenario="deployed", settings_overrides=_WITH_COMMUNITY),
    Scene("market", "review-80x24", prepare_market_review, size=(80, 24)),
    Scene("market", "normal-80x24", prepare_market_normal, size=(80, 24)),
    Scene("market", "read-only", prepare_market_normal, scenario="deployed", read_only=True),
]
