"""Proving the site works: a test trial network through the manager's REST API, as the existing
installer's optional last step does, then followed, reported and destroyed.

`plan_trial(site, ...)` reads, changing nothing: the manager's address (the `manager_url` setting,
else `http://<the manager VM's address>:5000`), its admin user and password (the input file's
`<prefix>manager_admin_user/password`, else the manager VM's CONTEXT, which the toolkit's inputs
fill), the site's sites branch and directory (the input file's, else the live toolkit's inputs),
the vault password the manager decrypts core.yaml with (the input file's, else the vault password
file, else the automation VM's CONTEXT) and the component library's sample descriptor for
`tn_init` (`tn_init/sample_tnlcm_descriptor.yaml`, read from the library at the reference sent).
Every secret is registered with the redactor as soon as it is read.

`RunTrialNetwork` (an Operation: preview with curl lines that hold no secret, confirmation,
read-only refusal, one audit record) logs in, creates the trial network validated (the manager
answers `validated`, or refuses with its message: the state stays `created`), activates it (the
manager answers when its deploy pipeline has finished: the run polls the trial network's state
meanwhile, saying what it waits for, within `wait_timeout`, cancellable; the manager goes on
with a pipeline the run stopped waiting for), and reads its report. A failed activation is
reported with the pipeline that failed and the end of the manager's log, and leaves the trial
network `failed-activation` for `DestroyTrialNetwork` (destroy, then purge: nothing left).

States and transitions are the manager's (core/models/trial_network.py 16-33 at TNLCM v0.5.2):
created, validated, activated, destroyed, failed-activation, failed-destruction; validating,
activating, destroying.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui import timing
from tui.adapters.manager_api import CHECKED_AGAINST, ManagerApi, ManagerError
from tui.domain.printable import escape_controls
from tui.domain.trial_ids import DEFAULT_TN_ID, check_tn_id
from tui.errors import SiteError
from tui.procedures.audit import REDACTOR
from tui.procedures.operation import Confirmation, Operation, OperationCancelled, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.waiting import Waiting, wait_ready

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

MANAGER_PORT = 5000
SAMPLE_DESCRIPTOR = "tn_init/sample_tnlcm_descriptor.yaml"
DEFAULT_WAIT = timing.PROFILE.trial_network_timeout
#: lines of the manager's log a failure shows
LOG_TAIL = 40
ACTIVATE_FROM = ("validated", "failed-activation", "destroyed")
DESTROY_FROM = ("activated", "failed-activation", "failed-destruction")
PURGE_FROM = ("validated", "destroyed", "created")
TRANSITIONS = ("validating", "activating", "destroying", "suspending")
#: every state the manager defines (STATE_MACHINE, core/models/trial_network.py 16-33 at TNLCM v0.5.2)
STATES = ("activated", "created", "destroyed", "failed-activation", "failed-destruction", "validated", *TRANSITIONS)


def state_said(state: str) -> str:
    """The state as the manager reported it, and a note when the manager's source defines no such state."""
    known = state in STATES or state in ("", "(gone)")
    return state if known else f"{state} (a state {CHECKED_AGAINST} does not define: a newer manager?)"


def log_tail(text: str, lines: int = LOG_TAIL) -> str:
    """The last `lines` lines of the manager's log, terminal controls made visible."""
    kept = text.rstrip("\n").splitlines()[-lines:]
    return escape_controls("\n".join(kept))


