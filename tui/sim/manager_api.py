"""The trial-network manager's REST API, served by the embedded site under `/api/v1/`.

Reimplemented from the manager's public source, 6G-SANDBOX/TNLCM at tag v0.5.2 (read with
`git show v0.5.2:<path>`; none of its code is copied). What is followed, with where:

- served at `http://<the manager VM's address>:5000` through the site's port used as an HTTP
  proxy (tui.sim.server `_guest`, `SITETK_GUEST_PROXY`; conf/gunicorn_conf.py 11, .env.template
  127), and at the site's own URL under /api/v1/ (`manager_url`);
- routes (app.py 41-47: the namespaces under /api/v1/...):
  - `POST /api/v1/user/login`: HTTP Basic; 201 `{access_token, refresh_token}`; no or incomplete
    credentials 401 "Could not verify user X", an unknown user 404 "User not found", a wrong
    password 401 "Could not verify user X" (core/routes/user.py 88-120);
  - `POST /api/v1/trial-network?validate=True|False`, multipart form `tn_id`, `descriptor` (file),
    `library_reference_type`, `library_reference_value`, `sites_branch`, `deployment_site`,
    `deployment_site_token` (core/routes/trial_network.py 213-485): validate=False stores it
    `created` (363-368); validate=True needs all of them (415-418), goes `validating` then
    `validated` (461-475), and on any error is left `created` (476-485); an existing tn_id of the
    user is validated again only when `created` (370-382);
  - `GET /api/v1/trial-networks` (488-513), `GET /api/v1/trial-networks/<tn_id>` (519-544,
    `to_dict_full`, core/models/trial_network.py 691-709; 404 "No trial network with identifier");
  - `PUT /api/v1/trial-networks/<tn_id>/activate` (550-652): only from validated,
    failed-activation or destroyed (585-593); `activating` (625), the deploy pipeline run
    synchronously in the request (630: `JenkinsHandler.deploy_trial_network`,
    core/jenkins/jenkins_handler.py 107-240, one build per entity, the console appended to the
    trial network's log), `activated` and 200 (631-638); a failure leaves `failed-activation` and
    answers the error (639-652; a failed build's error is its console output, jenkins_handler.py
    225-234, status 500);
  - `DELETE /api/v1/trial-networks/<tn_id>/destroy` (658-757): only from activated,
    failed-activation or failed-destruction (693-701); `destroying` (726), `destroyed` (736);
    a failure `failed-destruction` (744-757);
  - `DELETE /api/v1/trial-networks/<tn_id>/purge` (842-882): only validated, destroyed or created
    (863-867); the record and its directory go (874-875);
  - `GET .../log/content` (763-794, `{log_content}`), `GET .../report/content` (888-917, only
    when activated, `{report_content}`).
- states and transitions: `STATE_MACHINE` (core/models/trial_network.py 16-33); a tn_id must start
  with a letter (113-116), at most 15 characters (58), unique (109-112, 409).
- log lines: `[%(asctime)s] - [%(process)d] - [%(levelname)s] - %(message)s`
  (core/logs/log_handler.py 35).
- the deploy pipeline: `TN_DEPLOY` cloned to `TNLCM/TN_DEPLOY_<tn_id>` (596-605; conf/jenkins.py
  names the settings; their values are the installer's, assumed).

Assumed (not in the manager's source): the bearer token is an opaque random string (the real one
is a JWT; clients never decode it); a request without a valid bearer token answers 401
`{"msg": ...}` (flask-jwt-extended's default); the manager answers only while its VM is RUNNING
with its database up (no DB_ERROR): otherwise the connection is dropped, as a service that is not
listening; its admin user and password are the toolkit's `<prefix>manager_admin_user/password`
inputs (the VM's CONTEXT), which the appliance creates the user from; a wrong vault token fails
the validation with ansible-vault's "Decryption failed" (core/utils/parser.py 12-25 runs it).

What the deploy pipeline does here (the automation server's job, which the sites repository's
core.yaml drives): for the `tn_init` entity (tn_vxlan and tn_bastion in one pipeline) it creates a
VXLAN network `<tn_id>-tn_vxlan` on `site_vxlan_if` and instantiates `site_variables.tn_bastion.
template_id` as `<tn_id>-tn_bastion` on it and on the default network, waits until it runs, and
writes the report; destroy terminates the VM and deletes the network. Names assumed.

Faults (`site.faults`): `manager_fail_activation` (text: the pipeline fails with it as its console
output after creating what it created), `manager_activation_seconds` (a slow pipeline, simulated
seconds), `manager_hold` (the pipeline waits for the event: a test's long activation).
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import json
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping
from urllib.parse import parse_qs, urlsplit

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from tui.domain.documents import SERVICE_DOCUMENT
from tui.domain.one_states import FAILURE_LCM_STATES, LcmState, VmState
from tui.domain.template_text import Template, first, scalar
from tui.sim.appliances import DB_ERROR_ATTRIBUTE, role_of
from tui.sim.flow_engine import input_values
from tui.sim.state import HOLD_LIMIT_S, SimAddressRange, SimSite, SimVm, SimVnet

Response = tuple[int, dict[str, str], bytes]
#: status that tells the server to drop the connection (nothing listens)
DROP = 0
PREFIX = "/api/v1"
#: simulated seconds one pipeline build takes besides the VM's boot (assumed)
PIPELINE_SECONDS = 30.0
#: real seconds a request waits at most for a pipeline (a test never waits this long)
PIPELINE_LIMIT = 600.0
DEPLOY_PIPELINE = "TN_DEPLOY"
DESTROY_PIPELINE = "TN_DESTROY"
PIPELINE_DIRECTORY = "TNLCM"
LIBRARY_URL = "https://github.com/6G-SANDBOX/6G-Library.git"
#: trial_network.py 864 and friends: where each action is allowed
ACTIVATE_FROM = ("validated", "failed-activation", "destroyed")
DESTROY_FROM = ("activated", "failed-activation", "failed-destruction")
PURGE_FROM = ("validated", "destroyed", "created")


@dataclass
class SimTrialNetwork:
    tn_id: str
    user_created: str
    state: str
    date_created_utc: str
    raw_descriptor: dict[str, Any]
    library_reference: str = ""
    library_commit_id: str = ""
    sites_commit_id: str = ""
    deployment_site: str = ""
    sites_branch: str = ""
    report: str = ""
    log: list[str] = field(default_factory=list)
    jenkins_deploy: dict[str, Any] = field(default_factory=dict)
    jenkins_destroy: dict[str, Any] = field(default_factory=dict)
    deployed_descriptor: dict[str, Any] = field(default_factory=dict)
    vm_ids: list[int] = field(default_factory=list)
    vnet_ids: list[int] = field(default_factory=list)
    #: the core.yaml the validation read (decrypted), for the pipeline
    site_config: dict[str, Any] = field(default_factory=dict)

    @property
    def directory_path(self) -> str:
        return f"/opt/TNLCM/core/trial_networks/{self.tn_id}"

    def to_dict_created(self) -> dict[str, Any]:  # trial_network.py (model) 666-675
        return {"user_created": self.user_created, "tn_id": self.tn_id, "state": self.state,
                "date_created_utc": self.date_created_utc, "raw_descriptor": self.raw_descriptor,
                "directory_path": self.directory_path, "library_commit_id": self.library_commit_id}

    def to_dict_created_validated(self) -> dict[str, Any]:  # 677-689
        return {"user_created": self.user_created, "tn_id": self.tn_id, "state": self.state,
                "date_created_utc": self.date_created_utc, "deployment_site": self.deployment_site,
                "directory_path": self.directory_path, "library_https_url": LIBRARY_URL,
                "library_commit_id": self.library_commit_id, "sites_https_url": "(the sites repository)",
                "sites_commit_id": self.sites_commit_id}

    def to_dict_full(self) -> dict[str, Any]:  # 691-709
        return {**self.to_dict_created_validated(), "raw_descriptor": self.raw_descriptor,
                "sorted_descriptor": self.raw_descriptor, "deployed_descriptor": self.deployed_descriptor,
                "report": self.report, "jenkins_deploy": self.jenkins_deploy, "jenkins_destroy": self.jenkins_destroy}


@dataclass
class SimManager:
    #: bearer token -> user name
    tokens: dict[str, str] = field(default_factory=dict)
    trial_networks: dict[str, SimTrialNetwork] = field(default_factory=dict)


def manager_of(site: SimSite) -> SimManager:
    if site.manager is None:
        site.manager = SimManager()
    manager: SimManager = site.manager
    return manager


def _json(status: int, payload: Any) -> Response:
    return status, {"Content-Type": "application/json"}, (json.dumps(payload) + "\n").encode()


def _message(status: int, text: str) -> Response:
    return _json(status, {"message": text})


def _log(tn: SimTrialNetwork, message: str, level: str = "INFO") -> None:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    tn.log.append(f"[{stamp}] - [4242] - [{level}] - {message}")


# the manager VM ----------------------------------------------------------------------------------


def manager_vm(site: SimSite) -> SimVm | None:
    """The live manager role VM (newest first)."""
    role = site.naming.role_manager
    found = [vm for vm in site.vms.values() if role_of(vm) == role and vm.state != VmState.DONE]
    return max(found, key=lambda vm: vm.id) if found else None


def _running(vm: SimVm) -> bool:
    return vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.RUNNING


#: the manager's port: gunicorn binds 0.0.0.0:TNLCM_PORT (conf/gunicorn_conf.py 11), 5000 in the
#: template environment (.env.template 127)
PORT = 5000


def serves(site: SimSite, host: str, port: int) -> bool:
    """Whether `host:port` is the manager's API (the manager VM's address, port 5000)."""
    if port != PORT:
        return False
    with site.lock:
        vm = manager_vm(site)
        return vm is not None and any(scalar(nic, "IP", "") == host for name, nic in vm.template
                                      if name == "NIC" and isinstance(nic, list))


def _listening(site: SimSite) -> bool:
    vm = manager_vm(site)
    return (vm is not None and _running(vm)
            and not scalar(vm.user_template, DB_ERROR_ATTRIBUTE, ""))


def _admin(site: SimSite, vm: SimVm) -> tuple[str, str]:
    context = first(vm.template, "CONTEXT")
    values = dict(context) if isinstance(context, list) else {}
    naming = site.naming
    user = naming.input_name(f"{naming.role_manager}_admin_user").upper()
    password = naming.input_name(f"{naming.role_manager}_admin_password").upper()
    return str(values.get(user, "")), str(values.get(password, ""))


# requests ----------------------------------------------------------------------------------------


def handle_manager(site: SimSite, method: str, full_path: str, headers: Any, body: bytes) -> Response:
    with site.lock:
        if not _listening(site):
            return DROP, {}, b""
    parts = urlsplit(full_path)
    path = parts.path[len(PREFIX):].rstrip("/")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    if method == "POST" and path == "/user/login":
        return _login(site, headers)
    user = _bearer(site, headers)
    if user is None:
        return _json(401, {"msg": "Missing or invalid Authorization Header"})
    if method == "POST" and path == "/trial-network":
        return _create(site, user, query, headers, body)
    if method == "GET" and path == "/trial-networks":
        with site.lock:
            return _json(200, {"trial_networks": [tn.to_dict_full() for tn in manager_of(site).trial_networks.values()]})
    segments = path.split("/")
    if len(segments) < 3 or segments[1] != "trial-networks":
        return _message(404, f"{parts.path} not found")
    tn_id, action = segments[2], "/".join(segments[3:])
    with site.lock:
        tn = manager_of(site).trial_networks.get(tn_id)
    if tn is None:  # every route, e.g. trial_network.py 536-539
        return _message(404, f"No trial network with identifier {tn_id} created by the user {user}")
    if method == "GET" and action == "":
        with site.lock:
            return _json(200, tn.to_dict_full())
    if method == "GET" and action == "log/content":
        with site.lock:
            return _json(200, {"log_content": "\n".join(tn.log) + "\n"})
    if method == "GET" and action == "report/content":
        with site.lock:
            if tn.state != "activated":  # 909-912
                return _message(400, f"Trial network with identifier {tn_id} is not possible to retrieve the report. "
                                "Only trial networks with status activated can retrieve the report. Current status: "
                                f"{tn.state}")
            return _json(200, {"report_content": tn.report})
    if method == "PUT" and action == "activate":
        return _activate(site, tn)
    if method == "DELETE" and action == "destroy":
        return _destroy(site, tn)
    if method == "DELETE" and action == "purge":
        return _purge(site, tn)
    return _message(405, "The method is not allowed for the requested URL.")


def _login(site: SimSite, headers: Mapping[str, str]) -> Response:
    auth = headers.get("Authorization", "")
    username = password = ""
    if auth.lower().startswith("basic "):
        try:
            username, _, password = base64.b64decode(auth[6:]).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            username = password = ""
    if not username or not password:  # user.py 98-99
        return _message(401, f"Could not verify user {username or None}")
    with site.lock:
        vm = manager_vm(site)
        admin, admin_password = _admin(site, vm) if vm is not None else ("", "")
        if username != admin:  # 100-102
            return _message(404, "User not found")
        if not admin_password or not secrets.compare_digest(password, admin_password):  # 103, 116
            return _message(401, f"Could not verify user {username}")
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        manager_of(site).tokens[access] = username
        return _json(201, {"access_token": access, "refresh_token": refresh})  # 112-115


def _bearer(site: SimSite, headers: Mapping[str, str]) -> str | None:
    auth = headers.get("Authorization", "")
    if not auth.startswith("Bearer "):
        return None
    with site.lock:
        return manager_of(site).tokens.get(auth[7:].strip())


def _form(headers: Mapping[str, str], body: bytes) -> dict[str, tuple[str, bytes]]:
    """multipart/form-data -> name -> (file name, bytes)."""
    content_type = headers.get("Content-Type", "")
    if not content_type.startswith("multipart/form-data"):
        return {}
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    fields: dict[str, tuple[str, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            payload = part.get_payload(decode=True)
            fields[name] = (part.get_filename() or "", payload if isinstance(payload, bytes) else b"")
    return fields


def _create(site: SimSite, user: str, query: dict[str, str], headers: Mapping[str, str], body: bytes) -> Response:
    validate = query.get("validate")
    form = _form(headers, body)
    text = {k: v[1].decode("utf-8", "replace") for k, v in form.items() if k != "descriptor"}
    missing = [n for n in ("library_reference_type", "library_reference_value") if not text.get(n)]
    if "descriptor" not in form:
        missing.insert(0, "descriptor")
    if validate not in ("True", "False"):
        missing.append("validate")
    if missing or text.get("library_reference_type") not in ("branch", "commit", "tag"):
        # flask-restx reqparse (trial_network.py 215-273): assumed wording of the library
        return _json(400, {"errors": {n: "Missing required parameter" for n in missing} or
                           {"library_reference_type": "The value is not one of branch, commit, tag"},
                           "message": "Input payload validation failed"})
    tn_id = text.get("tn_id", "")
    file_name, raw = form["descriptor"]
    with site.lock:
        manager = manager_of(site)
        tn = manager.trial_networks.get(tn_id) if tn_id else None
        if tn is not None and validate == "True" and tn.state != "created":  # 379-382
            return _message(400, f"Trial network with identifier {tn_id} is not possible to validate. Only trial "
                            f"networks with status created can be validated. Current status: {tn.state}")
        if tn is not None and validate == "False":
            return _message(409, f"Trial network with tn_id {tn_id} already exists")  # model 109-112
        if tn_id and not tn_id[0].isalpha():  # model 113-116
            return _message(400, "The tn_id has to start with a character (a-z)")
        if len(tn_id) > 15:  # model 58 (max_length 15): mongoengine refuses the save, a 500 (assumed wording)
            return _message(500, "ValidationError (TrialNetworkModel:None) (String value is too long: ['tn_id'])")
        if not file_name.lower().endswith((".yaml", ".yml")):  # model 146-150
            return _message(422, "Invalid descriptor format. Only 'yml' or 'yaml' files will be further processed")
        try:
            descriptor = _load_yaml(raw.decode("utf-8")) or {}
        except (YAMLError, UnicodeDecodeError) as error:
            return _message(422, f"Trial network descriptor is not valid YAML: {error}")
        if tn is None:
            tn_id = tn_id or "t" + secrets.token_hex(2)[:3]  # set_tn_id(size=3): a letter and 3 characters
            tn = SimTrialNetwork(tn_id, user, "created", datetime.now(timezone.utc).isoformat(),
                                 descriptor if isinstance(descriptor, dict) else {})
            manager.trial_networks[tn_id] = tn
        tn.library_reference = text["library_reference_value"]
        tn.library_commit_id = _rev(site.library_repo, text["library_reference_value"]) or ""
        if validate == "False":
            _log(tn, "Trial network created. In this state, the trial network has not been validated and cannot be "
                 "deployed")
            return _json(201, tn.to_dict_created())  # 363-368
        branch, directory = text.get("sites_branch", ""), text.get("deployment_site", "")
        token = text.get("deployment_site_token", "")
        if not branch or not directory or not token:  # 415-418
            return _message(400, "All parameters are required when validate=True")
        tn.state = "validating"
        _log(tn, "Trial network validating. In this transition, the trial network descriptor is going to be validated")
    problem = _validate(site, tn, branch, directory, token)
    with site.lock:
        if problem is not None:  # 476-485: back to created
            tn.state = "created"
            return _message(*problem)
        tn.state = "validated"
        tn.sites_branch, tn.deployment_site = branch, directory
        _log(tn, "Trial network validated. In this state, the trial network descriptor has been validated and is ready "
             "to be deployed")
        return _json(201, tn.to_dict_created_validated())


def _load_yaml(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def _rev(repo: Any, ref: str) -> str | None:
    import subprocess

    if repo is None:
        return None
    for candidate in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}"):
        done = subprocess.run(["git", "--git-dir", str(repo), "rev-parse", "--verify", "-q", f"{candidate}^{{commit}}"],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode == 0:
            return done.stdout.strip()
    return None


def _git_show(repo: Any, ref: str, path: str) -> str | None:
    import subprocess

    done = subprocess.run(["git", "--git-dir", str(repo), "show", f"{ref}:{path}"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    return done.stdout if done.returncode == 0 else None


def _validate(site: SimSite, tn: SimTrialNetwork, branch: str, directory: str, token: str) -> tuple[int, str] | None:
    """The validation's checks, in its order (trial_network.py 422-469); (status, message) of the first failing."""
    if not tn.library_commit_id:  # the library's checkout of the reference fails (assumed wording)
        return 404, f"Reference {tn.library_reference} not found in the library repository"
    sites_commit = _rev(site.sites_repo, branch)
    if sites_commit is None:  # the sites repository's checkout (assumed wording)
        return 404, f"Branch {branch} not found in the sites repository"
    tn.sites_commit_id = sites_commit
    encrypted = _git_show(site.sites_repo, sites_commit, f"{directory}/core.yaml")
    if encrypted is None:  # sites_handler.py 125-139
        return 404, f"Branch {branch} does not have the directory {directory}"
    from ansible.errors import AnsibleError
    from ansible.parsing.vault import VaultLib, VaultSecret

    try:
        plain = VaultLib([("default", VaultSecret(token.encode()))]).decrypt(encrypted)
    except AnsibleError:
        return 500, "Decryption failed (no vault secrets were found that could decrypt)"
    try:
        config = _load_yaml(plain.decode("utf-8")) or {}
    except (YAMLError, UnicodeDecodeError) as error:
        return 500, f"core.yaml is not valid YAML: {error}"

    tn.site_config = config if isinstance(config, dict) else {}
    descriptor = tn.raw_descriptor.get("trial_network") if tn.raw_descriptor else None
    if not tn.raw_descriptor:  # model 536-539
        return 422, "Trial network descriptor is empty"
    if not isinstance(descriptor, dict):  # 540-544
        return 422, "Trial network descriptor does not contain the trial_network key at the beginning"
    if not descriptor:  # 545-549
        return 422, "Trial network descriptor does not contain any entity"
    types = {str(e.get("type")) for e in descriptor.values() if isinstance(e, dict)}
    if "tn_init" not in types and not {"tn_vxlan", "tn_bastion"} <= types:  # 550-556
        return 422, "Trial network descriptor does not contain the mandatory entities tn_init or tn_vxlan and tn_bastion"
    available = tn.site_config.get(site.naming.site_variables_key)
    for name in types:  # sites_handler.py 104-116
        if not isinstance(available, dict) or not available:
            return 404, f"No components available in deployment site {directory}"
        if name not in available:
            return 404, f"Component {name} not found in deployment site {directory}"
    return None


