"""The site record: its JSON shape, the file (mode 0600, atomic, one per endpoint) and errors."""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from tui.domain.site_record import (
    RecordedRole,
    RecordedVm,
    SiteRecord,
    SiteRecordError,
    record_from_json,
    record_to_json,
    records_from_json,
)
from tui.errors import SiteError
from tui.procedures.site_record import load_site_record, load_site_records, save_site_record, site_record_path
from tui.settings import Settings


def record(service_id: int, created: str = "2025-04-03T11:09:00+00:00") -> SiteRecord:
    return SiteRecord(
        endpoint="http://frontend:2633/RPC2", service_id=service_id, service_name=f"Site Toolkit v0.5.0 #{service_id}",
        template_id=3, template_name="Site Toolkit v0.5.0", platform_version="7.0.0", created=created,
        state="RUNNING",
        roles=(RecordedRole("objectstore", (RecordedVm(10 + service_id, "objectstore_0_(service_1)", ("10.0.0.20",)),),
                            "RUNNING"),
               RecordedRole("automation", (RecordedVm(20 + service_id, "automation_0_(service_1)", ("10.0.0.21",)),),
                            "RUNNING")),
        networks=(("Public", "0"),), cloud_username="tkauto", automation_role="automation",
        automation_public_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKHpgTxaWLOXZlFNUDN4kvBzx5n3JhHoVIkk6ByaeuEN a@b",
    )


def settings(tmp_path: Path, endpoint: str = "http://frontend:2633/RPC2") -> Settings:
    return replace(Settings(), xmlrpc_url=endpoint, state_dir=tmp_path / "state")


def test_json_round_trip_and_lookups() -> None:
    original = record(5)
    assert record_from_json(record_to_json(original)) == original
    assert original.automation_vm == RecordedVm(25, "automation_0_(service_1)", ("10.0.0.21",))
    assert original.vm_ids == (15, 25)
    with pytest.raises(SiteRecordError, match="'service_id' must be int"):
        record_from_json({**record_to_json(original), "service_id": "5"})
    with pytest.raises(SiteRecordError, match="unknown site record format"):
        records_from_json({"format": 99, "deployments": []})


def test_file_is_private_atomic_and_per_endpoint(tmp_path: Path) -> None:
    conf = settings(tmp_path)
    assert load_site_record(conf) is None
    path = save_site_record(conf, record(1, "2025-04-03T11:00:00+00:00"))
    save_site_record(conf, record(2, "2025-04-03T12:00:00+00:00"))
    save_site_record(conf, replace(record(1, "2025-04-03T11:00:00+00:00"), state="WARNING"))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, path.with_suffix(".lock").name])
    assert [r.service_id for r in load_site_records(conf)] == [1, 2]
    assert load_site_record(conf).service_id == 2  # the most recent deployment
    assert load_site_record(conf, 1).state == "WARNING"
    other = settings(tmp_path, "http://other:2633/RPC2")
    assert site_record_path(other) != path and load_site_record(other) is None


def test_concurrent_writers_keep_every_deployment(tmp_path: Path) -> None:
    conf = settings(tmp_path)
    threads = [threading.Thread(target=save_site_record, args=(conf, record(n))) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.service_id for r in load_site_records(conf)) == list(range(12))


def test_a_damaged_file_says_where_and_what_to_do(tmp_path: Path) -> None:
    conf = settings(tmp_path)
    path = save_site_record(conf, record(1))
    path.write_text('{"format": 1,\n "deployments": [}\n')
    with pytest.raises(SiteError) as caught:
        load_site_record(conf)
    assert "line 2, column" in caught.value.detail and "sitetk toolkit vms --rebuild-record" in caught.value.detail
    path.write_text('{"format": 1, "endpoint": "x", "deployments": [{"service_id": 1}]}')
    with pytest.raises(SiteError, match="template_id"):
        load_site_records(conf)
