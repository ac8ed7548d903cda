"""Operation 2 over loopback: exporting image, VM-template and service apps, failures and rollback."""

from __future__ import annotations

import asyncio
import re
from functools import partial
from pathlib import Path
from typing import Callable

import pytest

from tests.market.conftest import POLL, SiteFactory, audit_entries
from tests.operating import operate
from tests.procedure_run import collect
from tui import timing
from tui.domain.attribute_file import installed_version_from_image_template
from tui.domain.documents import SERVICE_TEMPLATE_DOCUMENT
from tui.domain.one_states import ImageState
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.market.attributes import role_templates, tag_for_record
from tui.procedures.market.download import (
    DownloadAppliance,
    DownloadCancelled,
    DownloadPlan,
    download_appliance,
    find_market_app,
    plan_download,
)
from tui.procedures.market.marketplaces import load_catalog
from tui.procedures.operation import RunContext
from tui.procedures.progress import Progress
from tui.sim.server import SimServer
from tui.timing import Clock

IMAGE_DS = 1


async def _snapshot(site: SiteConnection) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    images = await site.cloud.list_images()
    templates = await site.cloud.list_templates()
    documents = await site.cloud.list_documents(SERVICE_TEMPLATE_DOCUMENT)
    return (tuple(sorted(i.id for i in images)), tuple(sorted(t.id for t in templates)),
            tuple(sorted(d.id for d in documents)))


async def _plan(site: SiteConnection, ref: str, name: str, datastore: int = IMAGE_DS) -> DownloadPlan:
    entry = (await load_catalog(site)).newest(ref)
    app = await find_market_app(site, entry.record)
    return await plan_download(site, app.id, datastore, name, tag=tag_for_record(entry.record))


async def _run(site: SiteConnection, plan: DownloadPlan, **kwargs: object) -> list[Progress]:
    return await collect(partial(download_appliance, site, plan, poll_interval=POLL, **kwargs))  # type: ignore[arg-type]


async def test_image_app_becomes_a_ready_image_and_template_carrying_its_attributes(
        sim: SimServer, connect: SiteFactory, isolated: Path) -> None:
    site = await connect(sim)
    plan = await _plan(site, "service_dns", "dns")
    assert [i.name for i in plan.images] == ["dns"] and [t.name for t in plan.templates] == ["dns"]
    assert "onemarketapp export" in plan.preview().cli_script()
    events: list[Progress] = []
    done = await operate(site, DownloadAppliance(plan.app.id, IMAGE_DS, "dns", tag=plan.tag, poll_interval=POLL),
                         plan, events=events)
    result = events[-1].data["download"]
    image_id, template_id = result["image_ids"][0], result["template_ids"][0]
    image = await site.cloud.image_info(image_id)
    assert image.state == ImageState.READY and image.attributes.get("FROM_APP") == str(plan.app.id)
    tag = installed_version_from_image_template(image.attributes, site.naming)
    assert (tag.name, tag.software_version, tag.stamp) == ("DNS Server", "v1.1.0", "20250520-0931")
    template = await site.cloud.template_info(template_id)
    assert template.image_ids == (image_id,) and template.name == "dns"
    downloading = [e for e in events if e.step == "download dns"]
    assert downloading[0].data["state"] == "LOCKED" and downloading[-1].data["state"] == "READY"
    assert [e.done for e in events] == sorted(e.done for e in events)
    assert events[-1].done == events[-1].total
    # one record of the run, the attributes among its details
    [entry] = audit_entries(isolated)
    assert (entry["action"], entry["target"], entry["outcome"]) == ("marketapp.export", f"app {plan.app.id} -> 'dns'", "ok")
    assert entry["details"]["created"] == {"images": [image_id], "templates": [template_id], "service_templates": []}
    assert entry["details"]["attributes"] == [{"image_id": image_id, "name": "dns", "result": "updated"}]
    assert done.attributes[0].result == "updated"