# the pipelines -----------------------------------------------------------------------------------


def _wait_sim(site: SimSite, sim_seconds: float, until: Any = None) -> bool:
    """Let `sim_seconds` of simulated time pass (or `until()` become true), running the site's
    events; False when the real-time limit passed first."""
    deadline = time.monotonic() + PIPELINE_LIMIT
    end = time.monotonic() + sim_seconds * site.config.time_scale
    while time.monotonic() < deadline:
        site.advance()
        with site.lock:
            if until is not None and until():
                return True
        if until is None and time.monotonic() >= end:
            return True
        time.sleep(0.02)
    return False


def _activate(site: SimSite, tn: SimTrialNetwork) -> Response:
    from tui.sim.lifecycle import instantiate_vm_template

    with site.lock:
        if tn.state not in ACTIVATE_FROM:  # 585-593
            return _message(400, f"Trial network with identifier {tn.tn_id} is not possible to activate. Only trial "
                            "networks with status validated, failed-activation or destroyed can be activated. Current "
                            f"status: {tn.state}")
        pipeline = f"{PIPELINE_DIRECTORY}/{DEPLOY_PIPELINE}_{tn.tn_id}"
        tn.jenkins_deploy = {"pipeline_name": pipeline, "pipeline_url": f"(the automation server)/job/{pipeline}",
                             "builds": {}}
        tn.state = "activating"  # 625
        _log(tn, "Trial network activating. In this transition, the trial network proceeds to the deployment of the "
             "components defined in the descriptor")
        faults = site.faults
        slow, failure, held = faults.manager_activation_seconds, faults.manager_fail_activation, faults.manager_hold
        entities = dict((tn.raw_descriptor.get("trial_network") or {}).items())
    for number, (entity, data) in enumerate(entities.items(), start=1):
        with site.lock:
            _log(tn, f"Start deployment of entity {entity} in {tn.deployment_site} site")  # jenkins_handler.py 151-153
            console = ["Started by user tnlcm", f"[Pipeline] {pipeline} #{number} deploying {entity}"]
            try:
                if isinstance(data, dict) and data.get("type") in ("tn_init", "tn_vxlan"):
                    vnet = _create_vxlan(site, tn)
                    console.append(f"terraform: one_virtual_network.{entity}: created (id {vnet.id}, {vnet.name})")
                if isinstance(data, dict) and data.get("type") in ("tn_init", "tn_bastion"):
                    template_id = int((tn.site_config.get(site.naming.site_variables_key, {}).get("tn_bastion") or {})
                                      .get("template_id", -1))
                    nics: Template = [("NIC", [("NETWORK_ID", str(i))]) for i in
                            [_default_network(tn), *tn.vnet_ids[-1:]]]
                    uid, gid = _automation_owner(site)
                    vm = instantiate_vm_template(site, template_id, f"{tn.tn_id}-tn_bastion", nics, uid, gid)
                    tn.vm_ids.append(vm.id)
                    console.append(f"terraform: one_virtual_machine.{entity}: created (id {vm.id}, {vm.name})")
            except Exception as error:  # noqa: BLE001 - the pipeline fails with what terraform said
                console.append(f"terraform: Error: {error}")
                return _fail_activation(site, tn, pipeline, entity, console)
        vm_ids = list(tn.vm_ids)
        if held is not None:
            held.wait(HOLD_LIMIT_S)
        booted = _wait_sim(site, PIPELINE_SECONDS + slow, None) and _wait_sim(
            site, 0, lambda vm_ids=vm_ids: all(_running(site.vms[i]) or site.vms[i].lcm_state in FAILURE_LCM_STATES
                                 for i in vm_ids if i in site.vms))
        with site.lock:
            broken = [i for i in vm_ids if i in site.vms and not _running(site.vms[i])]
            if not booted or broken:
                console.append(f"ansible: VM {broken or vm_ids} did not reach RUNNING")
                return _fail_activation(site, tn, pipeline, entity, console)
            if failure:
                console.append(failure)
                return _fail_activation(site, tn, pipeline, entity, console)
            console.append("Finished: SUCCESS")
            tn.jenkins_deploy["builds"][entity] = {"build_number": number, "build_console": "\n".join(console)}
            _log(tn, _console_block(entity, tn.deployment_site, console))
    with site.lock:
        tn.deployed_descriptor = tn.raw_descriptor
        tn.report = _report(site, tn)
        tn.state = "activated"  # 631
        _log(tn, "Trial network activated. In this state, the trial network has been deployed and is ready to be used")
        return _message(200, f"Trial network with identifier {tn.tn_id} activated. The trial network deployment "
                        "generates a report file showing the information of the components that have been deployed")


