"""The invariants the soak checks after every step, read from the site's state and the repositories.

- leftovers: an image LOCKED or in ERROR once no command runs; an image the soak's commands
  created that no VM template uses (part of no complete download); a VM template whose disk
  image is gone; a service template whose role templates are gone; a VM UNDEPLOYED without an
  unfinished move in the move journal (nothing tells the operator to resume or put it back).
  An image, VM template or service template recorded in the download journal is not a leftover
  (a rollback could not delete it; the next download deletes it first and says so), as an
  UNDEPLOYED VM recorded in the move journal is not;
- duplicates: two VM templates or two service templates of one name, two images of one
  appliance version used by templates of one name, two live services of one template with the
  same inputs;
- lost changes: a core.yaml value a successful command wrote that is gone (and, after a
  successful submit, missing from the remote site branch);
- changes without a record: a step that changed the site (an image, VM template or document
  created or removed, a placed VM on another host, core.yaml's bytes, the remote site branch)
  while the audit log gained no record (the audit log made unwritable for the step included:
  then nothing may change).

Each finding has a stable key (kind and object), so one leftover is counted once however many
steps see it; duplicates count once per extra object.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any, Mapping

from ruamel.yaml import YAML

from bench.soak.world import World
from tui.adapters.vault import decrypt_text, read_password_file, read_vault_file
from tui.procedures.hosts.move_journal import MoveJournal
from tui.procedures.market.download_journal import DownloadJournal

LOCKED, ERROR = 4, 5
UNDEPLOYED = 9
SERVICE, SERVICE_TEMPLATE = 100, 101
SERVICE_DONE = 5
_MISSING = object()


@dataclass(frozen=True)
class Finding:
    kind: str  # "leftover", "duplicate", "lost change" or "change without a record"
    key: str
    text: str


def _attr(template: list[tuple[str, Any]], name: str) -> str:
    return next((str(value) for key, value in template if key == name and not isinstance(value, list)), "")


def _disk_images(template: list[tuple[str, Any]]) -> list[int]:
    ids = []
    for key, value in template:
        if key == "DISK" and isinstance(value, list):
            image = _attr(value, "IMAGE_ID")
            if image.isdigit():
                ids.append(int(image))
    return ids


def _role_templates(body: Mapping[str, Any]) -> list[int]:
    ids = []
    for role in body.get("roles") or []:
        value = role.get("template_id", role.get("vm_template"))
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            ids.append(int(value))
    return ids


def cloud_findings(world: World) -> list[Finding]:
    """Leftovers and duplicates in the cloud (call once every command of the step has ended)."""
    site = world.server.site
    findings: list[Finding] = []
    with site.lock:
        images = dict(site.images)
        templates = dict(site.templates)
        documents = dict(site.documents)
        vms = dict(site.vms)
        used: dict[int, list[str]] = {}
        for template in templates.values():
            for image_id in _disk_images(template.template):
                used.setdefault(image_id, []).append(template.name)
        # the journals wherever the commands keep their state: the config file's state_dir
        # (the embedded site's config.toml names <site>/console) or XDG_STATE_HOME
        recorded = {(left.kind, left.id) for d in world.root.glob("**/downloads/*") if d.is_dir()
                    for left in DownloadJournal(d).entries()}
        for image in images.values():
            if ("image", image.id) in recorded:
                continue
            if image.state in (LOCKED, ERROR):
                findings.append(Finding("leftover", f"image {image.id} state", f"image {image.id} {image.name!r} left {('LOCKED', 'ERROR')[image.state == ERROR]}"))
            elif image.id not in world.baseline["image"] and image.id not in used:
                findings.append(Finding("leftover", f"image {image.id} orphan", f"image {image.id} {image.name!r} belongs to no VM template (no complete download)"))
        for template in templates.values():
            missing = [i for i in _disk_images(template.template) if i not in images]
            if missing and ("VM template", template.id) not in recorded:
                findings.append(Finding("leftover", f"template {template.id} orphan", f"VM template {template.id} {template.name!r} uses missing image(s) {missing}"))
        for doc in documents.values():
            if doc.type == SERVICE_TEMPLATE:
                missing = [t for t in _role_templates(doc.body) if t not in templates]
                if missing and ("service template", doc.id) not in recorded:
                    findings.append(Finding("leftover", f"service template {doc.id} orphan",
                                            f"service template {doc.id} {doc.name!r} uses missing VM template(s) {missing}"))
        journals = [MoveJournal(d) for d in world.root.glob("**/moves/*") if d.is_dir()]
        for vm in vms.values():
            if vm.state == UNDEPLOYED and not any(j.origin(vm.id) is not None for j in journals):
                findings.append(Finding("leftover", f"vm {vm.id} undeployed", f"VM {vm.id} {vm.name!r} UNDEPLOYED with no unfinished move recorded"))
        findings += _duplicates(images, templates, documents, used)
    return findings


def _duplicates(images: Mapping[int, Any], templates: Mapping[int, Any], documents: Mapping[int, Any],
                used: Mapping[int, list[str]]) -> list[Finding]:
    groups: dict[tuple[str, str], list[int]] = {}
    for template in templates.values():
        groups.setdefault(("VM template", template.name), []).append(template.id)
    for doc in documents.values():
        if doc.type == SERVICE_TEMPLATE:
            groups.setdefault(("service template", doc.name), []).append(doc.id)
        elif doc.type == SERVICE and doc.body.get("state") != SERVICE_DONE:
            inputs = doc.body.get("user_inputs_values") or doc.body.get("custom_attrs_values") or {}
            groups.setdefault(("service", f"{doc.name} {json.dumps(inputs, sort_keys=True)}"), []).append(doc.id)
    for image in images.values():
        app = _attr(image.template, "FROM_APP")
        if app and image.state not in (LOCKED, ERROR):
            version = _attr(image.template, "PLATFORM_MARKETPLACE_APPLIANCE_VERSION")
            where = ",".join(sorted(set(used.get(image.id, [])))) or "-"
            groups.setdefault(("image", f"app {app} version {version} in {where}"), []).append(image.id)
    # one finding per extra object: a group that grows from 2 to 3 counts again
    return [Finding("duplicate", f"{kind} {name} #{extra}", f"{len(ids)} {kind}s {name[:120]!r}: ids {sorted(ids)}")
            for (kind, name), ids in groups.items() for extra in range(1, len(ids))]


def _lookup(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return _MISSING
        data = data[part]
    return data


def _parse(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def config_findings(world: World, promised: Mapping[str, Any]) -> list[Finding]:
    """Promised core.yaml values missing from the working clone's file."""
    assert world.core is not None
    password = read_password_file(world.server.site.vault_password_file or "")
    data = _parse(read_vault_file(world.core, password))
    return [Finding("lost change", f"core {key}", f"{key}: {value!r} written by a successful command, now {_shown(_lookup(data, key))}")
            for key, value in promised.items() if _lookup(data, key) != value]


