"""How the setup runs its preflight and toolkit steps (the planners `tui.procedures.setup.steps` names):

| step | runs |
|---|---|
| marketplaces | `RegisterMarketplace` (a configured marketplace the cloud lacks), an `Operation` |
| cloud-user | `CreateCloudUser`: group, user, group admin, the group's default rule, an `Operation` |
| download | `DownloadAppliance` (operation 2, attributes attached) or, when a download is already under way, a wait for its images |
| tagged | `AttachAttributes` (operation 1) |
| instantiate | `DeployToolkit` without waiting (operation 3); for a service already there: wait until the database VMs have a host, then `follow_deployment` to RUNNING (operation 4) |
| record | `capture_automation_key` |
| grant | `GrantKey` (operation 5) |
| database-host | `MoveVms` of `plan_flagged` (operation 7), offered as soon as the manager VM has a host |
| objectstore-disk | `ResizeObjectstoreDisk`: disk0 of the object store VM grown to the target's size (default 30G), waited for, an `Operation` |
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Mapping, Sequence

from tui import timing
from tui.domain.input_file import InputFile
from tui.domain.setup_steps import MarketplacesMissing, SetupStep, StepId
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.procedures.hosts.move_operation import MoveSet, MoveVms
from tui.procedures.hosts.move_plan import DEFAULT_TIMEOUTS, plan_flagged
from tui.procedures.market.attributes import AttachAttributes, tag_for_app
from tui.procedures.market.download import DownloadAppliance
from tui.procedures.market.download_plan import default_download_name, image_datastores
from tui.procedures.operation import OperationCancelled, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.setup.facts import SetupFacts
from tui.procedures.setup.identity import CreateCloudUser, RegisterMarketplace
from tui.procedures.setup.preflight_steps import datastores_step, toolkit_app
from tui.procedures.setup.step_plan import (
    AskSecrets,
    PlanRequest,
    RunOptions,
    SetupStopped,
    StepPlan,
    operation_step,
    stop,
)
from tui.procedures.setup.toolkit_steps import MOVABLE_STATES, inputs_step
from tui.procedures.site_record import save_site_record
from tui.procedures.toolkit.grant_key import GrantKey
from tui.procedures.toolkit.input_checks import check_inputs_on_site
from tui.procedures.toolkit.instantiate import DeployToolkit, InvalidInputs, capture_automation_key, follow_deployment
from tui.procedures.toolkit.objectstore_disk import ResizeObjectstoreDisk
from tui.procedures.toolkit.service import record_for_service

if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.services import Service
    from tui.domain.site_record import SiteRecord
    from tui.domain.vm_detail import VmDetail
    from tui.procedures.connection import SiteConnection


async def plan_marketplaces(request: PlanRequest, step: SetupStep) -> StepPlan:
    found = step.found
    if not isinstance(found, MarketplacesMissing) or not (found.urls or found.mend):
        raise stop(step)
    # a missing URL is registered (or enabled); ENDPOINTs without their slash are mended on the way
    operation = RegisterMarketplace(found.urls[0] if found.urls else found.mend[0][1])
    return operation_step(request.site, step, operation, await operation.plan(request.site))


async def plan_cloud_user(request: PlanRequest, step: SetupStep) -> StepPlan:
    site, facts = request.site, request.facts
    name = facts.target.cloud_username
    password_name = site.naming.input_name(f"{site.naming.role_automation}_cloud_password")
    password = facts.target.values.get(password_name) or (await request.ask([password_name])).get(password_name, "")
    operation = CreateCloudUser(name, password)
    return operation_step(site, step, operation, await operation.plan(site))


async def plan_download(request: PlanRequest, step: SetupStep) -> StepPlan:
    site, facts, options = request.site, request.facts, request.options
    if facts.toolkit_templates:  # a download under way (here or by hand): wait for its images, never a second one
        ids = tuple(facts.toolkit_image_ids or ())
        preview = Preview(f"Wait for the toolkit images {', '.join(map(str, ids))} to be READY",
                          (Change("no change: the download is already under way", "oneimage list", "none"),))
        return StepPlan(step, preview, partial(wait_images, site, ids, options), wait_only=True)
    app = toolkit_app(facts)
    if app is None:
        raise stop(step, "no marketplace lists the toolkit")
    operation = DownloadAppliance(app.id, download_datastore(facts, options), default_download_name(app.name, app.version),
                                  step_timeout=options.step_timeout, poll_interval=options.poll_interval)
    return operation_step(site, step, operation, await operation.plan(site))


def download_datastore(facts: SetupFacts, options: RunOptions) -> int:
    """Where a download goes: `--datastore`, else the IMAGE datastore with the most free room."""
    datastores = image_datastores(facts.datastores or ())
    if options.datastore_id is not None:
        return options.datastore_id
    if datastores:
        return max(datastores, key=lambda d: (d.free_mb, -d.id)).id
    raise stop(datastores_step(facts), "no IMAGE datastore")


async def wait_images(site: "SiteConnection", ids: tuple[int, ...], options: RunOptions, context: RunContext) -> None:
    """Wait until the images `ids` are READY, reporting each reading to `context`."""
    started = timing.monotonic()
    while True:
        images = await gather(*(site.cloud.image_info(i) for i in ids))
        failed = [i for i in images if i.status == "ERROR"]
        if failed:
            raise SiteError(f"Image {failed[0].id} of the toolkit is in ERROR",
                            f"{failed[0].error or 'no reason given'}; delete the download's objects and run again.")
        waiting = [i for i in images if not i.usable]
        elapsed = timing.monotonic() - started
        context.report(Progress("wait for images", len(images) - len(waiting), len(images),
                                f"{', '.join(f'{i.id} {i.status}' for i in images)} ({elapsed:.0f} s)",
                                ProgressState.DONE if not waiting else ProgressState.RUNNING))
        if not waiting:
            return
        if elapsed > options.step_timeout:
            raise SiteError("The toolkit images did not become READY in time",
                            f"Still {', '.join(f'{i.id} {i.status}' for i in waiting)} after {elapsed:.0f} s.")
        await context.pause(options.poll_interval)
        if context.cancel.is_set():
            raise OperationCancelled("Cancelled", "stopped waiting for the images; the download goes on (run again to "
                                     "wait for it)", retryable=True)


async def plan_tagged(request: PlanRequest, step: SetupStep) -> StepPlan:
    app = toolkit_app(request.facts)
    if app is None:
        raise stop(step, "no marketplace app to take the attributes from")
    operation = AttachAttributes(tag_for_app(app), tuple(request.facts.toolkit_image_ids or ()))
    return operation_step(request.site, step, operation, await operation.plan(request.site))


async def _secrets_for(facts: SetupFacts, ask: AskSecrets, names: list[str]) -> dict[str, str]:
    missing = [n for n in names if not facts.target.values.get(n)]
    return await ask(missing) if missing else {}


async def plan_instantiate(request: PlanRequest, step: SetupStep) -> StepPlan:
    site, facts, options = request.site, request.facts, request.options
    if facts.service is not None:
        service = facts.service
        preview = Preview(f"Follow service {service.id} to RUNNING",
                          (Change("no change: wait for the database VMs to get a host, then for RUNNING",
                                  f"oneflow show {service.id}", "none"),))
        return StepPlan(step, preview, partial(_follow, site, facts, options), wait_only=True)
    form, target = facts.form, facts.target
    if form is None or not target.input_path:
        raise stop(inputs_step(facts))
    mandatory = [f.name for f in form.fields if f.secret and f.mandatory]
    extra = await _secrets_for(facts, request.ask, mandatory)
    file = InputFile(target.instance_name, tuple(target.values.items()), target.networks)
    operation = DeployToolkit(form, file, extra, file_path=target.input_path, wait=False)
    try:
        plan = await operation.plan(site)
    except InvalidInputs as error:
        raise SetupStopped(StepId.INPUTS, f"The input file has errors: {error.title}",
                           "\n".join(f"{p.name}: {p.message}" for p in error.problems),
                           rejected=tuple(p.name for p in error.problems if p.name in extra)) from None
    if extra:  # secrets asked now: the same site checks as those of the file (the status ran them)
        await _check_on_site(site, facts, {**target.values, **extra}, tuple(extra))
    return operation_step(site, step, operation, plan)


async def _check_on_site(site: "SiteConnection", facts: SetupFacts, values: Mapping[str, str],
                         asked: tuple[str, ...]) -> None:
    """`check_inputs_on_site` of `values` (the form's, `toolkit validate`'s); its errors stop the run."""
    assert facts.form is not None
    report = await check_inputs_on_site(site, facts.form, values, dict(facts.target.networks))
    if report.errors:
        raise SetupStopped(StepId.INPUTS, f"The inputs fail {len(report.errors)} site check(s)",
                           "\n".join(f"{c.name}: {c.message}" for c in report.errors)
                           + "\nNothing was changed.", rejected=tuple(c.name for c in report.errors if c.name in asked))


async def _follow(site: "SiteConnection", facts: SetupFacts, options: RunOptions, context: RunContext) -> None:
    """Wait until every database VM of the service has a host; when one is flagged, stop here (the
    move comes next); else follow the service to RUNNING, recording VMs and the key."""
    assert facts.service is not None
    service = facts.service
    started = timing.monotonic()
    naming = site.naming
    while True:
        service = await site.flow.get_service(service.id)
        if service.failed:
            raise SiteError(f"Service {service.id} is {service.state_name}",
                            f"Read its log (oneflow show {service.id}); remove it (oneflow recover --delete "
                            f"{service.id}) and run again.")
        ids = tuple(vm for r in service.roles if r.name in naming.document_db_roles for vm in r.vm_ids)
        placed, flagged, vms = await _db_vms_placed(site, ids)
        elapsed = timing.monotonic() - started
        context.report(Progress("database VMs placed", int(placed), 1,
                                ", ".join(f"VM {vm.id} {vm.summary.status} on {vm.summary.host or '(no host yet)'}"
                                          for vm in vms) + f" ({elapsed:.0f} s)",
                                ProgressState.DONE if placed else ProgressState.RUNNING))
        if placed:
            if flagged:
                return  # the next round moves them (operation 7) before waiting for RUNNING
            break
        if elapsed > options.step_timeout:
            raise SiteError("The database VMs got no host in time", f"Service {service.id} after {elapsed:.0f} s: "
                            "check the scheduler's messages (onevm show) and the hosts' capacity.")
        await context.pause(options.poll_interval)
        if context.cancel.is_set():
            raise OperationCancelled("Cancelled", f"stopped waiting for the database VMs of service {service.id}; "
                                     "it deploys on (run again to follow it)", retryable=True)
    record = _record(site, facts, service)
    await follow_deployment(site, record, context, timeout=options.deploy_timeout, key_timeout=options.key_timeout,
                            poll_interval=options.poll_interval)


async def _db_vms_placed(site: "SiteConnection", ids: tuple[int, ...]) -> "tuple[bool, bool, Sequence[VmDetail]]":
    """Whether every database VM `ids` has a host and, when that host's CPU is flagged, can be
    moved (`MOVABLE_STATES`); whether one is flagged; and the VMs as read. Each VM's own info is read until every one
    has a host; only then the host inventory (every host, the VM pool's bodies scanned) that the
    verdicts need: a deployment polled the whole pools twice a second while the VMs waited for the
    scheduler. A VM that cannot be read (gone) is left to the inventory, which does not list it."""
    if not ids:
        return False, False, ()
    try:
        vms = await gather(*(site.cloud.vm_info(vm_id) for vm_id in ids))
    except SiteError:
        vms = ()
    if vms and any(vm.summary.host_id is None for vm in vms):
        return False, False, vms
    inventory = await load_inventory(site, record_vm_ids=ids)
    rows = [r for r in inventory.db_vms if r.id in ids]
    placed = len(rows) == len(ids) and all(
        r.host_id is not None and (not r.flagged or r.vm.summary.status in MOVABLE_STATES) for r in rows)
    return placed, any(r.flagged for r in rows), tuple(r.vm for r in rows)


def _record(site: "SiteConnection", facts: SetupFacts, service: "Service") -> "SiteRecord":
    """A site record for the live service (the local record only speeds other screens up)."""
    template = facts.toolkit_templates[0] if facts.toolkit_templates else None
    record = record_for_service(site, service, template.id if template else -1, template.name if template else "",
                                facts.version, facts.target.cloud_username)
    save_site_record(site.settings, record)
    return record


async def plan_record(request: PlanRequest, step: SetupStep) -> StepPlan:
    site, facts, options = request.site, request.facts, request.options
    if facts.service is None:
        raise stop(step)
    record = _record(site, facts, facts.service)
    preview = Preview("Wait for the automation VM's public key",
                      (Change("no change: read the key the automation VM publishes", "onevm show <automation VM>", "none"),))
    return StepPlan(step, preview, partial(capture_automation_key, site, record, timeout=options.key_timeout,
                                           poll_interval=options.poll_interval), wait_only=True)


async def plan_grant(request: PlanRequest, step: SetupStep) -> StepPlan:
    facts = request.facts
    if not facts.automation_key or not facts.target.cloud_username:
        raise stop(step)
    operation = GrantKey(facts.automation_key, facts.target.cloud_username)
    return operation_step(request.site, step, operation, await operation.plan(request.site))


async def plan_database(request: PlanRequest, step: SetupStep) -> StepPlan:
    site, service = request.site, request.facts.service
    ids = tuple(vm for r in service.roles if r.name in site.naming.document_db_roles for vm in r.vm_ids) if service else ()
    plans, problems = await plan_flagged(site, record_vm_ids=ids)
    if problems:
        row, error = problems[0]
        raise SetupStopped(step.id, f"VM {row.id} has no compatible host to move to: {error.title}", error.detail)
    operation = MoveVms(None, timeouts=request.options.move_timeouts or DEFAULT_TIMEOUTS)
    return operation_step(site, step, operation, MoveSet(tuple(plans)))


async def plan_disk(request: PlanRequest, step: SetupStep) -> StepPlan:
    site, facts, options = request.site, request.facts, request.options
    if facts.service is None:
        raise stop(step)
    operation = ResizeObjectstoreDisk(facts.target.objectstore_disk_mb, facts.service.id,
                                      wait_timeout=options.step_timeout, poll_interval=options.poll_interval)
    plan = await operation.plan(site)
    return StepPlan(step, operation.preview(plan), operation_step(site, step, operation, plan).run,
                    wait_only=plan.resizing)