def _console_block(entity: str, site_name: str, console: list[str]) -> str:
    rule = "-" * 114  # jenkins_handler.py 215-220
    return (f"Pipeline response for the deployment of the entity {entity} in {site_name} site\n{rule}\n"
            + "\n".join(console) + f"\n{rule}")


def _fail_activation(site: SimSite, tn: SimTrialNetwork, pipeline: str, entity: str, console: list[str]) -> Response:
    """jenkins_handler.py 225-234 (the console is the error), trial_network.py 646-652."""
    console.append("Finished: FAILURE")
    block = _console_block(entity, tn.deployment_site, console)
    _log(tn, block)
    tn.state = "failed-activation"
    _log(tn, "Trial network failed-activation. In this state, the trial network is waiting to be deployed")
    return _message(500, block)


def _default_network(tn: SimTrialNetwork) -> int:
    networks = tn.site_config.get("site_networks_id") or {}
    try:
        return int(networks.get("default", 0)) if isinstance(networks, dict) else 0
    except (TypeError, ValueError):
        return 0


def _automation_owner(site: SimSite) -> tuple[int, int]:
    """The automation cloud user the pipeline deploys as (the toolkit's input), else oneadmin."""
    naming = site.naming
    name_input = naming.input_name(f"{naming.role_automation}_cloud_username")
    for doc in site.documents.values():
        if doc.type == SERVICE_DOCUMENT:
            name = input_values(doc.body).get(name_input)
            user = site.user_by_name(name) if name else None
            if user is not None:
                return user.id, user.gid
    return 0, 0


