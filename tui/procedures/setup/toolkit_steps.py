"""The setup checklist's toolkit steps, decided from `setup_facts`: the automation cloud user, the
download and its attributes, the inputs, the service, the recorded VMs and key, the grant, the
database VMs' hosts and the object store's disk (`tui.procedures.setup.steps` lists every step in
order)."""

from __future__ import annotations

import shlex

from tui.domain.attribute_file import installed_version_from_image_template
from tui.domain.deployed_inputs import input_differences
from tui.domain.disk_size import format_mb, human_mb
from tui.domain.images import ImageInfo
from tui.domain.input_site import Outcome
from tui.domain.one_states import SERVICE_FAILED_STATES
from tui.domain.services import SERVICE_RUNNING
from tui.domain.setup_steps import (
    SetupStep,
    StepId,
    StepState,
)
from tui.domain.severity import Severity
from tui.domain.versions import ApplianceVersion, newest, parse_version
from tui.errors import SiteError
from tui.procedures.setup.facts import SetupFacts
from tui.procedures.setup.preflight_steps import toolkit_app
from tui.procedures.setup.step_forms import blocked as _blocked
from tui.procedures.setup.step_forms import run_command as _run
from tui.procedures.setup.step_forms import step as _step
from tui.procedures.setup.step_forms import unknown as _unknown
from tui.procedures.site_record import REBUILD_COMMAND
from tui.procedures.toolkit.objectstore_disk import RESIZABLE, disk_plan

#: VM states a move (operation 7) can start from (tui.procedures.hosts.move_vm)
MOVABLE_STATES = frozenset({"RUNNING", "POWEROFF", "UNDEPLOYED"})


def cloud_user_step(facts: SetupFacts) -> SetupStep:
    title = "Automation cloud user"
    name = facts.target.cloud_username
    field = facts.naming.input_name(f"{facts.naming.role_automation}_cloud_username")
    if not name:
        return _blocked(StepId.CLOUD_USER, title, StepId.INPUTS, f"Name the user in {field} of the input file.")
    if facts.users is None:
        return _unknown(StepId.CLOUD_USER, title, "the users")
    user = next((u for u in facts.users if u.name == name), None)
    if user is None:
        return _step(StepId.CLOUD_USER, title, StepState.TODO, (f"no user {name} ({field}, {facts.target.source})",),
                     f"Create {name}, its group and the group's ACL as the installer does.",
                     command=_run(StepId.CLOUD_USER))
    evidence = [f"user {user.id} {user.name}, group {user.gname}, {'enabled' if user.enabled else 'DISABLED'}"]
    if not user.enabled:
        return _step(StepId.CLOUD_USER, title, StepState.FAILED, evidence, f"Enable it: oneuser enable {user.name}")
    login = facts.cloud_login
    if login is not None:
        said = f"login with {login.name}: {login.found}"
        if login.outcome is Outcome.FAILED:
            return _step(StepId.CLOUD_USER, title, StepState.FAILED, evidence + [said],
                         f"{login.fix[:1].upper()}{login.fix[1:]}, in the input file (or when asked).")
        evidence.append(said if login.outcome is Outcome.PASSED else f"login not checked: {login.found}")
    return _step(StepId.CLOUD_USER, title, StepState.DONE, evidence)


def _tagged(image: ImageInfo, facts: SetupFacts) -> bool:
    naming = facts.naming
    return bool(image.attributes.get(naming.appliance_name_attribute)
                and image.attributes.get(naming.appliance_version_attribute)
                and image.attributes.get(naming.appliance_software_version_attribute))


