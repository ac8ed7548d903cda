"""The setup checklist decided from what the site shows now (`setup_facts`), step by step.

`build_checklist(facts)` turns one reading of the site into a `SetupChecklist` (pure: the same
facts give the same checklist); `setup_status(site, target)` reads and decides. Each decision
says what it read (evidence) and, when the step is not done, what to do or what stops it. Steps
the console can do are named with the `sitetk setup run --only <step>` that does them; steps only
the operator can do (the platform configuration, the networks) say the platform command.
"""

from __future__ import annotations

import ipaddress
import shlex
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tui.domain.attribute_file import installed_version_from_image_template
from tui.domain.datastores import Datastore
from tui.domain.images import ImageInfo
from tui.domain.input_site import Outcome
from tui.domain.marketapps import MarketApp, endpoint_slash_fix, endpoint_slash_problem
from tui.domain.services import SERVICE_FAILED_STATES, SERVICE_RUNNING
from tui.domain.setup_networks import (
    VXLAN_HEADERS_MAX,
    VXLAN_HEADERS_MIN,
    default_network_problems,
    forwarded_addresses,
    mtu_margin,
    nic_mtu,
    trial_candidates,
    trial_network_problems,
    vxlan_unverified,
)
from tui.domain.setup_steps import (
    UNREADABLE,
    ApplianceVm,
    MarketplacesMissing,
    SetupChecklist,
    SetupStep,
    StepId,
    StepState,
)
from tui.domain.severity import Severity
from tui.domain.versions import ApplianceVersion, newest, parse_version
from tui.errors import SiteError
from tui.procedures.setup.facts import SetupFacts, SetupTarget, read_setup_facts
from tui.procedures.setup.site_steps import (
    components_step,
    core_yaml_step,
    parse_core_yaml,
    repository_step,
    site_branch_step,
    submitted_step,
)
from tui.procedures.setup.step_forms import blocked as _blocked
from tui.procedures.setup.step_forms import run_command as _run
from tui.procedures.setup.step_forms import step as _step
from tui.procedures.setup.step_forms import unknown as _unknown
from tui.procedures.site_record import REBUILD_COMMAND

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

#: the platform version from which the CLI helper change (spec Versioning 6) is included
CLI_HELPER_VERSION = (7, 0)
#: VM states a move (operation 7) can start from (tui.procedures.hosts.move_vm)
MOVABLE_STATES = frozenset({"RUNNING", "POWEROFF", "UNDEPLOYED"})


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


# -- preflight ------------------------------------------------------------------------------------


def platform_step(facts: SetupFacts) -> SetupStep:
    return _step(StepId.PLATFORM, "The platform answers", StepState.DONE,
                 (f"OpenNebula {facts.version} at {facts.endpoint}", f"session user {facts.user} (group {facts.group})"))


