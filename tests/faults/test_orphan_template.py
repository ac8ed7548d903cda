"""A VM template a download left whose images are gone (the soak's leftover, seed 1 step 338: the
site went down while a rollback deleted the template, its answer lost) is mended: the rollback
reads back a delete whose answer was lost once the site answers again, and a later download
deletes an orphan of ours (previewed with its `onetemplate delete`, audited) and creates the
template again; a template that is not the export's, or that a VM came from, is never touched.
The same for a service template of ours whose roles' VM templates are gone (a rollback that lost
its delete, VM templates deleted by hand): previewed with `oneflow-template delete`, deleted,
created again and listed in the run's one record; one that is not the export's, that points at a
VM template still there, or that a service may come from, stops the plan untouched."""

from __future__ import annotations

import json
from typing import Callable

from tests.faults.processes import POLL, Runner
from tui.sim.flow_engine import SERVICE_TYPE
from tui.sim.flow_templates import role_template_id
from tui.sim.images import delete_image
from tui.sim.server import SimServer
from tui.sim.state import SimDocument

APP = "service_dns"
SERVICE_APP = "service_toolkit"


def _download(runner: Runner, *extra: str, app: str = APP) -> tuple[int, dict]:
    code, run = runner.run_here("market", "download", f"{runner.server.market_url}#{app}", "--datastore", "1", "--yes",
                           "--json", "--poll", POLL, *extra)
    return code, json.loads(run.stdout)


def _unrecorded(runner: Runner) -> None:
    """Forget what the download journal recorded of the failed run: the orphan is then one the
    journal does not know (left by `onemarketapp export`, or with the state dir unwritable), which
    the plan recognises by its shape (the journal's own cleaning: test_download_leftovers.py)."""
    entries = list(runner.home.glob("**/downloads/*/*.json"))
    assert entries, "the failed run recorded what its rollback left"
    for entry in entries:
        entry.unlink()


def _orphan(sim: SimServer, runner: Runner) -> tuple[int, str, list[int]]:
    """A rollback that deleted the image but not the VM template (its delete refused): the soak's
    leftover. Returns the template's id, name and its (gone) image ids."""
    with sim.site.lock:
        before = set(sim.site.templates)
        # the export fails following its image (after the template exists); the rollback's template delete is refused
        sim.site.faults.fail_methods.update({"one.image.info": 1, "one.template.delete": 1})
    code, answer = _download(runner)
    assert code == 1, answer
    _unrecorded(runner)
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

    code, run = runner.run_here("market", "download", f"{sim.market_url}#{APP}", "--datastore", "1", "--dry-run", "--json")
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
    assert f"`onetemplate show {orphan_id}`" in answer["error"]["detail"]
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
    assert f"`onetemplate show {orphan_id}` and `onevm show {vm.id}`" in answer["error"]["detail"]
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


# -- a service template whose roles' VM templates are gone ------------------------------------------
def _service_orphan(sim: SimServer, runner: Runner) -> tuple[int, str, list[int]]:
    """A rollback that deleted the images and VM templates but not the service template (its
    delete refused): returns the service template's id, name and the (gone) VM template ids its
    roles point at."""
    with sim.site.lock:
        before = set(sim.site.documents)
        # the export fails following its images (after the service template exists); the
        # rollback's service template delete is refused
        sim.site.faults.fail_methods.update({"one.image.info": 1, "one.document.delete": 1})
    code, answer = _download(runner, app=SERVICE_APP)
    assert code == 1, answer
    assert "oneflow-template delete" in answer["error"]["detail"], answer["error"]
    _unrecorded(runner)
    with sim.site.lock:
        sim.site.faults.fail_methods.clear()
        (doc_id,) = set(sim.site.documents) - before
        doc = sim.site.documents[doc_id]
        pointed = sorted({role_template_id(r) for r in doc.body["roles"]})
        assert pointed and not any(i in sim.site.templates for i in pointed)
        return doc_id, doc.name, pointed  # type: ignore[return-value]


def _role_templates(sim: SimServer, doc_id: int) -> list[int]:
    with sim.site.lock:
        return [role_template_id(r) for r in sim.site.documents[doc_id].body["roles"]]  # type: ignore[misc]


