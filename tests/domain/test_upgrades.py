"""Installed versus available appliances and the upgrade plan."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.upgrades import (
    UPGRADE_TABLE_HEADER,
    InstallState,
    StepKind,
    appliance_statuses,
    build_upgrade_plan,
    looks_like,
    upgrade_rows,
)

from .builders import image, record, tagged_image

OLD = "v0.4.0-20250219-2235"
NEW = "v0.5.0-20250403-1109"


def toolkit(version: str = NEW):
    return record("Site Toolkit", version, "service_toolkit")


def dns(version: str = "v1.2.0-20250101-0000"):
    return record("DNS server", version, "dns")


def test_not_downloaded() -> None:
    (status,) = appliance_statuses([toolkit()], [image(1, "ubuntu")], DEFAULT_NAMING)
    assert status.state is InstallState.NOT_DOWNLOADED
    assert status.installed is None and status.images == () and status.untagged == ()
    assert status.label == "not downloaded"


def test_up_to_date() -> None:
    images = [tagged_image(i, toolkit()) for i in range(4)]
    (status,) = appliance_statuses([toolkit()], images, DEFAULT_NAMING)
    assert status.state is InstallState.UP_TO_DATE
    assert status.installed is not None and status.installed.raw == NEW
    assert len(status.images) == 4 and status.outdated == ()
    assert status.note == ""


def test_update_available_names_previous_and_new() -> None:
    old = [tagged_image(i, toolkit(OLD)) for i in (10, 11, 12, 13)]
    (status,) = appliance_statuses([toolkit()], old, DEFAULT_NAMING)
    assert status.state is InstallState.UPDATE_AVAILABLE
    assert status.label == f"update available ({OLD} -> {NEW})"
    assert [t.image.id for t in status.outdated] == [10, 11, 12, 13]
    (row,) = upgrade_rows([status])
    assert row.cells() == ("Site Toolkit", OLD, NEW)
    assert UPGRADE_TABLE_HEADER == ("Software", "Previous", "New")


def test_untagged_lookalike_image() -> None:
    images = [image(5, "site_toolkit-automation-0"), image(6, "mysite toolkit"), image(7, "Ubuntu 22.04")]
    (status,) = appliance_statuses([toolkit()], images, DEFAULT_NAMING)
    assert status.state is InstallState.UNTAGGED
    assert [i.id for i in status.untagged] == [5]
    assert "5" in status.note and "no marketplace attributes" in status.note


@pytest.mark.parametrize(
    ("image_name", "appliance", "expected"),
    [
        ("Site Toolkit", "Site Toolkit", True),
        ("site_toolkit-disk0", "Site Toolkit", True),
        ("SITE-TOOLKIT v0.4", "Site Toolkit", True),
        ("mysite toolkit", "Site Toolkit", False),
        ("Toolkit Site", "Site Toolkit", False),
        ("anything", "", False),
        ("anything", "---", False),
        ("DNS server (copy)", "DNS server", True),
    ],
)
def test_looks_like(image_name: str, appliance: str, expected: bool) -> None:
    assert looks_like(image_name, appliance) is expected


def test_images_tagged_for_another_appliance_do_not_count() -> None:
    (status,) = appliance_statuses([toolkit()], [tagged_image(1, dns(), name="Site Toolkit copy")], DEFAULT_NAMING)
    # tagged (for DNS), so never an untagged lookalike, and not an installed toolkit either
    assert status.state is InstallState.NOT_DOWNLOADED


def test_old_and_new_side_by_side_is_up_to_date_with_a_note() -> None:
    images = [tagged_image(1, toolkit(OLD)), tagged_image(2, toolkit(NEW))]
    (status,) = appliance_statuses([toolkit()], images, DEFAULT_NAMING)
    assert status.state is InstallState.UP_TO_DATE
    assert "image(s) 1 hold an older version" in status.note


def test_a_never_downloaded_older_build_is_not_up_to_date() -> None:
    (status,) = appliance_statuses([toolkit(OLD)], [tagged_image(1, toolkit(NEW))], DEFAULT_NAMING)
    assert status.state is InstallState.OLDER_BUILD
    assert status.label == f"older build ({NEW} installed)"
    assert "never downloaded" in status.note
    assert build_upgrade_plan([status], DEFAULT_NAMING).empty


def test_an_installed_older_build_beside_a_newer_one_is_up_to_date() -> None:
    images = [tagged_image(1, toolkit(NEW)), tagged_image(2, toolkit(OLD))]
    (status,) = appliance_statuses([toolkit(OLD)], images, DEFAULT_NAMING)
    assert status.state is InstallState.UP_TO_DATE
    assert "a newer build" in status.note


def _service_parts(market: str = "http://m", version: str = NEW) -> list:
    def rec(name: str, record_id: str, **fields: object):
        r = record(name, version, record_id, **fields)
        return replace(r, marketplace_url=market)

    return [
        rec("Site Toolkit", "svc", type="SERVICE_TEMPLATE", roles={"manager": "Site Toolkit manager"}),
        rec("Site Toolkit manager", "svc_vm", type="VMTEMPLATE", disks=["Site Toolkit manager disk"]),
        rec("Site Toolkit manager disk", "svc_img"),
    ]


def test_parts_of_a_downloaded_service_follow_its_status() -> None:
    main, community = _service_parts("http://main"), _service_parts("http://community", OLD)
    # a service download tags every image with the service's name and version
    images = [tagged_image(i, main[0], name=f"Site Toolkit v0.5.0-manager-disk{i}") for i in (1, 2)]
    statuses = appliance_statuses(main + community, images, DEFAULT_NAMING)
    states = [(s.record.name, s.record.marketplace_url, s.state, s.part_of) for s in statuses]
    assert states == [
        ("Site Toolkit", "http://main", InstallState.UP_TO_DATE, ""),
        ("Site Toolkit manager", "http://main", InstallState.UP_TO_DATE, "Site Toolkit"),
        ("Site Toolkit manager disk", "http://main", InstallState.UP_TO_DATE, "Site Toolkit"),
        ("Site Toolkit", "http://community", InstallState.OLDER_BUILD, ""),
        ("Site Toolkit manager", "http://community", InstallState.OLDER_BUILD, "Site Toolkit"),
        ("Site Toolkit manager disk", "http://community", InstallState.OLDER_BUILD, "Site Toolkit"),
    ]
    part = statuses[2]
    assert [t.image.id for t in part.images] == [1, 2] and "part of Site Toolkit" in part.note
    # parts are upgraded with their service, never planned on their own
    old = [tagged_image(i, community[0]) for i in (1, 2)]
    plan = build_upgrade_plan(appliance_statuses(main, old, DEFAULT_NAMING), DEFAULT_NAMING)
    assert [r.software for r in plan.rows] == ["Site Toolkit"]


def test_parts_of_a_service_not_downloaded_are_not_downloaded() -> None:
    statuses = appliance_statuses(_service_parts(), [], DEFAULT_NAMING)
    assert [s.state for s in statuses] == [InstallState.NOT_DOWNLOADED] * 3
    assert all(s.part_of == "" for s in statuses)


def test_a_bare_version_installed_is_planned_by_its_software_version() -> None:
    bare, newer = record("Container Cluster", "v1.29", "cc"), record("Container Cluster", "1.31.3-6.10.0-3-20251118-1327", "cc")
    for tagged in (tagged_image(7, bare),  # tagged by the console: VERSION="none"
                   image(7, "Container Cluster v1.29", (("PLATFORM_MARKETPLACE_APPLIANCE_NAME", "Container Cluster"),
                                                        ("PLATFORM_MARKETPLACE_APPLIANCE_VERSION", ""),
                                                        ("PLATFORM_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION", "v1.29")))):
        old_row, new_row = appliance_statuses([bare, newer], [tagged], DEFAULT_NAMING)
        assert old_row.state is InstallState.NEWER_ELSEWHERE and old_row.installed is not None
        assert new_row.state is InstallState.UPDATE_AVAILABLE
        plan = build_upgrade_plan([new_row], DEFAULT_NAMING)
        assert plan.ready and plan.steps[0].done, plan.steps[0].summary
        assert [r.cells() for r in plan.rows] == [("Container Cluster", "v1.29", "1.31.3-6.10.0-3-20251118-1327")]


@pytest.mark.parametrize("odd", ["v1.29", "1.31.3-6.10.0-3-20251118-1327", "v4.3.0.23-20250919-1159", "7.4.0-0-20260714", ""])
def test_non_conforming_available_versions_are_compared_best_effort(odd: str) -> None:
    (status,) = appliance_statuses([dns(odd)], [tagged_image(1, dns("v0.0.1-20200101-0000"))], DEFAULT_NAMING)
    assert "compared best-effort" in status.note
    assert status.state in (InstallState.UPDATE_AVAILABLE, InstallState.OLDER_BUILD)


def test_tag_names_follow_the_naming_profile() -> None:
    naming = NamingProfile(attribute_prefix="ONE")
    images = [tagged_image(1, toolkit(OLD), naming=naming)]
    assert appliance_statuses([toolkit()], images, naming)[0].state is InstallState.UPDATE_AVAILABLE
    # read with the default prefix, the same image carries no tag and only looks like the toolkit
    assert appliance_statuses([toolkit()], images, DEFAULT_NAMING)[0].state is InstallState.UNTAGGED


def test_plan_follows_the_spec_rules_in_order() -> None:
    images = [tagged_image(i, toolkit(OLD)) for i in (10, 11, 12, 13)]
    images += [tagged_image(20, dns("v1.0.0-20240101-0000"), running_vms=2), image(30, "ubuntu")]
    statuses = appliance_statuses([toolkit(), dns()], images, DEFAULT_NAMING)
    plan = build_upgrade_plan(statuses, DEFAULT_NAMING)
    assert [r.cells() for r in plan.rows] == [
        ("Site Toolkit", OLD, NEW),
        ("DNS server", "v1.0.0-20240101-0000", "v1.2.0-20250101-0000"),
    ]
    kinds = [s.kind for s in plan.steps]
    assert kinds == [
        StepKind.CHECK_ATTRIBUTES, StepKind.CHECK_ATTRIBUTES,
        StepKind.DOWNLOAD, StepKind.ATTACH_ATTRIBUTES, StepKind.DOWNLOAD, StepKind.ATTACH_ATTRIBUTES,
        StepKind.REMOVE_OLD, StepKind.REMOVE_OLD,
        StepKind.UPDATE_SITE_CONFIG,
    ]
    assert all(s.done for s in plan.steps[:2]) and plan.ready
    removals = [s for s in plan.steps if s.kind is StepKind.REMOVE_OLD]
    assert all(s.needs_confirmation for s in removals)
    assert not any(s.needs_confirmation for s in plan.steps if s.kind is not StepKind.REMOVE_OLD)
    assert removals[0].image_ids == (10, 11, 12, 13)
    assert "still used by VMs" in removals[1].summary
    assert plan.old_image_ids == (10, 11, 12, 13, 20)
    assert plan.steps[-1].image_ids == (10, 11, 12, 13, 20)
    assert "add any new site variables" in plan.steps[-1].summary
    assert plan.steps[2].record is not None and plan.steps[2].record.version == NEW
    assert plan.notes and "manager follows its own upgrade instructions" in plan.notes[0]


def test_plan_check_step_flags_images_missing_attributes() -> None:
    partial = image(11, "Site Toolkit disk1", (("PLATFORM_MARKETPLACE_APPLIANCE_NAME", "Site Toolkit"),))
    images = [tagged_image(10, toolkit(OLD)), partial, image(12, "site toolkit disk2")]
    plan = build_upgrade_plan(appliance_statuses([toolkit()], images, DEFAULT_NAMING), DEFAULT_NAMING)
    check = plan.steps[0]
    assert check.kind is StepKind.CHECK_ATTRIBUTES and not check.done
    assert check.image_ids == (11, 12)
    assert not plan.ready


def test_plan_blocks_untagged_appliances_and_skips_up_to_date() -> None:
    statuses = appliance_statuses(
        [toolkit(), dns()], [image(5, "DNS server"), tagged_image(1, toolkit())], DEFAULT_NAMING
    )
    plan = build_upgrade_plan(statuses, DEFAULT_NAMING)
    assert plan.empty and plan.steps == () and plan.notes == ()
    assert len(plan.blocked) == 1 and plan.blocked[0].startswith("DNS server: image(s) 5")
    assert not plan.ready


def test_plan_restricted_to_chosen_appliances() -> None:
    images = [tagged_image(1, toolkit(OLD)), tagged_image(2, dns("v1.0.0-20240101-0000"))]
    statuses = appliance_statuses([toolkit(), dns()], images, DEFAULT_NAMING)
    plan = build_upgrade_plan(statuses, DEFAULT_NAMING, only={"DNS server"})
    assert [r.software for r in plan.rows] == ["DNS server"]
    assert plan.notes == ()
    assert plan.old_image_ids == (2,)


def test_nothing_to_upgrade() -> None:
    plan = build_upgrade_plan((), DEFAULT_NAMING)
    assert plan.empty and plan.ready and plan.old_image_ids == ()