def remote_findings(world: World, promised: Mapping[str, Any], branch: str, site_dir: str) -> list[Finding]:
    """Promised values missing from the remote site branch after a successful submit."""
    repo = world.server.site.sites_repo
    shown = subprocess.run(["git", "--git-dir", str(repo), "show", f"{branch}:{site_dir}/core.yaml"],
                           capture_output=True, text=True, check=False)
    if shown.returncode != 0:
        return [Finding("lost change", f"remote {branch}", f"the remote has no {branch}:{site_dir}/core.yaml after a successful submit")]
    password = read_password_file(world.server.site.vault_password_file or "")
    data = _parse(decrypt_text(shown.stdout, password))
    return [Finding("lost change", f"remote {key} {value}", f"{key}: {value!r} was in core.yaml before a successful submit, the remote has {_shown(_lookup(data, key))}")
            for key, value in promised.items() if _lookup(data, key) != value]


def _shown(value: Any) -> str:
    return "nothing" if value is _MISSING else repr(value)


def change_state(world: World) -> dict[str, Any]:
    """What a change to the site alters (not what the site does by itself: OneFlow's role VMs
    appear, pending VMs get a host, images become READY): object ids by kind, the host of each
    placed VM, core.yaml's bytes, the remote site branch's commit."""
    site = world.server.site
    with site.lock:
        state: dict[str, Any] = {"image": set(site.images), "template": set(site.templates),
                                 "document": set(site.documents),
                                 "placed": {vm.id: vm.history[-1].host_id for vm in site.vms.values() if vm.history}}
    state["core.yaml"] = world.core.read_bytes() if world.core is not None and world.core.exists() else b""
    head = subprocess.run(["git", "--git-dir", str(world.server.site.sites_repo), "rev-parse", "--all"],
                          capture_output=True, text=True, check=False)
    state["remote"] = head.stdout
    return state


def unrecorded_findings(world: World, index: int, before: Mapping[str, Any], records_before: int) -> list[Finding]:
    """A change made during the step while the audit log gained no record."""
    after = change_state(world)
    changed = [kind for kind in ("image", "template", "document", "core.yaml", "remote") if before[kind] != after[kind]]
    moved = [vm for vm, host in before["placed"].items() if vm in after["placed"] and after["placed"][vm] != host]
    if moved:
        changed.append(f"VM(s) {moved} on another host")
    if not changed or world.audit_lines() > records_before:
        return []
    return [Finding("change without a record", f"step {index}", f"{', '.join(changed)} changed; the audit log gained "
                    "no record")]
