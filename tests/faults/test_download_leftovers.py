"""What a download's rollback could not delete is recorded, and the next download deletes it first
(issue 22: the soak's leftover at step 771, an image left in ERROR when the session expired during
the download of a broken appliance): the download journal, `tui.procedures.market.download_journal`."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path

import pytest

from tests.cli_run import run_cli
from tests.faults.conftest import PointAt
from tests.procedure_run import collect
from tui.cli.common import connect_site
from tui.domain.one_states import ImageState
from tui.procedures.market.attributes import tag_for_record
from tui.procedures.market.download import DownloadResult, download_appliance
from tui.procedures.market.download_journal import DownloadJournal, Leftover
from tui.procedures.market.download_plan import DownloadPlan
from tui.procedures.market.download_planning import find_market_app, plan_download
from tui.procedures.market.marketplaces import load_catalog
from tui.procedures.progress import Progress
from tui.settings import Settings
from tui.sim.server import SimServer

BROKEN = "service_traffic_generator"  # its image ends in ERROR (tui/sim/images.py `copied`)
POLL = ("--poll", "0.02")


def _journal(tmp_path: Path) -> list[Leftover]:
    directories = [d for d in (tmp_path / "state").glob("**/downloads/*") if d.is_dir()]
    return [left for d in directories for left in DownloadJournal(d).entries()]


def _download_broken_with_the_session_expiring(sim: SimServer, capsys: pytest.CaptureFixture[str]) -> int:
    """The soak's step 771: returns the image the rollback could not delete."""
    before = set(sim.site.images)
    sim.site.faults.expire_at.add("one.image.info")
    code, answer, _ = run_cli(capsys, "market", "download", f"{sim.market_url}#{BROKEN}", "--datastore", "1",
                              "--yes", "--json", *POLL)
    assert code == 1 and not answer["ok"], answer
    (image_id,) = set(sim.site.images) - before
    for _ in range(100):  # the datastore finishes its copy: the image ends in ERROR (simulated time jumps)
        if sim.site.images[image_id].state == ImageState.ERROR or not sim.site.run_next_event():
            break
    assert sim.site.images[image_id].state == ImageState.ERROR
    sim.site.faults.expire_at = set()
    sim.site.faults.expired_credentials = False  # logged in again
    return image_id


def test_a_leftover_the_rollback_could_not_delete_is_recorded(sim: SimServer, env: PointAt, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    env(sim)
    image_id = _download_broken_with_the_session_expiring(sim, capsys)
    recorded = _journal(tmp_path)
    assert ("image", image_id) in {(left.kind, left.id) for left in recorded}, recorded
    image = next(left for left in recorded if left.kind == "image")
    assert image.name == sim.site.images[image_id].name and "Traffic Generator" in image.appliance and image.why
    entry = next((tmp_path / "state").glob(f"**/downloads/*/image-{image_id}.json"))
    assert entry.stat().st_mode & 0o777 == 0o600 and entry.parent.stat().st_mode & 0o777 == 0o700
    export = [json.loads(line) for line in Path(tmp_path / "audit" / "audit.log").read_text().splitlines()][-1]
    assert f"oneimage delete {image_id}" in export["details"]["summary"]
    assert "next `sitetk market download` deletes them first" in export["details"]["summary"]


def test_the_next_download_deletes_the_recorded_leftovers_first_and_says_so(
        sim: SimServer, env: PointAt, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env(sim)
    image_id = _download_broken_with_the_session_expiring(sim, capsys)
    left = {(e.kind, e.id) for e in _journal(tmp_path)}

    code, preview, _ = run_cli(capsys, "market", "download", f"{sim.market_url}#service_dns", "--datastore", "1",
                               "--dry-run", "--json")
    assert code == 0, preview
    deletes = [c for c in preview["preview"]["changes"] if c["kind"] == "delete"]
    assert f"oneimage delete {image_id}" in [c["cli"] for c in deletes], preview["preview"]
    assert image_id in sim.site.images and _journal(tmp_path)  # a preview changes nothing

    code, answer, _ = run_cli(capsys, "market", "download", f"{sim.market_url}#service_dns", "--datastore", "1",
                              "--yes", "--json", *POLL)
    assert code == 0, answer
    assert image_id not in sim.site.images
    assert {(c["kind"], c["id"]) for c in answer["result"]["cleaned"]} == left
    cleaned = [e for e in answer["events"] if e["step"] == f"clean up image {image_id}"]
    assert cleaned and cleaned[-1]["state"] == "done", answer["events"]
    assert _journal(tmp_path) == []
    export = [json.loads(line) for line in Path(tmp_path / "audit" / "audit.log").read_text().splitlines()][-1]
    assert export["outcome"] == "ok" and f"oneimage delete {image_id}" in [c["cli"] for c in export["details"]["cleaned"]]


def test_a_recorded_object_gone_is_forgotten_silently_one_in_use_with_a_note(
        sim: SimServer, env: PointAt, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env(sim)
    image_id = _download_broken_with_the_session_expiring(sim, capsys)
    journal = DownloadJournal(next((tmp_path / "state").glob("**/downloads/*")))
    with sim.site.lock:  # the operator deleted the image and its template by hand
        for kind, object_id in [(e.kind, e.id) for e in journal.entries()]:
            (sim.site.images if kind == "image" else sim.site.templates).pop(object_id, None)
    # an image of the site a VM template uses (the operator took it into use)
    in_use = next(int(dict(v)["IMAGE_ID"]) for t in sim.site.templates.values() for k, v in t.template
                  if k == "DISK" and isinstance(v, list) and "IMAGE_ID" in dict(v))
    journal.record(Leftover("image", in_use, sim.site.images[in_use].name, "Traffic Generator", "test"))
    code, answer, _ = run_cli(capsys, "market", "download", f"{sim.market_url}#service_dns", "--datastore", "1",
                              "--yes", "--json", *POLL)
    assert code == 0, answer
    assert "cleaned" not in answer["result"] and in_use in sim.site.images and image_id not in sim.site.images
    notes = [e for e in answer["events"] if e["step"] == f"leftover image {in_use}"]
    assert notes and "uses it" in notes[0]["message"], answer["events"]
    assert _journal(tmp_path) == []


def test_every_download_cleans_the_journal_not_only_market_download(
        sim: SimServer, env: PointAt, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`market upgrades` and `site enable` download through `plan_download` and `download_appliance`
    without `market download`'s operation: the journal is read and cleaned there (issue 22 review)."""
    env(sim)
    image_id = _download_broken_with_the_session_expiring(sim, capsys)

    async def download_as_upgrades_do() -> tuple[DownloadPlan, list[Progress]]:
        site = await connect_site(Settings.load())
        try:
            entry = (await load_catalog(site)).newest("service_dns")
            app = await find_market_app(site, entry.record)
            plan = await plan_download(site, app.id, 1, "dns", tag=tag_for_record(entry.record))
            return plan, await collect(partial(download_appliance, site, plan, poll_interval=0.02))
        finally:
            await site.close()

    plan, events = asyncio.run(download_as_upgrades_do())
    assert ("image", image_id) in {(left.kind, left.id) for left in plan.cleanup.clean}, plan.cleanup
    assert image_id not in sim.site.images and _journal(tmp_path) == []
    assert [e.state for e in events if e.step == f"clean up image {image_id}"][-1] == "done"
    result = events[-1].outcome
    assert isinstance(result, DownloadResult) and [c["id"] for c in result.cleaned if c["kind"] == "image"] == [image_id]
