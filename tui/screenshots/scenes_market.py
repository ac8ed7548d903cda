"""The marketplace screen's scenes: the catalog, an appliance, the download, upgrade and attributes modals."""

from __future__ import annotations

from typing import Any

from tui.domain.one_states import ImageState
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


#: the build an older Bastion is tagged with (the marketplace lists 20250612-1045): the upgrade offers it
OLDER_BASTION_BUILD = "20250101-0000"


async def install_older_bastion(site: Any, poll_interval: float = 0.05) -> tuple[int, int]:
    """Bastion downloaded, then its images tagged with an older build of the same version, as if
    installed before the marketplace's build: the upgrade plan offers the new one. (image id, VM
    template id)."""
    from tui.procedures.market.attributes import tag_for_record
    from tui.procedures.market.download import DownloadAppliance, find_market_app
    from tui.procedures.market.marketplaces import load_catalog
    from tui.procedures.operation import RunContext, run_operation

    entry = (await load_catalog(site)).newest("service_bastion")
    assert entry is not None
    app = await find_market_app(site, entry.record)
    operation = DownloadAppliance(app.id, 1, "Bastion (installed earlier)", tag=tag_for_record(entry.record),
                                  poll_interval=poll_interval)
    result = await run_operation(site, operation, await operation.plan(site), RunContext(lambda event: None))
    for image_id in result.image_ids:
        await site.cloud.image_update(image_id, [(site.naming.appliance_version_attribute, OLDER_BASTION_BUILD)], 1)
    return result.image_ids[0], result.template_ids[0]


async def prepare_market_upgraded(ctx: SceneContext) -> None:
    """The deployed site with an older Bastion in the cloud and in core.yaml (its image and template
    IDs, submitted): the plan applied (each removal confirmed), then core.yaml's preview per key."""
    from tui.procedures.operation import RunContext, run_operation
    from tui.procedures.site.file_operations import EditSite
    from tui.procedures.site.repo import open_site
    from tui.procedures.site.submit_operation import SubmitSite
    from tui.procedures.site.workspace import sites_repo, vault_password
    from tui.screens.market_upgrades import UpgradePlanModal
    from tui.sim.repos import EXISTING_SITE
    from widgets.confirm_modal import ConfirmModal

    assert ctx.server is not None
    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    site = ctx.app.site
    image_id, template_id = await install_older_bastion(site)
    password = vault_password(site.settings)
    assert password is not None
    repo = sites_repo(site.settings)
    try:
        ref = await open_site(repo, EXISTING_SITE, EXISTING_SITE, RunContext(lambda event: None))
        edit = EditSite(ref.path, password, [("site_variables.tn_bastion.image_id", image_id),
                                             ("site_variables.tn_bastion.template_id", template_id)])
        await run_operation(site, edit, await edit.plan(site), RunContext(lambda event: None))
        submit = SubmitSite(repo, ref, password, "Bastion installed earlier", "the demo site's other values come later")
        await run_operation(site, submit, await submit.plan(site), RunContext(lambda event: None))
    finally:
        repo.close()
    with ctx.server.site.lock:  # the toolkit's VMs moved to the new version: its old images are free
        for image in ctx.server.site.images.values():
            image.running_vms, image.vm_ids = 0, []
            if image.state == ImageState.USED:
                image.state = ImageState.READY
    await market_loaded(ctx)
    await ctx.pilot.press("u")
    modal = await ctx.wait_for_screen(UpgradePlanModal, what="the upgrade plan modal")
    await ctx.wait_for(lambda: not modal.query_one("#up-apply").disabled, timeout=30, what="the datastore")
    await ctx.click("#up-apply")
    while not modal.has_class("-finished"):  # each removal asks on its own
        await ctx.wait_for(lambda: modal.has_class("-finished") or isinstance(ctx.app.screen, ConfirmModal),
                           timeout=60, what="a removal confirmation or the end of the upgrade")
        dialog = ctx.app.screen
        if isinstance(dialog, ConfirmModal):  # the next removal's may follow at once: this one gone
            await ctx.click("#confirm")

            def closed(shown: object = dialog) -> bool:
                return ctx.app.screen is not shown

            await ctx.wait_for(closed, what="the confirmation closed")
    await ctx.wait_for(lambda: modal.site_ids is not None, timeout=60, what="core.yaml read")
    body, result = modal.query_one("#up-body"), modal.query_one("#up-result")

    def in_sight() -> bool:
        if body.scroll_y > 0 and body.scroll_y == body.scroll_target_y:
            return True
        # as the dialog does once it is laid out; asked again until the layout has the result's place
        # (a scroll asked before it has none does nothing, and the whole suite saw the wait time out)
        result.scroll_visible(animate=False, top=True)
        return False

    await ctx.wait_for(in_sight, what="the preview in sight")
    await ctx.pilot.pause()


SCENES: list[Scene] = [
    Scene("market", "normal", prepare_market_normal, scenario="deployed", start_screen="market"),
    Scene("market", "detail", prepare_market_detail, start_screen="market"),
    Scene("market", "filtered", prepare_market_filtered, start_screen="market"),
    Scene("market", "download", prepare_market_download, start_screen="market"),
    Scene("market", "download-failed", prepare_market_download_failed, start_screen="market"),
    Scene("market", "plan", prepare_market_plan, scenario="deployed", start_screen="market"),
    Scene("market", "upgraded", prepare_market_upgraded, scenario="deployed"),  # changes the site before opening it
    Scene("market", "attributes", prepare_market_attributes, scenario="deployed", settings_overrides=_WITH_COMMUNITY,
          start_screen="market"),
    Scene("market", "review-80x24", prepare_market_review, size=(80, 24), start_screen="market"),
    Scene("market", "normal-80x24", prepare_market_normal, size=(80, 24), start_screen="market"),
    Scene("market", "read-only", prepare_market_normal, scenario="deployed", read_only=True, start_screen="market"),
]
