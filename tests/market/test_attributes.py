"""Operation 1 over loopback: the attribute file byte for byte, merge mode, idempotent re-runs."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from tests.market.conftest import SiteFactory, audit_entries
from tests.operating import operate
from tests.procedure_run import collect
from tui.domain.appliances import parse_record
from tui.domain.attribute_file import ApplianceTag, installed_version_from_image_template
from tui.domain.naming import NamingProfile
from tui.errors import SiteError
from tui.procedures.market.attributes import (
    AttachAttributes,
    attach_attributes,
    attribute_text,
    default_file_name,
    default_targets,
    images_of_service_template,
    plan_attach,
    tag_for_record,
    write_attribute_file,
)
from tui.procedures.market.marketplaces import load_catalog
from tui.procedures.operation import ReadOnlyRefused
from tui.sim.catalog import TOOLKIT_OLD_VERSION
from tui.sim.server import SimServer

TOOLKIT_FILE = (
    b'PLATFORM_MARKETPLACE_APPLIANCE_NAME="Site Toolkit"\n'
    b'PLATFORM_MARKETPLACE_APPLIANCE_VERSION="20250403-1109"\n'
    b'PLATFORM_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION="v0.5.0"\n'
)


def _record(name: str, version: str):  # type: ignore[no-untyped-def]
    return parse_record({"_id": {"$oid": "x"}, "links": {"download": {"href": "http://m/appliance/x/download"}},
                         "name": name, "version": version, "publisher": "p"}, "http://m")


def test_attribute_file_is_byte_for_byte_the_spec(tmp_path: Path) -> None:
    tag = tag_for_record(_record("Site Toolkit", "v0.5.0-20250403-1109"))
    text = attribute_text(tag, NamingProfile())
    assert text.encode() == TOOLKIT_FILE
    path = write_attribute_file(text, tmp_path / default_file_name(tag))
    assert path.name == "site_toolkit_attributes" and path.suffix == ""
    assert path.read_bytes() == TOOLKIT_FILE


def test_the_prefix_comes_from_the_naming_profile() -> None:
    tag = tag_for_record(_record("DNS Server", "v1.1.0-20250520-0931"))
    text = attribute_text(tag, NamingProfile(attribute_prefix="ONE"))
    assert text.splitlines() == ['ONE_MARKETPLACE_APPLIANCE_NAME="DNS Server"',
                                 'ONE_MARKETPLACE_APPLIANCE_VERSION="20250520-0931"',
                                 'ONE_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION="v1.1.0"']


def test_a_non_conforming_version_is_split_at_its_first_dash() -> None:
    tag = tag_for_record(_record('Cluster "K"', "1.31.3-6.10.0-3-20251118-1327"))
    assert attribute_text(tag, NamingProfile()) == (
        'PLATFORM_MARKETPLACE_APPLIANCE_NAME="Cluster \\"K\\""\n'
        'PLATFORM_MARKETPLACE_APPLIANCE_VERSION="6.10.0-3-20251118-1327"\n'
        'PLATFORM_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION="1.31.3"\n')


@pytest.mark.parametrize("name, message", [("attrs.txt", "has an extension"), ("missing/dir/attrs", "No directory")])
def test_writing_the_file_refuses_an_extension_or_a_missing_directory(tmp_path: Path, name: str,
                                                                      message: str) -> None:
    with pytest.raises(SiteError, match=message):
        write_attribute_file("X=\"1\"\n", tmp_path / name)
    assert not (tmp_path / name).exists()


async def test_merge_mode_keeps_the_other_image_attributes_and_a_rerun_changes_nothing(
        sim: SimServer, connect: SiteFactory, isolated: Path) -> None:
    site = await connect(sim)
    before = await site.cloud.image_info(0)
    assert before.attributes.get("DRIVER") == "qcow2"
    tag = tag_for_record(_record("Ubuntu Base VM", "v1.2.0-20250301-0900"))
    plan = await plan_attach(site, tag, [0])
    assert [t.up_to_date for t in plan.targets] == [False]
    assert plan.preview("/tmp/ubuntu_base_vm_attributes").cli_script() == \
        "oneimage update 0 /tmp/ubuntu_base_vm_attributes --append"
    events: list = []
    await operate(site, AttachAttributes(tag, (0,)), plan, events=events)
    assert [e.data.get("result") for e in events if "result" in e.data] == ["updated"]
    after = await site.cloud.image_info(0)
    for name, value in before.attributes.scalars().items():
        assert after.attributes.get(name) == value, name
    assert installed_version_from_image_template(after.attributes, site.naming) == tag

    again = await plan_attach(site, tag, [0])
    assert again.to_update == () and again.preview().is_noop
    rerun: list = []
    await operate(site, AttachAttributes(tag, (0,)), again, events=rerun)
    per_image = [e for e in rerun if "result" in e.data]
    assert [(e.state, e.data["result"]) for e in per_image] == [("skipped", "unchanged")]
    assert "already carries" in per_image[0].message
    records = [e for e in audit_entries(isolated) if e["action"] == "image.attributes"]
    assert len(records) == 1 and (records[0]["target"], records[0]["outcome"]) == ("image 0", "ok")
    assert records[0]["details"]["images"] == [{"image_id": 0, "name": before.name, "result": "updated"}]
    assert records[0]["details"]["version"] == "v1.2.0-20250301-0900" and records[0]["details"]["append"] == 1

    # the procedure itself writes no record (the pipeline does) and counts the change
    changes = site.changes
    other = tag_for_record(_record("Ubuntu Base VM", "v1.3.0-20250401-0900"))
    await collect(partial(attach_attributes, site, await plan_attach(site, other, [0])))
    assert len([e for e in audit_entries(isolated) if e["action"] == "image.attributes"]) == 1
    assert site.changes == changes + 1


async def test_a_failed_image_leaves_one_record_naming_what_is_left(sim: SimServer, connect: SiteFactory,
                                                                    isolated: Path) -> None:
    """One image of two is gone when the run reaches it: the other is tagged, and the pipeline's
    one failed record names both results and the command that tags the one left."""
    site = await connect(sim)
    spare = await site.cloud.image_allocate('NAME = "spare"\nTYPE = "DATABLOCK"\nSIZE = "1"\n', 1)
    kept, gone = await site.cloud.image_info(0), await site.cloud.image_info(spare)
    tag = tag_for_record(_record("Ubuntu Base VM", "v1.2.0-20250301-0900"))
    plan = await plan_attach(site, tag, [kept.id, gone.id])
    await site.cloud.image_delete(gone.id)
    before = len(audit_entries(isolated))
    with pytest.raises(SiteError, match="Attributes failed on 1 of 2"):
        await operate(site, AttachAttributes(tag, (kept.id, gone.id), "/tmp/attrs"), plan)
    entries = audit_entries(isolated)[before:]
    assert len(entries) == 1
    entry = entries[0]
    assert (entry["action"], entry["target"], entry["outcome"]) == \
        ("image.attributes", f"images {kept.id}, {gone.id}", "failed")
    results = {i["image_id"]: i["result"] for i in entry["details"]["images"]}
    assert results == {kept.id: "updated", gone.id: "failed"}
    [left] = entry["details"]["left"]
    assert left["image_id"] == gone.id and left["command"] == f"oneimage update {gone.id} /tmp/attrs --append"
    assert left["error"] and entry["details"]["error"] == "Attributes failed on 1 of 2 image(s)"
    assert site.settings.one_password not in isolated.read_text()


async def test_every_image_of_the_toolkit_service_gets_the_attributes(sim_factory, connect: SiteFactory) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(scenario="deployed")
    site = await connect(server)
    documents = await site.cloud.list_documents(101)
    images = await images_of_service_template(site, documents[0].id)
    assert len(images) == 5  # each VM template exports its own images (marketplaceapp_ext.rb)
    # the deployed build: the marketplace has published the next one since
    software, stamp = TOOLKIT_OLD_VERSION.split("-", 1)
    tag = ApplianceTag(site.naming.toolkit_appliance_name, stamp, software)
    plan = await plan_attach(site, tag, images)
    assert all(t.up_to_date for t in plan.targets)  # the deployed toolkit is tagged already
    other = ApplianceTag("Site Toolkit", "20990101-0000", "v9.0.0")
    retag = await plan_attach(site, other, images)
    assert len(retag.to_update) == 5 and len(retag.preview().warnings) == 5
    events = await collect(partial(attach_attributes, site, retag))
    assert sum(1 for e in events if e.data.get("result") == "updated") == 5
    for image_id in images:
        image = await site.cloud.image_info(image_id)
        assert installed_version_from_image_template(image.attributes, site.naming) == other


async def test_images_downloaded_earlier_without_attributes_are_found_and_tagged(sim: SimServer,
                                                                                 connect: SiteFactory) -> None:
    site = await connect(sim)
    record = (await load_catalog(site)).find("service_bastion").record
    from tui.procedures.market.download import download_appliance, find_market_app, plan_download

    app = await find_market_app(site, record)
    plan = await plan_download(site, app.id, 1, "bastion image")
    await collect(partial(download_appliance, site, plan, poll_interval=0.02, attach=False))
    entry = (await load_catalog(site)).find("service_bastion")
    assert entry.state.value == "untagged image found"
    targets = default_targets(entry.status)
    assert len(targets) == 1
    await collect(partial(attach_attributes, site, await plan_attach(site, tag_for_record(record), targets)))
    assert (await load_catalog(site)).find("service_bastion").state.value == "up to date"


async def test_a_missing_image_stops_before_anything_changes(sim: SimServer, connect: SiteFactory) -> None:
    site = await connect(sim)
    tag = tag_for_record(_record("DNS Server", "v1.1.0-20250520-0931"))
    with pytest.raises(SiteError):
        await plan_attach(site, tag, [0, 404])
    image = await site.cloud.image_info(0)
    assert installed_version_from_image_template(image.attributes, site.naming) is None
    with pytest.raises(SiteError, match="No image"):
        await plan_attach(site, tag, [])


async def test_a_read_only_refusal_names_the_planned_images(sim: SimServer, connect: SiteFactory,
                                                           isolated: Path) -> None:
    site = await connect(sim)
    tag = tag_for_record(_record("Ubuntu Base VM", "v1.2.0-20250301-0900"))
    plan = await plan_attach(site, tag, [0])
    site.read_only = True
    with pytest.raises(ReadOnlyRefused):
        await operate(site, AttachAttributes(tag, (0,)), plan)
    entry = audit_entries(isolated)[-1]
    assert (entry["action"], entry["target"], entry["outcome"]) == ("image.attributes", "image 0", "refused")
    assert installed_version_from_image_template((await site.cloud.image_info(0)).attributes, site.naming) is None
