"""The setup's component step: the minimal component set enabled through the day-2 flow, then submitted.

`plan_components(site, repo, branch, site_dir, password, missing, recommended)` opens the site
branch in the working clone (local only), reads the component library and plans, per component,
what `sitetk site enable` would do: `plan_provision` (appliances downloaded or reused, the
automation user granted) and the site-variable changes (`preview_enable_component`). The
mandatory ones (spec "What the service does" 7) must be enabled; a recommended one the library
does not define, or that needs site variables only the operator can give, is skipped with the
reason. `enable_components(site, repo, plan, password, context)` runs the `EnableComponent` operation for
each through `run_operation` (the read-only refusal and the one audit record per component, as
`sitetk site enable`; already enabled: nothing changes; an interrupted run left a download: it is
reused) in the working clone. Nothing is pushed here: `submit_checked` submits core.yaml last,
once the whole file passes the check with the cloud and the component library (the setup's
submitted step), so no commit on the remote ever fails `sitetk site check --cloud`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Sequence

from tui import timing
from tui.adapters.vault import VaultPassword
from tui.domain.components import ComponentDefinition
from tui.errors import SiteError
from tui.procedures.components.enable_operation import EnableComponent, EnableReview
from tui.procedures.components.provision import plan_provision
from tui.procedures.operation import RunContext
from tui.procedures.operation_stream import run_part
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site.component_library import library_definitions
from tui.procedures.site.config import check_enable_inputs, load_site_config, preview_enable_component
from tui.procedures.site.repo import open_site
from tui.procedures.site.submit_operation import SubmitSite
from tui.procedures.site.verdict import site_verdict

if TYPE_CHECKING:  # pragma: no cover
    from tui.adapters.git_repo import GitRepo
    from tui.procedures.components.provision import ProvisionPlan
    from tui.procedures.connection import SiteConnection
    from tui.procedures.site.repo import SiteRef


@dataclass(frozen=True)
class ComponentStep:
    definition: ComponentDefinition
    provision: "ProvisionPlan | None"
    preview: Preview


@dataclass(frozen=True)
class ComponentsPlan:
    site: "SiteRef"
    steps: tuple[ComponentStep, ...]
    #: recommended components left out, each with why
    skipped: tuple[str, ...] = ()
    cloud_user: str = ""

    def preview(self) -> Preview:
        changes: list[Change] = []
        warnings: list[str] = []
        for step in self.steps:
            changes += [Change(f"{step.definition.name}: {c.description}", c.cli, c.kind) for c in step.preview.changes]
            warnings += [w for w in step.preview.warnings if w not in warnings]
        names = ", ".join(s.definition.name for s in self.steps)
        warnings += [f"not enabled: {why}" for why in self.skipped]
        warnings.append("core.yaml is written in the working clone; it is submitted last, once the whole file passes "
                        "the check (cloud and component library)")
        return Preview(f"Enable {names} (the minimal component set)", tuple(changes), warnings=tuple(warnings))


async def _definitions(site: "SiteConnection") -> dict[str, ComponentDefinition]:
    return await library_definitions(site)


async def plan_components(site: "SiteConnection", repo: "GitRepo", branch: str, site_dir: str,
                          password: VaultPassword, missing: Sequence[str], recommended: Sequence[str],
                          cloud_user: str) -> ComponentsPlan:
    """What enabling the missing components means (module docstring); changes nothing on the site.
    One reading pass (`tui.procedures.reading_pass`): the components' downloads are planned from
    one reading of the marketplaces, apps, images, templates, datastores, users and rules, not one
    each; each component's run reads again."""
    async with site.reading_pass():
        return await _plan_components(site, repo, branch, site_dir, password, missing, recommended, cloud_user)


