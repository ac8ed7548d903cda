"""The setup checklist's site-configuration steps: the sites repository, the site branch, core.yaml,
its components and the submit (decided from `setup_facts` like the others in
`tui.procedures.setup.status`, which lists them in order)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from tui.adapters.vault import is_vault_text
from tui.domain.appliance_identity import as_object_id, id_kind
from tui.domain.object_grants import CloudObject, already_usable
from tui.domain.setup_steps import ComponentsMissing, ExamplesLeft, SetupStep, StepId, StepState
from tui.domain.severity import Severity
from tui.domain.site_checks import Requirement, check_site_config, example_values, minimal_component_set
from tui.domain.site_config import SiteConfig, SiteConfigError
from tui.procedures.setup.facts import SITE_CONFIG_FILE, SetupFacts
from tui.procedures.setup.step_forms import blocked as _blocked
from tui.procedures.setup.step_forms import run_command as _run
from tui.procedures.setup.step_forms import step as _step
from tui.procedures.setup.step_forms import unknown as _unknown

#: the components every site lists (spec "What the service does" 7); recommended ones are optional
MANDATORY_COMPONENTS = ("tn_bastion", "tn_vxlan", "tn_init", "vnet", "vm_kvm")


def repository_step(facts: SetupFacts) -> SetupStep:
    title = "Sites repository reachable and writable"
    repo = facts.repo
    if not repo.configured:
        return _blocked(StepId.REPOSITORY, title, "settings",
                        "Name the sites repository: sites_repo in [site] of the config file (or SITETK_SITES_REPO), "
                        "with its token file (sites_token_file, Contents: read and write).")
    if repo.reachable is None:
        return _unknown(StepId.REPOSITORY, title, "the sites repository")
    if not repo.reachable:
        return _step(StepId.REPOSITORY, title, StepState.FAILED, (f"{repo.configured}: {repo.reach_error}",),
                     "Check the URL and the token (a fine-grained token with Contents: read and write).")
    evidence = [f"{repo.configured}: reachable, default branch {repo.default_branch}, {len(repo.branches)} branch(es)"]
    if not repo.writable:
        return _step(StepId.REPOSITORY, title, StepState.FAILED, evidence + [f"push refused: {repo.write_error}"],
                     "The token cannot write: give it Contents: read and write on the sites repository "
                     "(and membership of the sites contributors group).")
    return _step(StepId.REPOSITORY, title, StepState.DONE, evidence + ["a dry-run push was accepted (write allowed)"])


def _where(facts: SetupFacts) -> str:
    """Where the site's core.yaml the steps judge was read."""
    target = facts.target
    path = f"{target.site_dir or target.branch}/{SITE_CONFIG_FILE}"
    if facts.repo.in_clone:
        return f"{path} in the working clone (on {target.branch}, not submitted yet)"
    return f"{target.branch}:{path}"


def site_branch_step(facts: SetupFacts) -> SetupStep:
    title = "Site branch and directory"
    target, repo = facts.target, facts.repo
    branch_field = facts.naming.input_name(f"{facts.naming.role_manager}_sites_branch")
    if not target.branch:
        return _blocked(StepId.SITE_BRANCH, title, StepId.INPUTS, f"Name the branch in {branch_field} of the input file.")
    if not repo.reachable:
        return _blocked(StepId.SITE_BRANCH, title, StepId.REPOSITORY, "The sites repository is not reachable.")
    site_dir = target.site_dir or target.branch
    if repo.in_clone:
        return _step(StepId.SITE_BRANCH, title, StepState.DONE,
                     (f"branch {target.branch} holds {site_dir}/{SITE_CONFIG_FILE} in the working clone; it reaches "
                      "the remote when core.yaml is submitted (last)",))
    if target.branch not in repo.branches:
        return _step(StepId.SITE_BRANCH, title, StepState.TODO, (f"no branch {target.branch} ({target.source})",),
                     f"Create {target.branch} from {repo.default_branch}'s template as {site_dir}/ (in the working "
                     "clone: nothing reaches the remote until core.yaml passes the whole check).",
                     command=_run(StepId.SITE_BRANCH))
    if repo.core_yaml is None:
        return _step(StepId.SITE_BRANCH, title, StepState.FAILED,
                     (f"branch {target.branch} exists without {site_dir}/{SITE_CONFIG_FILE}",),
                     f"Add {site_dir}/{SITE_CONFIG_FILE} from the template to the branch (or name the right directory "
                     "in app_manager_deployment_site).")
    return _step(StepId.SITE_BRANCH, title, StepState.DONE, (f"branch {target.branch} holds {site_dir}/{SITE_CONFIG_FILE}",))


