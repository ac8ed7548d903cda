"""The setup's own operations: the automation cloud user, and a marketplace the site needs.

- `plan_cloud_user(site, name)` / `create_cloud_user(site, plan, password)`: the cloud user named
  in `app_automation_cloud_username`, as the installer makes it: a group of its own (named after
  the user), the user in it (`oneuser create`), the user as the group's admin (`onegroup
  addadmin`), and the rule the platform's CLI gives every new group so its users can create their
  VMs, images, templates and services: `@<gid> VM+IMAGE+TEMPLATE+DOCUMENT+SECGROUP+VROUTER+VMGROUP+
  BACKUPJOB/* CREATE *` (OpenNebula/one `src/oca/ruby/opennebula/group.rb` GROUP_DEFAULT_ACLS and
  `create_default_acls`, called by `src/cli/one_helper/onegroup_helper.rb` `create_resource`; over
  XML-RPC `group.allocate` adds no rule, so it is added here). The password is the input file's
  `app_automation_cloud_password` (the automation server logs in with it); it never reaches the
  preview, the audit log or an argument list (the CLI equivalent reads it from a file).
- `plan_marketplace(site, url)` / `register_marketplace(site, plan)`: a marketplace of the
  settings the cloud has not registered (`onemarket create` with MARKET_MAD=one and ENDPOINT, with
  a trailing slash: the market driver of 6.10.0-6.10.2 does not add it), or has registered but
  disabled (`onemarket enable`: a disabled marketplace is not monitored and holds no app); and on
  6.10.0-6.10.2, the trailing slash added to every ENDPOINT that lacks it (`onemarket update`).

Each part is skipped when the site already has it (a group or user of that name, the admin, the
rule), so a re-run after a kill finishes the rest and never creates a second one. Both procedures
report to the run's `RunContext` and return `IdentityDone`; what they made (a `Made` each, with the
IDs) goes to the run's `IdentityLedger` as it is made, so a run that fails still names it.

`CreateCloudUser` and `RegisterMarketplace` are the two as operations (`tui.procedures.operation`),
whose `execute` calls them:
the read-only refusal, the preview with the equivalent `onegroup`/`oneuser`/`oneacl`/`onemarket`
commands, the confirmation and the audit come from the one pipeline, in the setup run, the
console's checklist and anywhere else they are offered: a run's one record
(`setup.cloud_user` on the user, `market.create` on the URL) lists what it made, with the IDs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping
from urllib.parse import urlsplit

from tui.domain.acls import ACL_ALL, ACL_GID, ACL_RESOURCES, ACL_RIGHTS
from tui.domain.marketapps import endpoint_slash_problem
from tui.domain.object_names import USER_EXTRA_CHARS, console_name_problem, name_problem
from tui.domain.printable import escape_controls
from tui.errors import SiteError
from tui.procedures.audit import REDACTOR
from tui.procedures.concurrent import gather
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: the resources the platform's CLI lets a new group's users create (group.rb GROUP_DEFAULT_ACLS)
GROUP_DEFAULT_RESOURCES = ("VM", "IMAGE", "TEMPLATE", "DOCUMENT", "SECGROUP", "VROUTER", "VMGROUP", "BACKUPJOB")
_DUPLICATE = "already exists"


def group_rule(gid: int) -> str:
    return f"@{gid} {'+'.join(GROUP_DEFAULT_RESOURCES)}/* CREATE *"


def _rule_bits(gid: int) -> tuple[int, int, int]:
    resource = ACL_ALL
    for name in GROUP_DEFAULT_RESOURCES:
        resource |= ACL_RESOURCES[name]
    return ACL_GID | gid, resource, ACL_RIGHTS["CREATE"]


@dataclass(frozen=True)
class Made:
    """The typed outcome of an event that created something: what ("group", "user", "group admin",
    "ACL rule", "marketplace"), its name, and the IDs the platform gave."""

    what: str
    name: str
    ids: tuple[tuple[str, int], ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"what": self.what, "name": self.name, **dict(self.ids)}


@dataclass(frozen=True)
class CloudUserPlan:
    user_name: str
    group_name: str
    #: what exists already (None: to create)
    group_id: int | None
    user_id: int | None
    user_group_ids: tuple[int, ...]
    is_admin: bool
    rule_exists: bool

    @property
    def complete(self) -> bool:
        return (self.group_id is not None and self.user_id is not None and self.is_admin and self.rule_exists
                and self.group_id in self.user_group_ids)

    def preview(self) -> Preview:
        rule = group_rule(self.group_id) if self.group_id is not None else group_rule(0).replace("@0", "@<new group id>")
        changes = [
            Change(f"group {self.group_name}" + (f" exists (ID {self.group_id})" if self.group_id is not None else ""),
                   f"onegroup create {self.group_name}", "none" if self.group_id is not None else "create"),
            Change(f"user {self.user_name} in group {self.group_name}, password from the input file"
                   + (f": exists (ID {self.user_id})" if self.user_id is not None else ""),
                   f"oneuser create {self.user_name} --read-file <file with the password> && "
                   f"oneuser chgrp {self.user_name} {self.group_name}",
                   "none" if self.user_id is not None else "create"),
            Change(f"{self.user_name} administers {self.group_name}" + (": already" if self.is_admin else ""),
                   f"onegroup addadmin {self.group_name} {self.user_name}", "none" if self.is_admin else "update"),
            Change(f"rule letting {self.group_name}'s users create VMs, images, templates and services"
                   + (": exists" if self.rule_exists else ""),
                   f"oneacl create '{rule}'",
                   "none" if self.rule_exists else "create"),
        ]
        warnings: tuple[str, ...] = ()
        if self.user_id is not None and self.group_id is not None and self.group_id not in self.user_group_ids:
            warnings = (f"user {self.user_name} exists outside group {self.group_name}: it is left as it is",)
        return Preview(f"Automation cloud user {self.user_name}", tuple(changes), target=self.user_name,
                       warnings=warnings)


async def plan_cloud_user(site: "SiteConnection", user_name: str, group_name: str | None = None) -> CloudUserPlan:
    if not user_name.strip():
        raise SiteError("No cloud user named", "Name it in app_automation_cloud_username of the input file.")
    group_name = group_name or user_name
    users, groups, rules = await _read(site)
    user = next((u for u in users if u.name == user_name), None)
    group = next((g for g in groups if g.name == group_name), None)
    for kind, name, found, extra in (("group", group_name, group, ""), ("user", user_name, user, USER_EXTRA_CHARS)):
        problem = None if found is not None else console_name_problem(name) or name_problem(name, extra)
        if problem is not None:  # the console creates it: a name the platform and every listing take
            raise SiteError(f"The platform would refuse the {kind} name {escape_controls(name)!r}",
                            f"{escape_controls(problem)}. Rename it in app_automation_cloud_username of the input "
                            "file. Nothing was created.")
    gid = group.id if group is not None else None
    is_admin = bool(group is not None and user is not None and user.id in group.admin_ids)
    rule_exists = gid is not None and any((r.user, r.resource, r.rights) == _rule_bits(gid) for r in rules)
    return CloudUserPlan(user_name, group_name, gid, user.id if user else None,
                         tuple(user.group_ids) if user else (), is_admin, rule_exists)


async def _read(site: "SiteConnection"):  # type: ignore[no-untyped-def]

    return await gather(site.cloud.list_users(), site.cloud.list_groups(), site.cloud.acl_list())


async def create_cloud_user(site: "SiteConnection", plan: CloudUserPlan, password: str, context: RunContext,
                            ledger: "IdentityLedger | None" = None) -> "IdentityDone":
    """Create what the plan lacks, in order (group, user, admin, rule), reading the site again first;
    each step reported to `context`, what it made kept in `ledger` as it goes."""
    if not password:
        raise SiteError("No password for the cloud user", "Give app_automation_cloud_password in the input file.")
    REDACTOR.register(password)
    run = _Run(context, f"cloud user {plan.user_name}", ledger if ledger is not None else IdentityLedger())
    plan = await plan_cloud_user(site, plan.user_name, plan.group_name)  # what another operator did meanwhile
    step, total = run.what, 4
    gid = plan.group_id
    if gid is None:
        gid = await site.cloud.group_allocate(plan.group_name)
        run.report(Progress(step, 1, total, f"group {plan.group_name} created (ID {gid})", ProgressState.RUNNING),
                   Made("group", plan.group_name, (("group_id", gid),)))
    else:
        run.report(Progress(step, 1, total, f"group {plan.group_name} exists (ID {gid})", ProgressState.SKIPPED))
    uid = plan.user_id
    if uid is None:
        uid = await site.cloud.user_allocate(plan.user_name, password, "core", (gid,))
        run.report(Progress(step, 2, total, f"user {plan.user_name} created (ID {uid}) in {plan.group_name}",
                            ProgressState.RUNNING), Made("user", plan.user_name, (("user_id", uid), ("group_id", gid))))
    else:
        run.report(Progress(step, 2, total, f"user {plan.user_name} exists (ID {uid})", ProgressState.SKIPPED))
    user_groups = plan.user_group_ids if plan.user_id is not None else (gid,)
    if plan.is_admin:
        run.report(Progress(step, 3, total, f"{plan.user_name} administers {plan.group_name} already", ProgressState.SKIPPED))
    elif gid in user_groups:
        await site.cloud.group_addadmin(gid, uid)
        run.report(Progress(step, 3, total, f"{plan.user_name} administers {plan.group_name}", ProgressState.RUNNING),
                   Made("group admin", plan.group_name, (("group_id", gid), ("user_id", uid))))
    else:
        run.report(Progress(step, 3, total, f"{plan.user_name} is not in {plan.group_name}: not made its admin",
                            ProgressState.SKIPPED))
    rule = group_rule(gid)
    if plan.rule_exists:
        run.report(Progress(step, total, total, f"rule {rule} exists", ProgressState.SKIPPED))
        return run.done()
    try:
        rule_id = await site.cloud.acl_add(rule)
    except SiteError as error:
        if _DUPLICATE in error.detail or _DUPLICATE in error.title:
            run.report(Progress(step, total, total, f"rule {rule} exists", ProgressState.SKIPPED))
            return run.done()
        raise
    run.report(Progress(step, total, total, f"rule {rule_id}: {rule}", ProgressState.DONE),
               Made("ACL rule", rule, (("rule_id", rule_id), ("group_id", gid))))
    return run.done()


# -- marketplaces ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarketplacePlan:
    url: str
    name: str
    #: the ID of an enabled marketplace already registered with this endpoint
    existing: int | None = None
    #: the ID of a DISABLED marketplace with this endpoint: enabled, not registered twice (a disabled
    #: marketplace is not monitored and holds no app)
    disabled: int | None = None
    #: marketplaces (ID, ENDPOINT) whose ENDPOINT needs the trailing slash the 6.10.0-6.10.2 market
    #: driver does not add (`domain.marketapps.endpoint_slash_problem`)
    mend: tuple[tuple[int, str], ...] = ()
    #: what registering (or enabling) it does to the apps the cloud holds from other marketplaces:
    #: the cloud keeps one app per name, its content from the marketplace monitored last
    warnings: tuple[str, ...] = ()

    def template(self) -> str:
        # with the trailing slash every driver version reads right (6.10.0-6.10.2 do not add it)
        return f'NAME = "{self.name}"\nMARKET_MAD = "one"\nENDPOINT = "{self.url}/"\n'

    @property
    def changes_nothing(self) -> bool:
        return self.existing is not None and not self.mend

    def preview(self) -> Preview:
        changes = [Change(f"marketplace {market_id}: ENDPOINT {endpoint} -> {endpoint}/",
                          f"onemarket update {market_id} <file with ENDPOINT=\"{endpoint}/\"> --append", "update")
                   for market_id, endpoint in self.mend]
        if self.existing is not None:
            changes.append(Change(f"registered as marketplace {self.existing}", "", "none"))
            return Preview(f"Marketplace {self.url}", tuple(changes), target=self.url)
        if self.disabled is not None:
            changes.append(Change(f"marketplace {self.disabled} is disabled: enable it (the cloud imports its apps at "
                                  "once)", f"onemarket enable {self.disabled}", "update"))
            return Preview(f"Enable the marketplace {self.url}", tuple(changes), target=self.url,
                           warnings=self.warnings)
        changes.append(Change(f"marketplace {self.name!r}: MARKET_MAD=one, ENDPOINT={self.url}/",
                              "onemarket create <file with NAME, MARKET_MAD and ENDPOINT>", "create"))
        return Preview(f"Register the marketplace {self.url}", tuple(changes), target=self.url, warnings=self.warnings)


def _name_for(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname or 'marketplace'}{parts.path.rstrip('/')}".replace("/", "-")


async def plan_marketplace(site: "SiteConnection", url: str) -> MarketplacePlan:
    markets = await site.cloud.list_marketplaces()
    wanted = url.strip().rstrip("/")
    same = [m for m in markets if m.endpoint.strip().rstrip("/") == wanted]
    found = next((m for m in same if m.enabled), None)
    off = next((m for m in same if not m.enabled), None) if found is None else None
    version = site.info.version if site.info else ""
    mend = tuple((m.id, m.endpoint.strip()) for m in markets if endpoint_slash_problem(version, m))
    warnings = await _shared_names(site, wanted) if found is None else ()
    return MarketplacePlan(wanted, _name_for(wanted), found.id if found else None, off.id if off else None, mend,
                           warnings)


async def _shared_names(site: "SiteConnection", url: str) -> tuple[str, ...]:
    """The warning for a marketplace about to be registered (or enabled) that lists appliance names
    the cloud already holds from another marketplace: it keeps one app per name across
    marketplaces, rebuilt from the marketplace monitored last (src/market/MarketPlaceAppPool.cc
    211-223 at release-7.0.2), so those apps will then hold this one's builds."""
    try:
        listing, apps = await gather(site.marketplace.list_appliances(url), site.cloud.list_marketapps())
    except SiteError as error:
        return (f"{url} could not be read to compare its appliances with the cloud's apps ({error.title}).",)
    held = {a.name: a for a in apps if a.origin_url and a.origin_url != url}
    shared = sorted({r.name for r in listing.records if r.name in held})
    if not shared:
        return ()
    origins = sorted({held[name].origin_url for name in shared})
    return (f"The cloud keeps one app per name across its marketplaces: {len(shared)} appliance(s) {url} lists are "
            f"apps it holds from {', '.join(origins)} ({', '.join(shared[:4])}{', ...' if len(shared) > 4 else ''}). "
            "Once the cloud monitors this marketplace after that one, those apps hold this one's builds, and the "
            "other marketplace's builds of them cannot be downloaded while both list them.",)


