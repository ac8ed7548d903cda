"""How `onemarketapp export` names the objects it creates and points a service at them.

OpenNebula/one `src/oca/ruby/opennebula/marketplaceapp_ext.rb` (release-7.4.0; 6.10 and 7.0 the
same), `export_recursive` (lines 389-484): the child apps of an app (the ROLE vectors of a
service app, the DISK vectors of a VM-template app) are exported in vector order, an app named
twice only once; `idx` counts the apps exported so far. A child is named
`[name, app, vector NAME, idx].compact.join('-')`, where `app` is given for disks only: a role's
VM template is `<name>-<role>-<idx>`, a disk's image `<template name>-<APP>-<disk NAME>-<idx>`.
When an image already has that name, the prefix becomes `<name>_<n>` with the first free n (the
check is against image names, also for a role's VM template). Each VM template exports its own
images. `create_service_template` (lines 346-382) decodes APPTEMPLATE64 as it is, sets `name`,
and gives each role `vm_template` = the id of the VM template exported for it.
"""

from __future__ import annotations

import copy
from typing import Any, Collection, Mapping


def child_name(prefix: str, app: str | None, vector_name: str, idx: int) -> str:
    """`[prefix, app, vector_name, idx].compact.join('-')`."""
    return "-".join(part for part in (prefix, app, vector_name, str(idx)) if part is not None)


def free_child_name(prefix: str, app: str | None, vector_name: str, idx: int,
                    image_names: Collection[str]) -> str:
    """The name the export gives a child when `image_names` are taken (lines 438-450)."""
    name = child_name(prefix, app, vector_name, idx)
    if name not in image_names:
        return name
    n = 0
    while child_name(f"{prefix}_{n}", app, vector_name, idx) in image_names:
        n += 1
    return child_name(f"{prefix}_{n}", app, vector_name, idx)


def name_candidates(prefix: str, app: str | None, vector_name: str, idx: int, limit: int = 100) -> list[str]:
    """The names the export may give a child, in the order it tries them."""
    return [child_name(prefix, app, vector_name, idx)] + [
        child_name(f"{prefix}_{n}", app, vector_name, idx) for n in range(limit)]


def exported_children(vectors: Collection[tuple[str, str]]) -> list[tuple[str, tuple[str, ...], int]]:
    """(app name, vector names, idx) of each child app exported, from (vector NAME, APP) pairs."""
    out: list[tuple[str, list[str], int]] = []
    seen: dict[str, int] = {}
    for vector_name, app in vectors:
        if app in seen:
            out[seen[app]][1].append(vector_name)
            continue
        seen[app] = len(out)
        out.append((app, [vector_name], len(out)))
    return [(app, tuple(names), idx) for app, names, idx in out]


def service_body(app_template: Mapping[str, Any], name: str, role_templates: Mapping[str, int]) -> dict[str, Any]:
    """The body `create_service_template` allocates: the app's body as it is, `name`, and
    `vm_template` for every role that has an exported VM template (the others are left as they are)."""
    body = copy.deepcopy(dict(app_template))
    body["name"] = name
    for role in body.get("roles") or []:
        if isinstance(role, dict) and role.get("name") in role_templates:
            role["vm_template"] = int(role_templates[role["name"]])
    return body
