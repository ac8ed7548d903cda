"""Submitting a site's core.yaml as an operation (tui.procedures.operation).

`SubmitSite(repo, site_ref, password)` plans a `SubmitPlan`: the decrypted diff against the branch
(`preview_submit`), the check of the very text (`site_verdict`, with the cloud's facts unless
`consult_cloud` is False) and the submit gate (`submit_gate`: check errors refuse unless
overridden with a reason). It previews the commit and the push with their git commands,
confirms naming the file and the branch, and runs `submit_site`. A plan with nothing to commit
and nothing to push has no gate and no question (`SubmitPlan.pending` is False).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui.adapters.git_repo import SITE_CONFIG_FILE, GitRepo
from tui.domain.components import ComponentDefinition
from tui.errors import SiteError
from tui.procedures.operation import Confirmation, Operation, OperationCancelled, RunContext
from tui.procedures.preview import Preview
from tui.procedures.site.config import VaultPassword, load_site_config
from tui.procedures.site.repo import (
    SiteRef,
    SubmitLedger,
    SubmitPreview,
    SubmitStopped,
    Submitted,
    default_message,
    preview_submit,
    submit_details,
    submit_site,
)
from tui.procedures.site.verdict import SiteVerdict, SubmitGate, site_verdict, submit_gate

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


@dataclass(frozen=True)
class SubmitPlan:
    """What a submit will push: the diff, the check it goes ahead on and its gate."""

    preview: SubmitPreview
    #: None when there is nothing to submit (then nothing was checked)
    verdict: SiteVerdict | None = None
    #: None in a dry run (the gate is not asked) and when there is nothing to submit
    gate: SubmitGate | None = None
    message: str | None = None

    @property
    def site(self) -> SiteRef:
        return self.preview.site

    @property
    def pending(self) -> bool:
        return self.preview.pending

    @property
    def commit_message(self) -> str:
        message = self.message or default_message(self.site)
        return self.gate.commit_message(message) if self.gate is not None else message

    def as_json(self) -> dict[str, Any]:
        return {**self.preview.as_json(), "verdict": self.verdict.as_json() if self.verdict else None}


@dataclass(frozen=True)
class SubmitSite(Operation[SubmitPlan, Submitted]):
    """Commit and push the site's encrypted core.yaml (see the module docstring)."""

    repo: GitRepo = field(compare=False)
    site_ref: SiteRef
    password: VaultPassword = field(repr=False)
    message: str | None = None
    override_reason: str | None = None
    definitions: Mapping[str, ComponentDefinition] | None = field(default=None, compare=False)
    reveal: bool = False
    consult_cloud: bool = True

    title: ClassVar[str] = "Submit the site"
    refusal: ClassVar[str] = "a submit pushes to the sites repository"
    action: ClassVar[str] = "site.submit"
    #: a stop signal cancels the run at its next await; the commit runs to its end first, a stopped
    #: push is read back from the remote (`site_repo.submit_site`)
    cancels_itself: ClassVar[bool] = False

    async def plan(self, site: "SiteConnection") -> SubmitPlan:
        preview = await preview_submit(self.repo, self.site_ref, self.password, reveal=self.reveal)
        if not preview.pending:
            return SubmitPlan(preview, message=self.message)
        config = (await load_site_config(self.site_ref.path, self.password, site.naming)).config
        verdict = await site_verdict(config, site=site if self.consult_cloud else None, definitions=self.definitions)
        return SubmitPlan(preview, verdict, submit_gate(verdict, self.override_reason), self.message)

    def preview(self, plan: SubmitPlan) -> Preview:
        return plan.preview.as_preview(plan.commit_message)

    def confirmation(self, plan: SubmitPlan) -> Confirmation | None:
        if not plan.pending:
            return None
        return Confirmation("Commit and push", f"{plan.site.site_dir}/{SITE_CONFIG_FILE} to {plan.site.branch}")

    async def execute(self, site: "SiteConnection", plan: SubmitPlan, context: RunContext) -> Submitted:
        if plan.gate is None:
            raise SiteError("Nothing checked to submit", "The submit was planned without its check; plan it again.")
        return await submit_site(self.repo, plan.site, self.password, context, gate=plan.gate, message=self.message,
                                 naming=site.naming, ledger=context.keep(SubmitLedger()))

    def audit_details(self, plan: SubmitPlan, result: Submitted) -> Mapping[str, Any] | None:
        if not result.pushed or plan.gate is None:
            return None
        return submit_details(self.repo, result.site, result.commit, plan.gate)

    def audit_failure(self, plan: SubmitPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        committed = (context.kept(SubmitLedger) or SubmitLedger()).commit
        if not (committed or isinstance(error, OperationCancelled)):
            return None  # refused before anything was committed (a plain file, a wrong password)
        details: dict[str, Any] = {"site_dir": plan.site.site_dir, "commit": committed,
                                   "pushed": False, "remote": self.repo.remote.url}
        if isinstance(error, SubmitStopped):
            details.update(commit=error.commit, resume=error.resume)
        return details

    def audit_target(self, plan: SubmitPlan, result: Submitted) -> str:
        return result.site.branch