def core_yaml_step(facts: SetupFacts) -> SetupStep:
    """Filled from the cloud and vault-encrypted; the whole check (the cloud and the component
    library) is the submitted step's, after the components are enabled."""
    title = "core.yaml filled from the cloud, vault-encrypted"
    repo = facts.repo
    path = _where(facts)
    if repo.core_yaml is None:
        return _blocked(StepId.CORE_YAML, title, StepId.SITE_BRANCH, "The site branch has no core.yaml yet.")

    if not is_vault_text(repo.core_yaml):
        return _step(StepId.CORE_YAML, title, StepState.FAILED, (f"{path} is plain text",),
                     "Encrypt it with the site's secret (ansible-vault encrypt) and submit it again.")
    if repo.decrypt_error:
        return _step(StepId.CORE_YAML, title, StepState.FAILED, (f"{path} is vault-encrypted", repo.decrypt_error),
                     "It does not open with the site's secret (app_automation_sites_token): check the secret.")
    if repo.core_plain is None:
        return _blocked(StepId.CORE_YAML, title, "the vault password",
                        "Give the input file (its app_automation_sites_token is the vault password) or a vault "
                        "password file (SITETK_VAULT_PASSWORD_FILE) to check the content.",
                        (f"{path} is vault-encrypted",))
    config = parse_core_yaml(facts)
    if config is None:
        return _step(StepId.CORE_YAML, title, StepState.FAILED, (f"{path} decrypts but is not valid YAML",),
                     "Fix it with `sitetk site edit` or `ansible-vault edit`.")
    default = facts.default_network
    errors = [f for f in check_site_config(config, naming=facts.naming, nic_mtu=default.mtu if default else None)
              if f.severity is Severity.ERROR]
    evidence = [f"{path} is vault-encrypted and opens with the site's secret"]
    endpoint = config.get("site_s3_server.endpoint")
    ip = facts.objectstore_ip
    host = urlsplit(endpoint).hostname if isinstance(endpoint, str) else None
    evidence.append(f"site_s3_server.endpoint = {endpoint!r}; object store VM address {ip or '(not known yet)'}")
    if not ip:
        return _blocked(StepId.CORE_YAML, title, StepId.INSTANTIATE,
                        "site_s3_server is filled last, from the object store VM's address: deploy the toolkit first.",
                        evidence)
    problems = [f"{f.path}: {f.message}" for f in errors]
    if host != ip:
        problems.insert(0, f"site_s3_server.endpoint does not name the object store VM ({ip})")
    if problems:
        return _step(StepId.CORE_YAML, title, StepState.TODO, evidence + problems,
                     "Fill it from the cloud (the components and the whole check follow, then the submit).",
                     command=_run(StepId.CORE_YAML))
    return _step(StepId.CORE_YAML, title, StepState.DONE,
                 evidence + ["filled: the checks of the file alone found no error (the whole check, with the cloud "
                             "and the component library, comes before the submit)"])


def parse_core_yaml(facts: SetupFacts) -> SiteConfig | None:
    """core.yaml as read (decrypted), None when it was not read or does not parse."""
    if facts.repo.core_plain is None:
        return None
    try:
        return SiteConfig.parse(facts.repo.core_plain, facts.naming)
    except SiteConfigError:
        return None


def component_gaps(config: Any, name: str, facts: SetupFacts) -> list[str]:
    """Why the listed-or-not component `name` is not enabled ([] when it is): listed, and each ID
    among its site variables names the appliance's object, not the template's placeholder 0 (an
    image must carry the marketplace appliance attribute the download attaches)."""
    if name not in config.components():
        return ["not listed"]
    tagged = {i.id for i in facts.images or () if i.attributes.get(facts.naming.appliance_name_attribute)}
    gaps = []

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}" if path else str(key))
            return
        kind = id_kind(path.rsplit(".", 1)[-1])
        if kind is None:
            return
        object_id = as_object_id(value)
        if object_id is None or object_id <= 0:
            gaps.append(f"{path} is {value!r} (the template's placeholder)")
        elif kind == "image" and facts.images is not None and object_id not in tagged:
            gaps.append(f"{path} = {object_id} is no downloaded appliance image")

    walk(config.component_variables(name), "")
    if not gaps:
        gaps += use_gaps(config.component_variables(name), facts)
    return gaps