def download_step(facts: SetupFacts) -> SetupStep:
    title = "Toolkit appliance downloaded"
    name = facts.naming.toolkit_appliance_name
    if facts.toolkit_templates is None:
        return _unknown(StepId.DOWNLOAD, title, "the service templates")
    app = toolkit_app(facts)
    if facts.toolkit_templates:
        # its images are the evidence: a download is never done on images that could not be read
        if facts.images is None:
            return _unknown(StepId.DOWNLOAD, title, "the images")
        if facts.toolkit_image_ids is None:
            return _unknown(StepId.DOWNLOAD, title, "the toolkit's VM templates (which name its images)")
        template = facts.toolkit_templates[0]
        evidence = [f"service template {template.id} {template.name}"]
        images = {i.id: i for i in facts.images}
        ids = facts.toolkit_image_ids
        if not ids:
            return _step(StepId.DOWNLOAD, title, StepState.FAILED, evidence + ["its VM templates name no image"],
                         "Delete the incomplete download (its VM templates and service template) and download again.",
                         command=_run(StepId.DOWNLOAD))
        missing = [i for i in ids if i not in images]
        if missing:
            return _step(StepId.DOWNLOAD, title, StepState.FAILED,
                         evidence + [f"image(s) {', '.join(map(str, missing))} of its VM templates do not exist"],
                         "Delete the incomplete download (its VM templates and service template) and download again.",
                         command=_run(StepId.DOWNLOAD))
        not_ready = [images[i] for i in ids if i in images and not images[i].usable]
        if not_ready:
            states = ", ".join(f"image {i.id} {i.status}" for i in not_ready)
            failed = [i for i in not_ready if i.status == "ERROR"]
            return _step(StepId.DOWNLOAD, title, StepState.FAILED if failed else StepState.TODO, evidence + [states],
                         ("Delete the failed download (its images, VM templates and service template) and download "
                          "again." if failed else "The images are still downloading: wait, then refresh."),
                         command=_run(StepId.DOWNLOAD))
        evidence.append(f"{len(ids)} image(s) usable: {', '.join(f'{i} {images[i].status}' for i in ids if i in images)}")
        installed = downloaded_build(facts)
        best = newest_listed(facts)
        if installed is None or best is None:
            evidence.append("its build is not compared with the marketplaces' newest: "
                            + ("its images carry no version attributes yet (the next step)" if installed is None
                               else "no marketplace listing of it was read"))
            return _step(StepId.DOWNLOAD, title, StepState.DONE, evidence)
        version, where = best
        older = version.newer_than(installed)
        upgrade = f"sitetk market upgrades --only {shlex.quote(name)}"
        if older:
            evidence.append(f"older build: {installed.label} is downloaded; {version.label} is available ({where}). "
                            f"Upgrade: `{upgrade}` shows the plan, with `--apply --datastore ID` it downloads the "
                            "new build and removes the old one")
        else:
            evidence.append(f"build {installed.label}: the newest the marketplaces list")
        return _step(StepId.DOWNLOAD, f"{title} (an older build)" if older else title, StepState.DONE, evidence,
                     data={"installed": installed.raw, "newest": version.raw, "older": older,
                           "upgrade": upgrade if older else ""})
    if app is None:
        return _blocked(StepId.DOWNLOAD, title, StepId.MARKETPLACES, f"No marketplace lists {name}.")
    evidence = [f"no service template of {name} in the cloud",
                f"the cloud's app {app.id} holds {app.version} (of {app.marketplace})"]
    best = newest_listed(facts)
    if best is not None and best[0].newer_than(parse_version(app.version)):
        evidence.append(f"older build: {best[0].label} is available ({best[1]}); the cloud's app holds "
                        f"{app.version}: download that build by its key (`sitetk market download` with it) or let "
                        "the cloud import it (the marketplace screen's cloud app row says why it does not)")
    return _step(StepId.DOWNLOAD, title, StepState.TODO, evidence,
                 f"Export {name} {app.version} (app {app.id}) into an IMAGE datastore: "
                 f"onemarketapp export {app.id} '<name>' --datastore <id>", command=_run(StepId.DOWNLOAD))


def downloaded_build(facts: SetupFacts) -> ApplianceVersion | None:
    """The newest build the downloaded toolkit's images carry (their version attributes; None: untagged)."""
    images = {i.id: i for i in facts.images or ()}
    versions = []
    for image_id in facts.toolkit_image_ids or ():
        tag = installed_version_from_image_template(images[image_id].attributes, facts.naming) \
            if image_id in images else None
        if tag is not None and tag.name == facts.naming.toolkit_appliance_name and (tag.stamp or tag.software_version):
            versions.append(tag.version)
    return newest(versions)


def newest_listed(facts: SetupFacts) -> tuple[ApplianceVersion, str] | None:
    """The newest toolkit build any marketplace lists (the HTTP listings, `sitetk market list`, and
    the cloud's app), compared as `sitetk market upgrades` compares (`ApplianceVersion`), with where."""
    name = facts.naming.toolkit_appliance_name
    found = [(e.record.parsed_version, f"{e.source.name}, {e.key}") for e in (facts.catalog.entries if facts.catalog else ())
             if e.record.name == name]
    app = toolkit_app(facts)
    if app is not None:
        found.append((parse_version(app.version), f"the cloud's app {app.id}"))
    return max(found, key=lambda f: (f[0].semantic_key(), f[0].raw)) if found else None


