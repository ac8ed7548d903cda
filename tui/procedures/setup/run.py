"""Running the setup checklist: the next step the site needs, with the existing procedures, until done.

`run_setup(site, target, options, confirm=..., ask_secrets=...)` loops: read the site
(`setup_status`), pick the next mandatory step that is not done, plan it (`plan_step`: the
preview with the equivalent platform commands), ask `confirm`, run it, read the site again. It
stops at the first step it cannot do (`SetupStopped`, naming the step, the reason and the fix) and
when every mandatory step is done. Each round decides from the live site, so running it again
after a kill, a failure or work done by hand continues from where the site is, and nothing is
doubled: a download whose objects exist is reused or waited for, a service that exists is followed
(never instantiated again), a key already there is not added, a commit with no change is not made.

The steps and what runs them:

| step | runs |
|---|---|
| marketplaces | `RegisterMarketplace` (a configured marketplace the cloud lacks), an `Operation` |
| cloud-user | `CreateCloudUser`: group, user, group admin, the group's default rule, an `Operation` |
| download | `download_appliance` (operation 2, attributes attached) or, when a download is already under way, a wait for its images |
| tagged | `attach_attributes` (operation 1) |
| instantiate | `deploy_toolkit` without waiting (operation 3); for a service already there: wait until the database VMs have a host, then `follow_deployment` to RUNNING (operation 4) |
| record | `capture_automation_key` |
| grant | `grant_ssh_key` (operation 5) |
| database-host | `move_many` of `plan_flagged` (operation 7), offered as soon as the manager VM has a host |
| objectstore-disk | `ResizeObjectstoreDisk`: disk0 of the object store VM grown to the target's size (default 30G), waited for, an `Operation` |
| site-branch, core-yaml | `CreateSite` (or open) and `FillSite` in the working clone, once the object store VM's address is known |
| trial-run (optional, only with `--only`) | `RunTrialNetwork`: a test trial network through the manager's REST API (created, validated, activated, reported), an `Operation` |
| dns, route-manager (optional, only with `--only`) | `setup_optional`: `DownloadAppliance`, then `DeployAppliance` (the VM on the default network with its inputs, waited for until ready), then the route manager's API checked with the VM's token and the address (and token) written into core.yaml, checked and submitted |
| components | `setup_components`: each missing component of the minimal set (and the recommended ones the library offers) through `offer_component` (operation 9: appliances, grants, site variables), in the working clone |
| submitted | `submit_checked`: the whole core.yaml checked with the cloud and the component library (`sitetk site check --cloud`), then `SubmitSite` (operation 6); any error or anything unchecked stops it, nothing committed |

Steps only the operator can do (platform configuration, networks, a failed service) stop the run
with the step's fix.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Mapping

from tui.domain.setup_steps import (
    ApplianceVm,
    ComponentsMissing,
    ExamplesLeft,
    MarketplacesMissing,
    SetupChecklist,
    SetupStep,
    StepId,
    StepState,
)
from tui.errors import SiteError
from tui.procedures.concurrent import gather
from tui.procedures.operation import ReadOnlyRefused
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress
from tui.procedures.setup.facts import SetupFacts, SetupTarget
from tui.procedures.setup.status import MOVABLE_STATES, setup_status, toolkit_app

if TYPE_CHECKING:  # pragma: no cover
    from tui.adapters.git_repo import GitRepo
    from tui.adapters.vault import VaultPassword
    from tui.domain.services import Service
    from tui.domain.site_record import SiteRecord
    from tui.procedures.connection import SiteConnection
    from tui.procedures.hosts.move_plan import MoveTimeouts
    from tui.procedures.operation import Operation

#: rounds after which the run stops whatever happens (each round does one step)
MAX_ROUNDS = 40
#: what a dry run's preview shows for a site value asked when the step runs
ASKED_LATER = "(asked when it runs)"


@dataclass(frozen=True)
class RunOptions:
    datastore_id: int | None = None
    only: StepId | None = None
    poll_interval: float = 2.0
    #: one image download, one wait for VMs to get a host
    step_timeout: float = 1800.0
    deploy_timeout: float = 1800.0
    key_timeout: float = 900.0
    move_timeouts: "MoveTimeouts | None" = None
    #: stop after this many steps ran (the console does one step a key press); None: until done
    max_steps: int | None = None


class SetupStopped(SiteError):
    """The run cannot go on by itself: `step` names where, the detail says why and the fix;
    `refused` when read-only mode refused the step (the pipeline's `ReadOnlyRefused`); `rejected`
    names the inputs whose values the site checks refused (a console forgets such asked secrets)."""

    def __init__(self, step: StepId | None, title: str, detail: str, *, refused: bool = False,
                 rejected: tuple[str, ...] = ()) -> None:
        super().__init__(title, detail, retryable=False)
        self.step = step
        self.refused = refused
        self.rejected = rejected


@dataclass(frozen=True)
class StepPlan:
    """One step the console is about to do: its preview and how to run it."""

    step: SetupStep
    preview: Preview
    run: Callable[[], AsyncIterator[Progress]] = field(compare=False)
    #: the step changes nothing (a wait, a follow): no confirmation needed
    wait_only: bool = False


Confirm = Callable[[StepPlan], Awaitable[bool]]
AskSecrets = Callable[[list[str]], Awaitable[dict[str, str]]]
#: ask the operator for site values: (dotted path, what to give) -> {path: value}
AskValues = Callable[[list[tuple[str, str]]], Awaitable[dict[str, str]]]


def choose(checklist: SetupChecklist, only: StepId | None) -> SetupStep | None:
    """The step to do now: `only`, else the next outstanding one (the database move first while the
    toolkit deploys, as soon as the manager VM has a host and is flagged)."""
    if only is not None:
        chosen = checklist.step(only)
        if (only is StepId.COMPONENTS and chosen.state is StepState.DONE and isinstance(chosen.found, ComponentsMissing)
                and chosen.found.recommended):
            return chosen  # asked for: the recommended components the mandatory ones left unlisted
        return None if chosen.state is StepState.DONE else chosen
    step = checklist.next_step
    if step is not None and step.id is StepId.INSTANTIATE:
        db = checklist.step(StepId.DATABASE_HOST)
        if db.state is StepState.TODO:
            return db
    return step


def older_build_note(checklist: SetupChecklist) -> str:
    """What the download step says of an older toolkit build (downloaded, or the cloud's app), with
    what to do ("": the newest, or not known)."""
    step = next((s for s in checklist.steps if s.id is StepId.DOWNLOAD), None)
    if step is None:
        return ""
    return next((line for line in step.evidence if line.startswith("older build:")), "")


def with_answers(target: SetupTarget, answers: Mapping[str, str], naming: Any) -> SetupTarget:
    """`target` with secrets asked during the run (the sites token is core.yaml's vault password)."""
    if not answers:
        return target
    from tui.procedures.site.workspace import prompted_password

    values = {**target.values, **answers}
    token = values.get(naming.input_name(f"{naming.role_automation}_sites_token"), "")
    return replace(target, values=values, vault_password=prompted_password(token) if token else target.vault_password)


def _stop(step: SetupStep, why: str = "") -> SetupStopped:
    fix = step.action or "see the evidence"
    evidence = "; ".join(step.evidence)
    reason = why or {StepState.BLOCKED: f"blocked by {step.blocked_by}", StepState.FAILED: "failed",
                     StepState.TODO: "needs the operator"}.get(step.state, step.state.value)
    return SetupStopped(step.id, f"Setup stopped at {step.title!r}: {reason}",
                        f"{evidence + chr(10) if evidence else ''}Fix: {fix}")


async def run_setup(site: "SiteConnection", target: SetupTarget, options: RunOptions, *, confirm: Confirm,
                    ask_secrets: AskSecrets, dry_run: bool = False, ask_values: AskValues | None = None,
                    site_values: Mapping[str, str] | None = None) -> AsyncIterator[Progress]:
    """Run the remaining steps (module docstring). With `dry_run`, only the next step's preview
    (event data `preview`) and nothing changes. `site_values` (the CLI's --set) and `ask_values`
    give the site's own values for the template's examples core.yaml still holds (public address,
    domain, name servers, the administrators' key); without either, the submit stops and says so."""
    if options.only is StepId.TRIAL_RUN and not target.trial_tn_id:  # its state is the manager's: read when asked
        from tui.procedures.trial.network import DEFAULT_TN_ID

        target = replace(target, trial_tn_id=DEFAULT_TN_ID)
    last: tuple[StepId, StepState, tuple[str, ...]] | None = None
    started = time.monotonic()
    ran = 0
    asked: dict[str, str] = {}

    async def ask_once(names: list[str]) -> dict[str, str]:
        """Ask, and keep the answers for the rest of this run (the next readings of the site use them)."""
        answers = await ask_secrets(names)
        asked.update({k: v for k, v in answers.items() if v})
        return answers

    just_ran: tuple[SetupStep, str, float, int, int] | None = None
    for round_number in range(1, MAX_ROUNDS + 1):
        checklist, facts = await setup_status(site, with_answers(target, asked, site.naming))
        if just_ran is not None:  # what the step's run left, read now: never the step's title as a claim
            yield _after_step(checklist, *just_ran)
            just_ran = None
        older = older_build_note(checklist)
        if round_number == 1 and older:  # said first: the run goes on with the build the cloud holds
            yield Progress("toolkit build", 1, 1, older, "done", {"older_build": checklist.step(StepId.DOWNLOAD).data})
        step = choose(checklist, options.only)
        if step is not None and options.max_steps is not None and ran >= options.max_steps:
            yield Progress("setup", 1, 1, f"next: {step.title} ({step.state.value})", "done",
                           {"checklist": checklist.as_json(), "next": step.id.value}, outcome=checklist)
            return
        outstanding = sum(1 for s in checklist.steps if s.outstanding)
        if step is None:
            message = (f"{options.only.value} is done" if options.only else "every mandatory step is done")
            if older:
                message += f"; {older}"
            yield Progress("setup", 1, 1, f"{message} ({time.monotonic() - started:.0f} s)", "done",
                           {"checklist": checklist.as_json()}, outcome=checklist)
            return
        seen = (step.id, step.state, step.evidence)
        if seen == last:
            raise SetupStopped(step.id, f"{step.title!r} is still not done after running it",
                               "; ".join(step.evidence) + f"\nFix: {step.action}")
        last = seen
        plan = await plan_step(site, facts, checklist, step, options, ask_once, ask_values=ask_values,
                               site_values=site_values, preview_only=dry_run)
        # the steps of this run so far and to come: the chosen one counts even when it is not an
        # outstanding one (an optional step asked with --only), never `(1/0)` (issue 20 item 11)
        total = round_number - 1 + outstanding + (0 if step.outstanding else 1)
        yield Progress(step.id.value, round_number, total, plan.preview.title, "running",
                       {"preview": plan.preview.as_json(), "step": step.as_json()}, outcome=plan.preview)
        if dry_run:
            return
        if not plan.wait_only and not plan.preview.is_noop and not await confirm(plan):
            raise SetupStopped(step.id, f"{step.title!r} not confirmed", "Nothing was changed; run again to continue.")
        step_started = time.monotonic()
        try:
            async for event in plan.run():
                yield replace(event, step=f"{step.id.value}: {event.step}")
        except SetupStopped:
            raise
        except ReadOnlyRefused as error:
            raise SetupStopped(step.id, f"{step.title!r} refused: {error.title}", error.detail, refused=True) from None
        except SiteError as error:
            raise SetupStopped(step.id, f"{step.title!r} failed: {error.title}",
                               f"{error.detail}\nThe site is left as it is: run again to continue from there.") from None
        ran += 1
        just_ran = (step, plan.preview.title, time.monotonic() - step_started, round_number, total)
    raise SetupStopped(None, "Setup did not finish", f"{MAX_ROUNDS} steps ran without completing: run again.")


def _after_step(checklist: SetupChecklist, step: SetupStep, action: str, seconds: float, index: int,
                total: int) -> Progress:
    """What running `step` (`action`, the plan's title) left, from the checklist read after it: the
    step is said done only when that reading shows it done (issue 22 item 10: the instantiate step's
    run creates the service and returns, and "Toolkit instantiated and RUNNING: finished" was printed
    while the service was DEPLOYING)."""
    now = checklist.step(step.id)
    if now.state is StepState.DONE:
        message = f"{step.title}: done ({action}, {seconds:.0f} s)"
    else:
        found = f": {now.evidence[0]}" if now.evidence else ""
        message = f"{action}: done in {seconds:.0f} s; {step.title!r} is not done yet ({now.state.value}{found})"
    return Progress(step.id.value, index, total, message, "done", {"step": now.as_json()})


# -- planning each step ---------------------------------------------------------------------------


async def plan_step(site: "SiteConnection", facts: SetupFacts, checklist: SetupChecklist, step: SetupStep,
                    options: RunOptions, ask_secrets: AskSecrets, *, ask_values: AskValues | None = None,
                    site_values: Mapping[str, str] | None = None, preview_only: bool = False) -> StepPlan:
    """What doing `step` now means; `SetupStopped` when only the operator can do it."""
    needs_password = step.id is StepId.CORE_YAML and step.blocked_by == "the vault password"
    if (step.state is StepState.BLOCKED and not needs_password) or step.state is StepState.FAILED:
        raise _stop(step)
    if step.id is StepId.SUBMITTED:
        return await _plan_submit(site, facts, step, options, ask_secrets, ask_values, site_values or {},
                                  preview_only)
    if step.id in (StepId.DNS, StepId.ROUTE_MANAGER):
        return await _plan_optional(site, facts, step, options, ask_secrets, site_values)
    planner = _PLANNERS.get(step.id)
    if planner is None:
        raise _stop(step)
    return await planner(site, facts, step, options, ask_secrets)


async def _plan_download(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                         ask: AskSecrets) -> StepPlan:
    from tui.procedures.market.download import DownloadAppliance
    from tui.procedures.market.download_plan import default_download_name

    if facts.toolkit_templates:  # a download under way (here or by hand): wait for its images, never a second one
        ids = tuple(facts.toolkit_image_ids or ())
        preview = Preview(f"Wait for the toolkit images {', '.join(map(str, ids))} to be READY",
                          (Change("no change: the download is already under way", "oneimage list", "none"),))
        return StepPlan(step, preview, lambda: _wait_images(site, ids, options), wait_only=True)
    app = toolkit_app(facts)
    if app is None:
        raise _stop(step, "no marketplace lists the toolkit")
    operation = DownloadAppliance(app.id, _download_datastore(facts, options), default_download_name(app.name, app.version),
                                  step_timeout=options.step_timeout, poll_interval=options.poll_interval)
    return operation_step(site, step, operation, await operation.plan(site))


def _download_datastore(facts: SetupFacts, options: RunOptions) -> int:
    """Where a download goes: `--datastore`, else the IMAGE datastore with the most free room."""
    from tui.procedures.market.download_plan import image_datastores

    datastores = image_datastores(facts.datastores or ())
    if options.datastore_id is not None:
        return options.datastore_id
    if datastores:
        return max(datastores, key=lambda d: (d.free_mb, -d.id)).id
    raise _stop(checklist_step(facts, StepId.DATASTORES), "no IMAGE datastore")


def checklist_step(facts: SetupFacts, step_id: StepId) -> SetupStep:
    from tui.procedures.setup.status import build_checklist

    return build_checklist(facts).step(step_id)


async def _wait_images(site: "SiteConnection", ids: tuple[int, ...], options: RunOptions) -> AsyncIterator[Progress]:
    started = time.monotonic()
    while True:
        images = await gather(*(site.cloud.image_info(i) for i in ids))
        failed = [i for i in images if i.status == "ERROR"]
        if failed:
            raise SiteError(f"Image {failed[0].id} of the toolkit is in ERROR",
                            f"{failed[0].error or 'no reason given'}; delete the download's objects and run again.")
        waiting = [i for i in images if not i.usable]
        elapsed = time.monotonic() - started
        yield Progress("wait for images", len(images) - len(waiting), len(images),
                       f"{', '.join(f'{i.id} {i.status}' for i in images)} ({elapsed:.0f} s)",
                       "done" if not waiting else "running")
        if not waiting:
            return
        if elapsed > options.step_timeout:
            raise SiteError("The toolkit images did not become READY in time",
                            f"Still {', '.join(f'{i.id} {i.status}' for i in waiting)} after {elapsed:.0f} s.")
        await asyncio.sleep(options.poll_interval)


async def _plan_tagged(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                       ask: AskSecrets) -> StepPlan:
    from tui.procedures.market.attributes import AttachAttributes, tag_for_app

    app = toolkit_app(facts)
    if app is None:
        raise _stop(step, "no marketplace app to take the attributes from")
    operation = AttachAttributes(tag_for_app(app), tuple(facts.toolkit_image_ids or ()))
    return operation_step(site, step, operation, await operation.plan(site))


async def _secrets_for(facts: SetupFacts, ask: AskSecrets, names: list[str]) -> dict[str, str]:
    missing = [n for n in names if not facts.target.values.get(n)]
    return await ask(missing) if missing else {}


async def _plan_instantiate(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                            ask: AskSecrets) -> StepPlan:
    from tui.domain.input_file import InputFile
    from tui.procedures.toolkit.deploy_operation import DeployToolkit
    from tui.procedures.toolkit.instantiate import InvalidInputs

    if facts.service is not None:
        service = facts.service
        preview = Preview(f"Follow service {service.id} to RUNNING",
                          (Change("no change: wait for the database VMs to get a host, then for RUNNING",
                                  f"oneflow show {service.id}", "none"),))
        return StepPlan(step, preview, lambda: _follow(site, facts, options), wait_only=True)
    form, target = facts.form, facts.target
    if form is None or not target.input_path:
        raise _stop(checklist_step(facts, StepId.INPUTS))
    mandatory = [f.name for f in form.fields if f.secret and f.mandatory]
    extra = await _secrets_for(facts, ask, mandatory)
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
    from tui.procedures.toolkit.input_checks import check_inputs_on_site

    assert facts.form is not None
    report = await check_inputs_on_site(site, facts.form, values, dict(facts.target.networks))
    if report.errors:
        raise SetupStopped(StepId.INPUTS, f"The inputs fail {len(report.errors)} site check(s)",
                           "\n".join(f"{c.name}: {c.message}" for c in report.errors)
                           + "\nNothing was changed.", rejected=tuple(c.name for c in report.errors if c.name in asked))


async def _follow(site: "SiteConnection", facts: SetupFacts, options: RunOptions) -> AsyncIterator[Progress]:
    """Wait until every database VM of the service has a host; when one is flagged, stop here (the
    move comes next); else follow the service to RUNNING, recording VMs and the key."""
    from tui.procedures.hosts.cpu_inventory import load_inventory
    from tui.procedures.toolkit.instantiate import follow_deployment

    assert facts.service is not None
    service = facts.service
    started = time.monotonic()
    naming = site.naming
    while True:
        service = await site.flow.get_service(service.id)
        if service.failed:
            raise SiteError(f"Service {service.id} is {service.state_name}",
                            f"Read its log (oneflow show {service.id}); remove it (oneflow recover --delete "
                            f"{service.id}) and run again.")
        ids = tuple(vm for r in service.roles if r.name in naming.document_db_roles for vm in r.vm_ids)
        inventory = await load_inventory(site, record_vm_ids=ids)
        rows = [r for r in inventory.db_vms if r.id in ids]
        placed = bool(ids) and len(rows) == len(ids) and all(
            r.host_id is not None and (not r.flagged or r.vm.summary.status in MOVABLE_STATES) for r in rows)
        elapsed = time.monotonic() - started
        yield Progress("database VMs placed", int(placed), 1,
                       ", ".join(f"VM {r.id} {r.vm.summary.status} on {r.host_name or '(no host yet)'}" for r in rows) +
                       f" ({elapsed:.0f} s)", "done" if placed else "running")
        if placed:
            if any(r.flagged for r in rows):
                return  # the next round moves them (operation 7) before waiting for RUNNING
            break
        if elapsed > options.step_timeout:
            raise SiteError("The database VMs got no host in time", f"Service {service.id} after {elapsed:.0f} s: "
                            "check the scheduler's messages (onevm show) and the hosts' capacity.")
        await asyncio.sleep(options.poll_interval)
    record = _record(site, facts, service)
    async for event in follow_deployment(site, record, timeout=options.deploy_timeout, key_timeout=options.key_timeout,
                                         poll_interval=options.poll_interval):
        yield event


def _record(site: "SiteConnection", facts: SetupFacts, service: Service) -> SiteRecord:
    """A site record for the live service (the local record only speeds other screens up)."""
    from tui.procedures.site_record import save_site_record
    from tui.procedures.toolkit.service import record_for_service

    template = facts.toolkit_templates[0] if facts.toolkit_templates else None
    record = record_for_service(site, service, template.id if template else -1, template.name if template else "",
                                facts.version, facts.target.cloud_username)
    save_site_record(site.settings, record)
    return record


async def _plan_record(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                       ask: AskSecrets) -> StepPlan:
    from tui.procedures.toolkit.instantiate import capture_automation_key

    if facts.service is None:
        raise _stop(step)
    record = _record(site, facts, facts.service)
    preview = Preview("Wait for the automation VM's public key",
                      (Change("no change: read the key the automation VM publishes", "onevm show <automation VM>", "none"),))
    return StepPlan(step, preview, lambda: capture_automation_key(site, record, timeout=options.key_timeout,
                                                                  poll_interval=options.poll_interval), wait_only=True)


async def _plan_grant(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                      ask: AskSecrets) -> StepPlan:
    from tui.procedures.toolkit.grant_key import GrantKey

    if not facts.automation_key or not facts.target.cloud_username:
        raise _stop(step)
    operation = GrantKey(facts.automation_key, facts.target.cloud_username)
    return operation_step(site, step, operation, await operation.plan(site))


async def _plan_database(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                         ask: AskSecrets) -> StepPlan:
    from tui.procedures.hosts.move_operation import MoveSet, MoveVms
    from tui.procedures.hosts.move_plan import DEFAULT_TIMEOUTS, plan_flagged

    service = facts.service
    ids = tuple(vm for r in service.roles if r.name in site.naming.document_db_roles for vm in r.vm_ids) if service else ()
    plans, problems = await plan_flagged(site, record_vm_ids=ids)
    if problems:
        row, error = problems[0]
        raise SetupStopped(step.id, f"VM {row.id} has no compatible host to move to: {error.title}", error.detail)
    operation = MoveVms(None, timeouts=options.move_timeouts or DEFAULT_TIMEOUTS)
    return operation_step(site, step, operation, MoveSet(tuple(plans)))


async def _plan_disk(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                     ask: AskSecrets) -> StepPlan:
    from tui.procedures.toolkit.objectstore_disk import ResizeObjectstoreDisk

    if facts.service is None:
        raise _stop(step)
    operation = ResizeObjectstoreDisk(facts.target.objectstore_disk_mb, facts.service.id,
                                      wait_timeout=options.step_timeout, poll_interval=options.poll_interval)
    plan = await operation.plan(site)
    return StepPlan(step, operation.preview(plan), operation_step(site, step, operation, plan).run,
                    wait_only=plan.resizing)


async def _plan_site(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                     ask: AskSecrets) -> StepPlan:
    """The site branch and core.yaml filled from the cloud, in the working clone: nothing reaches
    the remote until the whole file passes the check (`_plan_submit`, the last step)."""
    from tui.procedures.site.workspace import sites_repo

    target = facts.target
    if not target.branch:
        raise _stop(step)
    if not facts.objectstore_ip:
        raise SetupStopped(step.id, "core.yaml is submitted last",
                           "site_s3_server is the object store VM's address: deploy the toolkit first "
                           "(`sitetk setup run --input FILE`).")
    password = await _vault_password(site, facts, step, ask)
    site_dir = target.site_dir or target.branch
    repo = sites_repo(site.settings)
    changes = (
        Change(f"branch {target.branch} with {site_dir}/core.yaml from the template (vault-encrypted), or opened",
               f"git switch -c {target.branch} origin/<default>; git mv .dummy {site_dir}", "create"),
        Change(f"core.yaml filled from the cloud: site_s3_server.endpoint -> https://{facts.objectstore_ip}:9000, "
               "gate endpoint, default network", f"ansible-vault edit {site_dir}/core.yaml", "update"),
    )
    preview = Preview(f"Site configuration on {target.branch} (in the working clone)", changes,
                      warnings=("nothing reaches the remote yet: core.yaml is submitted last, once the components "
                                "are enabled and the whole file passes the check (cloud and component library)",))
    return StepPlan(step, preview, lambda: _site_config(site, repo, target.branch, site_dir, password))


async def _examples(step: SetupStep, ask_values: AskValues | None, site_values: Mapping[str, str],
                    preview_only: bool = False) -> list[tuple[str, str]]:
    """The site's own values for the template's examples core.yaml holds: given (--set) or asked;
    each checked (`check_example_answer`) before anything changes."""
    from tui.domain.site_checks import check_example_answer

    found = step.found
    if not isinstance(found, ExamplesLeft):
        return []
    given = {path: site_values[path] for path, _ in found.values if path in site_values}
    missing = [(path, ask) for path, ask in found.values if path not in given]
    if preview_only:  # a dry run asks nothing: the preview says what will be asked
        return [(path, given.get(path, ASKED_LATER)) for path, _ in found.values]
    if missing:
        if ask_values is None:
            sets = " ".join(f"--set {path}=..." for path, _ in missing)
            raise SetupStopped(step.id, "core.yaml still holds the template's example values",
                               "\n".join(f"{path}: give {ask}" for path, ask in missing)
                               + f"\nGive them: `sitetk setup run --input FILE {sets}` (or on a terminal, where they "
                               "are asked). Nothing was changed.")
        given.update({k: v for k, v in (await ask_values(missing)).items() if v.strip()})
    for path, _ in found.values:
        problem = check_example_answer(path, given.get(path, ""))
        if problem is not None:
            raise SetupStopped(step.id, f"{path}: {problem}", "Give the site's own value. Nothing was changed.")
    return [(path, given[path].strip()) for path, _ in found.values]


async def _plan_submit(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                       ask: AskSecrets, ask_values: AskValues | None = None,
                       site_values: Mapping[str, str] | None = None, preview_only: bool = False) -> StepPlan:
    """The template's example values replaced with the site's own (asked), then core.yaml checked
    whole (the cloud and the component library), then committed and pushed."""
    from tui.procedures.operation_stream import stream_operation
    from tui.procedures.setup.components import submit_checked
    from tui.procedures.site.file_operations import EditSite
    from tui.procedures.site.repo import locate_site, open_site
    from tui.procedures.site.workspace import sites_repo

    target = facts.target
    if not target.branch:
        raise _stop(step)
    password = await _vault_password(site, facts, step, ask)
    edits = await _examples(step, ask_values, site_values or {}, preview_only)
    site_dir = target.site_dir or target.branch
    repo = sites_repo(site.settings)
    changes = tuple(Change(f"{path}: the template's example -> {value if len(value) < 48 else value[:44] + '…'!r}",
                           f"ansible-vault edit {site_dir}/core.yaml", "update") for path, value in edits)
    changes += (
        Change(f"the whole check of {site_dir}/core.yaml: the cloud's facts and the component library (any error "
               "stops here, nothing committed)", f"sitetk site check {site_dir}/core.yaml --cloud", "none"),
        Change(f"commit and push {site_dir}/core.yaml to {target.branch}",
               f"git commit -m ... && git push origin {target.branch}", "update"),
    )
    preview = Preview(f"Submit core.yaml to {target.branch} (checked whole first)", changes)

    async def run() -> AsyncIterator[Progress]:
        try:
            async for event in open_site(repo, target.branch, site_dir):
                yield event
            ref = locate_site(repo, target.branch, site_dir)
            if edits:
                async for event in stream_operation(site, EditSite(ref.path, password, edits)):
                    yield event
            async for event in submit_checked(site, repo, ref, password, "enabling the components"):
                yield event
        finally:
            repo.close()

    return StepPlan(step, preview, run)


async def _vault_password(site: "SiteConnection", facts: SetupFacts, step: SetupStep, ask: AskSecrets) -> "VaultPassword":
    """The site's secret: from the input file, else asked (never from argv)."""
    password = facts.target.vault_password
    if password is not None:
        return password
    from tui.domain.input_site import Outcome
    from tui.procedures.site.workspace import prompted_password
    from tui.procedures.toolkit.input_checks import check_vault_secret

    token_name = site.naming.input_name(f"{site.naming.role_automation}_sites_token")
    answer = (await ask([token_name])).get(token_name, "")
    if not answer:
        raise SetupStopped(step.id, "No vault password", f"{token_name} (the vault password) was not given.")
    target = facts.target
    check = await check_vault_secret(site, site.naming, target.branch, target.site_dir, answer)
    if check.outcome is Outcome.FAILED:
        raise SetupStopped(step.id, f"{token_name} refused: {check.found}",
                           f"Checked: {check.checked}.\nFix: {check.fix}. Nothing was changed.", rejected=(token_name,))
    return prompted_password(answer)


async def _plan_components(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                           ask: AskSecrets) -> StepPlan:
    """The minimal component set through the day-2 flow (`setup_components`), in the working clone."""
    from tui.procedures.setup.components import enable_components, plan_components
    from tui.procedures.site.workspace import sites_repo

    target, found = facts.target, step.found
    if not target.branch or not isinstance(found, ComponentsMissing):
        raise _stop(step)
    password = await _vault_password(site, facts, step, ask)
    repo = sites_repo(site.settings)
    try:
        plan = await plan_components(site, repo, target.branch, target.site_dir or target.branch, password,
                                     found.mandatory, found.recommended, target.cloud_username)
    except SiteError as error:
        repo.close()
        raise SetupStopped(step.id, f"{step.title!r} cannot be planned: {error.title}", error.detail) from None

    async def run() -> AsyncIterator[Progress]:
        try:
            async for event in enable_components(site, repo, plan, password, poll_interval=options.poll_interval,
                                                 step_timeout=options.step_timeout):
                yield event
        finally:
            repo.close()

    if not plan.steps:
        repo.close()
        raise SetupStopped(step.id, "No component to enable", "\n".join(plan.skipped) or "see the evidence")
    return StepPlan(step, plan.preview(), run)


async def _plan_optional(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                         ask: AskSecrets, site_values: Mapping[str, str] | None = None) -> StepPlan:
    """DNS / route manager, one round at a time (`setup_optional`): the download, the VM deployed
    with its inputs and waited for, then (the route manager's API checked first) core.yaml."""
    from tui.procedures.setup.optional import appliance_kind, wait_ready

    kind = appliance_kind("dns" if step.id is StepId.DNS else "route-manager", site.naming)
    found = step.found
    if not isinstance(found, ApplianceVm):
        raise _stop(step, "nothing to do yet")
    if found.vm_id is None:
        if found.app_id is None and not found.image_ids:
            raise SetupStopped(step.id, f"No marketplace the cloud holds lists the {kind.label} appliance",
                               f"{'; '.join(step.evidence)}\nFix: {step.action} Nothing was changed.")
        if found.app_id is not None and not found.image_ids:
            return await _plan_appliance_download(site, facts, step, options, found.app_id)
        if not found.images_ready:
            ids = found.image_ids
            preview = Preview(f"Wait for the {kind.label} image(s) {', '.join(map(str, ids))} to be READY",
                              (Change("no change: the download is under way", "oneimage list", "none"),))
            return StepPlan(step, preview, lambda: _wait_images(site, ids, options), wait_only=True)
        return await _plan_appliance_vm(site, facts, step, options, ask, kind, found, site_values or {})
    vm = await site.cloud.vm_info(found.vm_id)
    if not (vm.summary.running and vm.summary.ips and vm.user_template.get(kind.ready_attribute, "")):
        vm_id = vm.id
        preview = Preview(f"Wait for VM {vm_id} of the {kind.label} appliance to be ready",
                          (Change(f"no change: wait until it RUNs and publishes {kind.ready_attribute}",
                                  f"onevm show {vm_id}", "none"),))

        async def wait() -> AsyncIterator[Progress]:
            events: list[Progress] = []
            ready = await wait_ready(site, kind, vm_id, timeout=options.step_timeout, poll_interval=options.poll_interval,
                                     report=events.append)
            for event in events[-1:]:
                yield event
            yield Progress("wait", 2, 2, f"VM {vm_id} RUNNING at {ready.summary.ips[0]}, {kind.ready_attribute} "
                           "published", "done")

        return StepPlan(step, preview, wait, wait_only=True)
    return await _plan_optional_write(site, facts, step, kind.step, vm.id, ask)


async def _plan_appliance_download(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                                   app_id: int) -> StepPlan:
    from tui.procedures.market.download import DownloadAppliance
    from tui.procedures.market.download_plan import default_download_name

    app = next(a for a in facts.marketapps or () if a.id == app_id)
    operation = DownloadAppliance(app.id, _download_datastore(facts, options), default_download_name(app.name, app.version),
                                  step_timeout=options.step_timeout, poll_interval=options.poll_interval)
    return operation_step(site, step, operation, await operation.plan(site))


async def _plan_appliance_vm(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                             ask: AskSecrets, kind: Any, found: ApplianceVm, site_values: Mapping[str, str]) -> StepPlan:
    """The appliance's VM template instantiated with its inputs on the default network (`DeployAppliance`)."""
    from tui.procedures.setup.optional import AppliancePlan, DeployAppliance, appliance_inputs, secret_inputs

    if found.template_id is None:
        raise SetupStopped(step.id, f"The {kind.label} appliance's download made no VM template",
                           f"{'; '.join(step.evidence)}\nFix: delete its images (`oneimage delete ...`) and run again "
                           "to download it again.")
    network_id = facts.default_network_id
    if network_id is None:
        raise _stop(checklist_step(facts, StepId.DEFAULT_NETWORK), "no default network to deploy it on")
    template = await site.cloud.template_info(found.template_id)
    secrets = set(secret_inputs(template, mandatory_only=False))
    given = {name: value for name, value in site_values.items() if "." not in name and name.isupper()}
    refused = sorted(secrets & set(given))
    if refused:
        raise SetupStopped(step.id, f"{', '.join(refused)} is a secret: never taken from the command line",
                           "Leave it out: it is asked when the step runs (or, optional, generated by the appliance). "
                           "Nothing was changed.")
    mandatory = list(secret_inputs(template))
    asked = await ask(mandatory) if mandatory else {}
    from tui.procedures.setup.site_steps import parse_core_yaml

    config = parse_core_yaml(facts)
    domain = config.get("site_domain") if config is not None else ""
    inputs, left, missing = appliance_inputs(template, given, domain if isinstance(domain, str) else "", asked)
    if missing:
        sets = " ".join(f"--set {name}=..." for name in missing)
        raise SetupStopped(step.id, f"The {kind.label} appliance needs {', '.join(missing)}",
                           f"Give {'it' if len(missing) == 1 else 'them'}: `{_run_command(step)} {sets}`. Nothing was "
                           "changed.")
    vm_name = f"{kind.step}-{facts.target.site_dir or facts.target.branch or 'site'}"
    operation = DeployAppliance(AppliancePlan(kind, template.id, template.name, network_id, vm_name, inputs, left),
                                wait_timeout=options.step_timeout, poll_interval=options.poll_interval)
    return operation_step(site, step, operation, await operation.plan(site))


def _run_command(step: SetupStep) -> str:
    from tui.procedures.setup.step_forms import run_command

    return run_command(step.id)


async def _plan_optional_write(site: "SiteConnection", facts: SetupFacts, step: SetupStep, kind: str, vm_id: int,
                               ask: AskSecrets) -> StepPlan:
    """The ready appliance's values into core.yaml; the route manager's API checked first."""
    from tui.procedures.setup.optional import check_route_manager, plan_optional, write_optional
    from tui.procedures.site.workspace import sites_repo

    target = facts.target
    if not target.branch:
        raise _stop(step, "nothing to write yet")
    password = await _vault_password(site, facts, step, ask)
    repo = sites_repo(site.settings)
    try:
        plan = await plan_optional(site, repo, target.branch, target.site_dir or target.branch, password, kind, vm_id)
    except SiteError as error:
        repo.close()
        raise SetupStopped(step.id, f"{step.title!r} cannot be planned: {error.title}", error.detail) from None

    async def run() -> AsyncIterator[Progress]:
        try:
            async for event in check_route_manager(site, plan):
                yield event
            async for event in write_optional(site, repo, plan, password):
                yield event
        finally:
            repo.close()

    preview = plan.preview()
    if kind == "route-manager" and not plan.is_noop:
        from tui.procedures.setup.optional import OptionalNames

        port = OptionalNames.of(site.naming).default_port
        check = Change("its API lists its routes with the VM's token (checked before anything is written)",
                       f"curl -H 'Authorization: Bearer ***' http://{plan.address}:{port}/routes/", "none")
        preview = replace(preview, changes=(check,) + preview.changes)
    return StepPlan(step, preview, run)


async def _plan_trial(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                      ask: AskSecrets) -> StepPlan:
    """The installer's optional last step: a test trial network through the manager (`trial_network`)."""
    from tui.procedures.trial.network import RunTrialNetwork, plan_trial

    target = facts.target
    vault = target.vault_password.text if target.vault_password is not None else ""
    try:
        plan = await plan_trial(site, target.values, tn_id=target.trial_tn_id or "sitetktest", branch=target.branch,
                                site_dir=target.site_dir, vault_text=vault)
    except SiteError as error:
        raise SetupStopped(step.id, f"{step.title!r} cannot be planned: {error.title}", error.detail) from None
    operation = RunTrialNetwork(wait_timeout=options.step_timeout, poll_interval=options.poll_interval)
    return operation_step(site, step, operation, plan)


async def _site_config(site: "SiteConnection", repo: "GitRepo", branch: str, site_dir: str,
                       password: "VaultPassword") -> AsyncIterator[Progress]:
    """Create (or open) the site and fill core.yaml from the cloud in the working clone: each an
    operation run through `run_operation`, planned when the one before it is done. Nothing is
    pushed (the submit is the last step)."""
    from tui.procedures.operation_stream import stream_operation
    from tui.procedures.site.file_operations import CreateSite
    from tui.procedures.site.fill_operation import FillSite
    from tui.procedures.site.repo import locate_site

    try:
        async for event in stream_operation(site, CreateSite(repo, branch, site_dir, password)):
            yield event
        ref = locate_site(repo, branch, site_dir)
        async for event in stream_operation(site, FillSite(ref.path, password)):
            yield event
    finally:
        repo.close()


def operation_step(site: "SiteConnection", step: SetupStep, operation: "Operation[Any, Any]", plan: object) -> StepPlan:
    """A step done by an `Operation`: its preview, and its run through `run_operation` (the
    read-only refusal, the time limit, the cancel, the one audit record) with the events streamed."""
    from tui.procedures.operation_stream import stream_operation

    return StepPlan(step, operation.preview(plan), lambda: stream_operation(site, operation, plan))


async def _plan_cloud_user(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                           ask: AskSecrets) -> StepPlan:
    from tui.procedures.setup.identity import CreateCloudUser

    name = facts.target.cloud_username
    password_name = site.naming.input_name(f"{site.naming.role_automation}_cloud_password")
    password = facts.target.values.get(password_name) or (await ask([password_name])).get(password_name, "")
    operation = CreateCloudUser(name, password)
    return operation_step(site, step, operation, await operation.plan(site))


async def _plan_marketplaces(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                             ask: AskSecrets) -> StepPlan:
    from tui.procedures.setup.identity import RegisterMarketplace

    found = step.found
    if not isinstance(found, MarketplacesMissing) or not (found.urls or found.mend):
        raise _stop(step)
    # a missing URL is registered (or enabled); ENDPOINTs without their slash are mended on the way
    operation = RegisterMarketplace(found.urls[0] if found.urls else found.mend[0][1])
    return operation_step(site, step, operation, await operation.plan(site))


_PLANNERS: Mapping[StepId, Callable[..., Awaitable[StepPlan]]] = {
    StepId.MARKETPLACES: _plan_marketplaces,
    StepId.CLOUD_USER: _plan_cloud_user,
    StepId.DOWNLOAD: _plan_download,
    StepId.TAGGED: _plan_tagged,
    StepId.INSTANTIATE: _plan_instantiate,
    StepId.RECORD: _plan_record,
    StepId.GRANT: _plan_grant,
    StepId.DATABASE_HOST: _plan_database,
    StepId.OBJECTSTORE_DISK: _plan_disk,
    StepId.SITE_BRANCH: _plan_site,
    StepId.CORE_YAML: _plan_site,
    StepId.COMPONENTS: _plan_components,
    StepId.DNS: _plan_optional,
    StepId.ROUTE_MANAGER: _plan_optional,
    StepId.TRIAL_RUN: _plan_trial,
}
