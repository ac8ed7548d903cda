"""A rollback that fails half-way says what it deleted and what is left, with the command that
removes it; the next run finds what was left and completes the download with it."""

from __future__ import annotations

import json
from typing import Callable

from tests.faults.processes import POLL, Runner
from tui.sim.server import SimServer


def _new_images(server: SimServer, before: set[int]) -> set[int]:
    with server.site.lock:
        return set(server.site.images) - before


def test_a_rollback_that_fails_half_way_names_what_it_deleted_and_what_is_left(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    with sim.site.lock:
        before = set(sim.site.images)
        # the export fails at its VM template, then the rollback cannot delete its image
        sim.site.faults.fail_methods.update({"one.template.allocate": 1, "one.image.delete": 1})
    code, run = runner.run_here("market", "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--yes", "--json", "--poll", POLL)
    answer = json.loads(run.stdout)
    assert code == 1 and not answer["ok"], run.stdout
    left = _new_images(sim, before)
    assert len(left) == 1, left
    (image_id,) = left
    detail = answer["error"]["detail"]
    assert "Rolled back: deleted" not in detail  # nothing was deleted: never a count of what was created
    assert f"image {image_id} " in detail and f"remove it with `oneimage delete {image_id}`" in detail
    export = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"][-1]
    assert export["outcome"] == "failed" and export["details"]["rolled_back"] is False
    assert export["details"]["deleted"] == []
    assert [(e["kind"], e["id"], e["command"]) for e in export["details"]["left"]] \
        == [("image", image_id, f"oneimage delete {image_id}")]
    # the run's one record (the pipeline's): no per-object records beside it
    assert [e["action"] for e in runner.audit_entries()] == ["marketapp.export"]
    assert f"remove it with `oneimage delete {image_id}`" in export["details"]["summary"]
    failed = [e for e in answer["events"] if e["step"] == f"rollback: delete image {image_id}"]
    assert failed and failed[0]["state"] == "failed"

    # the next run finds the image left behind (same name, same app) and completes with it
    code, run = runner.run_here("market", "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--yes", "--json", "--poll", POLL)
    answer = json.loads(run.stdout)
    assert code == 0, run.stdout
    assert answer["result"]["image_ids"] == [image_id] and f"image {image_id}" in answer["result"]["reused"]
    assert _new_images(sim, before) == {image_id}