async def test_vm_template_app_exports_its_images_first(sim: SimServer, connect: SiteFactory) -> None:
    """Images named `<template>-<APP>-<disk NAME>-<idx>` (marketplaceapp_ext.rb release-7.4.0
    export_recursive, lines 438-456)."""
    site = await connect(sim)
    plan = await _plan(site, "service_toolkit_objectstore", "os-only")
    names = [f"os-only-{disk_app}-{disk_name}-{idx}" for idx, (disk_name, disk_app) in enumerate(plan.app.disks)]
    assert [i.name for i in plan.images] == names and len(names) == 2
    assert names[0].startswith("os-only-Site Toolkit objectstore disk0-")
    events = await _run(site, plan)
    creates = [e.step for e in events if e.step.startswith("create") and e.state == "done"]
    assert creates == [f"create image {names[0]}", f"create image {names[1]}", "create VM template os-only"]
    result = events[-1].data["download"]
    template = await site.cloud.template_info(result["template_ids"][0])
    assert template.image_ids == tuple(result["image_ids"])
    for image_id in result["image_ids"]:
        image = await site.cloud.image_info(image_id)
        assert image.state == ImageState.READY
        assert installed_version_from_image_template(image.attributes, site.naming).name == "Site Toolkit objectstore"


async def test_toolkit_service_app_exports_a_template_per_role_with_its_own_images_and_the_service_template(
        sim: SimServer, connect: SiteFactory) -> None:
    """As `onemarketapp export` (marketplaceapp_ext.rb release-7.4.0): VM templates
    `<name>-<role>-<idx>`, each exporting its own images (the manager's disk twice: for the
    manager and the time-series roles), the service template's roles pointing at them."""
    site = await connect(sim)
    plan = await _plan(site, "service_toolkit", "TK")
    obj, aut, man, ts = site.naming.roles
    assert [t.name for t in plan.templates] == [f"TK-{obj}-0", f"TK-{aut}-1", f"TK-{man}-2", f"TK-{ts}-3"]
    assert len(plan.images) == 5 and plan.service is not None
    for template in plan.templates:
        assert all(plan.images[i].name.startswith(f"{template.name}-Site Toolkit ") for i in template.disks)
    events = await _run(site, plan)
    result = events[-1].data["download"]
    assert len(result["image_ids"]) == 5 and len(result["template_ids"]) == 4
    document = await site.cloud.document_info(result["service_template_id"])
    assert document.type == SERVICE_TEMPLATE_DOCUMENT and document.body["name"] == "TK"
    roles = dict(role_templates(document.body))
    assert roles == {t.roles[0]: tid for t, tid in zip(plan.templates, result["template_ids"], strict=True)}
    for template_id in roles.values():
        template = await site.cloud.template_info(template_id)
        assert set(template.image_ids) <= set(result["image_ids"])
    for image_id in result["image_ids"]:
        image = await site.cloud.image_info(image_id)
        assert image.state == ImageState.READY
        tag = installed_version_from_image_template(image.attributes, site.naming)
        assert (tag.name, tag.software_version, tag.stamp) == ("Site Toolkit", "v0.5.0", "20250403-1109")
    ready = [e for e in events if e.step.startswith("download ") and e.state == "done"]
    assert len(ready) == 5 and all("READY" in e.message for e in ready)
    catalog = await load_catalog(site)
    assert catalog.find(f"{sim.market_url}#service_toolkit").state.value == "up to date"


async def test_broken_app_ends_in_error_with_the_reason_and_everything_is_rolled_back(
        sim: SimServer, connect: SiteFactory, isolated: Path) -> None:
    site = await connect(sim)
    before = await _snapshot(site)
    plan = await _plan(site, "service_traffic_generator", "traffic")
    events: list[Progress] = []
    with pytest.raises(SiteError) as caught:
        await collect(partial(download_appliance, site, plan, poll_interval=POLL), on_event=events.append)
    assert "ended in ERROR" in caught.value.title
    assert "MD5" in caught.value.detail and "Rolled back" in caught.value.detail
    failed = [e for e in events if e.state == "failed"]
    assert failed and "ERROR" in failed[0].message and failed[0].data["error"]
    rollback = [e.step for e in events if e.step.startswith("rollback") and e.state == "done"]
    assert any(step.startswith("rollback: delete VM template") for step in rollback)
    assert any(step.startswith("rollback: delete image") for step in rollback)
    assert await _snapshot(site) == before
    assert audit_entries(isolated) == []  # the procedure records nothing itself: the pipeline does (below)