def services_step(facts: SetupFacts) -> SetupStep:
    """Every service the setup uses answers now: XML-RPC, OneFlow with the session, the HTTP
    marketplaces, the sites repository (the gate's address is the gate step's). The first that
    does not is the step's failure and its fix (issue 20 item 8: with OneFlow down, preflight was
    all done and "Next" pointed at the automation cloud user)."""
    title = "Services the setup uses answer"
    evidence = [f"XML-RPC {facts.endpoint}: answers (OpenNebula {facts.version}, session user {facts.user})"]
    wrong: list[str] = []
    unread: list[str] = []
    flow = facts.flow_url or "OneFlow"
    if facts.services_known:
        evidence.append(f"OneFlow {flow}: answers with the session (the services' list read)")
    elif facts.flow_error:
        evidence.append(f"OneFlow {flow}: {facts.flow_error}")
        wrong.append(f"OneFlow at {flow} does not answer: start it on the frontend "
                     "(systemctl start opennebula-flow), check ONEFLOW_URL (or ~/.one/oneflow_endpoint) and that "
                     f"it accepts the user {facts.user}'s login; the toolkit is a OneFlow service.")
    else:
        unread.append("OneFlow")
    catalog = facts.catalog
    if catalog is None:
        unread.append("the marketplaces")
    else:
        failures = {f.source.url: f for f in catalog.failures}
        for source in catalog.sources:
            failure = failures.get(source.url)
            if failure is None:
                count = sum(1 for e in catalog.entries if e.source.url == source.url)
                evidence.append(f"marketplace {source.name} {source.url}: answers ({count} appliance record(s))")
            else:
                evidence.append(f"marketplace {source.name} {source.url}: {failure.title} ({failure.detail})")
                wrong.append(f"The marketplace {source.name} at {source.url} does not answer: "
                             "check that it runs and that this frontend reaches it (the cloud exports the toolkit "
                             "from it).")
        if not catalog.sources:
            evidence.append("marketplaces: none registered or configured to ask (the marketplaces step)")
    repo = facts.repo
    if not repo.configured:
        evidence.append("sites repository: not configured (the repository step)")
    elif repo.reachable is None:
        unread.append("the sites repository")
    elif not repo.reachable:
        evidence.append(f"sites repository {repo.configured}: {repo.reach_error}")
        wrong.append(f"The sites repository {repo.configured} does not answer: "
                     "check its URL and token (the repository step).")
    else:
        evidence.append(f"sites repository {repo.configured}: answers")
    evidence.append("the gate: its address is the gate step's; whether OneGate answers there is not checked from "
                    "here (the VMs reach it on the default network)")
    if wrong:
        return _step(StepId.SERVICES, title, StepState.FAILED, evidence, wrong[0])
    if unread:
        return _blocked(StepId.SERVICES, title, UNREADABLE,
                        f"{', '.join(unread)} could not be read: see the notes, then refresh", evidence)
    return _step(StepId.SERVICES, title, StepState.DONE, evidence)


def cli_helper_step(facts: SetupFacts) -> SetupStep:
    title = "CLI helper change (one_helper.rb)"
    if version_tuple(facts.version) >= CLI_HELPER_VERSION:
        return _step(StepId.CLI_HELPER, title, StepState.DONE,
                     (f"platform {facts.version}: 7.0 and later include the one_helper.rb change (spec Versioning 6)",),
                     mandatory=False)
    return _step(
        StepId.CLI_HELPER, title, StepState.OPTIONAL,
        (f"platform {facts.version} is below 7.0, which first includes the change",
         "not checked: the file on the frontend (the console talks XML-RPC and does not use the Ruby CLI)"),
        "The installer and hand-run platform commands of these releases need the modified CLI helper "
        "(one_helper.rb, in the Ruby CLI directory under /usr/lib/one/ruby/cli on the frontend): apply the "
        "toolkit's modification there as root, or upgrade the platform to 7.0 or later. `sitetk setup run` "
        "does not need it.", mandatory=False)


def gate_step(facts: SetupFacts) -> SetupStep:
    title = "Gate endpoint (ONEGATE_ENDPOINT)"
    if facts.system is None:
        return _unknown(StepId.GATE, title, "the platform configuration")
    gate = facts.system.onegate_endpoint.strip()
    if not gate:
        return _step(StepId.GATE, title, StepState.TODO, ("the platform configuration has no ONEGATE_ENDPOINT",),
                     "Set ONEGATE_ENDPOINT in /etc/one/oned.conf to http://<frontend address on the default "
                     "network>:5030 and restart the platform (VMs report READY and their keys through it).")
    host = urlsplit(gate).hostname or ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if loopback:
        return _step(StepId.GATE, title, StepState.FAILED, (f"ONEGATE_ENDPOINT = {gate}",),
                     "VMs cannot reach a loopback address: set ONEGATE_ENDPOINT in /etc/one/oned.conf to the "
                     "frontend's address on the default network, then restart the platform.")
    return _step(StepId.GATE, title, StepState.DONE, (f"ONEGATE_ENDPOINT = {gate}",))


def _norm(url: str) -> str:
    return url.strip().rstrip("/")


def toolkit_app(facts: SetupFacts) -> MarketApp | None:
    """The cloud's toolkit app: it keeps one app per name across its marketplaces
    (`domain.marketapps`); of several owners' apps of that name, the first one imported."""
    name = facts.naming.toolkit_appliance_name
    apps = [a for a in facts.marketapps or () if a.name == name]
    return min(apps, key=lambda a: (a.uname != "oneadmin", a.id)) if apps else None


