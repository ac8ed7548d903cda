"""The toolkit's inputs checked against the site, beyond their shape (reads only, changes nothing).

`check_inputs_on_site(site, form, values, networks)` runs every check it can and returns a
`SiteCheckReport`: one `SiteCheck` per check saying what it looked at, what it found and the fix,
or why it was skipped (a check never passes on what it could not read):

- the cloud user (`app_automation_cloud_username`) exists in the cloud (`one.userpool.info`);
- its password (`app_automation_cloud_password`) authenticates: a read-only login with that
  user's own session (`one.user.info -1`, the call `oneuser show` makes) on the console's
  XML-RPC endpoint, so a password the platform refuses is found here and not inside the
  automation server at the first trial network. The session goes in the XML-RPC body only (never
  argv, a log or a URL) and the password is registered with the redactor;
- each template network (`Public`) is the site's default network, the bridged OAM /24, not the
  VXLAN trial network (`tui.domain.input_site.default_network_finding`);
- the sites branch (`app_manager_sites_branch`) exists in the sites repository with
  `<app_manager_deployment_site>/core.yaml`, or is reported as still to be created (read through
  `tui.procedures.site.repo.list_sites` and the git adapter, as the site screen reads it);
- `app_automation_sites_token`, the vault secret of the site's branch, is the vault password:
  compared with the vault password file when one is configured, and tried on the branch's
  encrypted core.yaml when there is one. Messages name the input and the file, never a value.

`report.problems` are `Problem`s for the form (FAILED checks only); the screen, `sitetk toolkit
validate` and `deploy`, and the guided setup share this one call. Offline validation runs none
of it and says so (`OFFLINE_NOTE`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from tui.adapters.git_repo import SITE_CONFIG_FILE
from tui.adapters.vault import VaultPassword, decrypt_text_async, is_vault_text
from tui.domain.input_site import Outcome, SiteCheck, default_network_finding, failed, passed, same_vault_secret, skipped
from tui.domain.severity import Severity
from tui.domain.toolkit_inputs import Component, Problem, input_name
from tui.errors import AuthenticationFailed, SiteError
from tui.procedures.audit import REDACTOR
from tui.procedures.concurrent import gather
from tui.procedures.site.repo import list_sites
from tui.procedures.site.workspace import sites_repo, vault_password

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection
    from tui.procedures.toolkit.service import ToolkitForm

#: what offline validation says instead of "valid"
OFFLINE_NOTE = ("site checks skipped (offline): the cloud user and its login, the default network, the sites branch "
                "and the vault secret were not checked; run without --offline to check them against the site")


@dataclass(frozen=True)
class SiteCheckReport:
    checks: tuple[SiteCheck, ...]

    @property
    def failed(self) -> tuple[SiteCheck, ...]:
        return tuple(c for c in self.checks if c.outcome is Outcome.FAILED)

    @property
    def skipped(self) -> tuple[SiteCheck, ...]:
        return tuple(c for c in self.checks if c.outcome is Outcome.SKIPPED)

    def check(self, name: str) -> SiteCheck | None:
        """The check of input `name` (None when none ran for it)."""
        return next((c for c in self.checks if c.name == name), None)

    @property
    def problems(self) -> tuple[Problem, ...]:
        return tuple(Problem(c.name, c.severity or Severity.ERROR, c.message) for c in self.failed)

    @property
    def errors(self) -> tuple[SiteCheck, ...]:
        return tuple(c for c in self.failed if c.severity is Severity.ERROR)

    def summary(self) -> str:
        counts = {outcome: sum(1 for c in self.checks if c.outcome is outcome) for outcome in Outcome}
        return (f"site checks: {counts[Outcome.PASSED]} passed, {counts[Outcome.FAILED]} found problems, "
                f"{counts[Outcome.SKIPPED]} skipped")

    def as_json(self) -> list[dict[str, Any]]:
        return [c.as_json() for c in self.checks]


def _name(form: "ToolkitForm", component: Component, suffix: str) -> str:
    return input_name(form.naming, component, suffix)


async def check_cloud_user(site: "SiteConnection", name: str, username: str) -> SiteCheck:
    checked = "the cloud's users (oneuser list)"
    if not username.strip():
        return skipped(name, checked, "no cloud user given")
    try:
        users = await site.cloud.list_users()
    except AuthenticationFailed:
        raise
    except SiteError as error:
        return skipped(name, checked, f"the users could not be read: {error.title}")
    found = next((u for u in users if u.name == username.strip()), None)
    if found is None:
        known = ", ".join(u.name for u in users) or "none"
        return failed(name, checked, f"the cloud has no user {username.strip()!r} (users: {known})",
                      f"create it (`oneuser create {username.strip()} <password>`) or name an existing user")
    if not found.enabled:
        return failed(name, checked, f"user {found.id} {found.name} exists but is disabled",
                      f"`oneuser enable {found.id}`")
    return passed(name, checked, f"user {found.id} {found.name} exists")


async def check_cloud_login(site: "SiteConnection", name: str, username: str, password: str) -> SiteCheck:
    """The automation cloud user's credentials authenticate: `one.user.info -1` with its own session
    (read-only), on the console's XML-RPC endpoint of the same cloud."""
    from tui.adapters.cloud import CloudClient

    checked = "a read-only login with the user's own session (one.user.info -1, as `oneuser show`)"
    user = username.strip()
    if not password:
        return skipped(name, checked, "not in the file: it is asked when a step needs it and checked then")
    if not user:
        return skipped(name, checked, "no cloud user given")
    REDACTOR.register(password)
    settings = site.settings
    try:
        client = CloudClient(settings.xmlrpc_url, f"{user}:{password}", settings.xmlrpc_timeout,
                             verify_ssl=settings.ssl_verify, cert_dir=str(settings.cert_dir) if settings.cert_dir else None,
                             max_workers=1)
    except SiteError as error:
        return skipped(name, checked, f"no client for the login: {error.title}")
    try:
        me = await client.whoami()
    except AuthenticationFailed:  # the finding itself: the platform refused this user's login (not the console's)
        return failed(name, checked, f"the platform refused the login of {user} with {name} (authentication "
                      "failed): the automation server would fail the same way at its first trial network",
                      f"give {user}'s password in {name}, or set it to this one (`oneuser passwd {user}`)")
    except SiteError as error:
        return skipped(name, checked, f"the login could not be tried: {error.title}")
    finally:
        await client.close()
    if me.name != user:
        return failed(name, checked, f"the login as {user} answered as user {me.id} {me.name}",
                      f"check the cloud's authentication driver for {user}")
    return passed(name, checked, f"{user} logged in (user {me.id}, group {me.gname})")