async def test_a_failed_download_run_as_an_operation_leaves_one_record_naming_what_was_deleted(
        sim: SimServer, connect: SiteFactory, isolated: Path) -> None:
    """Through the pipeline the rollback's deletions are details of the run's one record (no
    per-object records), which says what was deleted, that nothing is left, and holds no secret."""
    site = await connect(sim)
    before = await _snapshot(site)
    plan = await _plan(site, "service_traffic_generator", "traffic")
    start = len(audit_entries(isolated))
    with pytest.raises(SiteError, match="ended in ERROR"):
        await operate(site, DownloadAppliance(plan.app.id, IMAGE_DS, "traffic", tag=plan.tag, poll_interval=POLL), plan)
    assert await _snapshot(site) == before
    entries = audit_entries(isolated)[start:]
    assert len(entries) == 1, entries
    entry = entries[0]
    assert (entry["action"], entry["target"], entry["outcome"]) == \
        ("marketapp.export", f"app {plan.app.id} -> 'traffic'", "failed")
    details = entry["details"]
    created = [("image", i) for i in details["created"]["images"]] + \
        [("VM template", i) for i in details["created"]["templates"]]
    assert created and sorted((d["kind"], d["id"]) for d in details["deleted"]) == sorted(created)
    assert details["left"] == [] and details["rolled_back"] is True
    assert "Nothing is left of this run." in details["summary"] and "ended in ERROR" in details["error"]
    assert details["steps_done"] and details["cli"] == plan.export_cli
    assert site.settings.one_password not in isolated.read_text()


async def test_a_hard_cancel_of_the_operation_still_leaves_its_one_record(sim: SimServer, connect: SiteFactory,
                                                                        isolated: Path) -> None:
    """The run's task cancelled from outside (a closed console): the rollback runs without events
    and the pipeline still writes the one cancelled record from what the run kept."""
    site = await connect(sim)
    before = await _snapshot(site)
    plan = await _plan(site, "service_toolkit_automation", "auto-op")
    created = asyncio.Event()
    start = len(audit_entries(isolated))

    def seen(event: Progress) -> None:
        if event.step.startswith("create VM template") and event.state == "done":
            created.set()

    operation = DownloadAppliance(plan.app.id, IMAGE_DS, "auto-op", tag=plan.tag, poll_interval=POLL)
    task = asyncio.create_task(operate(site, operation, plan, context=RunContext(emit=seen)))
    await created.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _snapshot(site) == before
    entries = audit_entries(isolated)[start:]
    assert [(e["action"], e["outcome"]) for e in entries] == [("marketapp.export", "cancelled")]
    details = entries[0]["details"]
    assert details["created"]["templates"] and details["left"] == []
    assert {d["id"] for d in details["deleted"] if d["kind"] == "VM template"} == set(details["created"]["templates"])


async def test_cancel_rolls_back_what_was_created(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim)
    before = await _snapshot(site)
    plan = await _plan(site, "service_toolkit", "TK-cancelled")
    cancel = asyncio.Event()

    def cancel_when_locked(event: Progress) -> None:
        if event.step.startswith("download ") and event.data.get("state") == "LOCKED":
            cancel.set()

    with pytest.raises(DownloadCancelled) as caught:
        await collect(partial(download_appliance, site, plan, poll_interval=POLL), cancel=cancel,
                      on_event=cancel_when_locked)
    detail = caught.value.detail
    assert detail.count("image ") == 5 and detail.count("VM template ") == 4 and detail.count("service template ") == 1
    assert "Rolled back: deleted service template" in detail and "Nothing is left of this run." in detail
    assert await _snapshot(site) == before


async def test_a_hard_task_cancel_rolls_back_too(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim)
    before = await _snapshot(site)
    plan = await _plan(site, "service_toolkit_automation", "auto")
    created = asyncio.Event()

    def seen(event: Progress) -> None:
        if event.step.startswith("create VM template") and event.state == "done":
            created.set()

    async def run() -> None:
        await collect(partial(download_appliance, site, plan, poll_interval=POLL), on_event=seen)

    task = asyncio.create_task(run())
    await created.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _snapshot(site) == before