async def _plan_components(site: "SiteConnection", repo: "GitRepo", branch: str, site_dir: str,
                           password: VaultPassword, missing: Sequence[str], recommended: Sequence[str],
                           cloud_user: str) -> ComponentsPlan:
    ref = await open_site(repo, branch, site_dir, RunContext(lambda event: None))
    definitions = await _definitions(site)
    steps: list[ComponentStep] = []
    skipped: list[str] = []
    for name in list(missing) + [n for n in recommended if n not in missing]:
        mandatory = name in missing
        definition = definitions.get(name)
        if definition is None:
            if mandatory:
                raise SiteError(f"The component library has no {name}",
                                f"{name} is in the minimal component set: add it to the library "
                                "(SITETK_LIBRARY_REPO) or check the library's address.")
            skipped.append(f"{name}: the component library does not define it")
            continue
        provision = None
        fills: frozenset[str] = frozenset()
        if definition.appliances:
            provision = await plan_provision(site, definition, cloud_user=cloud_user or None)
            fills = provision.fills()
        try:
            await check_enable_inputs(ref.path, password, definition, None, fills, site.naming)
        except SiteError as error:
            if mandatory:
                raise
            skipped.append(f"{name}: {error.title} (`sitetk site enable {name} --set ...`)")
            continue
        variables = await preview_enable_component(ref.path, password, definition, None, site.naming,
                                                   from_appliance=fills)
        own = provision.preview() if provision is not None else Preview(definition.name, ())
        preview = Preview(definition.name, own.changes + tuple(c for c in variables.changes
                                                               if not c.description.startswith("appliance ")),
                          warnings=own.warnings + variables.warnings)
        steps.append(ComponentStep(definition, provision, preview))
    return ComponentsPlan(ref, tuple(steps), tuple(skipped), cloud_user)


async def enable_components(site: "SiteConnection", repo: "GitRepo", plan: ComponentsPlan,
                            password: VaultPassword, context: RunContext, *, poll_interval: float = timing.PROFILE.poll_interval,
                            step_timeout: float = timing.PROFILE.setup_step_timeout) -> None:
    """Enable each planned component (the `EnableComponent` operation, each run a part of this one,
    its steps named after the component) in the working clone; the submit is the setup's last step
    (`submit_checked`)."""
    for why in plan.skipped:
        context.report(Progress("recommended components", 1, 1, f"not enabled: {why}", ProgressState.SKIPPED))
    for step in plan.steps:
        operation = EnableComponent(plan.site.path, password, step.definition, cloud_user=plan.cloud_user or None,
                                    poll_interval=poll_interval, step_timeout=step_timeout)
        review = EnableReview(step.definition.name, step.provision, step.preview)
        await run_part(site, operation, context, review, adapt=partial(_named, step.definition.name))


def _named(component: str, event: Progress) -> Progress:
    return replace(event, step=f"{component}: {event.step}")


async def submit_checked(site: "SiteConnection", repo: "GitRepo", ref: "SiteRef", password: VaultPassword,
                         after: str, context: RunContext) -> None:
    """Check the whole core.yaml (the cloud's facts and the component library's definitions, as
    `sitetk site check --cloud`); no error and nothing left unchecked: commit and push it (the
    `SubmitSite` operation through `run_operation`: the read-only refusal and its one audit record,
    which then says the check passed with nothing unchecked)."""
    definitions = await _definitions(site)
    operation = SubmitSite(repo, ref, password, definitions=definitions)
    config = (await load_site_config(ref.path, password, site.naming)).config
    verdict = await site_verdict(config, site=site, definitions=definitions)
    if verdict.errors:
        raise SiteError(f"core.yaml has {len(verdict.errors)} error(s) after {after}: nothing was submitted",
                        "\n".join(f"{f.path}: {f.message}" for f in verdict.errors)
                        + f"\nFix them in {ref.path} (`sitetk site edit`), then run again.")
    if not verdict.complete:
        raise SiteError(f"core.yaml could not be checked whole after {after}: nothing was submitted",
                        "Not checked: " + "; ".join(verdict.unchecked()) + ". " + "; ".join(verdict.notes))
    context.report(Progress("check", 1, 1, f"core.yaml checked with the cloud and the component library: no error "
                            f"({len(verdict.warnings)} warning(s))", ProgressState.DONE))
    plan = await operation.plan(site)
    if not plan.pending:
        context.report(Progress("submit", 1, 1, f"nothing to commit or push on {ref.branch}", ProgressState.SKIPPED))
        return
    await run_part(site, operation, context, plan)
