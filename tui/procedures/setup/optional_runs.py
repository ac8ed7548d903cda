"""How the setup runs its optional steps (the planners `tui.procedures.setup.steps` names), only when
asked with `--only`:

| step | runs |
|---|---|
| dns, route-manager | `setup_optional`, one round at a time: `DownloadAppliance`, then `DeployAppliance` (the VM on the default network with its inputs, waited for until ready), then the route manager's API checked with the VM's token and the address (and token) written into core.yaml, checked and submitted |
| trial-run | `RunTrialNetwork`: a test trial network through the manager's REST API (created, validated, activated, reported), an `Operation` |
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Mapping

from tui.domain.setup_steps import ApplianceVm, SetupStep, StepId
from tui.errors import SiteError
from tui.procedures.market.download import DownloadAppliance
from tui.procedures.market.download_plan import default_download_name
from tui.procedures.operation import RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.setup.facts import SetupFacts
from tui.procedures.setup.network_steps import default_network_step
from tui.procedures.setup.optional import (
    AppliancePlan,
    DeployAppliance,
    OptionalNames,
    appliance_inputs,
    appliance_kind,
    check_route_manager,
    plan_optional,
    secret_inputs,
    wait_ready,
    write_optional,
)
from tui.procedures.setup.site_runs import vault_password
from tui.procedures.setup.site_steps import parse_core_yaml
from tui.procedures.setup.step_forms import run_command
from tui.procedures.setup.step_plan import AskSecrets, PlanRequest, RunOptions, SetupStopped, StepPlan, operation_step, stop
from tui.procedures.setup.toolkit_runs import download_datastore, wait_images
from tui.procedures.site.workspace import sites_repo
from tui.procedures.trial.network import RunTrialNetwork, plan_trial

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


async def plan_appliance(request: PlanRequest, step: SetupStep) -> StepPlan:
    """DNS / route manager, one round at a time (`setup_optional`): the download, the VM deployed
    with its inputs and waited for, then (the route manager's API checked first) core.yaml."""
    site, facts, options = request.site, request.facts, request.options
    kind = appliance_kind("dns" if step.id is StepId.DNS else "route-manager", site.naming)
    found = step.found
    if not isinstance(found, ApplianceVm):
        raise stop(step, "nothing to do yet")
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
            return StepPlan(step, preview, partial(wait_images, site, ids, options), wait_only=True)
        return await _plan_appliance_vm(site, facts, step, options, request.ask, kind, found, request.site_values)
    vm = await site.cloud.vm_info(found.vm_id)
    if not (vm.summary.running and vm.summary.ips and vm.user_template.get(kind.ready_attribute, "")):
        vm_id = vm.id
        preview = Preview(f"Wait for VM {vm_id} of the {kind.label} appliance to be ready",
                          (Change(f"no change: wait until it RUNs and publishes {kind.ready_attribute}",
                                  f"onevm show {vm_id}", "none"),))

        async def wait(context: RunContext) -> None:
            ready = await wait_ready(site, kind, vm_id, context, timeout=options.step_timeout,
                                     poll_interval=options.poll_interval)
            context.report(Progress("wait", 2, 2, f"VM {vm_id} RUNNING at {ready.summary.ips[0]}, "
                                    f"{kind.ready_attribute} published", ProgressState.DONE))

        return StepPlan(step, preview, wait, wait_only=True)
    return await _plan_optional_write(site, facts, step, kind.step, vm.id, request.ask)


async def _plan_appliance_download(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                                   app_id: int) -> StepPlan:
    app = next(a for a in facts.marketapps or () if a.id == app_id)
    operation = DownloadAppliance(app.id, download_datastore(facts, options), default_download_name(app.name, app.version),
                                  step_timeout=options.step_timeout, poll_interval=options.poll_interval)
    return operation_step(site, step, operation, await operation.plan(site))


async def _plan_appliance_vm(site: "SiteConnection", facts: SetupFacts, step: SetupStep, options: RunOptions,
                             ask: AskSecrets, kind: Any, found: ApplianceVm, site_values: Mapping[str, str]) -> StepPlan:
    """The appliance's VM template instantiated with its inputs on the default network (`DeployAppliance`)."""
    if found.template_id is None:
        raise SetupStopped(step.id, f"The {kind.label} appliance's download made no VM template",
                           f"{'; '.join(step.evidence)}\nFix: delete its images (`oneimage delete ...`) and run again "
                           "to download it again.")
    network_id = facts.default_network_id
    if network_id is None:
        raise stop(default_network_step(facts), "no default network to deploy it on")
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
    config = parse_core_yaml(facts)
    domain = config.get("site_domain") if config is not None else ""
    inputs, left, missing = appliance_inputs(template, given, domain if isinstance(domain, str) else "", asked)
    if missing:
        sets = " ".join(f"--set {name}=..." for name in missing)
        raise SetupStopped(step.id, f"The {kind.label} appliance needs {', '.join(missing)}",
                           f"Give {'it' if len(missing) == 1 else 'them'}: `{run_command(step.id)} {sets}`. Nothing "
                           "was changed.")
    vm_name = f"{kind.step}-{facts.target.site_dir or facts.target.branch or 'site'}"
    operation = DeployAppliance(AppliancePlan(kind, template.id, template.name, network_id, vm_name, inputs, left),
                                wait_timeout=options.step_timeout, poll_interval=options.poll_interval)
    return operation_step(site, step, operation, await operation.plan(site))


async def _plan_optional_write(site: "SiteConnection", facts: SetupFacts, step: SetupStep, kind: str, vm_id: int,
                               ask: AskSecrets) -> StepPlan:
    """The ready appliance's values into core.yaml; the route manager's API checked first."""
    target = facts.target
    if not target.branch:
        raise stop(step, "nothing to write yet")
    password = await vault_password(site, facts, step, ask)
    repo = sites_repo(site.settings)
    try:
        plan = await plan_optional(site, repo, target.branch, target.site_dir or target.branch, password, kind, vm_id)
    except SiteError as error:
        repo.close()
        raise SetupStopped(step.id, f"{step.title!r} cannot be planned: {error.title}", error.detail) from None

    async def run(context: RunContext) -> None:
        try:
            await check_route_manager(site, plan, context)
            await write_optional(site, repo, plan, password, context)
        finally:
            repo.close()

    preview = plan.preview()
    if kind == "route-manager" and not plan.is_noop:
        port = OptionalNames.of(site.naming).default_port
        check = Change("its API lists its routes with the VM's token (checked before anything is written)",
                       f"curl -H 'Authorization: Bearer ***' http://{plan.address}:{port}/routes/", "none")
        preview = replace(preview, changes=(check,) + preview.changes)
    return StepPlan(step, preview, run)


async def plan_trial_run(request: PlanRequest, step: SetupStep) -> StepPlan:
    """The installer's optional last step: a test trial network through the manager (`trial_network`)."""
    site, options, target = request.site, request.options, request.facts.target
    vault = target.vault_password.text if target.vault_password is not None else ""
    try:
        plan = await plan_trial(site, target.values, tn_id=target.trial_tn_id or "sitetktest", branch=target.branch,
                                site_dir=target.site_dir, vault_text=vault)
    except SiteError as error:
        raise SetupStopped(step.id, f"{step.title!r} cannot be planned: {error.title}", error.detail) from None
    operation = RunTrialNetwork(wait_timeout=options.step_timeout, poll_interval=options.poll_interval)
    return operation_step(site, step, operation, plan)