def test_the_next_download_deletes_a_service_template_of_ours_whose_vm_templates_are_gone(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    orphan_id, name, gone = _service_orphan(sim, runner)

    code, run = runner.run_here("market", "download", f"{sim.market_url}#{SERVICE_APP}", "--datastore", "1",
                           "--dry-run", "--json")
    preview = json.loads(run.stdout)
    assert code == 0, run.stdout
    deletes = [c for c in preview["preview"]["changes"] if c["kind"] == "delete"]
    assert [c["cli"] for c in deletes] == [f"oneflow-template delete {orphan_id}"], preview
    assert all(str(i) in deletes[0]["description"] for i in gone)
    with sim.site.lock:
        assert orphan_id in sim.site.documents  # a dry run changes nothing

    code, answer = _download(runner, app=SERVICE_APP)
    assert code == 0, answer
    service_id = answer["result"]["service_template_id"]
    with sim.site.lock:
        assert orphan_id not in sim.site.documents
        assert sim.site.documents[service_id].name == name
    pointed = _role_templates(sim, service_id)
    assert sorted(set(pointed)) == sorted(answer["result"]["template_ids"])
    with sim.site.lock:
        assert all(i in sim.site.templates for i in pointed)
    # the deletion is a detail of the run's one record, with its command
    export = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"][-1]
    assert export["outcome"] == "ok"
    assert [(r["kind"], r["id"], r["cli"]) for r in export["details"]["replaced"]] == \
        [("service template", orphan_id, f"oneflow-template delete {orphan_id}")]
    assert export["details"]["created"]["service_templates"] == [service_id]

    # and again: everything is there, nothing is deleted or created
    code, again = _download(runner, app=SERVICE_APP)
    assert code == 0, again
    assert again["result"]["service_template_id"] == service_id
    export = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"][-1]
    assert "replaced" not in export["details"] and export["details"]["created"]["service_templates"] == []


def test_vm_templates_deleted_by_hand_under_a_complete_service_download_are_repaired(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    code, first = _download(runner, app=SERVICE_APP)
    assert code == 0, first
    service_id = first["result"]["service_template_id"]
    with sim.site.lock:  # the operator deleted the VM templates (not the images, not the service template)
        for template_id in first["result"]["template_ids"]:
            del sim.site.templates[template_id]
    code, answer = _download(runner, app=SERVICE_APP)
    assert code == 0, answer
    assert answer["result"]["image_ids"] == first["result"]["image_ids"]  # reused
    new_service = answer["result"]["service_template_id"]
    assert new_service != service_id
    with sim.site.lock:
        assert service_id not in sim.site.documents
        assert all(i in sim.site.templates for i in _role_templates(sim, new_service))
    export = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"][-1]
    assert [r["id"] for r in export["details"]["replaced"]] == [service_id]


def _refused(runner: Runner, sim: SimServer, orphan_id: int, name: str) -> dict:
    code, answer = _download(runner, app=SERVICE_APP)
    assert code == 1, answer
    assert answer["error"]["title"] == f"Service template name {name!r} is taken", answer["error"]
    assert f"Service template {orphan_id}" in answer["error"]["detail"]
    assert f"oneflow-template show {orphan_id}" in answer["error"]["detail"]
    with sim.site.lock:
        assert orphan_id in sim.site.documents
    return answer["error"]


def test_a_service_template_of_that_name_that_is_not_the_exports_is_left_alone(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    orphan_id, name, gone = _service_orphan(sim, runner)
    with sim.site.lock:  # the operator changed it by hand: not what the export made any more
        sim.site.documents[orphan_id].body["description"] = "mine now"
    error = _refused(runner, sim, orphan_id, name)
    assert "does not look like this app's export" in error["detail"], error


def test_a_service_template_whose_role_points_at_a_vm_template_still_there_is_left_alone(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    orphan_id, name, gone = _service_orphan(sim, runner)
    with sim.site.lock:  # one role now points at a VM template that exists (someone else's, say)
        role = sim.site.documents[orphan_id].body["roles"][0]
        present = min(sim.site.templates)
        shared = role_template_id(role)
        for other in sim.site.documents[orphan_id].body["roles"]:
            if role_template_id(other) == shared:
                other["template_id"] = present
    error = _refused(runner, sim, orphan_id, name)
    assert f"and {present}, which are still there" in error["detail"], error


def test_a_service_template_a_service_may_come_from_is_left_alone(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    orphan_id, name, gone = _service_orphan(sim, runner)
    with sim.site.lock:  # a service instantiated from it (OneFlow copies the template's roles into the service)
        template = sim.site.documents[orphan_id]
        service = SimDocument(id=sim.site.next_id("document"), name="dns for trial 7", uid=template.uid,
                              gid=template.gid, type=SERVICE_TYPE, body=json.loads(json.dumps(template.body)))
        service.body["name"] = service.name
        sim.site.documents[service.id] = service
    error = _refused(runner, sim, orphan_id, name)
    assert f"service {service.id} 'dns for trial 7' may have been instantiated from it" in error["detail"], error


def test_a_service_template_whose_vm_template_cannot_be_read_is_left_alone(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    orphan_id, name, gone = _service_orphan(sim, runner)
    with sim.site.lock:  # whether its VM templates are gone cannot be known: the reads are refused
        sim.site.faults.fail_methods.update({"one.template.info": 10})
    error = _refused(runner, sim, orphan_id, name)
    assert f"VM template {gone[0]}, which could not be read" in error["detail"], error


def test_a_run_that_fails_after_deleting_the_orphan_still_lists_it(
        sim: SimServer, sitetk: Callable[[SimServer], Runner]) -> None:
    runner = sitetk(sim)
    orphan_id, name, gone = _service_orphan(sim, runner)
    with sim.site.lock:  # the next run deletes the orphan, then fails following its images
        sim.site.faults.fail_methods.update({"one.image.info": 1})
    code, answer = _download(runner, app=SERVICE_APP)
    assert code == 1, answer
    with sim.site.lock:
        assert orphan_id not in sim.site.documents and not any(d.name == name for d in sim.site.documents.values())
    export = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"][-1]
    assert export["outcome"] != "ok" and export["details"]["rolled_back"] is True
    assert [(r["id"], r["cli"]) for r in export["details"]["replaced"]] == \
        [(orphan_id, f"oneflow-template delete {orphan_id}")]
    # nothing of ours is left: the next run creates everything again, deleting nothing
    code, answer = _download(runner, app=SERVICE_APP)
    assert code == 0, answer
