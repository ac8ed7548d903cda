"""The operation pipeline (tui.procedures.operation, tui.cli.runner) on the download operation,
against the embedded site: typed results, the one read-only refusal (audit-logged), dry runs in
read-only mode, cancel and the time limit."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from tests.market.conftest import POLL, SiteFactory, audit_entries
from tests.market.test_cli import env  # noqa: F401 (fixture)
from tui.__main__ import main
from tui.cli.common import EXIT_OK, EXIT_USAGE
from tui.errors import SiteError
from tui.procedures.market.download import DownloadAppliance, DownloadCancelled, DownloadResult, find_market_app
from tui.procedures.market.marketplaces import load_catalog
from tui.procedures.operation import Operation, ReadOnlyRefused, RunContext, run_operation
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress
from tui.sim.server import SimServer


async def _download_of(site, record_id: str) -> DownloadAppliance:  # type: ignore[no-untyped-def]
    entry = (await load_catalog(site, all_versions=True)).newest(record_id)
    app = await find_market_app(site, entry.record)
    return DownloadAppliance(app.id, 1, f"{app.name} op", poll_interval=POLL)


async def test_a_download_runs_as_an_operation_with_a_typed_result(sim: SimServer, connect: SiteFactory,
                                                                   isolated: Path) -> None:
    site = await connect(sim)
    operation = await _download_of(site, "service_dns")
    plan = await operation.plan(site)
    assert not set(sim.site.images) & {i.existing_id for i in plan.images}  # planning changed nothing
    seen: list[Progress] = []
    result = await run_operation(site, operation, plan, RunContext(emit=seen.append))
    assert isinstance(result, DownloadResult) and result.name == "DNS Server op"
    assert set(result.image_ids) <= set(sim.site.images)
    assert seen and seen[-1].outcome == result
    # one record of the run, from the pipeline: what was created and each image's attributes
    entries = audit_entries(isolated)
    assert [(e["action"], e["target"], e["outcome"]) for e in entries] == \
        [("marketapp.export", f"app {plan.app.id} -> 'DNS Server op'", "ok")]
    details = entries[0]["details"]
    assert details["created"] == {"images": list(result.image_ids), "templates": list(result.template_ids),
                                  "service_templates": []}
    assert [(a["image_id"], a["result"]) for a in details["attributes"]] == [(i, "updated") for i in result.image_ids]


async def test_read_only_refuses_the_run_once_and_audits_it(sim: SimServer, connect: SiteFactory,
                                                            isolated: Path) -> None:
    site = await connect(sim)
    operation = await _download_of(site, "service_dns")
    plan = await operation.plan(site)  # planning reads only: allowed in read-only mode
    site.read_only = True
    images = set(sim.site.images)
    with pytest.raises(ReadOnlyRefused) as caught:
        await run_operation(site, operation, plan, RunContext(emit=lambda e: None))
    assert "read-only" in caught.value.detail
    assert set(sim.site.images) == images
    entry = audit_entries(isolated)[-1]
    assert entry["action"] == "marketapp.export" and entry["outcome"] == "refused"
    assert entry["target"] == f"app {plan.app.id} -> {plan.name!r}"  # the planned object, not the title


async def test_cancel_stops_the_run_and_rolls_back(sim: SimServer, connect: SiteFactory, isolated: Path) -> None:
    site = await connect(sim)
    operation = await _download_of(site, "service_toolkit")
    plan = await operation.plan(site)
    images = set(sim.site.images)
    context = RunContext(emit=lambda e: None)

    def emit(event: Progress) -> None:
        if event.state == "running" and event.step.startswith("download"):
            context.cancel.set()

    context.emit = emit
    with pytest.raises(DownloadCancelled):
        await run_operation(site, operation, plan, context)
    assert set(sim.site.images) == images
    entries = audit_entries(isolated)
    assert [(e["action"], e["outcome"]) for e in entries] == [("marketapp.export", "cancelled")]
    details = entries[0]["details"]
    assert details["created"]["images"] and details["left"] == [] and details["error"] == "Download cancelled"
    assert sorted(d["id"] for d in details["deleted"] if d["kind"] == "image") == sorted(details["created"]["images"])


@dataclass(frozen=True)
class _Waits(Operation[int, int]):
    """An operation that never finishes on its own (for the time limit)."""

    title: ClassVar[str] = "Wait forever"
    action: ClassVar[str] = "test.wait"

    async def plan(self, site) -> int:  # type: ignore[no-untyped-def]
        return 1

    def preview(self, plan: int) -> Preview:
        return Preview(self.title, (Change("wait", "sleep inf", "action"),))

    async def execute(self, site, plan: int, context: RunContext) -> int:  # type: ignore[no-untyped-def]
        await asyncio.Event().wait()
        return plan


async def test_the_time_limit_stops_an_operation_and_says_so(sim: SimServer, connect: SiteFactory,
                                                             isolated: Path) -> None:
    site = await connect(sim)
    with pytest.raises(SiteError) as caught:
        await run_operation(site, _Waits(), 1, RunContext(emit=lambda e: None), timeout=0.05)
    assert "no result within" in caught.value.title
    assert audit_entries(isolated)[-1]["outcome"] == "timeout"



@dataclass(frozen=True)
class _Fails(Operation[int, int]):
    """An operation that does one step, then fails (or waits to be cancelled), and records its failure once."""

    cancel_instead: bool = False
    title: ClassVar[str] = "Fail half-way"
    action: ClassVar[str] = "test.fail"
    cancels_itself: ClassVar[bool] = False

    async def plan(self, site) -> int:  # type: ignore[no-untyped-def]
        return 7

    def preview(self, plan: int) -> Preview:
        return Preview(self.title, (Change("fail", "false", "action"),), target=f"object {plan}")

    async def execute(self, site, plan: int, context: RunContext) -> int:  # type: ignore[no-untyped-def]
        context.report(Progress("first", 1, 2, "first step made", "done"))
        context.report(Progress("second", 2, 2, "second step", "running"))
        if self.cancel_instead:
            context.cancel.set()
            await asyncio.Event().wait()
        raise SiteError("Second step refused", "the site said no")

    def audit_failure(self, plan: int, error: SiteError, context: RunContext) -> dict[str, object]:
        return {"left": [f"object {plan}"]}


@pytest.mark.parametrize("cancel", [False, True], ids=["fails", "cancelled"])
async def test_a_run_that_does_not_finish_is_recorded_once_by_the_pipeline(sim: SimServer, connect: SiteFactory,
                                                                           isolated: Path, cancel: bool) -> None:
    site = await connect(sim)
    before = len(audit_entries(isolated))
    with pytest.raises(SiteError):
        await run_operation(site, _Fails(cancel), 7, RunContext(emit=lambda e: None))
    entries = audit_entries(isolated)[before:]
    assert len(entries) == 1
    entry = entries[0]
    assert (entry["action"], entry["target"], entry["outcome"]) == ("test.fail", "object 7", "cancelled" if cancel else "failed")
    assert entry["details"]["steps_done"] == ["first"] and entry["details"]["left"] == ["object 7"]
    assert entry["details"]["error"] == ("Cancelled" if cancel else "Second step refused")


def test_cli_dry_run_is_allowed_in_read_only_mode_and_the_run_is_refused(sim: SimServer, env, capsys,  # noqa: F811
                                                                        isolated: Path) -> None:
    env(sim)
    images = set(sim.site.images)
    code = main(["--read-only", "market", "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--dry-run", "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and answer["dry_run"] and answer["preview"]["changes"]
    code = main(["--read-only", "market", "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--yes", "--json"])
    assert code == EXIT_USAGE and "read-only" in json.loads(capsys.readouterr().out)["error"]["detail"]
    assert set(sim.site.images) == images
    refused = audit_entries(isolated)[-1]
    assert refused["outcome"] == "refused"
    assert refused["target"].startswith("app ") and "->" in refused["target"]  # the CLI refuses the planned object


def test_cli_json_answer_carries_the_typed_result(sim: SimServer, env, capsys) -> None:  # noqa: F811
    env(sim)
    code = main(["market", "download", f"{sim.market_url}#service_dns", "--datastore", "1", "--name", "dns-cli", "--yes", "--json",
                 "--poll", str(POLL)])
    answer = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and answer["ok"]
    assert answer["result"]["name"] == "dns-cli" and answer["result"]["image_ids"]
    assert set(answer["result"]["image_ids"]) <= set(sim.site.images)