@dataclass(frozen=True)
class ManagerAccess:
    """Where the manager is and how to log in (the password never shown)."""

    url: str
    url_source: str
    user: str
    password: str = field(repr=False)
    user_source: str = ""
    vm_id: int | None = None
    #: why the manager may not answer (its VM not RUNNING, its database down): said, not refused
    warnings: tuple[str, ...] = ()
    #: the HTTP proxy the VM's address is reached through (`Settings.guest_proxy`), "" directly
    proxy: str = ""

    def api(self, timeout: float, *secrets: str) -> ManagerApi:
        return ManagerApi(self.url, timeout=timeout, secrets=(self.password, *secrets), proxy=self.proxy)

    @property
    def curl(self) -> str:
        return f"curl -x {shlex.quote(self.proxy)}" if self.proxy else "curl"

    def curl_login(self) -> str:
        return f"{self.curl} -X POST -u {shlex.quote(self.user)} {self.url}/api/v1/user/login   # asks the password"

    def as_json(self) -> dict[str, Any]:
        return {"url": self.url, "url_source": self.url_source, "proxy": self.proxy, "user": self.user, "user_source": self.user_source,
                "vm_id": self.vm_id, "warnings": list(self.warnings)}


@dataclass(frozen=True)
class TrialPlan:
    access: ManagerAccess
    tn_id: str
    sites_branch: str
    deployment_site: str
    site_token: str = field(repr=False)
    token_source: str = ""
    library_type: str = "branch"
    library_value: str = "main"
    descriptor: str = ""
    descriptor_path: str = SAMPLE_DESCRIPTOR

    def curls(self) -> tuple[str, ...]:
        url, auth, curl = self.access.url + "/api/v1", '-H "Authorization: Bearer $TOKEN"', self.access.curl
        return (
            self.access.curl_login(),
            f"{curl} -X POST {auth} -F tn_id={shlex.quote(self.tn_id)} -F descriptor=@{self.descriptor_path} "
            f"-F library_reference_type={self.library_type} -F library_reference_value={shlex.quote(self.library_value)} "
            f"-F sites_branch={shlex.quote(self.sites_branch)} -F deployment_site={shlex.quote(self.deployment_site)} "
            f"-F 'deployment_site_token=<VAULT_PASSWORD_FILE' '{url}/trial-network?validate=True'",
            f"{curl} -X PUT {auth} {url}/trial-networks/{self.tn_id}/activate",
            f"{curl} {auth} {url}/trial-networks/{self.tn_id}/report/content",
        )

    def preview(self) -> Preview:
        c = self.curls()
        changes = (
            Change(f"log in to the manager at {self.access.url} as {self.access.user!r} ({self.access.user_source}; its "
                   f"API as {CHECKED_AGAINST} defines it)",
                   c[0], "none"),
            Change(f"create trial network {self.tn_id!r} from the component library's {self.descriptor_path} "
                   f"({self.library_type} {self.library_value}) for site {self.deployment_site!r} of branch "
                   f"{self.sites_branch!r}, validated by the manager (core.yaml decrypted with {self.token_source})",
                   c[1], "create"),
            Change("activate it: the automation server's deploy pipeline deploys a VXLAN network and a bastion VM "
                   "in the cloud; the manager answers when it has finished", c[2], "create"),
            Change("read its report", c[3], "none"),
        )
        return Preview(f"Test trial network {self.tn_id}", changes, target=f"trial network {self.tn_id}",
                       warnings=self.access.warnings)

    def as_json(self) -> dict[str, Any]:
        return {"manager": self.access.as_json(), "tn_id": self.tn_id, "sites_branch": self.sites_branch,
                "deployment_site": self.deployment_site, "token_source": self.token_source,
                "library_reference_type": self.library_type, "library_reference_value": self.library_value,
                "descriptor": self.descriptor_path, "commands": list(self.curls()), "checked_against": CHECKED_AGAINST}


@dataclass(frozen=True)
class TrialResult:
    tn_id: str
    state: str
    report: str = ""
    pipeline: str = ""
    seconds: float = 0.0
    #: the trial network was already activated: nothing was created
    already: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"tn_id": self.tn_id, "state": self.state, "report": escape_controls(self.report),
                "pipeline": self.pipeline, "seconds": round(self.seconds, 1), "already": self.already}


# reading what the run needs ----------------------------------------------------------------------