#: `appliance_identity.id_kind`'s words -> `object_grants.KINDS`' keys
_GRANT_KINDS = {"image": "image", "VM template": "template", "service template": "service_template"}


def use_gaps(variables: Any, facts: SetupFacts) -> list[str]:
    """Why the input's automation cloud user cannot USE the objects a component's IDs name (and the
    images of each VM template): [] when it can. Unknown (rules or objects unreadable) is a gap."""
    ids = _named_ids(variables)
    if not ids:
        return []
    name = facts.target.cloud_username
    user = next((u for u in facts.users or () if u.name == name), None)
    if not name:
        return ["the automation cloud user is not named (app_automation_cloud_username of the input file)"]
    if facts.users is None or facts.acl_rules is None:
        return [f"not known whether {name} may use its objects (the users or the ACL rules could not be read)"]
    if user is None:
        return [f"no cloud user {name} to use its objects"]
    objects, unknown = _used_objects(ids, facts)
    gaps = [f"not known whether {name} may use {what} (not readable)" for what in unknown]
    seen: set[tuple[str, int]] = set()
    for obj in objects:
        if (obj.kind, obj.id) in seen:
            continue
        seen.add((obj.kind, obj.id))
        if not already_usable(obj, user, facts.acl_rules):
            gaps.append(f"{name} may not USE {obj.label} (no ACL rule, owner, group or other USE right): "
                        "the automation would get 'Not authorized to perform USE'")
    return gaps