async def test_a_long_copy_says_every_heartbeat_which_image_it_waits_for_and_how_long(
        sim: SimServer, connect: SiteFactory, driven_clock: Clock) -> None:
    """A 20 GB disk copies for minutes after its last event (LOCKED): every heartbeat the first image
    still copying says so, with the seconds waited and the timeout (the setup screen replaces each
    such line with the next)."""
    site = await connect(sim)
    plan = await _plan(site, "service_toolkit_objectstore", "beat")
    sim.site.hold_clock()  # the images stay LOCKED until the clock is released
    events: list[Progress] = []
    locked = asyncio.Event()
    beat = asyncio.Event()

    def seen(event: Progress) -> None:
        events.append(event)
        if sum(e.message.endswith(" LOCKED") for e in events) == len(plan.images):
            locked.set()
        if ": copying" in event.message:
            beat.set()

    task = asyncio.create_task(collect(partial(download_appliance, site, plan, poll_interval=POLL), on_event=seen))
    try:
        await asyncio.wait_for(locked.wait(), 60)
        assert not beat.is_set()  # no heartbeat before one is due
        driven_clock.advance(timing.PROFILE.heartbeat + 1)
        await asyncio.wait_for(beat.wait(), 60)
    finally:
        sim.site.release_clock()
    await task
    [first] = [e for e in events if ": copying" in e.message][:1]
    assert first.state == "running" and first.step.startswith("download ")
    assert re.fullmatch(r"image \d+ LOCKED: copying; 1 more not READY "
                        r"\(1\d s of at most 3600 s\)", first.message), first.message
    assert events[-1].state == "done"


async def test_a_step_timeout_fails_and_rolls_back(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim)
    before = await _snapshot(site)
    plan = await _plan(site, "service_toolkit_objectstore", "slow")
    with pytest.raises(SiteError) as caught:
        await _run(site, plan, step_timeout=0.01)
    assert caught.value.title == "Download timed out after 0.01 s"
    assert "still not READY" in caught.value.detail and "Rolled back" in caught.value.detail
    assert await _snapshot(site) == before


async def test_a_rerun_reuses_what_exists_and_changes_nothing(sim: SimServer, connect: SiteFactory,
                                                              isolated: Path) -> None:
    site = await connect(sim)
    first = await _run(site, await _plan(site, "service_toolkit", "TK"))
    after_first = await _snapshot(site)
    plan = await _plan(site, "service_toolkit", "TK")
    assert plan.complete and plan.preview().is_noop is False
    assert all(c.kind == "none" for c in plan.preview().changes if "attach" not in c.description)
    second = await _run(site, plan)
    assert await _snapshot(site) == after_first
    assert second[-1].data["download"]["image_ids"] == first[-1].data["download"]["image_ids"]
    skipped = [e for e in second if e.state == "skipped"]
    assert len(skipped) == 5 + 4 + 1 + 5
    assert all("unchanged" in e.message for e in skipped if e.step.startswith("attributes"))


async def test_an_image_name_taken_elsewhere_gets_the_platforms_n_suffix(sim: SimServer, connect: SiteFactory) -> None:
    """marketplaceapp_ext.rb release-7.4.0 lines 438-450: a taken image name moves the prefix to
    `<name>_<n>`; the images a previous export of the same app left are reused instead."""
    site = await connect(sim)
    first = await _plan(site, "service_toolkit_objectstore", "os")
    taken = first.images[0].name
    with sim.site.lock:
        from tui.sim.images import allocate_image

        allocate_image(sim.site, [("NAME", taken), ("PATH", "/dev/null"), ("SIZE", "1")], IMAGE_DS, 0, 0)
    plan = await _plan(site, "service_toolkit_objectstore", "os")
    assert plan.images[0].name == taken.replace("os-", "os_0-", 1) and plan.images[0].existing_id is None
    assert plan.images[1].name == first.images[1].name


async def test_a_name_taken_by_another_image_stops_the_plan(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim)
    before = await _snapshot(site)
    with pytest.raises(SiteError, match="Image name 'Ubuntu 22.04' is taken"):
        await _plan(site, "service_dns", "Ubuntu 22.04")
    assert await _snapshot(site) == before


@pytest.mark.parametrize("datastore, message", [(0, "is a SYSTEM datastore"), (99, "No datastore 99")])
async def test_only_an_image_datastore_is_accepted(sim: SimServer, connect: SiteFactory, datastore: int,
                                                   message: str) -> None:
    site = await connect(sim)
    with pytest.raises(SiteError, match=message):
        await _plan(site, "service_dns", "dns", datastore=datastore)


