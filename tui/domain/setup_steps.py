"""The first-time setup checklist: its steps, their order and states (spec operation 8, done better).

A `SetupStep` is one thing a new site needs (the platform answers, the default network is right,
the toolkit is instantiated, core.yaml is submitted, ...). Its state is decided from the live
site only (the cloud, the sites repository), never from a diary:

- done: checked and in the wanted state (the evidence says what was read);
- to do: not there yet, and nothing stops doing it now (`action` says how);
- blocked: it cannot be done until something else is (`blocked_by`: the step or the fact);
- failed: something is there but wrong (`action` is the fix);
- optional: not needed for a working site (DNS appliance, route manager, recommended components).

`SetupChecklist` holds the steps in the order the spec and the installer imply; it is complete
when every mandatory step is done, and its next step is the first mandatory one that is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable


class StepState(str, Enum):
    DONE = "done"
    TODO = "to do"
    BLOCKED = "blocked"
    FAILED = "failed"
    OPTIONAL = "optional"

    @property
    def glyph(self) -> str:
        return _GLYPHS[self]


_GLYPHS = {StepState.DONE: "✔", StepState.TODO: "○", StepState.BLOCKED: "■", StepState.FAILED: "✖",
           StepState.OPTIONAL: "·"}


class StepId(str, Enum):
    """Every step of the checklist, in order."""

    PLATFORM = "platform"
    SERVICES = "services"
    CLI_HELPER = "cli-helper"
    GATE = "gate"
    MARKETPLACES = "marketplaces"
    DATASTORES = "datastores"
    DEFAULT_NETWORK = "default-network"
    TRIAL_NETWORK = "trial-network"
    FORWARDED = "forwarded-addresses"
    CLOUD_USER = "cloud-user"
    DOWNLOAD = "download"
    TAGGED = "tagged"
    INPUTS = "inputs"
    INSTANTIATE = "instantiate"
    RECORD = "record"
    GRANT = "grant"
    DATABASE_HOST = "database-host"
    OBJECTSTORE_DISK = "objectstore-disk"
    REPOSITORY = "repository"
    SITE_BRANCH = "site-branch"
    CORE_YAML = "core-yaml"
    COMPONENTS = "components"
    SUBMITTED = "submitted"
    DNS = "dns"
    ROUTE_MANAGER = "route-manager"
    #: a test trial network through the manager (the installer's optional last step)
    TRIAL_RUN = "trial-run"

    @property
    def group(self) -> str:
        return _GROUPS[self]


_GROUPS: dict[StepId, str] = {
    **{s: "Preflight" for s in (StepId.PLATFORM, StepId.SERVICES, StepId.CLI_HELPER, StepId.GATE, StepId.MARKETPLACES,
                                StepId.DATASTORES)},
    **{s: "Networks" for s in (StepId.DEFAULT_NETWORK, StepId.TRIAL_NETWORK, StepId.FORWARDED)},
    **{s: "Toolkit" for s in (StepId.CLOUD_USER, StepId.DOWNLOAD, StepId.TAGGED, StepId.INPUTS,
                              StepId.INSTANTIATE, StepId.RECORD, StepId.GRANT, StepId.DATABASE_HOST,
                              StepId.OBJECTSTORE_DISK)},
    **{s: "Sites repository" for s in (StepId.REPOSITORY, StepId.SITE_BRANCH, StepId.CORE_YAML,
                                       StepId.COMPONENTS, StepId.SUBMITTED)},
    **{s: "Optional" for s in (StepId.DNS, StepId.ROUTE_MANAGER, StepId.TRIAL_RUN)},
}

STEP_ORDER: tuple[StepId, ...] = tuple(StepId)
#: what a step whose evidence could not be read is blocked by: never done, and an error of the
#: reading (`sitetk setup status` exits 1), not a step to do
UNREADABLE = "unreadable source"


@dataclass(frozen=True)
class MarketplacesMissing:
    """What the marketplaces step found missing: the configured URLs the cloud has not registered
    (or only as a disabled marketplace), and the marketplaces whose ENDPOINT (id, ENDPOINT) needs
    the trailing slash the 6.10.0-6.10.2 market driver does not add."""

    urls: tuple[str, ...]
    mend: tuple[tuple[int, str], ...] = ()

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"missing": list(self.urls)}
        if self.mend:
            found["endpoint_without_slash"] = [{"marketplace_id": i, "endpoint": e} for i, e in self.mend]
        return found


@dataclass(frozen=True)
class ComponentsMissing:
    """What the components step found: the mandatory components not (fully) enabled, and the
    recommended ones not listed."""

    mandatory: tuple[str, ...]
    recommended: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {"missing": list(self.mandatory), "recommended_missing": list(self.recommended)}


@dataclass(frozen=True)
class ApplianceVm:
    """An optional step's appliance as found: the VM that runs it, else what its run starts from
    (the marketplace app to download, or the downloaded VM template and its images)."""

    vm_id: int | None
    app_id: int | None = None
    template_id: int | None = None
    image_ids: tuple[int, ...] = ()
    images_ready: bool = True

    def as_json(self) -> dict[str, Any]:
        return {"vm_id": self.vm_id, "app_id": self.app_id, "template_id": self.template_id,
                "image_ids": list(self.image_ids), "images_ready": self.images_ready}


@dataclass(frozen=True)
class ExamplesLeft:
    """What the submitted step found: the template's example values still in core.yaml, each with
    what to give instead (path, what to ask)."""

    values: tuple[tuple[str, str], ...]

    def as_json(self) -> dict[str, Any]:
        return {"examples": [{"path": p, "ask": a} for p, a in self.values]}


#: the typed facts a step carries for the run that does it (`SetupStep.found`)
StepFound = MarketplacesMissing | ComponentsMissing | ApplianceVm | ExamplesLeft


@dataclass(frozen=True)
class SetupStep:
    """One step with its state, what was read to decide it, and what to do next."""

    id: StepId
    title: str
    state: StepState
    #: what was checked and found, one fact a line
    evidence: tuple[str, ...] = ()
    #: to do: how to do it; failed: the fix; blocked: what unblocks it; done: "" (or a note)
    action: str = ""
    #: blocked: the step (or fact) it waits for
    blocked_by: str = ""
    mandatory: bool = True
    #: the command that does it (`sitetk setup run --only <id>` or the platform CLI)
    command: str = ""
    #: structured facts for --json (e.g. the forwarded-address table)
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    #: the typed facts the setup run reads to do the step (the same in `data` for --json)
    found: StepFound | None = field(default=None, compare=False)

    @property
    def group(self) -> str:
        return self.id.group

    @property
    def done(self) -> bool:
        return self.state is StepState.DONE

    @property
    def outstanding(self) -> bool:
        """A mandatory step that is not done."""
        return self.mandatory and self.state is not StepState.DONE

    @property
    def unreadable(self) -> bool:
        """Its evidence could not be read: neither done nor known to be undone."""
        return self.state is StepState.BLOCKED and self.blocked_by == UNREADABLE

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id.value, "group": self.group, "title": self.title, "state": self.state.value,
                "mandatory": self.mandatory, "evidence": list(self.evidence), "action": self.action,
                "blocked_by": self.blocked_by, "command": self.command, "data": self.data}


@dataclass(frozen=True)
class SetupChecklist:
    steps: tuple[SetupStep, ...]
    #: what could not be read at all (a whole source failing), said once
    notes: tuple[str, ...] = ()

    @classmethod
    def ordered(cls, steps: Iterable[SetupStep], notes: Iterable[str] = ()) -> "SetupChecklist":
        by_id = {step.id: step for step in steps}
        return cls(tuple(by_id[i] for i in STEP_ORDER if i in by_id), tuple(notes))

    @property
    def complete(self) -> bool:
        """Every mandatory step done."""
        return not any(step.outstanding for step in self.steps)

    @property
    def unreadable(self) -> tuple[SetupStep, ...]:
        """The steps whose evidence could not be read (the notes say why)."""
        return tuple(step for step in self.steps if step.unreadable)

    @property
    def next_step(self) -> SetupStep | None:
        """The first mandatory step that is not done (None when complete); when it is blocked by a
        later step that is itself outstanding, that step (followed to the end of the chain): the
        automation cloud user waits for the inputs, which wait for the download, so a fresh site's
        next step is the download, not the input file it cannot be written without yet."""
        step = next((step for step in self.steps if step.outstanding), None)
        seen: set[StepId] = set()
        while step is not None and step.state is StepState.BLOCKED and step.id not in seen:
            seen.add(step.id)
            blocker = self._find(step.blocked_by)
            if blocker is None or not blocker.outstanding or blocker.id in seen:
                break
            step = blocker
        return step

    def _find(self, step_id: str) -> SetupStep | None:
        """The step `step_id` names (None: not a step's id, e.g. a fact such as the vault password)."""
        try:
            wanted = StepId(step_id)
        except ValueError:
            return None
        return next((step for step in self.steps if step.id is wanted), None)

    def step(self, step_id: StepId | str) -> SetupStep:
        wanted = StepId(step_id)
        return next(step for step in self.steps if step.id is wanted)

    def counts(self) -> dict[str, int]:
        result = {state.value: 0 for state in StepState}
        for step in self.steps:
            result[step.state.value] += 1
        return result

    def as_json(self) -> dict[str, Any]:
        nxt = self.next_step
        return {"complete": self.complete, "next": nxt.id.value if nxt else None, "counts": self.counts(),
                "unreadable": [step.id.value for step in self.unreadable], "notes": list(self.notes), "steps": [step.as_json() for step in self.steps]}