def _create_vxlan(site: SimSite, tn: SimTrialNetwork) -> SimVnet:
    vnet_id = max(site.vnets, default=-1) + 1
    phydev = str(tn.site_config.get("site_vxlan_if") or "br-mgmt")
    vnet = SimVnet(vnet_id, f"{tn.tn_id}-tn_vxlan", f"onebr.{1000 + vnet_id}", "vxlan",
                   [("BRIDGE", f"onebr.{1000 + vnet_id}"), ("PHYDEV", phydev), ("VN_MAD", "vxlan"),
                    ("DESCRIPTION", f"trial network {tn.tn_id}"),
                    ("GUEST_MTU", str(tn.site_config.get("site_vxlan_guest_mtu") or 1450))],
                   [SimAddressRange(0, "192.168.199.1", f"02:00:c0:a8:{vnet_id % 256:02x}:01", 254)],
                   phydev=phydev, vlan_id=str(1000 + vnet_id))
    site.vnets[vnet_id] = vnet
    tn.vnet_ids.append(vnet_id)
    return vnet


def _report(site: SimSite, tn: SimTrialNetwork) -> str:
    lines = [f"# Trial network {tn.tn_id}", "", f"Deployment site: {tn.deployment_site}", ""]
    for vnet_id in tn.vnet_ids:
        vnet = site.vnets.get(vnet_id)
        if vnet is not None:
            lines.append(f"- tn_vxlan: network {vnet.id} `{vnet.name}` on {vnet.phydev}")
    for vm_id in tn.vm_ids:
        vm = site.vms.get(vm_id)
        if vm is not None:
            lines.append(f"- tn_bastion: VM {vm.id} `{vm.name}`")
    return "\n".join(lines) + "\n"