def marketplaces_step(facts: SetupFacts) -> SetupStep:
    title = "Marketplaces registered"
    if facts.marketplaces is None or facts.marketapps is None:
        return _unknown(StepId.MARKETPLACES, title, "the marketplaces")
    # a disabled marketplace is not monitored and holds no app: it does not count as registered
    registered = {_norm(m.endpoint): m for m in facts.marketplaces if m.endpoint and m.enabled}
    disabled = {_norm(m.endpoint): m for m in facts.marketplaces if m.endpoint and not m.enabled}
    evidence = [f"{'registered' if m.enabled else 'disabled'}: {m.name} (ID {m.id}) {m.source_label}"
                for m in facts.marketplaces]
    missing = [url for url in facts.configured_markets if _norm(url) not in registered]
    app = toolkit_app(facts)
    if app is not None:
        home = next((_norm(m.endpoint) for m in facts.marketplaces if m.id == app.marketplace_id), "")
        held = f" (its content from {app.origin_url}, monitored last)" if app.origin_url and app.origin_url != home else ""
        evidence.append(f"{app.name} {app.version} is app {app.id} of marketplace {app.marketplace}{held}")
    broken = [(m, problem) for m in facts.marketplaces if (problem := endpoint_slash_problem(facts.version, m))]
    if broken:
        market, problem = broken[0]
        return _step(StepId.MARKETPLACES, title, StepState.TODO,
                     evidence + [f"marketplace {market.id} ({market.name}): {problem}"],
                     endpoint_slash_fix(market) + " `sitetk setup run --only marketplaces` makes that update.",
                     command=_run(StepId.MARKETPLACES),
                     found=MarketplacesMissing(tuple(missing), mend=tuple((m.id, m.endpoint) for m, _ in broken)))
    if missing:
        off = [disabled[_norm(url)] for url in missing if _norm(url) in disabled]
        fix = ("Register it so the cloud can export its appliances (onemarket create with MARKET_MAD=one "
               "and ENDPOINT=<url>/).")
        if off:
            fix = ("Enable " + ", ".join(f"marketplace {m.id} (`onemarket enable {m.id}`)" for m in off)
                   + ": a disabled marketplace is not monitored and holds no app. "
                   + (fix if len(off) < len(missing) else ""))
        return _step(StepId.MARKETPLACES, title, StepState.TODO,
                     evidence + [f"configured but not registered (enabled) in the cloud: {', '.join(missing)}"],
                     fix.strip(), command=_run(StepId.MARKETPLACES),
                     found=MarketplacesMissing(tuple(missing)))
    if app is None:
        return _step(StepId.MARKETPLACES, title, StepState.TODO,
                     evidence + [f"no registered marketplace lists the {facts.naming.toolkit_appliance_name} appliance"],
                     "Register the marketplace that serves the toolkit (its URL in [marketplace] urls of the config "
                     "file, then `sitetk setup run --only marketplaces`), and let the platform monitor it.",
                     command=_run(StepId.MARKETPLACES))
    return _step(StepId.MARKETPLACES, title, StepState.DONE, evidence)


def _free(ds: Datastore) -> str:
    return f"{ds.free_mb / 1024:.0f} GiB free of {ds.total_mb / 1024:.0f} GiB"


def datastores_step(facts: SetupFacts) -> SetupStep:
    title = "Image and system datastores"
    if facts.datastores is None:
        return _unknown(StepId.DATASTORES, title, "the datastores")
    image = [d for d in facts.datastores if d.type_name == "IMAGE"]
    system = [d for d in facts.datastores if d.type_name == "SYSTEM"]
    evidence = [f"{d.type_name.lower()} datastore {d.id} {d.name}: {_free(d)}" for d in image + system]
    if not image or not system:
        lacking = " and ".join(k for k, v in (("IMAGE", image), ("SYSTEM", system)) if not v)
        return _step(StepId.DATASTORES, title, StepState.FAILED, evidence + [f"no {lacking} datastore"],
                     f"Create the {lacking} datastore (onedatastore create) and add it to the hosts' cluster.")
    return _step(StepId.DATASTORES, title, StepState.DONE, evidence)