def tagged_step(facts: SetupFacts) -> SetupStep:
    title = "Toolkit images tagged"
    if facts.toolkit_templates and (facts.toolkit_image_ids is None or facts.images is None):
        return _unknown(StepId.TAGGED, title, "the toolkit's images")
    if not facts.toolkit_image_ids or facts.images is None:
        return _blocked(StepId.TAGGED, title, StepId.DOWNLOAD, "Download the toolkit first.")
    images = {i.id: i for i in facts.images}
    untagged = [i for i in facts.toolkit_image_ids if i not in images or not _tagged(images[i], facts)]
    attr = facts.naming.appliance_name_attribute
    if untagged:
        return _step(StepId.TAGGED, title, StepState.TODO,
                     (f"images without the marketplace attributes: {', '.join(map(str, untagged))}",),
                     "Attach the appliance's attributes (oneimage update <id> <file> --append).",
                     command=_run(StepId.TAGGED))
    return _step(StepId.TAGGED, title, StepState.DONE,
                 tuple(f"image {i} {images[i].name}: {attr}={images[i].attributes.get(attr)!r} "
                       f"{images[i].attributes.get(facts.naming.appliance_software_version_attribute)}"
                       for i in facts.toolkit_image_ids))


def input_problems(facts: SetupFacts) -> tuple[str, ...]:
    """Errors of the input file against the toolkit's form (secrets left out are asked later)."""
    form, target = facts.form, facts.target
    if form is None or not target.input_path:
        return ()
    values = dict(target.values)
    problems = form.problems(target.instance_name, values, dict(target.networks))
    return tuple(f"{p.name}: {p.message}" for p in problems if p.severity is Severity.ERROR
                 and not (p.name in form.secrets and p.message == "required" and not values.get(p.name)))


def inputs_step(facts: SetupFacts) -> SetupStep:
    title = "Inputs filled and checked"
    if facts.service is not None and not facts.target.input_path:
        return _step(StepId.INPUTS, title, StepState.DONE,
                     (f"toolkit service {facts.service.id} was instantiated with its inputs",))
    if not facts.target.input_path and facts.toolkit_templates == ():
        # the form (console) and `sitetk toolkit inputs` are built from the toolkit's service template
        return _step(StepId.INPUTS, title, StepState.BLOCKED, ("no input file given",),
                     "The inputs are written from the toolkit's service template: download the toolkit first.",
                     blocked_by=StepId.DOWNLOAD.value)
    if not facts.target.input_path:
        return _step(StepId.INPUTS, title, StepState.TODO, ("no input file given",),
                     "Write the input file (`sitetk toolkit inputs --output FILE`), fill it, and pass it with --input.")
    if facts.form is None and facts.toolkit_templates is None:
        return _unknown(StepId.INPUTS, title, "the toolkit's service template (the inputs are checked against it)")
    if facts.form is None:
        return _step(StepId.INPUTS, title, StepState.BLOCKED, (f"input file {facts.target.input_path}",),
                     "The inputs are checked against the toolkit's service template: download the toolkit first.",
                     blocked_by=StepId.DOWNLOAD.value)
    problems = input_problems(facts)
    evidence = [f"input file {facts.target.input_path} checked against service template {facts.form.template.id}"]
    report = facts.input_checks
    if report is not None:
        user_field = facts.naming.input_name(f"{facts.naming.role_automation}_cloud_username")
        # the cloud user's existence is the cloud-user step's (which creates it); the rest are the inputs'
        site_errors = [c for c in report.errors if c.name != user_field]
        problems += tuple(f"{c.name}: {c.message}" for c in site_errors)
        evidence.append(f"against the site ({report.summary()})")
        evidence += [f"not checked: {c.name}: {c.found}" for c in report.skipped]
        evidence += [f"warning: {c.name}: {c.message}" for c in report.failed if c.severity is not Severity.ERROR]
    if problems:
        return _step(StepId.INPUTS, title, StepState.FAILED, evidence + list(problems),
                     f"Fix these in {facts.target.input_path} (`sitetk toolkit validate FILE` shows each).")
    return _step(StepId.INPUTS, title, StepState.DONE, evidence)


