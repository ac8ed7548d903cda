"""The upgrade plan on the deployed scenario (toolkit v0.4.0 installed, v0.5.0 offered) and applying it."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.market.conftest import POLL, SiteFactory, audit_entries, free_old_images
from tests.procedure_run import collect
from tui.domain.attribute_file import installed_version_from_image_template
from tui.domain.upgrades import StepKind
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.market.download import DownloadResult
from tui.procedures.market.upgrades import (
    ApplyUpgrades,
    Removal,
    apply_upgrade_plan,
    load_upgrade_plan,
    read_objects,
    removal_for,
    upgrade_preview,
)
from tui.procedures.operation import Confirmation, RunContext, run_operation
from tui.procedures.progress import Progress
from tui.sim.server import SimServer

OLD, NEW = "v0.4.0-20250219-2235", "v0.5.0-20250403-1109"


@pytest.fixture
def deployed(sim_factory) -> SimServer:  # type: ignore[no-untyped-def]
    return sim_factory(scenario="deployed")


async def _toolkit_images(site: SiteConnection) -> dict[int, str]:
    found = {}
    for image in await site.cloud.list_images():
        tag = installed_version_from_image_template(image.attributes, site.naming)
        if tag is not None and tag.name == site.naming.toolkit_appliance_name:
            found[image.id] = tag.version.raw
    return found


async def test_the_plan_lists_the_older_toolkit_with_its_newer_version_in_the_spec_order(
        deployed: SimServer, connect: SiteFactory) -> None:
    site = await connect(deployed)
    plan = await load_upgrade_plan(site)
    assert [row.cells() for row in plan.rows] == [("Site Toolkit", OLD, NEW)]
    assert [s.kind for s in plan.steps] == [StepKind.CHECK_ATTRIBUTES, StepKind.DOWNLOAD, StepKind.ATTACH_ATTRIBUTES,
                                           StepKind.REMOVE_OLD, StepKind.UPDATE_SITE_CONFIG]
    assert plan.ready and plan.notes and "own upgrade instructions" in plan.notes[0]
    preview = upgrade_preview(plan, 1)
    assert preview.destructive and "onemarketapp export" in preview.cli_script()
    assert "oneimage delete" in preview.cli_script()


async def test_a_fresh_site_has_nothing_to_upgrade(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim)
    plan = await load_upgrade_plan(site)
    assert plan.empty and plan.steps == ()
    events = await collect(partial(apply_upgrade_plan, site, plan, datastore_id=1, confirm_removal=_never))
    assert [e.state for e in events] == ["skipped"]


async def _never(removal: Removal) -> bool:
    raise AssertionError(f"asked to remove {removal}")


async def test_applying_downloads_the_new_version_and_keeps_the_old_one_while_vms_use_it(
        deployed: SimServer, connect: SiteFactory) -> None:
    site = await connect(deployed)
    old_images = await _toolkit_images(site)
    plan = await load_upgrade_plan(site)
    events = await collect(partial(apply_upgrade_plan, site, plan, datastore_id=1, confirm_removal=_never,
                                              poll_interval=POLL))
    kept = [e for e in events if e.step.startswith("remove old version")][-1]
    assert kept.state == "skipped" and "still used by VMs" in kept.message
    now = await _toolkit_images(site)
    assert {i: v for i, v in now.items() if i in old_images} == old_images
    new = {i: v for i, v in now.items() if i not in old_images}
    assert len(new) == 5 and set(new.values()) == {NEW}
    changes = events[-1].data["core_yaml"]
    image_changes = {c["old"]: c["new"] for c in changes if c["kind"] == "image"}
    assert set(image_changes) == set(old_images) and set(image_changes.values()) == set(new)
    assert {c["kind"] for c in changes} == {"image", "VM template", "service template"}
    assert all(c["new"] is not None for c in changes)
    assert (await load_upgrade_plan(site)).empty


async def test_old_version_is_removed_only_after_confirmation(deployed: SimServer, connect: SiteFactory,
                                                              isolated: Path) -> None:
    free_old_images(deployed)
    site = await connect(deployed)
    old_images = await _toolkit_images(site)
    templates_before = {t.id for t in await site.cloud.list_templates()}
    asked: list[Confirmation] = []

    async def confirm(question: Confirmation) -> bool:
        asked.append(question)
        return True

    operation = ApplyUpgrades(datastore_id=1, poll_interval=POLL)
    plan = await operation.plan(site)
    removal = next(s for s in plan.steps if s.kind is StepKind.REMOVE_OLD)
    events: list[Progress] = []
    await run_operation(site, operation, plan, RunContext(events.append, ask=confirm))
    order: list[str] = []
    for event in events:
        if event.state == "done" and event.step.split(":")[0] not in order:
            order.append(event.step.split(":")[0])
    assert order == [k.value for k in (StepKind.CHECK_ATTRIBUTES, StepKind.DOWNLOAD, StepKind.ATTACH_ATTRIBUTES,
                                       StepKind.REMOVE_OLD, StepKind.UPDATE_SITE_CONFIG)]
    assert len(asked) == 1 and asked[0].destructive and set(removal.image_ids) == set(old_images)
    remaining = await _toolkit_images(site)
    assert not set(old_images) & set(remaining) and set(remaining.values()) == {NEW}
    templates_after = {t.id for t in await site.cloud.list_templates()}
    removed_templates = set(templates_before) - templates_after
    assert len(removed_templates) == 4 and len(templates_after - templates_before) == 4
    # the run's one record lists every deletion, with the appliance and version it removed
    [record] = [e for e in audit_entries(isolated) if e["action"] == "upgrade.apply"]
    assert record["outcome"] == "ok" and not [e for e in audit_entries(isolated) if e["action"].endswith(".delete")]
    deleted = [d["object"] for d in record["details"]["deleted"]]
    assert sorted(d for d in deleted if d.startswith("image ")) == sorted(f"image {i}" for i in old_images)
    assert {d for d in deleted if d.startswith("VM template ")} == {f"VM template {t}" for t in removed_templates}
    assert sum(d.startswith("service template ") for d in deleted) == 1
    assert {(d["appliance"], d["version"]) for d in record["details"]["deleted"]} == {("Site Toolkit", OLD)}
    assert [d["appliance"] for d in record["details"]["downloaded"]] == ["Site Toolkit"]
    assert record["details"]["core_yaml"] and "not_deleted" not in record["details"]


async def test_a_declined_removal_keeps_the_old_version(deployed: SimServer, connect: SiteFactory) -> None:
    free_old_images(deployed)
    site = await connect(deployed)
    old_images = await _toolkit_images(site)

    async def decline(removal: Removal) -> bool:
        return False

    events = await collect(partial(apply_upgrade_plan, site, await load_upgrade_plan(site), datastore_id=1,
                                              confirm_removal=decline, poll_interval=POLL))
    assert any("kept (not confirmed)" in e.message for e in events)
    assert set(old_images) <= set(await _toolkit_images(site))


async def test_images_without_attributes_block_the_upgrade_before_any_change(deployed: SimServer,
                                                                             connect: SiteFactory) -> None:
    site = await connect(deployed)
    old = sorted(await _toolkit_images(site))
    image = await site.cloud.image_info(old[0])
    kept = [(k, v) for k, v in image.attributes if not k.startswith(site.naming.attribute_prefix)]
    await site.cloud.image_update(old[0], kept, 0)
    images_before = await site.cloud.list_images()
    plan = await load_upgrade_plan(site)
    assert plan.rows and not plan.ready
    with pytest.raises(SiteError, match="attributes"):
        await collect(partial(apply_upgrade_plan, site, plan, datastore_id=1, confirm_removal=_never, poll_interval=POLL))
    assert await site.cloud.list_images() == images_before


async def _rebuild_published(site: SiteConnection, isolated: Path) -> dict[int, str]:
    """DNS Server v1.1.0 downloaded under its default name ("DNS Server v1.1.0"), its images then
    tagged with an older build of the same software version: the marketplace now offers a rebuild
    (v1.1.0-20250520-0931) whose default name is the same as the installed objects'."""
    from tui.procedures.market.attributes import tag_for_record
    from tui.procedures.market.download import DownloadAppliance, default_download_name, find_market_app
    from tui.procedures.market.marketplaces import load_catalog

    entry = (await load_catalog(site)).newest("service_dns")
    app = await find_market_app(site, entry.record)
    name = default_download_name(entry.record.name, entry.record.version)
    operation = DownloadAppliance(app.id, 1, name, tag=tag_for_record(entry.record), poll_interval=POLL)
    await run_operation(site, operation, await operation.plan(site), RunContext(lambda event: None))
    installed: dict[int, str] = {}
    for image in await site.cloud.list_images():
        tag = installed_version_from_image_template(image.attributes, site.naming)
        if tag is not None and tag.name == "DNS Server":
            await site.cloud.image_update(image.id, [(site.naming.appliance_version_attribute, "20240101-0000")], 1)
            installed[image.id] = image.name
    return installed