# -- networks -------------------------------------------------------------------------------------


def default_network_step(facts: SetupFacts) -> SetupStep:
    title = "Default network: a /24 on the management bridge"
    if facts.vnets is None:
        return _unknown(StepId.DEFAULT_NETWORK, title, "the virtual networks")
    vnet = facts.default_network
    chosen_by = ("the input file" if facts.target.network_id is not None else
                 f"toolkit service {facts.service.id}" if facts.default_network_id is not None and facts.service else
                 "the first /24 on a bridge (name it in the input file's networks_values)")
    if vnet is None:
        wanted = facts.default_network_id
        why = (f"network {wanted} ({chosen_by}) does not exist" if wanted is not None
               else "no network is a /24 on a Linux bridge")
        return _blocked(StepId.DEFAULT_NETWORK, title, "the site's OAM network",
                        "Create the default network: the site's OAM /24 on the preexisting Linux bridge that "
                        "carries the management interface (onevnet create with VN_MAD=bridge, BRIDGE, "
                        "NETWORK_ADDRESS, NETWORK_MASK=255.255.255.0)", (why,))
    evidence = [f"network {vnet.id} {vnet.name} (chosen by {chosen_by}): {vnet.network_address or '?'}/"
                f"{vnet.network_mask or '?'}, driver {vnet.vn_mad or '?'}, bridge {vnet.bridge or '(none)'}, "
                f"MTU {vnet.mtu if vnet.mtu is not None else '(not set)'}"]
    problems = default_network_problems(vnet)
    if problems:
        return _blocked(StepId.DEFAULT_NETWORK, title, f"network {vnet.id}", " ".join(problems), evidence)
    evidence.append(f"not checked: that {vnet.bridge} carries the management interface on every host "
                    "(the cloud does not say)")
    return _step(StepId.DEFAULT_NETWORK, title, StepState.DONE, evidence, data={"network_id": vnet.id})


def trial_network_step(facts: SetupFacts) -> SetupStep:
    title = "Trial-network VXLAN with GUEST_MTU below the NIC MTU"
    if facts.vnets is None:
        return _unknown(StepId.TRIAL_NETWORK, title, "the virtual networks")
    default = facts.default_network
    candidates = trial_candidates(facts.vnets)
    if not candidates:
        bridge = default.bridge if default else "<default bridge>"
        mtu = (default.mtu if default and default.mtu else 1500) - VXLAN_HEADERS_MIN
        return _blocked(StepId.TRIAL_NETWORK, title, "a VXLAN network",
                        f"Create the trial-network VXLAN network over {bridge} (onevnet create with VN_MAD=vxlan, "
                        f"PHYDEV={bridge}, GUEST_MTU={mtu}).", ("no network uses the vxlan driver",))
    ranked = sorted(candidates, key=lambda v: (len(trial_network_problems(v, default)), v.id))
    vxlan = ranked[0]
    nic = nic_mtu(vxlan, default)
    evidence = [f"network {vxlan.id} {vxlan.name}: vxlan over {vxlan.phydev or '(no PHYDEV)'}, bridge {vxlan.bridge}, "
                f"GUEST_MTU {vxlan.guest_mtu if vxlan.guest_mtu is not None else '(not set)'}, "
                f"NIC MTU {nic if nic is not None else '(unknown)'}"]
    if vxlan.guest_mtu is not None and nic is not None:
        margin = mtu_margin(vxlan.guest_mtu, nic)
        evidence.append(f"GUEST_MTU is {margin} bytes below the NIC MTU (VXLAN adds {VXLAN_HEADERS_MIN}-"
                        f"{VXLAN_HEADERS_MAX} bytes)" if margin > 0 else
                        f"GUEST_MTU is not below the NIC MTU ({-margin} bytes above or equal)")
    problems = trial_network_problems(vxlan, default)
    if problems:
        return _blocked(StepId.TRIAL_NETWORK, title, f"network {vxlan.id}", " ".join(problems), evidence)
    if nic is None:
        return _blocked(StepId.TRIAL_NETWORK, title, "the NIC MTU",
                        "Set MTU on the default network (the NIC's MTU) so the guest MTU can be checked.", evidence)
    evidence.append(vxlan_unverified(vxlan, default))
    return _step(StepId.TRIAL_NETWORK, title, StepState.DONE, evidence, data={"network_id": vxlan.id})