def instantiate_step(facts: SetupFacts) -> SetupStep:
    title = "Toolkit instantiated and RUNNING"
    if not facts.services_known:
        return _unknown(StepId.INSTANTIATE, title, "the services")
    service = facts.service
    if service is None:
        if not facts.toolkit_templates:
            return _blocked(StepId.INSTANTIATE, title, StepId.DOWNLOAD, "Download the toolkit first.")
        return _step(StepId.INSTANTIATE, title, StepState.TODO, ("no toolkit service (not DONE) in OneFlow",),
                     "Instantiate the toolkit's service template with the input file "
                     "(oneflow-template instantiate <id> <file>).", command=_run(StepId.INSTANTIATE))
    roles = ", ".join(f"{r.name} {r.state_name}" for r in service.roles)
    evidence = [f"service {service.id} {service.name}: {service.state_name}", f"roles: {roles}"]
    target = facts.target
    if target.input_path:
        differences = input_differences(service.input_values, target.values, facts.naming)
        if differences:
            return _step(StepId.INSTANTIATE, title, StepState.FAILED,
                         evidence + [f"deployed with other inputs than {target.input_path}:"]
                         + [d.text() for d in differences],
                         f"Service {service.id} is not the toolkit this input file describes. Remove it (`oneflow "
                         f"delete {service.id}`, its VMs go with it) and run the setup again to deploy from the file, "
                         "or set up with the input file it was deployed with.")
        evidence.append(f"deployed with the input file's cloud user, sites branch and endpoints ({target.input_path})")
    if service.state in SERVICE_FAILED_STATES:
        return _step(StepId.INSTANTIATE, title, StepState.FAILED, evidence,
                     f"Read its log (oneflow show {service.id}), fix the cause, then remove it "
                     f"(oneflow recover --delete {service.id}) and run again.")
    if service.state != SERVICE_RUNNING:
        return _step(StepId.INSTANTIATE, title, StepState.TODO, evidence,
                     "The service is deploying: follow it until RUNNING.", command=_run(StepId.INSTANTIATE))
    return _step(StepId.INSTANTIATE, title, StepState.DONE, evidence)


def record_step(facts: SetupFacts) -> SetupStep:
    title = "VMs and automation key recorded"
    service = facts.service
    if service is None:
        return _blocked(StepId.RECORD, title, StepId.INSTANTIATE, "Instantiate the toolkit first.")
    ips = {vm.id: vm.ips for vm in facts.vms or ()}
    evidence = [f"{r.name}: " + (", ".join(f"VM {v} {'/'.join(ips.get(v, ())) or '(no address)'}" for v in r.vm_ids)
                                 or "no VM yet") for r in service.roles]
    if facts.site_record_problem:
        # the VMs are in the cloud, but `toolkit vms` and `toolkit key` read the console's record of them
        return _step(StepId.RECORD, title, StepState.FAILED, evidence + [facts.site_record_problem],
                     f"Rebuild the site record from the cloud: `{REBUILD_COMMAND} --service {service.id}`.",
                     command=f"{REBUILD_COMMAND} --service {service.id}")
    if facts.automation_key_problem:
        return _step(StepId.RECORD, title, StepState.FAILED, evidence + [facts.automation_key_problem],
                     "The automation VM published something that is not a key: check the appliance's log.")
    if facts.automation_key is None:
        return _unknown(StepId.RECORD, title, "the automation VM")
    if not facts.automation_key:
        return _step(StepId.RECORD, title, StepState.TODO, evidence + ["the automation VM has not published its key yet"],
                     "Wait for the automation VM to publish its key.", command=_run(StepId.RECORD))
    return _step(StepId.RECORD, title, StepState.DONE, evidence + [f"automation key {_short_key(facts.automation_key)}"])


def _short_key(line: str) -> str:
    parts = line.split()
    return f"{parts[0]} …{parts[1][-12:]}" if len(parts) > 1 else line[:20]


def grant_step(facts: SetupFacts) -> SetupStep:
    title = "Key granted to the cloud user"
    if not facts.automation_key:
        return _blocked(StepId.GRANT, title, StepId.RECORD, "The automation VM's key is not published yet.")
    name = facts.target.cloud_username
    if facts.users is None:
        return _unknown(StepId.GRANT, title, "the users")
    user = next((u for u in facts.users if u.name == name), None)
    if user is None:
        return _blocked(StepId.GRANT, title, StepId.CLOUD_USER, f"No cloud user {name or '(not named)'}.")
    if user.has_key(facts.automation_key):
        return _step(StepId.GRANT, title, StepState.DONE,
                     (f"user {user.name} has the automation key in SSH_PUBLIC_KEY ({len(user.ssh_public_keys)} key(s))",))
    return _step(StepId.GRANT, title, StepState.TODO, (f"user {user.name} lacks the automation key",),
                 f"Add it to SSH_PUBLIC_KEY (oneuser update {user.name} <file> --append).", command=_run(StepId.GRANT))


