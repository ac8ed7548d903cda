"""A VM template a download left whose images are gone (the soak's leftover, seed 1 step 338: the
site went down while a rollback deleted the template, its answer lost) is mended: the rollback
reads back a delete whose answer was lost once the site answers again, and a later download
deletes an orphan of ours (previewed with its `onetemplate delete`, audited) and creates the
template again; a template that is not the export's, or that a VM came from, is never touched."""

from __future__ import annotations

import json
from typing import Callable

from tests.faults.processes import POLL, Runner
from tui.sim.images import delete_image
from tui.sim.server import SimServer

APP = "service_dns"


def _download(runner: Runner, *extra: str) -> tuple[int, dict]:
    code, run = runner.run("market", "download", f"{runner.server.market_url}#{APP}", "--datastore", "1", "--yes",
                           "--json", "--poll", POLL, *extra)
    return code, json.loads(run.stdout)


def _orphan(sim: SimServer, runner: Runner) -> tuple[int, str, list[int]]:
    """A rollback that deleted the image but not the VM template (its delete refused): the soak's
    leftover. Returns the template's id, name and its (gone) image ids."""
    with sim.site.lock:
        before = set(sim.site.templates)
        # the export fails following its image (after the template exists); the rollback's template delete is refused
        sim.site.faults.fail_methods.update({"one.image.info": 1, "one.template.delete": 1})
    code, answer = _download(runner)
    assert code == 1, answer
    with sim.site.lock:
        sim.site.faults.fail_methods.clear()
        (template_id,) = set(sim.site.templates) - before
        template = sim.site.templates[template_id]
        disks = [int(v) for k, vec in template.template if k == "DISK" for sub, v in vec if sub == "IMAGE_ID"]
        assert disks and not any(i in sim.site.images for i in disks)
        return template_id, template.name, disks


def test_a_rollback_reads_back_a_template_delete_whose_answer_was_lost(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    with sim.site.lock:
        templates, images = set(sim.site.templates), set(sim.site.images)
        # the export fails after its VM template; the template delete runs but its answer is lost and
        # the first read back fails too (the site is down): the outcome is unknown for a while
        sim.site.faults.fail_methods.update({"one.image.info": 1, "one.template.info": 1})
        sim.site.faults.lost_answers.update({"one.template.delete": 1})
    code, answer = _download(runner)
    assert code == 1, answer
    with sim.site.lock:
        assert sim.site.faults.lost_answers["one.template.delete"] == 0  # the answer was lost indeed
        assert set(sim.site.templates) == templates and set(sim.site.images) == images
    assert "Nothing is left of this run." in answer["error"]["detail"], answer["error"]
    export = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"][-1]
    assert export["details"]["rolled_back"] is True and export["details"]["left"] == []


def test_the_next_download_deletes_an_orphan_of_ours_and_creates_the_template_again(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    orphan_id, name, gone = _orphan(sim, runner)

    code, run = runner.run("market", "download", f"{sim.market_url}#{APP}", "--datastore", "1", "--dry-run", "--json")
    preview = json.loads(run.stdout)
    assert code == 0, run.stdout
    deletes = [c for c in preview["preview"]["changes"] if c["kind"] == "delete"]
    assert [c["cli"] for c in deletes] == [f"onetemplate delete {orphan_id}"], preview
    assert all(str(i) in deletes[0]["description"] for i in gone)
    with sim.site.lock:
        assert orphan_id in sim.site.templates  # a dry run changes nothing

    code, answer = _download(runner)
    assert code == 0, answer
    (template_id,) = answer["result"]["template_ids"]
    with sim.site.lock:
        assert orphan_id not in sim.site.templates
        template = sim.site.templates[template_id]
        assert template.name == name
        disks = [int(v) for k, vec in template.template if k == "DISK" for sub, v in vec if sub == "IMAGE_ID"]
        assert disks == answer["result"]["image_ids"] and all(i in sim.site.images for i in disks)
    # the orphan's deletion is a detail of the run's one record (the pipeline's), with its command
    export = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"][-1]
    assert export["outcome"] == "ok" and not [e for e in runner.audit_entries() if e["action"] == "vm_template.delete"]
    assert [(r["id"], r["cli"]) for r in export["details"]["replaced"]] == [(orphan_id, f"onetemplate delete {orphan_id}")]
    assert export["details"]["created"]["templates"] == [template_id]

    # and again: everything is there, nothing is deleted or created
    code, again = _download(runner)
    assert code == 0, again
    assert again["result"]["template_ids"] == [template_id]


def test_a_template_of_that_name_that_is_not_the_exports_is_left_alone(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    orphan_id, name, gone = _orphan(sim, runner)
    with sim.site.lock:  # the operator changed it by hand: not what the export made any more
        template = sim.site.templates[orphan_id]
        template.template = [a for a in template.template if a[0] != "MEMORY"] + [("MEMORY", "4242")]
    code, answer = _download(runner)
    assert code == 1, answer
    assert f"VM template name {name!r} is taken" in answer["error"]["title"]
    assert f"VM template {orphan_id}" in answer["error"]["detail"]
    with sim.site.lock:
        assert orphan_id in sim.site.templates


def test_an_orphan_a_vm_was_instantiated_from_is_left_alone(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner]) -> None:
    sim = sim_factory(vms=1)
    runner = sitetk(sim)
    orphan_id, name, gone = _orphan(sim, runner)
    with sim.site.lock:
        vm = next(iter(sim.site.vms.values()))
        vm.template = [a for a in vm.template if a[0] != "TEMPLATE_ID"] + [("TEMPLATE_ID", str(orphan_id))]
        vm.revision += 1
    code, answer = _download(runner)
    assert code == 1, answer
    assert f"VM {vm.id} was instantiated from it" in answer["error"]["detail"], answer["error"]
    with sim.site.lock:
        assert orphan_id in sim.site.templates


def test_an_image_deleted_by_hand_under_a_complete_download_is_repaired(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    code, first = _download(runner)
    assert code == 0, first
    (template_id,) = first["result"]["template_ids"]
    with sim.site.lock:
        for image_id in first["result"]["image_ids"]:
            delete_image(sim.site, image_id)
    code, answer = _download(runner)
    assert code == 0, answer
    assert answer["result"]["template_ids"] != [template_id]
    with sim.site.lock:
        assert template_id not in sim.site.templates