def forwarded_step(facts: SetupFacts) -> SetupStep:
    title = "Forwarded addresses .211-.240"
    vnet = facts.default_network
    if vnet is None or default_network_problems(vnet):
        return _blocked(StepId.FORWARDED, title, StepId.DEFAULT_NETWORK, "Fix the default network first.",
                        mandatory=False)
    if facts.vms is None:
        return _unknown(StepId.FORWARDED, title, "the VMs (whose addresses take these)", mandatory=False)
    vm_ips = {vm.id: vm.ips for vm in facts.vms}
    rows = forwarded_addresses(vnet, facts.leases or (), vm_ips)
    taken = [r for r in rows if r.taken]
    outside = [r for r in rows if not r.leasable]
    evidence = [f"{len(rows)} addresses of network {vnet.id}: {len(taken)} taken, {len(rows) - len(taken)} free, "
                f"{len(outside)} outside every address range",
                "port xx211 of the public IP forwards to .211 at port xx211, and so on (xx: the site's prefix)"]
    evidence += [f"{r.ip} ({r.port}): {r.status}" for r in taken]
    if facts.leases is None:
        evidence.append("not read: the leases of the network (only VM addresses were compared)")
    return _step(StepId.FORWARDED, title, StepState.DONE, evidence, mandatory=False,
                 data={"network_id": vnet.id, "addresses": [r.as_json() for r in rows]})


# -- toolkit --------------------------------------------------------------------------------------


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
        from tui.domain.deployed_inputs import input_differences

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
    from tui.domain.disk_size import format_mb, human_mb
    from tui.procedures.toolkit.objectstore_disk import RESIZABLE, disk_plan

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


# -- sites repository -----------------------------------------------------------------------------


