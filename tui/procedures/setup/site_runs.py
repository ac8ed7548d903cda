"""How the setup runs its sites-repository steps (the planners `tui.procedures.setup.steps` names), in
the working clone; nothing reaches the remote before the submit, the last of them:

| step | runs |
|---|---|
| site-branch, core-yaml | `CreateSite` (or open) and `FillSite` in the working clone, once the object store VM's address is known |
| components | `setup_components`: each missing component of the minimal set (and the recommended ones the library offers) through the `EnableComponent` operation (operation 9: appliances, grants, site variables) |
| submitted | the template's example values replaced with the site's own (given or asked), then `submit_checked`: the whole core.yaml checked with the cloud and the component library (`sitetk site check --cloud`), then `SubmitSite` (operation 6); any error or anything unchecked stops it, nothing committed |

The vault password (the sites token) comes from the input file, else is asked and checked
(`vault_password`).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Mapping

from tui.domain.input_site import Outcome
from tui.domain.setup_steps import ComponentsMissing, ExamplesLeft, SetupStep
from tui.domain.site_checks import check_example_answer
from tui.errors import SiteError
from tui.procedures.operation import RunContext
from tui.procedures.operation_stream import run_part
from tui.procedures.preview import Change, Preview
from tui.procedures.setup.components import enable_components, plan_components, submit_checked
from tui.procedures.setup.facts import SetupFacts
from tui.procedures.setup.step_plan import AskSecrets, AskValues, PlanRequest, SetupStopped, StepPlan, stop
from tui.procedures.site.file_operations import CreateSite, EditSite
from tui.procedures.site.fill_operation import FillSite
from tui.procedures.site.repo import locate_site, open_site
from tui.procedures.site.workspace import prompted_password, sites_repo
from tui.procedures.toolkit.input_checks import check_vault_secret

if TYPE_CHECKING:  # pragma: no cover
    from tui.adapters.git_repo import GitRepo
    from tui.adapters.vault import VaultPassword
    from tui.procedures.connection import SiteConnection

#: what a dry run's preview shows for a site value asked when the step runs
ASKED_LATER = "(asked when it runs)"


async def plan_site(request: PlanRequest, step: SetupStep) -> StepPlan:
    """The site branch and core.yaml filled from the cloud, in the working clone: nothing reaches
    the remote until the whole file passes the check (`plan_submit`, the last step)."""
    site, facts = request.site, request.facts
    target = facts.target
    if not target.branch:
        raise stop(step)
    if not facts.objectstore_ip:
        raise SetupStopped(step.id, "core.yaml is submitted last",
                           "site_s3_server is the object store VM's address: deploy the toolkit first "
                           "(`sitetk setup run --input FILE`).")
    password = await vault_password(site, facts, step, request.ask)
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
    return StepPlan(step, preview, partial(_site_config, site, repo, target.branch, site_dir, password))


async def _site_config(site: "SiteConnection", repo: "GitRepo", branch: str, site_dir: str,
                       password: "VaultPassword", context: RunContext) -> None:
    """Create (or open) the site and fill core.yaml from the cloud in the working clone: each an
    operation run through `run_operation`, planned when the one before it is done. Nothing is
    pushed (the submit is the last step)."""
    try:
        await run_part(site, CreateSite(repo, branch, site_dir, password), context)
        ref = locate_site(repo, branch, site_dir)
        await run_part(site, FillSite(ref.path, password), context)
    finally:
        repo.close()


async def _examples(step: SetupStep, ask_values: AskValues | None, site_values: Mapping[str, str],
                    preview_only: bool = False) -> list[tuple[str, str]]:
    """The site's own values for the template's examples core.yaml holds: given (--set) or asked;
    each checked (`check_example_answer`) before anything changes."""
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


async def plan_submit(request: PlanRequest, step: SetupStep) -> StepPlan:
    """The template's example values replaced with the site's own (asked), then core.yaml checked
    whole (the cloud and the component library), then committed and pushed."""
    site, facts = request.site, request.facts
    target = facts.target
    if not target.branch:
        raise stop(step)
    password = await vault_password(site, facts, step, request.ask)
    edits = await _examples(step, request.ask_values, request.site_values, request.preview_only)
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

    async def run(context: RunContext) -> None:
        try:
            await open_site(repo, target.branch, site_dir, context)
            ref = locate_site(repo, target.branch, site_dir)
            if edits:
                await run_part(site, EditSite(ref.path, password, edits), context)
            await submit_checked(site, repo, ref, password, "enabling the components", context)
        finally:
            repo.close()

    return StepPlan(step, preview, run)


async def vault_password(site: "SiteConnection", facts: SetupFacts, step: SetupStep, ask: AskSecrets) -> "VaultPassword":
    """The site's secret: from the input file, else asked (never from argv)."""
    password = facts.target.vault_password
    if password is not None:
        return password
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


async def plan_enable_components(request: PlanRequest, step: SetupStep) -> StepPlan:
    """The minimal component set through the day-2 flow (`setup_components`), in the working clone."""
    site, facts, options = request.site, request.facts, request.options
    target, found = facts.target, step.found
    if not target.branch or not isinstance(found, ComponentsMissing):
        raise stop(step)
    password = await vault_password(site, facts, step, request.ask)
    repo = sites_repo(site.settings)
    try:
        plan = await plan_components(site, repo, target.branch, target.site_dir or target.branch, password,
                                     found.mandatory, found.recommended, target.cloud_username)
    except SiteError as error:
        repo.close()
        raise SetupStopped(step.id, f"{step.title!r} cannot be planned: {error.title}", error.detail) from None

    async def run(context: RunContext) -> None:
        try:
            await enable_components(site, repo, plan, password, context, poll_interval=options.poll_interval,
                                    step_timeout=options.step_timeout)
        finally:
            repo.close()

    if not plan.steps:
        repo.close()
        raise SetupStopped(step.id, "No component to enable", "\n".join(plan.skipped) or "see the evidence")
    return StepPlan(step, plan.preview(), run)