async def register_marketplace(site: "SiteConnection", plan: MarketplacePlan, context: RunContext,
                               ledger: "IdentityLedger | None" = None) -> "IdentityDone":
    """Mend the ENDPOINTs that lack the slash, then register (or enable) the marketplace, reading the
    site again first; each step reported to `context`, what it made kept in `ledger` as it goes."""
    run = _Run(context, f"marketplace {plan.url}", ledger if ledger is not None else IdentityLedger())
    plan = await plan_marketplace(site, plan.url)
    step = run.what
    total = len(plan.mend) + 1
    for n, (market_id, endpoint) in enumerate(plan.mend, start=1):
        await site.cloud.market_update(market_id, f'ENDPOINT = "{endpoint}/"\n', True)
        run.report(Progress(f"marketplace {market_id}", n, total, f"ENDPOINT of marketplace {market_id} is now {endpoint}/; "
                            "the cloud rebuilds its apps at its next marketplace monitoring", ProgressState.DONE),
                   Made("marketplace ENDPOINT", f"{endpoint}/", (("market_id", market_id),)))
    if plan.existing is not None:
        run.report(Progress(step, total, total, f"registered already as marketplace {plan.existing}", ProgressState.SKIPPED))
        return run.done()
    if plan.disabled is not None:
        await site.cloud.market_enable(plan.disabled, True)
        run.report(Progress(step, total, total, f"enabled marketplace {plan.disabled}; the cloud imports its apps at once",
                            ProgressState.DONE), Made("marketplace enabled", plan.url, (("market_id", plan.disabled),)))
        return run.done()
    market_id = await site.cloud.market_allocate(plan.template())
    run.report(Progress(step, total, total, f"registered as marketplace {market_id} {plan.name!r}; the platform lists "
                        "its apps once it has monitored it", ProgressState.DONE),
               Made("marketplace", plan.name, (("market_id", market_id),)))
    return run.done()