async def _toolkit(site: "SiteConnection") -> Any:
    from tui.procedures.toolkit.service import toolkit_service

    return toolkit_service(tuple(await site.flow.list_services()), site.naming)


async def _role_vm(site: "SiteConnection", service: Any, role_name: str) -> Any:
    role = service.role(role_name) if service is not None else None
    if role is None or not role.vm_ids:
        return None
    return await site.cloud.vm_info(role.vm_ids[0])


def _input(naming: Any, role: str, suffix: str) -> str:
    return str(naming.input_name(f"{role}_{suffix}"))


async def manager_access(site: "SiteConnection", values: Mapping[str, str] | None = None,
                         service: Any = None) -> ManagerAccess:
    """The manager's URL and admin credentials (see the module docstring); SiteError when unknown."""
    naming = site.naming
    values = values or {}
    service = service if service is not None else await _toolkit(site)
    vm = await _role_vm(site, service, naming.role_manager)
    warnings: list[str] = []
    context = dict(vm.context) if vm is not None else {}
    user_name, password_name = _input(naming, naming.role_manager, "admin_user"), _input(naming, naming.role_manager,
                                                                                        "admin_password")
    user, password, source = values.get(user_name, ""), values.get(password_name, ""), "the input file"
    if not user or not password:
        if vm is None:
            raise SiteError("The manager's admin credentials are unknown",
                            f"Neither the input file ({user_name}, {password_name}) nor a live toolkit's manager VM "
                            "gives them: deploy the toolkit first, or give --input FILE.")
        user = user or context.get(user_name.upper(), "")
        password = password or context.get(password_name.upper(), "")
        source = f"the manager VM {vm.id}'s CONTEXT"
        if not user or not password:
            raise SiteError(f"The manager VM {vm.id} does not hold its admin credentials",
                            f"Its CONTEXT lacks {user_name.upper()} or {password_name.upper()}: give them in the "
                            "input file (--input FILE).")
    REDACTOR.register(password)
    proxy = ""
    if site.settings.manager_url:
        url, url_source = site.settings.manager_url.rstrip("/"), f"setting manager_url ({site.settings.sources.get('manager_url', 'config')})"
    elif vm is not None and vm.summary.ips:
        url, url_source = f"http://{vm.summary.ips[0]}:{MANAGER_PORT}", f"the manager VM {vm.id}'s address"
        proxy = site.settings.guest_proxy
        if proxy:
            url_source += f", through the proxy {proxy} (guest_proxy)"
    else:
        raise SiteError("The manager's address is unknown",
                        "No live toolkit manager VM with an address: deploy the toolkit, or set manager_url in [site] "
                        "(or SITETK_MANAGER_URL).")
    if vm is not None:
        if vm.summary.status != "RUNNING":
            warnings.append(f"the manager VM {vm.id} is {vm.summary.status}: its API may not answer")
        db_error = dict(vm.user_template.scalars()).get("DB_ERROR", "")
        if db_error:
            warnings.append(f"the manager VM {vm.id} reports DB_ERROR ({escape_controls(db_error)}): its database is "
                            "down, so the manager does not answer (the setup's database-host step moves it)")
    return ManagerAccess(url, url_source, user, password, source, vm.id if vm is not None else None, tuple(warnings),
                         proxy)