def database_host_step(facts: SetupFacts) -> SetupStep:
    title = "Document-database VMs on compatible hosts"
    service = facts.service
    if service is None:
        return _blocked(StepId.DATABASE_HOST, title, StepId.INSTANTIATE, "Instantiate the toolkit first.")
    if facts.inventory is None:
        return _unknown(StepId.DATABASE_HOST, title, "the hosts")
    rows = facts.inventory.db_vms
    if not rows:
        return _blocked(StepId.DATABASE_HOST, title, StepId.INSTANTIATE, "The manager VM does not exist yet.")
    evidence = [f"VM {r.id} {r.name} on {r.host_name or '(no host)'} with {r.cpu_model or 'the default CPU model'}: "
                f"{r.verdict.kind.value}{f' ({r.verdict.reason})' if r.verdict.reason else ''}" for r in rows]
    unplaced = [r for r in rows if r.host_id is None]
    flagged = [r for r in rows if r.flagged and r.host_id is not None]
    settling = [r for r in flagged if r.vm.summary.status not in MOVABLE_STATES]
    if settling:
        return _blocked(StepId.DATABASE_HOST, title, StepId.INSTANTIATE,
                        f"The move starts once the VM is RUNNING: VM {settling[0].id} is {settling[0].vm.summary.status}.",
                        evidence)
    if flagged:
        ids = " ".join(str(r.id) for r in flagged)
        return _step(StepId.DATABASE_HOST, title, StepState.TODO, evidence,
                     f"Move them to a compatible host (`sitetk hosts move {ids}`; undeploy, CPU model, deploy).",
                     command=_run(StepId.DATABASE_HOST))
    if unplaced:
        return _blocked(StepId.DATABASE_HOST, title, StepId.INSTANTIATE, "Wait until the manager VM has a host.",
                        evidence)
    return _step(StepId.DATABASE_HOST, title, StepState.DONE, evidence)


def objectstore_disk_step(facts: SetupFacts) -> SetupStep:
    """Done only when disk0 of the object store VM, read from the VM, is at the wanted size or more
    (and no resize is under way); the growth is checked against its datastore's free space."""
    wanted = facts.target.objectstore_disk_mb
    title = f"Object store data disk at {format_mb(wanted)}"
    service = facts.service
    if service is None:
        return _blocked(StepId.OBJECTSTORE_DISK, title, StepId.INSTANTIATE, "Instantiate the toolkit first.")
    role = service.role(facts.naming.role_objectstore)
    if role is None or not role.vm_ids:
        return _blocked(StepId.OBJECTSTORE_DISK, title, StepId.INSTANTIATE, "The object store VM does not exist yet.")
    vm = facts.objectstore_vm
    if vm is None:
        return _unknown(StepId.OBJECTSTORE_DISK, title, f"the object store VM {role.vm_ids[0]}")
    try:
        plan = disk_plan(service.id, vm, facts.datastores, wanted)
    except SiteError as error:
        return _step(StepId.OBJECTSTORE_DISK, title, StepState.FAILED, (error.title,), error.detail)
    evidence = [f"VM {vm.id} {vm.name} ({plan.vm_state}) disk {plan.disk_id}: {human_mb(plan.current_mb)}, "
                f"wanted {human_mb(wanted)}"]
    if plan.room is not None:
        evidence.append(f"it lives in {plan.room.kind} datastore {plan.room.datastore_id} {plan.room.name!r}: "
                        f"{human_mb(plan.room.free_mb)} free")
    if plan.already:
        return _step(StepId.OBJECTSTORE_DISK, title, StepState.DONE, evidence)
    command = _run(StepId.OBJECTSTORE_DISK)
    if plan.resizing:
        return _step(StepId.OBJECTSTORE_DISK, title, StepState.TODO, evidence + ["a resize is under way"],
                     "Wait for the resize to finish.", command=command)
    if plan.vm_state not in RESIZABLE:
        return _blocked(StepId.OBJECTSTORE_DISK, title, StepId.INSTANTIATE,
                        f"The platform resizes a disk of a RUNNING, POWEROFF or UNDEPLOYED VM: VM {vm.id} is "
                        f"{plan.vm_state}.", evidence)
    if plan.problems:
        return _step(StepId.OBJECTSTORE_DISK, title, StepState.FAILED, evidence + list(plan.problems),
                     "Free space in that datastore, or set up with a smaller --disk-size.")
    return _step(StepId.OBJECTSTORE_DISK, title, StepState.TODO, evidence,
                 f"Grow it to {format_mb(wanted)} ({plan.cli()}), as the installer does: the object store keeps the "
                 "trial networks' files.", command=command)