# -- as operations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class IdentityDone:
    """What a setup identity operation did: the events' messages, and whether anything changed."""

    what: str
    changed: bool
    messages: tuple[str, ...] = ()
    #: what the run created (the audit record lists it)
    made: tuple[Made, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"what": self.what, "changed": self.changed, "messages": list(self.messages)}


@dataclass
class IdentityLedger:
    """The run's typed record (`RunContext.keep`): what it made so far, so a run that fails or is
    stopped still names it (the operations' `audit_failure`)."""

    made: list[Made] = field(default_factory=list)


@dataclass
class _Run:
    """One identity run's reporting: each event to the context, its messages, and what it made to
    the ledger."""

    context: RunContext
    what: str
    ledger: IdentityLedger
    messages: list[str] = field(default_factory=list)
    changed: bool = False

    def report(self, event: Progress, made: Made | None = None) -> None:
        if made is not None:
            self.ledger.made.append(made)
        self.context.report(event)
        self.messages.append(event.message)
        self.changed = self.changed or event.state is not ProgressState.SKIPPED

    def done(self) -> IdentityDone:
        return IdentityDone(self.what, self.changed, tuple(self.messages), tuple(self.ledger.made))


def _made_details(made: tuple[Made, ...]) -> Mapping[str, Any] | None:
    """An identity run's audit details: what it created, with the IDs; None when it created nothing."""
    return {"made": [m.as_json() for m in made]} if made else None