def _optional_step(facts: SetupFacts, step_id: StepId, title: str, kind: Any, written: Any, write: str) -> SetupStep:
    """An optional appliance (tui.procedures.setup.optional): not in any marketplace, to download,
    downloaded without a VM, a VM not ready or failed, ready and not written (only when asked),
    written (done). `written(vm, config)` -> (done, evidence)."""
    from tui.procedures.setup.optional import DEAD_STATES

    if facts.images is None or facts.vms is None:
        return _unknown(step_id, title, "the images and VMs", mandatory=False)
    attribute = facts.naming.appliance_name_attribute
    images = [i for i in facts.images if i.attributes.get(attribute) in kind.names]
    vms = sorted((vm for vm in facts.vms if any(i.vm_ids and vm.id in i.vm_ids for i in images)),
                 key=lambda vm: (not vm.running, -vm.id))
    command = _run(step_id)
    names = " or ".join(repr(n) for n in kind.names)
    if not vms:
        if not images:
            if facts.marketapps is None:
                return _unknown(step_id, title, "the marketplace apps", mandatory=False)
            apps = sorted((a for a in facts.marketapps if a.name in kind.names), key=lambda a: -a.id)
            if not apps:
                return _step(step_id, title, StepState.OPTIONAL, (f"no marketplace the cloud holds lists {names}",),
                             "Register a marketplace that lists it (`onemarket create`), then "
                             f"`{command}` downloads and deploys it.", mandatory=False, command=command,
                             found=ApplianceVm(None))
            app = apps[0]
            return _step(step_id, title, StepState.OPTIONAL,
                         (f"no {kind.name} appliance downloaded; marketplace app {app.id} {app.name!r} {app.version} "
                          f"({app.marketplace}) lists it",),
                         f"`{command}` downloads it, deploys its VM on the default network with its inputs, waits "
                         "until it is ready and writes it into core.yaml.", mandatory=False, command=command,
                         found=ApplianceVm(None, app_id=app.id))
        image_ids = tuple(sorted(i.id for i in images))
        templates = [t for t in facts.vm_templates or () if set(t.image_ids) & set(image_ids)]
        ready = all(i.usable for i in images)
        states = ", ".join(f"{i.id} {i.status}" for i in images)
        evidence = [f"image(s) {states} of {kind.name} downloaded"
                    + (f", VM template {templates[0].id}" if templates else ", no VM template uses them") + "; no VM"]
        return _step(step_id, title, StepState.OPTIONAL, tuple(evidence),
                     f"`{command}` deploys its VM on the default network, waits until it is ready and writes it into "
                     "core.yaml.", mandatory=False, command=command,
                     found=ApplianceVm(None, template_id=templates[0].id if templates else None, image_ids=image_ids,
                                       images_ready=ready))
    vm = vms[0]
    evidence = [f"VM {vm.id} {vm.name} runs the {kind.name} appliance ({vm.status}; "
                f"{', '.join(vm.ips) or 'no address yet'})"]
    if vm.kind == "failed" or vm.state in DEAD_STATES:
        return _step(step_id, title, StepState.FAILED, tuple(evidence),
                     f"It will not become ready by itself: read why (`onevm show {vm.id}`), remove it (`onevm recover "
                     f"--delete {vm.id}`), then `{command}` deploys a new one.", mandatory=False, command=command,
                     found=ApplianceVm(vm.id))
    if not vm.running or not vm.ips:
        return _step(step_id, title, StepState.OPTIONAL, tuple(evidence),
                     f"`{command}` waits until it is ready, then writes it into core.yaml.", mandatory=False,
                     command=command, found=ApplianceVm(vm.id))
    config = parse_core_yaml(facts)
    if config is None or submitted_step(facts).state is not StepState.DONE:
        return _blocked(step_id, title, StepId.SUBMITTED, "Once core.yaml is filled, checked and submitted: " + write,
                        evidence, mandatory=False)
    done, said = written(vm, config)
    if done:
        return _step(step_id, title, StepState.DONE, evidence + [said], mandatory=False, found=ApplianceVm(vm.id))
    return _step(step_id, title, StepState.OPTIONAL, evidence + [said], write, mandatory=False,
                 command=command, found=ApplianceVm(vm.id))


def dns_step(facts: SetupFacts) -> SetupStep:
    from tui.procedures.setup.optional import OptionalNames, appliance_kind, dns_servers

    kind = appliance_kind("dns", facts.naming)
    key = OptionalNames.of(facts.naming).dns_key

    def written(vm: Any, config: Any) -> tuple[bool, str]:
        servers = dns_servers(config.get(key))
        ip = vm.ips[0] if vm.ips else ""
        return bool(ip) and servers[:1] == [ip], f"{key} = {','.join(servers) or '(empty)'}"

    return _optional_step(facts, StepId.DNS, "DNS appliance (optional)", kind, written,
                          f"`{_run(StepId.DNS)}` puts its address first in {key} (previewed, then submitted).")


def route_manager_step(facts: SetupFacts) -> SetupStep:
    from tui.procedures.setup.optional import OptionalNames, appliance_kind

    kind = appliance_kind("route-manager", facts.naming)
    names = OptionalNames.of(facts.naming)

    def written(vm: Any, config: Any) -> tuple[bool, str]:
        endpoint = config.get(names.endpoint_key)
        token = config.get(names.token_key)
        done = bool(vm.ips) and endpoint == vm.ips[0] and bool(token)
        said = f"{names.endpoint_key} = {endpoint!r}; {names.token_key} {'set' if token else 'not set'}"
        if isinstance(endpoint, str) and "://" in endpoint:
            said += (f" (a URL: the component library wants the bare address, it adds http:// and "
                     f":{names.default_port} itself)")
        return done, said

    step = _optional_step(facts, StepId.ROUTE_MANAGER, "Route-manager appliance (optional)", kind, written,
                          f"`{_run(StepId.ROUTE_MANAGER)}` checks that its API lists its routes with the VM's token, "
                          "then writes its address and token into core.yaml (previewed, token masked, then submitted).")
    answer = facts.route_manager
    if step.state is not StepState.DONE or answer is None:
        return step
    evidence = step.evidence + (f"its API: {answer.said}",)
    if answer.ok:
        return replace(step, evidence=evidence)
    vm = f"VM {step.found.vm_id}" if isinstance(step.found, ApplianceVm) else "the route manager's VM"
    fix = (f"The API does not take core.yaml's {names.token_key}: compare it with {vm}'s "
           f"{names.token_attribute} (`onevm show`), put the VM's into core.yaml (`ansible-vault edit`), then "
           "`sitetk site submit`." if answer.refused else
           f"Nothing answered: check that {vm} runs its service (port {names.default_port}) and that the frontend "
           "reaches it, then `sitetk setup status` again.")
    return replace(step, state=StepState.FAILED, evidence=evidence, action=fix)