async def _tagged(site: SiteConnection, appliance: str) -> dict[int, str]:
    found = {}
    for image in await site.cloud.list_images():
        tag = installed_version_from_image_template(image.attributes, site.naming)
        if tag is not None and tag.name == appliance:
            found[image.id] = tag.version.raw
    return found


async def test_a_download_named_as_the_installed_build_is_refused_before_any_change(
        sim: SimServer, connect: SiteFactory, isolated: Path) -> None:
    """Named as the installed build (a name the operator chose), the download would find the
    installed image of the same app and take it for the new build (tagging old bits as new, then
    removing them as the old version): it refuses, naming the image and a free name."""
    site = await connect(sim)
    installed = await _rebuild_published(site, isolated)
    templates_before = {t.id for t in await site.cloud.list_templates()}
    images_before = {i.id for i in await site.cloud.list_images()}
    with pytest.raises(SiteError) as caught:
        await collect(partial(apply_upgrade_plan, site, await load_upgrade_plan(site), datastore_id=1, confirm_removal=_never,
                                         names={"DNS Server": "DNS Server v1.1.0"}, poll_interval=POLL))
    [image_id] = installed
    assert caught.value.title == f"Image {image_id} 'DNS Server v1.1.0' holds DNS Server v1.1.0-20240101-0000"
    assert "'DNS Server v1.1.0-20250520-0931'" in caught.value.detail and "Nothing was changed" in caught.value.detail
    assert {i.id for i in await site.cloud.list_images()} == images_before
    assert {t.id for t in await site.cloud.list_templates()} == templates_before
    assert await _tagged(site, "DNS Server") == {image_id: "v1.1.0-20240101-0000"}