async def check_networks(site: "SiteConnection", form: "ToolkitForm", networks: Mapping[str, str]) -> list[SiteCheck]:
    specs = form.networks
    if not specs:
        return []
    try:
        vnets = await site.cloud.list_vnets()
    except AuthenticationFailed:
        raise
    except SiteError as error:
        return [skipped(f"network:{s.name}", "the site's networks", f"the networks could not be read: {error.title}")
                for s in specs]
    by_id = {str(v.id): v for v in vnets}
    out: list[SiteCheck] = []
    for spec in specs:
        chosen = networks.get(spec.name, "").strip()
        vnet = by_id.get(chosen)
        if vnet is None:
            continue  # no choice or no such network: the form's own problems say so
        out.append(default_network_finding(spec.name, vnet, vnets))
    return out


@dataclass(frozen=True)
class BranchFacts:
    check: SiteCheck
    #: the branch's encrypted core.yaml and where it was read ("" when there is none)
    core_yaml: str = ""
    where: str = ""


async def check_sites_branch(site: "SiteConnection", name: str, branch: str, site_dir: str) -> BranchFacts:
    checked = "the sites repository's branches and the site directory's core.yaml"
    branch = branch.strip()
    if not branch:
        return BranchFacts(skipped(name, checked, "no branch given"))
    try:
        repo = sites_repo(site.settings)
    except SiteError as error:
        return BranchFacts(skipped(name, checked, f"{error.title}: {error.detail}"))
    async with repo:
        try:
            listing = await list_sites(repo)
        except SiteError as error:
            return BranchFacts(skipped(name, checked, f"the sites repository could not be read: {error.title}"))
        if branch == listing.default_branch:
            return BranchFacts(failed(name, checked, f"{branch} is the repository's default branch, which holds the "
                                      "template; each site has a branch of its own",
                                      "name the site's branch (usually the site's name)"))
        if branch not in listing.sites:
            return BranchFacts(failed(
                name, checked, f"branch {branch} does not exist in the sites repository yet",
                f"it is created with the site (`sitetk site create {branch}`, or ctrl+o on the site screen); submit its "
                "core.yaml before trial networks are deployed", Severity.WARNING))
        directory = site_dir.strip() or branch
        where = f"{branch}:{directory}/{SITE_CONFIG_FILE}"
        text = await repo.read_file(f"origin/{branch}", f"{directory}/{SITE_CONFIG_FILE}")
    if text is None:
        return BranchFacts(failed(name, checked, f"branch {branch} exists but has no {directory}/{SITE_CONFIG_FILE}",
                                  f"check {_site_dir_hint(site_dir)}, or submit the site's core.yaml there",
                                  Severity.WARNING))
    return BranchFacts(passed(name, checked, f"branch {branch} exists with {directory}/{SITE_CONFIG_FILE}"), text, where)


