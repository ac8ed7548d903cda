"""The verdict on a site's core.yaml, and the gate it puts before submitting.

`site_verdict(config, site=..., definitions=...)` runs every check of `domain.site_checks` with
what the cloud says when a connection is given (IDs that exist, what each image and template is,
the NIC MTU) and returns a `SiteVerdict`: findings with severities, notes on what could not be
read, and whether the cloud and the component library were consulted. This is the API other
flows use to decide whether core.yaml is done (`verdict.ok`, `verdict.errors`,
`verdict.complete`: no error, cloud and library consulted).

`SubmitGate` is what `site_repo.submit_site` demands: the verdict on the very text being
submitted (compared by digest), and a reason when the verdict has errors. A gate with errors
and no reason refuses (`SiteError` listing the errors); with a reason, the reason and the
overridden errors go into the commit message and the audit entry.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from tui.domain.components import ComponentDefinition
from tui.domain.findings import Finding
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.severity import Severity
from tui.domain.site_checks import check_site_config
from tui.domain.site_config import SiteConfig
from tui.domain.site_fill import CloudFacts
from tui.errors import SiteError
from tui.procedures.site.confirmations import check_reason

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: findings quoted in a commit message (the rest are counted)
MAX_LISTED = 10


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class SiteVerdict:
    findings: tuple[Finding, ...]
    #: what could not be read (marketplaces, the toolkit deployment, ...)
    notes: tuple[str, ...] = ()
    cloud_consulted: bool = False
    library_loaded: bool = False
    #: sha256 of the configuration text the verdict is about
    digest: str = ""

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is not Severity.ERROR)

    @property
    def ok(self) -> bool:
        """No error among the checks that ran."""
        return not self.errors

    @property
    def complete(self) -> bool:
        """No error, and nothing left unchecked for want of the cloud or the library."""
        return self.ok and self.cloud_consulted and self.library_loaded

    def unchecked(self) -> tuple[str, ...]:
        out = []
        if not self.library_loaded:
            out.append("site variables and appliance IDs (the component library was not read)")
        if not self.cloud_consulted:
            out.append("IDs in the cloud, what they are, the NIC MTU (the cloud was not consulted)")
        return tuple(out)

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "complete": self.complete, "cloud_consulted": self.cloud_consulted,
                "library_loaded": self.library_loaded, "findings": [f.as_json() for f in self.findings],
                "notes": list(self.notes), "unchecked": list(self.unchecked())}


def verdict_of(
    config: SiteConfig,
    *,
    naming: NamingProfile = DEFAULT_NAMING,
    definitions: Mapping[str, ComponentDefinition] | None = None,
    facts: CloudFacts | None = None,
    nic_mtu: int | None = None,
) -> SiteVerdict:
    """The verdict from facts already read (pure: the screen rechecks with it while typing)."""
    findings = check_site_config(
        config, naming=naming, definitions=definitions,
        cloud=facts.ids if facts is not None else None,
        nic_mtu=nic_mtu if nic_mtu is not None else (facts.nic_mtu if facts is not None else None),
        appliances=facts.identity if facts is not None else None,
    )
    return SiteVerdict(findings, facts.notes if facts is not None else (), facts is not None and facts.ids is not None,
                       definitions is not None, text_digest(config.text))


async def site_verdict(
    config: SiteConfig,
    *,
    site: "SiteConnection | None" = None,
    definitions: Mapping[str, ComponentDefinition] | None = None,
    nic_mtu: int | None = None,
) -> SiteVerdict:
    """Every check of `config`, with the cloud's facts when `site` is given."""
    facts = None
    if site is not None:
        from tui.procedures.site.fill import gather_cloud_facts  # site_fill imports the checks' procedures

        facts = await gather_cloud_facts(site, config, definitions)
    naming = site.naming if site is not None else DEFAULT_NAMING
    return verdict_of(config, naming=naming, definitions=definitions, facts=facts, nic_mtu=nic_mtu)


@dataclass(frozen=True)
class SubmitGate:
    """The verdict a submit goes ahead on, and the operator's reason when it has errors."""

    verdict: SiteVerdict
    override_reason: str = ""

    @property
    def overridden(self) -> tuple[Finding, ...]:
        return self.verdict.errors if self.override_reason else ()

    def check(self, text: str) -> None:
        """Raise SiteError unless this gate lets `text` (the decrypted configuration) be submitted."""
        if self.verdict.digest and self.verdict.digest != text_digest(text):
            raise SiteError("The check is out of date", "core.yaml changed after it was checked; check again. Nothing was committed.")
        if self.verdict.errors and not self.override_reason:
            raise refusal(self.verdict)

    def commit_message(self, message: str) -> str:
        if not self.overridden:
            return message
        lines = [message, "", f"Submitted with {len(self.overridden)} check error(s) overridden: {self.override_reason}"]
        lines += [f"- {f.path}: {f.message}" for f in self.overridden[:MAX_LISTED]]
        if len(self.overridden) > MAX_LISTED:
            lines.append(f"- and {len(self.overridden) - MAX_LISTED} more")
        return "\n".join(lines)

    def audit_details(self) -> dict[str, Any]:
        if not self.overridden:
            # "passed" only for a whole check: what was left unchecked (no cloud, no library) may fail
            return {"check": "passed" if self.verdict.complete else "passed what was checked",
                    "warnings": len(self.verdict.warnings), "unchecked": list(self.verdict.unchecked())}
        return {"check": "overridden", "override_reason": self.override_reason,
                "overridden": [f.as_json() for f in self.overridden], "unchecked": list(self.verdict.unchecked())}


def refusal(verdict: SiteVerdict) -> SiteError:
    listed = "; ".join(f"{f.path}: {f.message}" for f in verdict.errors[:3])
    more = f" (and {len(verdict.errors) - 3} more)" if len(verdict.errors) > 3 else ""
    return SiteError(
        f"Submit refused: the check found {len(verdict.errors)} error(s)",
        f"{listed}{more}. Fix them (sitetk site check shows all), or submit anyway with a reason "
        "(--override-reason TEXT; the reason goes into the commit message and the audit log). Nothing was committed.",
    )


def submit_gate(verdict: SiteVerdict, override_reason: str | None = None) -> SubmitGate:
    """The gate for `verdict`; refuses (SiteError) when it has errors and no reason is given."""
    reason = check_reason(override_reason) if (override_reason or "").strip() else ""
    gate = SubmitGate(verdict, reason if verdict.errors else "")
    if verdict.errors and not reason:
        raise refusal(verdict)
    return gate