@pytest.mark.parametrize("name", ["", "   ", "bad\nname", "x" * 200, "dns: primary", "a/b", "esc\x1bname",
                                  "é" * 65])
async def test_a_bad_final_name_is_refused(sim: SimServer, connect: SiteFactory, name: str) -> None:
    """The platform's `PoolObjectSQL::name_is_valid` (src/pool/PoolObjectSQL.cc): refused characters,
    128 bytes at most; control characters it would store are refused too (its XML cannot carry them)."""
    site = await connect(sim)
    before = await _snapshot(site)
    with pytest.raises(SiteError, match="final name") as refused:
        await _plan(site, "service_dns", name)
    assert "\x1b" not in refused.value.title + refused.value.detail
    assert await _snapshot(site) == before


async def test_a_child_name_the_platform_would_refuse_stops_the_plan(sim: SimServer, connect: SiteFactory) -> None:
    """`<name>-<role>-<idx>` grows past the platform's 128 bytes (src/pool/PoolObjectSQL.cc
    `name_is_valid`): refused before anything is created, naming the object and the fix."""
    site = await connect(sim)
    before = await _snapshot(site)
    with pytest.raises(SiteError, match="would refuse the (image|VM template) name") as refused:
        await _plan(site, "service_toolkit", "T" * 120)
    assert "max length is 128" in refused.value.detail and "shorter final name" in refused.value.detail
    assert await _snapshot(site) == before


async def test_a_record_of_an_unregistered_marketplace_cannot_be_exported(sim: SimServer,
                                                                         connect: SiteFactory) -> None:
    from dataclasses import replace

    site = await connect(sim)
    record = (await load_catalog(site)).newest("service_dns").record
    with pytest.raises(SiteError, match="is not registered in the cloud"):
        await find_market_app(site, replace(record, marketplace_url="http://elsewhere.invalid"))
    with pytest.raises(SiteError, match="another version"):
        await find_market_app(site, replace(record, version="v9.9.9-20990101-0000"))


def test_the_platform_time_is_left_out_of_an_image_error() -> None:
    from tui.procedures.market.download import error_reason

    raw = "Sun Nov 22 01:20:01 2026 : Error copying image in the datastore: MD5 mismatch"
    assert error_reason(raw) == "Error copying image in the datastore: MD5 mismatch"
    assert error_reason("plain reason") == "plain reason"


def test_the_suggested_final_name_is_one_the_platform_takes() -> None:
    """A record's name may hold characters src/pool/PoolObjectSQL.cc `name_is_valid` refuses: the
    suggestion replaces them, and a plain name is kept as it is."""
    from tui.procedures.market.download import default_download_name

    assert default_download_name("Site Toolkit", "v0.5.0-20250403-1109") == "Site Toolkit v0.5.0"
    assert default_download_name("DNS: primary/secondary", "v1.0") == "DNS- primary-secondary v1.0"


async def test_a_template_name_taken_after_planning_stops_the_run_as_name_taken(
        sim_factory: Callable[..., SimServer], one_version: str, connect: SiteFactory) -> None:
    """Another operator takes the VM template's name between the plan and the run: every version's
    answer (INTERNAL "NAME is already taken by TEMPLATE <id>." from src/vm_template/VMTemplatePool.cc
    through src/rm/api/TemplateAPI.cc; 6.10 and 7.0 src/rm/RequestManagerAllocate.cc) stops the run
    at once as a taken name, not retried, and the image it made is rolled back."""
    site = await connect(sim_factory(one_version=one_version))
    plan = await _plan(site, "service_dns", "dns")
    before = await _snapshot(site)
    theirs = await site.cloud.template_allocate([("NAME", "dns"), ("CPU", "1"), ("MEMORY", "128")])
    with pytest.raises(SiteError) as caught:
        await _run(site, plan)
    text = caught.value.title + "\n" + caught.value.detail
    assert "Name taken" in text and f"NAME is already taken by TEMPLATE {theirs}." in text, text
    images, templates, documents = before
    assert await _snapshot(site) == (images, tuple(sorted((*templates, theirs))), documents)
