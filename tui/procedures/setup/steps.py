"""The setup's steps in one table, in the checklist's order (`StepId`): for each, how its state is
decided from one reading of the site (`decide`, in the `*_steps` module of its group), how the console
runs it (`plan`, in the `*_runs` module of its group; None when only the operator can do it: the
platform, the networks, the input file, the sites repository) and its form, the
`sitetk setup run --only <step>` that does it (`command`).

`tui.procedures.setup.status` decides every row (`build_checklist`); `tui.procedures.setup.run` plans
the step it chose with its row's `plan`. A new step is one row here, its decision and its planner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tui.domain.setup_steps import SetupStep, StepId
from tui.procedures.setup.facts import SetupFacts
from tui.procedures.setup.network_steps import default_network_step, forwarded_step, trial_network_step
from tui.procedures.setup.optional_runs import plan_appliance, plan_trial_run
from tui.procedures.setup.optional_steps import dns_step, route_manager_step, trial_run_step
from tui.procedures.setup.preflight_steps import (
    cli_helper_step,
    datastores_step,
    gate_step,
    marketplaces_step,
    platform_step,
    services_step,
)
from tui.procedures.setup.site_runs import plan_enable_components, plan_site, plan_submit
from tui.procedures.setup.site_steps import (
    components_step,
    core_yaml_step,
    repository_step,
    site_branch_step,
    submitted_step,
)
from tui.procedures.setup.step_forms import run_command
from tui.procedures.setup.step_plan import Planner
from tui.procedures.setup.toolkit_runs import (
    plan_cloud_user,
    plan_database,
    plan_disk,
    plan_download,
    plan_grant,
    plan_instantiate,
    plan_marketplaces,
    plan_record,
    plan_tagged,
)
from tui.procedures.setup.toolkit_steps import (
    cloud_user_step,
    database_host_step,
    download_step,
    grant_step,
    inputs_step,
    instantiate_step,
    objectstore_disk_step,
    record_step,
    tagged_step,
)


@dataclass(frozen=True)
class SetupStepRow:
    """One step of the setup: its id, how its state is decided, how it runs (None: by the operator)."""

    id: StepId
    decide: Callable[[SetupFacts], SetupStep]
    plan: Planner | None = None

    @property
    def command(self) -> str:
        """Its form: the `sitetk setup run --only` that does it ("": only the operator can)."""
        return run_command(self.id) if self.plan is not None else ""


STEPS: tuple[SetupStepRow, ...] = (
    # preflight: checked; the operator fixes them on the frontend, but for the marketplaces
    SetupStepRow(StepId.PLATFORM, platform_step),
    SetupStepRow(StepId.SERVICES, services_step),
    SetupStepRow(StepId.CLI_HELPER, cli_helper_step),
    SetupStepRow(StepId.GATE, gate_step),
    SetupStepRow(StepId.MARKETPLACES, marketplaces_step, plan_marketplaces),
    SetupStepRow(StepId.DATASTORES, datastores_step),
    # networks: checked only
    SetupStepRow(StepId.DEFAULT_NETWORK, default_network_step),
    SetupStepRow(StepId.TRIAL_NETWORK, trial_network_step),
    SetupStepRow(StepId.FORWARDED, forwarded_step),
    # the toolkit (the input file is the operator's: the console's form writes it)
    SetupStepRow(StepId.CLOUD_USER, cloud_user_step, plan_cloud_user),
    SetupStepRow(StepId.DOWNLOAD, download_step, plan_download),
    SetupStepRow(StepId.TAGGED, tagged_step, plan_tagged),
    SetupStepRow(StepId.INPUTS, inputs_step),
    SetupStepRow(StepId.INSTANTIATE, instantiate_step, plan_instantiate),
    SetupStepRow(StepId.RECORD, record_step, plan_record),
    SetupStepRow(StepId.GRANT, grant_step, plan_grant),
    SetupStepRow(StepId.DATABASE_HOST, database_host_step, plan_database),
    SetupStepRow(StepId.OBJECTSTORE_DISK, objectstore_disk_step, plan_disk),
    # the sites repository: in the working clone, submitted last
    SetupStepRow(StepId.REPOSITORY, repository_step),
    SetupStepRow(StepId.SITE_BRANCH, site_branch_step, plan_site),
    SetupStepRow(StepId.CORE_YAML, core_yaml_step, plan_site),
    SetupStepRow(StepId.COMPONENTS, components_step, plan_enable_components),
    SetupStepRow(StepId.SUBMITTED, submitted_step, plan_submit),
    # optional: only when asked with --only
    SetupStepRow(StepId.DNS, dns_step, plan_appliance),
    SetupStepRow(StepId.ROUTE_MANAGER, route_manager_step, plan_appliance),
    SetupStepRow(StepId.TRIAL_RUN, trial_run_step, plan_trial_run),
)
BY_ID: dict[StepId, SetupStepRow] = {row.id: row for row in STEPS}