async def test_the_removal_keeps_every_object_the_new_version_uses(sim: SimServer, connect: SiteFactory,
                                                                    isolated: Path) -> None:
    """Whatever the download reused or created is never in the removal, even when it is among the
    old version's objects (it is listed as kept, with the reason)."""
    site = await connect(sim)
    installed = await _rebuild_published(site, isolated)
    plan = await load_upgrade_plan(site)
    step = next(s for s in plan.steps if s.kind is StepKind.REMOVE_OLD)
    objects = await read_objects(site)
    [template] = [t for t in objects.templates if set(t.image_ids) == set(installed)]
    alone = removal_for(step, objects, site.naming)
    assert alone.image_ids == tuple(installed) and alone.template_ids == (template.id,) and not alone.kept
    reused = DownloadResult("DNS Server v1.1.0", 9, tuple(installed.items()), (template.id,), None,
                            reused=(f"image {next(iter(installed))}",))
    removal = removal_for(step, objects, site.naming, reused)
    assert removal.image_ids == () and removal.template_ids == ()
    assert removal.kept == (f"VM template {template.id}", f"image {next(iter(installed))}")
    assert "kept, the new version uses them" in removal.describe() and removal.cli() == ""


async def test_without_the_new_version_in_the_cloud_the_old_one_is_the_last_copy(
        deployed: SimServer, connect: SiteFactory) -> None:
    """The download's images are gone by the time of the removal (deleted by hand, a failed
    export): the old version is the appliance's last copy and stays."""
    free_old_images(deployed)
    site = await connect(deployed)
    old_images = await _toolkit_images(site)

    async def confirm(removal: Removal) -> bool:
        raise AssertionError("the last copy must not even be offered for removal")

    def drop_new_images(event: Progress) -> None:
        if event.step.startswith("download new version") and event.state == "done":
            for image_id in event.data["download"]["image_ids"]:
                with deployed.site.lock:
                    deployed.site.images.pop(image_id)

    events = await collect(partial(apply_upgrade_plan, site, await load_upgrade_plan(site), datastore_id=1,
                                   confirm_removal=confirm, poll_interval=POLL), on_event=drop_new_images)
    [kept] = [e for e in events if e.step.startswith("remove old version")]
    assert kept.state == "skipped" and "last copy of Site Toolkit" in kept.message
    assert set(old_images) <= set(await _toolkit_images(site))


async def test_a_rebuild_under_the_same_name_is_never_deleted_by_its_own_upgrade(
        sim: SimServer, connect: SiteFactory, isolated: Path) -> None:
    """Issue 22 item 0: the rebuild's default name is the installed build's; the download used to
    reuse the installed image and VM template of that name, and the removal then deleted them as
    the old version (the appliance gone from the cloud while core.yaml named it). The rebuild is
    downloaded under its whole version, as objects of its own, and only the old build goes."""
    site = await connect(sim)
    installed = await _rebuild_published(site, isolated)
    assert len(installed) == 1
    plan = await load_upgrade_plan(site)
    assert [row.cells() for row in plan.rows] == [("DNS Server", "v1.1.0-20240101-0000", "v1.1.0-20250520-0931")]
    asked: list[Confirmation] = []

    async def confirm(question: Confirmation) -> bool:
        asked.append(question)
        return True

    events: list[Progress] = []
    operation = ApplyUpgrades(datastore_id=1, poll_interval=POLL)
    result = await run_operation(site, operation, plan, RunContext(events.append, ask=confirm))
    images_after = {i.id for i in await site.cloud.list_images()}
    templates_after = {t.id for t in await site.cloud.list_templates()}
    # the rebuild is downloaded under its whole version, as objects of its own; the old build goes
    [(_, download)] = result.downloads
    assert download.name == "DNS Server v1.1.0-20250520-0931" and not download.reused
    assert set(download.image_ids) <= images_after and set(download.template_ids) <= templates_after
    assert not set(installed) & images_after and len(asked) == 1
    assert {v for i, v in (await _tagged(site, "DNS Server")).items()} == {"v1.1.0-20250520-0931"}
    [record] = [e for e in audit_entries(isolated) if e["action"] == "upgrade.apply"]
    downloaded = {f"image {i}" for d in record["details"]["downloaded"] for i in d["image_ids"]}
    deleted = {d["object"] for d in record["details"]["deleted"]}
    assert not downloaded & deleted