def _site_dir_hint(site_dir: str) -> str:
    return "the deployment site (the directory holding core.yaml)" if site_dir else "the branch name"


async def check_sites_token(site: "SiteConnection", name: str, token: str, branch: BranchFacts,
                            password: VaultPassword | None) -> SiteCheck:
    checked = "the input against the vault password file and the branch's encrypted core.yaml"
    if not token:
        return skipped(name, checked, "not in the file: it is asked at deploy time and checked then")
    REDACTOR.register(token)
    source = ""
    if password is None:
        try:
            password = vault_password(site.settings)
        except SiteError as error:
            source = f"the vault password file could not be read ({error.title})"
    if password is not None:
        if not same_vault_secret(token, password.secret):
            return failed(name, checked, f"{name} differs from the vault password in {password.source}, the password "
                          "that encrypts the site's branch",
                          "the automation server decrypts the branch with this input: give it the same secret "
                          "(or fix the vault password file)")
    if branch.core_yaml and is_vault_text(branch.core_yaml):
        try:
            await decrypt_text_async(branch.core_yaml, VaultPassword.from_text(token, name), branch.where)
        except SiteError as error:
            if error.title == "Wrong vault password":
                return failed(name, checked, f"{name} does not decrypt {branch.where}",
                              "give the vault password of the site's branch (the secret its core.yaml is encrypted "
                              "with), not the repository's access token")
            return skipped(name, checked, f"{branch.where} could not be read: {error.title}")
        matched = f" and equals the vault password in {password.source}" if password is not None else ""
        return passed(name, checked, f"{name} decrypts {branch.where}{matched}")
    if password is not None:
        return passed(name, checked, f"{name} equals the vault password in {password.source}")
    why = source or "no vault password file is configured ([site] vault_password_file)"
    return skipped(name, checked, f"nothing to compare it with: {why}, and the branch holds no encrypted core.yaml")


async def check_inputs_on_site(site: "SiteConnection", form: "ToolkitForm", values: Mapping[str, str],
                               networks: Mapping[str, str], *, password: VaultPassword | None = None
                               ) -> SiteCheckReport:
    """Every check of the inputs against the site (see the module docstring); never raises for
    what it cannot read: that check is reported as skipped, with why."""
    user_name = _name(form, Component.AUTOMATION, "cloud_username")
    password_name = _name(form, Component.AUTOMATION, "cloud_password")
    branch_name = _name(form, Component.MANAGER, "sites_branch")
    site_dir_name = _name(form, Component.MANAGER, "deployment_site")
    token_name = _name(form, Component.AUTOMATION, "sites_token")
    user, nets, branch = await gather(
        check_cloud_user(site, user_name, values.get(user_name, "")),
        check_networks(site, form, networks),
        check_sites_branch(site, branch_name, values.get(branch_name, ""), values.get(site_dir_name, "")),
    )
    if user.outcome is Outcome.PASSED:
        login = await check_cloud_login(site, password_name, values.get(user_name, ""), values.get(password_name, ""))
    else:
        login = skipped(password_name, "a read-only login with the user's own session",
                        "not tried: the cloud user " + ("is not given" if user.outcome is Outcome.SKIPPED
                                                        else "does not exist or is disabled"))
    token = await check_sites_token(site, token_name, values.get(token_name, ""), branch, password)
    return SiteCheckReport((user, login, *nets, branch.check, token))


async def check_vault_secret(site: "SiteConnection", naming: Any, branch: str, site_dir: str, token: str,
                             password: VaultPassword | None = None) -> SiteCheck:
    """`app_automation_sites_token` (given in a file or asked) against the site's branch: the same
    check as `check_inputs_on_site`'s, for a secret asked when a step needs it."""
    name = naming.input_name(f"{naming.role_automation}_sites_token")
    facts = await check_sites_branch(site, naming.input_name(f"{naming.role_manager}_sites_branch"), branch, site_dir)
    return await check_sites_token(site, name, token, facts, password)