def _destroy(site: SimSite, tn: SimTrialNetwork) -> Response:
    from tui.sim.lifecycle import vm_action

    with site.lock:
        if tn.state not in DESTROY_FROM:  # 693-701
            return _message(400, f"Trial network with identifier {tn.tn_id} is not possible to destroy. Only trial "
                            "networks with status activated, failed-activation or failed-destruction can be destroyed. "
                            f"Current status: {tn.state}")
        pipeline = f"{PIPELINE_DIRECTORY}/{DESTROY_PIPELINE}_{tn.tn_id}"
        tn.jenkins_destroy = {"pipeline_name": pipeline, "pipeline_url": f"(the automation server)/job/{pipeline}"}
        tn.state = "destroying"  # 726
        _log(tn, "Trial network destroying. In this transition, the trial network proceeds to the destruction of the "
             "components")
        vm_ids = [i for i in tn.vm_ids if i in site.vms and site.vms[i].state != VmState.DONE]
        for vm_id in vm_ids:
            vm_action(site, "terminate-hard", vm_id)
    done = _wait_sim(site, 0, lambda: all(site.vms[i].state == VmState.DONE for i in vm_ids if i in site.vms))
    with site.lock:
        if not done:
            tn.state = "failed-destruction"  # 744-757
            _log(tn, "Trial network failed-destruction. In this state, the trial network is waiting to be destroyed")
            return _message(500, f"VMs {vm_ids} were not terminated")
        for vnet_id in tn.vnet_ids:
            site.vnets.pop(vnet_id, None)
        tn.vm_ids, tn.vnet_ids = [], []
        tn.state = "destroyed"  # 736
        _log(tn, "Trial network destroyed. In this state, the trial network has been destroyed and ready for deploy "
             "again")
        return _message(200, f"Trial network with identifier {tn.tn_id} destroyed. In this state, the trial network "
                        "has been destroyed and ready for deploy again")


