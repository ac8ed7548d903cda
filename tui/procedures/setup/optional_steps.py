"""The setup checklist's optional steps, decided from `setup_facts`: the DNS and route-manager
appliances (`tui.procedures.setup.optional` runs them) and the test trial network
(`tui.procedures.setup.steps` lists every step in order)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tui.domain.setup_steps import (
    ApplianceVm,
    SetupStep,
    StepId,
    StepState,
)
from tui.domain.trial_ids import DEFAULT_TN_ID
from tui.procedures.setup.facts import SetupFacts
from tui.procedures.setup.optional import DEAD_STATES, OptionalNames, appliance_kind, dns_servers
from tui.procedures.setup.site_steps import parse_core_yaml, submitted_step
from tui.procedures.setup.step_forms import blocked as _blocked
from tui.procedures.setup.step_forms import run_command as _run
from tui.procedures.setup.step_forms import step as _step
from tui.procedures.setup.step_forms import unknown as _unknown


def _optional_step(facts: SetupFacts, step_id: StepId, title: str, kind: Any, written: Any, write: str) -> SetupStep:
    """An optional appliance (tui.procedures.setup.optional): not in any marketplace, to download,
    downloaded without a VM, a VM not ready or failed, ready and not written (only when asked),
    written (done). `written(vm, config)` -> (done, evidence)."""
    if facts.images is None or facts.vms is None:
        return _unknown(step_id, title, "the images and VMs", mandatory=False)
    attribute = facts.naming.appliance_name_attribute
    images = [i for i in facts.images if i.attributes.get(attribute) in kind.names]
    vms = sorted((vm for vm in facts.vms if any(i.vm_ids and vm.id in i.vm_ids for i in images)),
                 key=lambda vm: (not vm.running, -vm.id))
    command = _run(step_id)
    names = " or ".join(repr(n) for n in kind.names)
    if not vms:
        if not images:
            if facts.marketapps is None:
                return _unknown(step_id, title, "the marketplace apps", mandatory=False)
            apps = sorted((a for a in facts.marketapps if a.name in kind.names), key=lambda a: -a.id)
            if not apps:
                return _step(step_id, title, StepState.OPTIONAL, (f"no marketplace the cloud holds lists {names}",),
                             "Register a marketplace that lists it (`onemarket create`), then "
                             f"`{command}` downloads and deploys it.", mandatory=False, command=command,
                             found=ApplianceVm(None))
            app = apps[0]
            return _step(step_id, title, StepState.OPTIONAL,
                         (f"no {kind.name} appliance downloaded; marketplace app {app.id} {app.name!r} {app.version} "
                          f"({app.marketplace}) lists it",),
                         f"`{command}` downloads it, deploys its VM on the default network with its inputs, waits "
                         "until it is ready and writes it into core.yaml.", mandatory=False, command=command,
                         found=ApplianceVm(None, app_id=app.id))
        image_ids = tuple(sorted(i.id for i in images))
        templates = [t for t in facts.vm_templates or () if set(t.image_ids) & set(image_ids)]
        ready = all(i.usable for i in images)
        states = ", ".join(f"{i.id} {i.status}" for i in images)
        evidence = [f"image(s) {states} of {kind.name} downloaded"
                    + (f", VM template {templates[0].id}" if templates else ", no VM template uses them") + "; no VM"]
        return _step(step_id, title, StepState.OPTIONAL, tuple(evidence),
                     f"`{command}` deploys its VM on the default network, waits until it is ready and writes it into "
                     "core.yaml.", mandatory=False, command=command,
                     found=ApplianceVm(None, template_id=templates[0].id if templates else None, image_ids=image_ids,
                                       images_ready=ready))
    vm = vms[0]
    evidence = [f"VM {vm.id} {vm.name} runs the {kind.name} appliance ({vm.status}; "
                f"{', '.join(vm.ips) or 'no address yet'})"]
    if vm.kind == "failed" or vm.state in DEAD_STATES:
        return _step(step_id, title, StepState.FAILED, tuple(evidence),
                     f"It will not become ready by itself: read why (`onevm show {vm.id}`), remove it (`onevm recover "
                     f"--delete {vm.id}`), then `{command}` deploys a new one.", mandatory=False, command=command,
                     found=ApplianceVm(vm.id))
    if not vm.running or not vm.ips:
        return _step(step_id, title, StepState.OPTIONAL, tuple(evidence),
                     f"`{command}` waits until it is ready, then writes it into core.yaml.", mandatory=False,
                     command=command, found=ApplianceVm(vm.id))
    config = parse_core_yaml(facts)
    if config is None or submitted_step(facts).state is not StepState.DONE:
        return _blocked(step_id, title, StepId.SUBMITTED, "Once core.yaml is filled, checked and submitted: " + write,
                        evidence, mandatory=False)
    done, said = written(vm, config)
    if done:
        return _step(step_id, title, StepState.DONE, evidence + [said], mandatory=False, found=ApplianceVm(vm.id))
    return _step(step_id, title, StepState.OPTIONAL, evidence + [said], write, mandatory=False,
                 command=command, found=ApplianceVm(vm.id))


def dns_step(facts: SetupFacts) -> SetupStep:
    kind = appliance_kind("dns", facts.naming)
    key = OptionalNames.of(facts.naming).dns_key

    def written(vm: Any, config: Any) -> tuple[bool, str]:
        servers = dns_servers(config.get(key))
        ip = vm.ips[0] if vm.ips else ""
        return bool(ip) and servers[:1] == [ip], f"{key} = {','.join(servers) or '(empty)'}"

    return _optional_step(facts, StepId.DNS, "DNS appliance (optional)", kind, written,
                          f"`{_run(StepId.DNS)}` puts its address first in {key} (previewed, then submitted).")


def route_manager_step(facts: SetupFacts) -> SetupStep:
    kind = appliance_kind("route-manager", facts.naming)
    names = OptionalNames.of(facts.naming)

    def written(vm: Any, config: Any) -> tuple[bool, str]:
        endpoint = config.get(names.endpoint_key)
        token = config.get(names.token_key)
        done = bool(vm.ips) and endpoint == vm.ips[0] and bool(token)
        said = f"{names.endpoint_key} = {endpoint!r}; {names.token_key} {'set' if token else 'not set'}"
        if isinstance(endpoint, str) and "://" in endpoint:
            said += (f" (a URL: the component library wants the bare address, it adds http:// and "
                     f":{names.default_port} itself)")
        return done, said

    step = _optional_step(facts, StepId.ROUTE_MANAGER, "Route-manager appliance (optional)", kind, written,
                          f"`{_run(StepId.ROUTE_MANAGER)}` checks that its API lists its routes with the VM's token, "
                          "then writes its address and token into core.yaml (previewed, token masked, then submitted).")
    answer = facts.route_manager
    if step.state is not StepState.DONE or answer is None:
        return step
    evidence = step.evidence + (f"its API: {answer.said}",)
    if answer.ok:
        return replace(step, evidence=evidence)
    vm = f"VM {step.found.vm_id}" if isinstance(step.found, ApplianceVm) else "the route manager's VM"
    fix = (f"The API does not take core.yaml's {names.token_key}: compare it with {vm}'s "
           f"{names.token_attribute} (`onevm show`), put the VM's into core.yaml (`ansible-vault edit`), then "
           "`sitetk site submit`." if answer.refused else
           f"Nothing answered: check that {vm} runs its service (port {names.default_port}) and that the frontend "
           "reaches it, then `sitetk setup status` again.")
    return replace(step, state=StepState.FAILED, evidence=evidence, action=fix)


def trial_run_step(facts: SetupFacts) -> SetupStep:
    """The installer's optional last step: a test trial network activated through the manager. Its
    state is the manager's (read only when asked: it logs in), never assumed."""
    step_id, title = StepId.TRIAL_RUN, "A test trial network activates (optional)"
    command = _run(step_id)
    run = (f"`{command}` (or `sitetk trial run`) logs in to the manager, creates trial network {DEFAULT_TN_ID} from "
           "the component library's tn_init sample and follows it until it is activated; `sitetk trial destroy` "
           "removes it.")
    if facts.service is None:
        return _blocked(step_id, title, StepId.INSTANTIATE, "Deploy the toolkit first: the manager runs in it.",
                        mandatory=False)
    if facts.repo is None or facts.repo.remote_yaml is None:
        return _blocked(step_id, title, StepId.SUBMITTED, "The manager validates a trial network against the site's "
                        "core.yaml on its branch, which the sites repository does not hold (or was not read): submit "
                        "it first. Then: " + run, mandatory=False)
    trial = facts.trial
    if trial is None:
        return _step(step_id, title, StepState.OPTIONAL, ("not read: reading it logs in to the manager "
                     "(`sitetk trial status` reads it)",), run, mandatory=False, command=command)
    if trial.error:
        return _step(step_id, title, StepState.OPTIONAL, (f"the manager could not be asked: {trial.error}",), run,
                     mandatory=False, command=command)
    where = f"the manager at {trial.url}"
    if not trial.state:
        return _step(step_id, title, StepState.OPTIONAL, (f"{where} has no trial network {trial.tn_id}",), run,
                     mandatory=False, command=command)
    evidence = (f"{where}: trial network {trial.tn_id} is {trial.state}"
                + (f" (deploy pipeline {trial.pipeline})" if trial.pipeline else ""),)
    if trial.state == "activated":
        return _step(step_id, title, StepState.DONE, evidence, mandatory=False)
    if trial.state in ("failed-activation", "failed-destruction"):
        return _step(step_id, title, StepState.FAILED, evidence,
                     f"`sitetk trial status --tn-id {trial.tn_id}` shows the manager's log; `sitetk trial destroy "
                     f"--tn-id {trial.tn_id} --yes` removes it; then run again.", mandatory=False, command=command)
    return _step(step_id, title, StepState.OPTIONAL, evidence, run, mandatory=False, command=command)