def _named_ids(variables: Any) -> list[tuple[str, int]]:
    """The (grant kind, ID) of every object a component's variables name by ID (placeholders left out)."""
    ids: list[tuple[str, int]] = []

    def collect(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                collect(inner, f"{path}.{key}" if path else str(key))
            return
        kind = id_kind(path.rsplit(".", 1)[-1])
        object_id = as_object_id(value) if kind is not None else None
        if kind is not None and object_id is not None and object_id > 0:
            ids.append((_GRANT_KINDS[kind], object_id))

    collect(variables, "")
    return ids


def _used_objects(ids: list[tuple[str, int]], facts: SetupFacts) -> tuple[list[CloudObject], list[str]]:
    """The objects `ids` name, with the images of each VM template, as read in `facts`; and the
    ones that could not be read ("image 12")."""
    pools: dict[str, dict[int, Any]] = {"image": {i.id: i for i in facts.images or ()},
                                        "template": {t.id: t for t in facts.vm_templates or ()},
                                        "service_template": {d.id: d for d in facts.service_template_docs or ()}}
    objects: list[CloudObject] = []
    unknown: list[str] = []

    def add(kind: str, object_id: int) -> None:
        source = pools[kind].get(object_id)
        if source is None:
            unknown.append(f"{kind.replace('_', ' ')} {object_id}")
            return
        objects.append(CloudObject(kind, source.id, source.name, source.uid, source.gid, source.permissions))
        if kind == "template":
            for image_id in source.image_ids:
                add("image", image_id)

    for kind, object_id in ids:
        add(kind, object_id)
    return objects, unknown


def components_step(facts: SetupFacts) -> SetupStep:
    title = "Minimal component set enabled"
    config = parse_core_yaml(facts)
    if config is None:
        return _blocked(StepId.COMPONENTS, title, StepId.CORE_YAML, "core.yaml must open first.")
    listed = set(config.components())
    wanted = [c.component for c in minimal_component_set(facts.naming) if c.component in MANDATORY_COMPONENTS]
    recommended = [c.component for c in minimal_component_set(facts.naming)
                   if c.requirement is Requirement.RECOMMENDED and c.component not in MANDATORY_COMPONENTS]
    gaps = {name: component_gaps(config, name, facts) for name in wanted}
    missing = [name for name in wanted if gaps[name]]
    rec_missing = [name for name in recommended if name not in listed]
    evidence = [f"enabled (read from {_where(facts)}): "
                f"{', '.join(n for n in wanted if not gaps[n]) or '(none)'}"]
    evidence += [f"{name}: {'; '.join(gaps[name])}" for name in missing]
    if rec_missing:
        evidence.append(f"recommended, not listed: {', '.join(rec_missing)} (`{_run(StepId.COMPONENTS)}` enables "
                        "those the component library offers)")
    found = ComponentsMissing(tuple(missing), tuple(rec_missing))
    if missing:
        return _step(StepId.COMPONENTS, title, StepState.TODO, evidence,
                     f"Enable {', '.join(missing)} through the day-2 flow (appliances downloaded, the input's "
                     f"automation cloud user {facts.target.cloud_username or '(not named)'} granted, site variables "
                     "written), then submit.",
                     command=_run(StepId.COMPONENTS), found=found)
    return _step(StepId.COMPONENTS, title, StepState.DONE, evidence, found=found)


#: errors of the whole check a step lists (the rest are counted)
LISTED_ERRORS = 10


def submitted_step(facts: SetupFacts) -> SetupStep:
    """Submitted last: the whole file passes the check with the cloud and the component library
    (what `sitetk site check --cloud` and `sitetk site submit` run), and the remote holds it."""
    title = "core.yaml checked whole and submitted"
    core = core_yaml_step(facts)
    if core.state is not StepState.DONE:
        return _blocked(StepId.SUBMITTED, title, StepId.CORE_YAML,
                        "core.yaml is submitted last: once it is filled, its components enabled and the whole file "
                        "passes the check.")
    components = components_step(facts)
    if components.state is not StepState.DONE:
        return _blocked(StepId.SUBMITTED, title, StepId.COMPONENTS,
                        "core.yaml is submitted last: once the minimal component set is enabled and the whole file "
                        "passes the check.")
    verdict = facts.site_verdict
    path = _where(facts)
    if verdict is None:
        return _blocked(StepId.SUBMITTED, title, "the whole check",
                        "The whole check of core.yaml could not run: see the notes, then refresh.",
                        (f"{path}: not checked",))
    evidence = [f"{path} checked with the cloud and the component library: {len(verdict.errors)} error(s), "
                f"{len(verdict.warnings)} warning(s)"]
    evidence += [f"{f.path}: {f.message}" for f in verdict.errors[:LISTED_ERRORS]]
    if len(verdict.errors) > LISTED_ERRORS:
        evidence.append(f"and {len(verdict.errors) - LISTED_ERRORS} more (`sitetk site check --cloud`)")
    if verdict.errors:
        return _step(StepId.SUBMITTED, title, StepState.FAILED, evidence,
                     "Fix them (`sitetk site edit`, `sitetk site check --cloud` shows each with its fix), then run "
                     "the setup again; nothing that fails the check is submitted.")
    examples = example_values(config) if (config := parse_core_yaml(facts)) is not None else ()
    if examples:
        left = [f"{e.path} is still the template's example {e.value!r}" for e in examples]
        sets = " ".join(f"--set {e.path}=<{e.path.removeprefix('site_').replace('_', ' ')}>" for e in examples)
        return _step(StepId.SUBMITTED, title, StepState.TODO, evidence + left,
                     "Give the site's own values (deployments would work, access to them would not): the run asks "
                     f"for each ({', '.join(e.ask for e in examples)}), or `sitetk setup run --input FILE --only "
                     f"submitted {sets}`.", command=_run(StepId.SUBMITTED),
                     found=ExamplesLeft(tuple((e.path, e.ask) for e in examples)))
    if not verdict.complete:
        missing = "the component library" if not verdict.library_loaded else "the cloud"
        return _blocked(StepId.SUBMITTED, title, missing,
                        "The whole check needs the cloud and the component library (SITETK_LIBRARY_REPO): nothing is "
                        "submitted unchecked.",
                        evidence + [f"not checked: {u}" for u in verdict.unchecked()])
    if facts.repo.pending:
        return _step(StepId.SUBMITTED, title, StepState.TODO,
                     evidence + [f"the working clone holds changes not on the remote: {', '.join(facts.repo.pending)}"],
                     "Submit them (commit and push).", command=_run(StepId.SUBMITTED))
    return _step(StepId.SUBMITTED, title, StepState.DONE,
                 evidence + [f"origin/{facts.target.branch} holds this core.yaml; nothing pending in the working clone"])


# -- optional ------------------------------------------------------------------------------------
