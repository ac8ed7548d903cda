"""The upgrade plan on the deployed scenario (toolkit v0.4.0 installed, v0.5.0 offered) and applying it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.market.conftest import POLL, SiteFactory, audit_entries, collect, free_old_images
from tui.domain.attribute_file import installed_version_from_image_template
from tui.domain.upgrades import StepKind
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.operation import Confirmation, RunContext, run_operation
from tui.procedures.progress import Progress
from tui.procedures.upgrades import ApplyUpgrades, Removal, apply_upgrade_plan, load_upgrade_plan, upgrade_preview
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
    events = await collect(apply_upgrade_plan(site, plan, datastore_id=1, confirm_removal=_never))
    assert [e.state for e in events] == ["skipped"]


async def _never(removal: Removal) -> bool:
    raise AssertionError(f"asked to remove {removal}")


async def test_applying_downloads_the_new_version_and_keeps_the_old_one_while_vms_use_it(
        deployed: SimServer, connect: SiteFactory) -> None:
    site = await connect(deployed)
    old_images = await _toolkit_images(site)
    plan = await load_upgrade_plan(site)
    events = await collect(apply_upgrade_plan(site, plan, datastore_id=1, confirm_removal=_never,
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

    events = await collect(apply_upgrade_plan(site, await load_upgrade_plan(site), datastore_id=1,
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
        await collect(apply_upgrade_plan(site, plan, datastore_id=1, confirm_removal=_never, poll_interval=POLL))
    assert await site.cloud.list_images() == images_before