async def plan_trial(site: "SiteConnection", values: Mapping[str, str] | None = None, *, tn_id: str = DEFAULT_TN_ID,
                     branch: str = "", site_dir: str = "", vault_text: str = "", library_ref: str = "") -> TrialPlan:
    """Everything the run sends, read from the site (nothing changed)."""
    problem = check_tn_id(tn_id)
    if problem:
        raise SiteError(f"Trial network id {tn_id!r} refused", f"The manager's rule: {problem}.")
    naming = site.naming
    values = values or {}
    service = await _toolkit(site)
    access = await manager_access(site, values, service)
    deployed = dict(service.input_values) if service is not None else {}
    branch_name = _input(naming, naming.role_manager, "sites_branch")
    dir_name = _input(naming, naming.role_manager, "deployment_site")
    branch = branch or values.get(branch_name, "") or deployed.get(branch_name, "")
    site_dir = site_dir or values.get(dir_name, "") or deployed.get(dir_name, "") or branch
    if not branch:
        raise SiteError("The site's branch is unknown", f"Give --input FILE (with {branch_name}) or --branch.")
    token, token_source = await _site_token(site, values, vault_text, service)
    library, ref, descriptor = await _descriptor(site, library_ref)
    return TrialPlan(access, tn_id, branch, site_dir, token, token_source, "branch", ref, descriptor, SAMPLE_DESCRIPTOR)


async def _site_token(site: "SiteConnection", values: Mapping[str, str], vault_text: str, service: Any) -> tuple[str, str]:
    from tui.procedures.site.workspace import vault_password

    naming = site.naming
    name = _input(naming, naming.role_automation, "sites_token")
    if vault_text:
        token, source = vault_text, "the vault password given"
    elif values.get(name):
        token, source = values[name], f"the input file's {name}"
    elif (password := vault_password(site.settings)) is not None:
        token, source = password.text, f"the vault password file {site.settings.vault_password_file}"
    else:
        vm = await _role_vm(site, service, naming.role_automation)
        token = dict(vm.context).get(name.upper(), "") if vm is not None else ""
        source = f"the automation VM {vm.id}'s CONTEXT" if vm is not None else ""
        if not token:
            raise SiteError("The vault password is unknown",
                            f"The manager decrypts core.yaml with it: give it in the input file ({name}) or configure "
                            "vault_password_file.")
    REDACTOR.register(token)
    return token, source


async def _descriptor(site: "SiteConnection", library_ref: str) -> tuple[Any, str, str]:
    from tui.procedures.site.workspace import library_repo

    repo = library_repo(site.settings)
    try:
        await repo.sync()
        ref = library_ref or await repo.default_branch()
        text = await repo.read_file(f"origin/{ref}", SAMPLE_DESCRIPTOR)
    finally:
        repo.close()
    if text is None:
        raise SiteError(f"The component library has no {SAMPLE_DESCRIPTOR} on {ref}",
                        "The test trial network is the library's sample descriptor for tn_init; give another "
                        "--library-ref, or check the library.")
    return repo, ref, text


# running -----------------------------------------------------------------------------------------


def _pipeline(record: Mapping[str, Any] | None, key: str = "jenkins_deploy") -> str:
    jenkins = record.get(key) if record else None
    return str(jenkins.get("pipeline_name", "")) if isinstance(jenkins, Mapping) else ""


@dataclass(frozen=True)
class TrialFact:
    """What the manager says of the setup's test trial network (its state, "" when it has none), or
    why it could not be asked."""

    tn_id: str
    state: str = ""
    pipeline: str = ""
    url: str = ""
    error: str = ""


async def read_trial_fact(site: "SiteConnection", values: Mapping[str, str], tn_id: str, service: Any,
                          timeout: float = 10.0) -> TrialFact:
    """The manager's record of `tn_id` (log in, read); a failure is the fact's `error`, never a state."""
    try:
        access = await manager_access(site, values, service)
    except SiteError as error:
        return TrialFact(tn_id, error=f"{error.title}: {error.detail}")
    try:
        async with access.api(timeout) as api:
            await api.login(access.user, access.password)
            record = await api.get(tn_id)
    except SiteError as error:
        return TrialFact(tn_id, url=access.url, error=f"{error.title}: {error.detail}")
    if record is None:
        return TrialFact(tn_id, url=access.url)
    return TrialFact(tn_id, str(record.get("state", "")), _pipeline(record), access.url)