@dataclass(frozen=True)
class CreateCloudUser(Operation[CloudUserPlan, IdentityDone]):
    """The automation cloud user as the installer makes it (group, user, group admin, rule)."""

    user_name: str
    #: app_automation_cloud_password: never in a preview, the audit log or an argument list
    password: str = field(repr=False, compare=False)
    group_name: str | None = None

    title: ClassVar[str] = "Create the automation cloud user"
    refusal: ClassVar[str] = "creating the cloud user changes the cloud's users, groups and ACL rules"
    action: ClassVar[str] = "setup.cloud_user"
    resumable: ClassVar[bool] = True

    async def plan(self, site: "SiteConnection") -> CloudUserPlan:
        return await plan_cloud_user(site, self.user_name, self.group_name)

    def preview(self, plan: CloudUserPlan) -> Preview:
        return plan.preview()

    def confirmation(self, plan: CloudUserPlan) -> Confirmation | None:
        if plan.complete:
            return None
        commands = [c.cli for c in plan.preview().changes if c.kind != "none"]
        return Confirmation("Create", f"cloud user {plan.user_name} (group {plan.group_name})",
                            "\n".join(c.description for c in plan.preview().changes), command=" && ".join(commands))

    def plan_json(self, plan: CloudUserPlan) -> dict[str, Any]:
        return {"user": plan.user_name, "group": plan.group_name, "group_id": plan.group_id, "user_id": plan.user_id,
                "is_admin": plan.is_admin, "rule_exists": plan.rule_exists, "complete": plan.complete}

    async def execute(self, site: "SiteConnection", plan: CloudUserPlan, context: RunContext) -> IdentityDone:
        return await create_cloud_user(site, plan, self.password, context, context.keep(IdentityLedger()))

    def audit_details(self, plan: CloudUserPlan, result: IdentityDone) -> Mapping[str, Any] | None:
        details = _made_details(result.made)
        return {"group": plan.group_name, **details} if details is not None else None

    def audit_failure(self, plan: CloudUserPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        ledger = context.kept(IdentityLedger) or IdentityLedger()
        return {"group": plan.group_name, "made": [m.as_json() for m in ledger.made]}


@dataclass(frozen=True)
class RegisterMarketplace(Operation[MarketplacePlan, IdentityDone]):
    """A marketplace the settings name and the cloud lacks (`onemarket create`)."""

    url: str

    title: ClassVar[str] = "Register a marketplace"
    refusal: ClassVar[str] = "registering a marketplace changes the cloud"
    action: ClassVar[str] = "market.create"

    async def plan(self, site: "SiteConnection") -> MarketplacePlan:
        return await plan_marketplace(site, self.url)

    def preview(self, plan: MarketplacePlan) -> Preview:
        return plan.preview()

    def confirmation(self, plan: MarketplacePlan) -> Confirmation | None:
        if plan.changes_nothing:
            return None
        if plan.existing is not None:
            return Confirmation("Update", f"the ENDPOINT of marketplace(s) {', '.join(str(i) for i, _ in plan.mend)}",
                                command="onemarket update <id> <file> --append")
        if plan.disabled is not None:
            return Confirmation("Enable", f"marketplace {plan.disabled} ({plan.url})",
                                command=f"onemarket enable {plan.disabled}")
        return Confirmation("Register", f"marketplace {plan.url}", plan.template(),
                            command="onemarket create <file with NAME, MARKET_MAD and ENDPOINT>")

    def plan_json(self, plan: MarketplacePlan) -> dict[str, Any]:
        return {"url": plan.url, "name": plan.name, "existing": plan.existing, "disabled": plan.disabled,
                "endpoint_without_slash": [{"marketplace_id": i, "endpoint": e} for i, e in plan.mend]}

    async def execute(self, site: "SiteConnection", plan: MarketplacePlan, context: RunContext) -> IdentityDone:
        return await register_marketplace(site, plan, context, context.keep(IdentityLedger()))

    def audit_details(self, plan: MarketplacePlan, result: IdentityDone) -> Mapping[str, Any] | None:
        return _made_details(result.made)

    def audit_failure(self, plan: MarketplacePlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        return {"name": plan.name}