def trial_run_step(facts: SetupFacts) -> SetupStep:
    """The installer's optional last step: a test trial network activated through the manager. Its
    state is the manager's (read only when asked: it logs in), never assumed."""
    from tui.procedures.trial.network import DEFAULT_TN_ID

    step_id, title = StepId.TRIAL_RUN, "A test trial network activates (optional)"
    command = _run(step_id)
    run = (f"`{command}` (or `sitetk trial run`) logs in to the manager, creates trial network {DEFAULT_TN_ID} from "
           "the component library's tn_init sample and follows it until it is activated; `sitetk trial destroy` "
           "removes it.")
    if facts.service is None:
        return _blocked(step_id, title, StepId.INSTANTIATE, "Deploy the toolkit first: the manager runs in it.",
                        mandatory=False)
    if facts.repo is None or facts.repo.remote_yaml is None:
        return _blocked(step_id, title, StepId.SUBMITTED, "The manager validates a trial network against the site's "
                        "core.yaml on its branch, which the sites repository does not hold (or was not read): submit "
                        "it first. Then: " + run, mandatory=False)
    trial = facts.trial
    if trial is None:
        return _step(step_id, title, StepState.OPTIONAL, ("not read: reading it logs in to the manager "
                     "(`sitetk trial status` reads it)",), run, mandatory=False, command=command)
    if trial.error:
        return _step(step_id, title, StepState.OPTIONAL, (f"the manager could not be asked: {trial.error}",), run,
                     mandatory=False, command=command)
    where = f"the manager at {trial.url}"
    if not trial.state:
        return _step(step_id, title, StepState.OPTIONAL, (f"{where} has no trial network {trial.tn_id}",), run,
                     mandatory=False, command=command)
    evidence = (f"{where}: trial network {trial.tn_id} is {trial.state}"
                + (f" (deploy pipeline {trial.pipeline})" if trial.pipeline else ""),)
    if trial.state == "activated":
        return _step(step_id, title, StepState.DONE, evidence, mandatory=False)
    if trial.state in ("failed-activation", "failed-destruction"):
        return _step(step_id, title, StepState.FAILED, evidence,
                     f"`sitetk trial status --tn-id {trial.tn_id}` shows the manager's log; `sitetk trial destroy "
                     f"--tn-id {trial.tn_id} --yes` removes it; then run again.", mandatory=False, command=command)
    return _step(step_id, title, StepState.OPTIONAL, evidence, run, mandatory=False, command=command)


STEP_RULES = (platform_step, services_step, cli_helper_step, gate_step, marketplaces_step, datastores_step, default_network_step,
              trial_network_step, forwarded_step, cloud_user_step, download_step, tagged_step, inputs_step,
              instantiate_step, record_step, grant_step, database_host_step, objectstore_disk_step, repository_step,
              site_branch_step, core_yaml_step, components_step, submitted_step, dns_step, route_manager_step,
              trial_run_step)


def build_checklist(facts: SetupFacts) -> SetupChecklist:
    return SetupChecklist.ordered((rule(facts) for rule in STEP_RULES), facts.notes)


async def setup_status(site: "SiteConnection", target: SetupTarget | None = None) -> tuple[SetupChecklist, SetupFacts]:
    """Read the site and decide every step (reads only: no preview, no audit)."""
    facts = await read_setup_facts(site, target)
    return build_checklist(facts), facts