def _purge(site: SimSite, tn: SimTrialNetwork) -> Response:
    with site.lock:
        if tn.state not in PURGE_FROM:  # 863-867
            return _message(400, f"Trial network with identifier {tn.tn_id} is not possible to purge. Only trial "
                            "networks with status validated, destroyed or created can be purged. Current status: "
                            f"{tn.state}")
        manager_of(site).trial_networks.pop(tn.tn_id, None)  # 874-875
        return _message(200, f"Trial network with identifier {tn.tn_id} has been purged. In this state, the trial "
                        "network has been deleted and cannot be recovered")


#: the deployed scenario's host whose CPU runs the manager's database (AVX, tui/sim/scenarios.py)
DATABASE_HOST = "kvm-cascadelake-01"


def ready_manager_step(site: SimSite) -> bool:
    """One step of moving the manager VM to a host whose CPU runs its database, as the setup's
    database-host step does (undeploy, then deploy there); True once it reports READY. Called
    repeatedly as the site's clock advances (tests, screenshot scenes)."""
    from tui.sim.lifecycle import deploy_vm, vm_action

    with site.lock:
        vm = manager_vm(site)
        if vm is None:
            return False
        if any(key == "READY" for key, _ in vm.user_template):
            return True
        host = next(h.id for h in site.hosts.values() if h.name == DATABASE_HOST)
        on_host = bool(vm.history) and vm.history[-1].host_id == host
        if vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.RUNNING and not on_host:
            vm_action(site, "undeploy", vm.id)
        elif vm.state == VmState.UNDEPLOYED:
            deploy_vm(site, vm.id, host)
    return False