@dataclass
class _TrialRecord:
    """What a trial run did so far, for its failure record."""

    created: bool = False
    activation_sent: bool = False
    #: the state and pipeline the manager reported when the activation failed
    state: str = ""
    pipeline: str = ""


def _record(context: RunContext) -> _TrialRecord:
    return context.kept(_TrialRecord) or context.keep(_TrialRecord())


class ActivationFailed(SiteError):
    """The manager's deploy pipeline failed: the detail holds the pipeline and the log's end."""


@dataclass(frozen=True)
class RunTrialNetwork(Operation[TrialPlan, TrialResult]):
    """Create, activate and report a test trial network (see the module docstring)."""

    wait_timeout: float = DEFAULT_WAIT
    poll_interval: float = timing.PROFILE.poll_interval
    http_timeout: float = timing.PROFILE.call_timeout

    title: ClassVar[str] = "Deploy a test trial network"
    refusal: ClassVar[str] = "a trial network deploys a network and a VM in the cloud"
    action: ClassVar[str] = "trial_network.run"
    resumable: ClassVar[bool] = True
    on_stop: ClassVar[str] = "stopping the wait; the manager goes on with its pipeline (`sitetk trial status`)"

    async def plan(self, site: "SiteConnection") -> TrialPlan:  # pragma: no cover - the CLI plans with plan_trial
        return await plan_trial(site)

    def preview(self, plan: TrialPlan) -> Preview:
        return plan.preview()

    def confirmation(self, plan: TrialPlan) -> Confirmation | None:
        return Confirmation("Deploy", f"test trial network {plan.tn_id}",
                            "a VXLAN network and a bastion VM appear in the cloud until it is destroyed",
                            command=plan.curls()[2])

    async def execute(self, site: "SiteConnection", plan: TrialPlan, context: RunContext) -> TrialResult:
        total, tn = 5, plan.tn_id
        started = timing.monotonic()
        track = context.keep(_TrialRecord())
        async with plan.access.api(self.http_timeout, plan.site_token) as api:
            context.report(Progress("login", 0, total, f"logging in to {plan.access.url} as {plan.access.user!r}"))
            await api.login(plan.access.user, plan.access.password)
            context.report(Progress("login", 1, total, f"logged in as {plan.access.user!r}", ProgressState.DONE))
            record = await api.get(tn)
            state = str(record.get("state", "")) if record else ""
            if state == "activated":
                context.report(Progress("create", 4, total, f"trial network {tn} is already activated: nothing created",
                                        ProgressState.SKIPPED))
                report = await api.report(tn)
                return TrialResult(tn, state, report, _pipeline(record), already=True)
            if state in ("", "created"):
                context.report(Progress("create", 1, total, f"creating trial network {tn} (validated by the manager)"))
                created = await api.create(tn, plan.descriptor, plan.descriptor_path.rsplit("/", 1)[-1], plan.library_type,
                                           plan.library_value, plan.sites_branch, plan.deployment_site, plan.site_token)
                track.created = True
                state = str(created.get("state", ""))
                context.report(Progress("create", 2, total, f"trial network {tn} {state} (library commit "
                                        f"{str(created.get('library_commit_id', ''))[:12]}, sites commit "
                                        f"{str(created.get('sites_commit_id', ''))[:12]})", ProgressState.DONE, {"state": state}))
            elif state in TRANSITIONS:
                context.report(Progress("create", 2, total, f"trial network {tn} is {state}: followed", ProgressState.SKIPPED))
            else:
                context.report(Progress("create", 2, total, f"trial network {tn} is {state}: activated again", ProgressState.SKIPPED))
            if state in ACTIVATE_FROM:
                await self._activate(api, plan, context)
            elif state in TRANSITIONS:
                await self._follow(api, plan, context, None)
            record = await api.get(tn)
            state = str(record.get("state", "")) if record else "(gone)"
            if state != "activated":
                raise await self._failed(api, plan, record, context, f"the trial network is {state_said(state)}")
            report = await api.report(tn)
            seconds = timing.monotonic() - started
            context.report(Progress("report", total, total, f"trial network {tn} activated in {seconds:.0f} s", ProgressState.DONE,
                                    {"state": state}))
            return TrialResult(tn, state, report, _pipeline(record), seconds)

    async def _activate(self, api: ManagerApi, plan: TrialPlan, context: RunContext) -> None:
        context.report(Progress("activate", 2, 5, f"activating {plan.tn_id}: the manager runs its deploy pipeline"))
        call = asyncio.ensure_future(api.activate(plan.tn_id, timeout=self.wait_timeout + self.http_timeout))
        _record(context).activation_sent = True
        try:
            await self._follow(api, plan, context, call)
            await call
        except ManagerError as error:
            record = await api.get(plan.tn_id)
            raise await self._failed(api, plan, record, context, error.detail) from None
        finally:
            if not call.done():
                call.cancel()
        context.report(Progress("activate", 4, 5, f"{plan.tn_id} activated", ProgressState.DONE))

    async def _follow(self, api: ManagerApi, plan: TrialPlan, context: RunContext,
                      call: "asyncio.Future[str] | None") -> None:
        """Poll the state until the call answers (or, following, the state leaves its transition);
        the wait itself: tui.procedures.waiting, shared with the appliances' (setup.optional)."""
        last = {"state": ""}

        async def look() -> bool | Waiting:
            record = await api.get(plan.tn_id)
            state = last["state"] = str(record.get("state", "")) if record else "(gone)"
            if call is None and state not in TRANSITIONS:
                return True
            pipeline = _pipeline(record)
            return Waiting(f"{plan.tn_id} {state}: waiting for the manager's deploy pipeline"
                           f"{' ' + pipeline if pipeline else ''}")

        def heartbeat(waiting: str, elapsed: float) -> None:
            context.report(Progress("activate", 3, 5, f"{waiting} ({elapsed:.0f} s of at most {self.wait_timeout:g} s)"))

        def timed_out(waiting: str, elapsed: float) -> SiteError:
            return SiteError(f"Trial network {plan.tn_id} is still {last['state']} after {elapsed:.0f} s",
                             "The manager goes on with its pipeline (a run cannot stop it). Follow it with `sitetk "
                             f"trial status --tn-id {plan.tn_id}`; running this again follows it, creates nothing "
                             "twice.", retryable=True)

        await wait_ready(look, timeout=self.wait_timeout, poll_interval=self.poll_interval, timed_out=timed_out,
                         report=heartbeat, cancel=context.cancel, until=call, cancelled=lambda: OperationCancelled(
                             "Cancelled", f"stopped waiting for trial network {plan.tn_id}: the manager goes on with "
                             f"its pipeline (`sitetk trial status --tn-id {plan.tn_id}`; `sitetk trial destroy --tn-id "
                             f"{plan.tn_id}` removes it)", retryable=True))

    async def _failed(self, api: ManagerApi, plan: TrialPlan, record: Mapping[str, Any] | None, context: RunContext,
                      said: str) -> SiteError:
        tn, pipeline = plan.tn_id, _pipeline(record)
        state = str(record.get("state", "")) if record else "(gone)"
        try:
            log = log_tail(await api.log(tn))
        except SiteError as error:
            log = f"(the log could not be read: {error.title})"
        track = _record(context)
        track.state, track.pipeline = state, pipeline
        context.report(Progress("activate", 3, 5, f"{tn} {state}" + (f": pipeline {pipeline} failed" if pipeline else ""),
                                ProgressState.FAILED, {"state": state}))
        return ActivationFailed(
            f"Trial network {tn} failed to activate ({state})",
            f"The pipeline that failed: {pipeline or '(none named)'}.\nThe manager said: {escape_controls(said)}\n"
            f"The end of the manager's log:\n{log}\n"
            f"Fix the cause, then `sitetk trial destroy --tn-id {tn} --yes` (destroy and purge: nothing left) and run "
            "again.")

    def audit_details(self, plan: TrialPlan, result: TrialResult) -> Mapping[str, Any] | None:
        if result.already:
            return None
        return {"tn_id": plan.tn_id, "manager": plan.access.url, "state": result.state, "pipeline": result.pipeline,
                "sites_branch": plan.sites_branch, "deployment_site": plan.deployment_site,
                "seconds": round(result.seconds, 1)}

    def audit_failure(self, plan: TrialPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        track = _record(context)
        return {"tn_id": plan.tn_id, "manager": plan.access.url, "created": track.created,
                "state": track.state, "pipeline": track.pipeline,
                "fix": f"`sitetk trial status --tn-id {plan.tn_id}`, then `sitetk trial destroy --tn-id {plan.tn_id}`"}

    def audit_object(self, plan: TrialPlan) -> str:
        return f"trial network {plan.tn_id}"


@dataclass(frozen=True)
class DestroyPlan:
    access: ManagerAccess
    tn_id: str
    state: str

    @property
    def steps(self) -> tuple[str, ...]:
        if self.state in DESTROY_FROM:
            return ("destroy", "purge")
        if self.state in PURGE_FROM:
            return ("purge",)
        return ()

    def preview(self) -> Preview:
        url, auth = self.access.url + "/api/v1", '-H "Authorization: Bearer $TOKEN"'
        if not self.state:
            return Preview(f"Destroy trial network {self.tn_id}", (Change(f"the manager has no trial network {self.tn_id}: "
                           "nothing to do", self.access.curl_login(), "none"),), target=f"trial network {self.tn_id}")
        changes = [Change(f"log in to the manager at {self.access.url} as {self.access.user!r}", self.access.curl_login(),
                          "none")]
        if "destroy" in self.steps:
            changes.append(Change(f"destroy trial network {self.tn_id} ({self.state}): the automation server's destroy "
                                  "pipeline removes its VMs and networks", f"{self.access.curl} -X DELETE {auth} "
                                  f"{url}/trial-networks/{self.tn_id}/destroy", "delete"))
        if "purge" in self.steps:
            changes.append(Change("purge its record from the manager", f"{self.access.curl} -X DELETE {auth} "
                                  f"{url}/trial-networks/{self.tn_id}/purge", "delete"))
        warnings = () if self.steps else (f"trial network {self.tn_id} is {self.state}: the manager destroys only "
                                          f"{', '.join(DESTROY_FROM)} and purges {', '.join(PURGE_FROM)}",)
        return Preview(f"Destroy trial network {self.tn_id}", tuple(changes), destructive=True,
                       target=f"trial network {self.tn_id}", warnings=warnings)

    def as_json(self) -> dict[str, Any]:
        return {"manager": self.access.as_json(), "tn_id": self.tn_id, "state": self.state, "steps": list(self.steps)}


@dataclass(frozen=True)
class Destroyed:
    tn_id: str
    state_before: str
    steps: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {"tn_id": self.tn_id, "state_before": self.state_before, "steps": list(self.steps)}


async def read_trial(access: ManagerAccess, tn_id: str, *, timeout: float = 30.0) -> tuple[dict[str, Any] | None, str, str]:
    """(record or None, report or "", log's end or "") of a trial network, read only."""
    async with access.api(timeout) as api:
        await api.login(access.user, access.password)
        record = await api.get(tn_id)
        if record is None:
            return None, "", ""
        report = await api.report(tn_id) if record.get("state") == "activated" else ""
        log = log_tail(await api.log(tn_id))
        return record, report, log


@dataclass(frozen=True)
class DestroyTrialNetwork(Operation[DestroyPlan, Destroyed]):
    """Destroy (when deployed) and purge a trial network: nothing of it left."""

    tn_id: str = DEFAULT_TN_ID
    wait_timeout: float = DEFAULT_WAIT
    http_timeout: float = timing.PROFILE.call_timeout
    values: Mapping[str, str] = field(default_factory=dict, repr=False)

    title: ClassVar[str] = "Destroy a trial network"
    refusal: ClassVar[str] = "destroying a trial network removes VMs and networks from the cloud"
    action: ClassVar[str] = "trial_network.destroy"
    cancels_itself: ClassVar[bool] = False
    on_stop: ClassVar[str] = "stopping the wait; the manager goes on with its pipeline"

    async def plan(self, site: "SiteConnection") -> DestroyPlan:
        problem = check_tn_id(self.tn_id)
        if problem:
            raise SiteError(f"Trial network id {self.tn_id!r} refused", f"The manager's rule: {problem}.")
        access = await manager_access(site, self.values)
        async with access.api(self.http_timeout) as api:
            await api.login(access.user, access.password)
            record = await api.get(self.tn_id)
        return DestroyPlan(access, self.tn_id, str(record.get("state", "")) if record else "")

    def preview(self, plan: DestroyPlan) -> Preview:
        return plan.preview()

    def confirmation(self, plan: DestroyPlan) -> Confirmation | None:
        if not plan.steps:
            return None
        return Confirmation("Destroy", f"trial network {plan.tn_id}", f"{plan.state}: " + " then ".join(plan.steps),
                            destructive=True)

    async def execute(self, site: "SiteConnection", plan: DestroyPlan, context: RunContext) -> Destroyed:
        total = len(plan.steps) + 1
        async with plan.access.api(self.http_timeout) as api:
            context.report(Progress("login", 0, total, f"logging in to {plan.access.url}"))
            await api.login(plan.access.user, plan.access.password)
            record = await api.get(plan.tn_id)
            state = str(record.get("state", "")) if record else ""
            context.report(Progress("login", 1, total, f"trial network {plan.tn_id}: {state or 'none'}", ProgressState.DONE))
            done: list[str] = []
            if state in DESTROY_FROM:
                context.report(Progress("destroy", 1, total, f"destroying {plan.tn_id}: the manager runs its destroy "
                                        f"pipeline (at most {self.wait_timeout:.0f} s)"))
                try:
                    await api.destroy(plan.tn_id, timeout=self.wait_timeout)
                except ManagerError as error:
                    log = log_tail(await api.log(plan.tn_id))
                    raise SiteError(f"The manager could not destroy {plan.tn_id}", f"{escape_controls(error.detail)}\n"
                                    f"The end of the manager's log:\n{log}") from None
                done.append("destroy")
                state = "destroyed"
                context.report(Progress("destroy", 2, total, f"{plan.tn_id} destroyed", ProgressState.DONE))
            if state in PURGE_FROM:
                await api.purge(plan.tn_id)
                done.append("purge")
                context.report(Progress("purge", total, total, f"{plan.tn_id} purged from the manager", ProgressState.DONE))
            elif state:
                raise SiteError(f"Trial network {plan.tn_id} is {state}", f"The manager destroys only "
                                f"{', '.join(DESTROY_FROM)} and purges {', '.join(PURGE_FROM)}; wait, then run again.",
                                retryable=True)
            return Destroyed(plan.tn_id, plan.state, tuple(done))

    def audit_details(self, plan: DestroyPlan, result: Destroyed) -> Mapping[str, Any] | None:
        if not result.steps:
            return None
        return {"tn_id": plan.tn_id, "manager": plan.access.url, "state_before": plan.state, "steps": list(result.steps)}

    def audit_failure(self, plan: DestroyPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        return {"tn_id": plan.tn_id, "manager": plan.access.url, "state_before": plan.state}

    def audit_object(self, plan: DestroyPlan) -> str:
        return f"trial network {plan.tn_id}"
