"""Operation 2, planning: what earlier downloads left under the planned names.

Objects a previous run (this console's or `onemarketapp export`'s) created under those names from
the same app are marked as reused (`reuse_existing`); a name taken by something else stops the plan
for a VM template or the service template. An orphan of ours under a planned name (a VM template
whose disk images are gone, a service template whose roles' VM templates are gone: what a rollback
could not delete, or what an operator half-deleted by hand) is planned for deletion (previewed with
its CLI command) and created again, once `check_orphans_unused` found that nothing uses it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from tui.domain.documents import SERVICE_DOCUMENT, Document
from tui.domain.error_codes import NO_EXISTS
from tui.domain.template_text import TemplateSyntaxError, parse_template
from tui.domain.vmtemplates import VmTemplate
from tui.errors import SiteError
from tui.procedures.market.attributes import role_template_ids, role_templates
from tui.procedures.market.download_plan import (
    DownloadPlan,
    OrphanService,
    OrphanTemplate,
    PlannedService,
    PlannedTemplate,
)

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection


def reuse_existing(plan: DownloadPlan, templates: Sequence[VmTemplate], documents: Sequence[Document],
                    user: str, image_ids_present: set[int], template_ids_present: set[int]) -> DownloadPlan:
    """Mark VM templates and the service template a previous export created as reused, and an
    orphan of ours (`_orphan`, `_orphan_service`) as replaced; refuse names taken by other objects
    (the platform refuses a second VM template of one name)."""
    image_ids = [i.existing_id for i in plan.images]
    mine_templates = {t.name: t for t in templates if t.uname == user}
    planned_templates: list[PlannedTemplate] = []
    for template in plan.templates:
        found_template = mine_templates.get(template.name)
        if found_template is None:
            planned_templates.append(template)
            continue
        wanted = tuple(image_ids[i] for i in template.disks)
        if None not in wanted and tuple(found_template.image_ids) == wanted:
            planned_templates.append(replace(template, existing_id=found_template.id))
            continue
        orphan = _orphan(found_template, template, image_ids_present, documents)
        if orphan is None:
            missing = [i for i in found_template.image_ids if i not in image_ids_present]
            why = (f"its disk image(s) {', '.join(map(str, missing))} are gone but it does not look like this app's "
                   "export (other attributes, other disks, or a service template uses it)") if missing else \
                "other disks"
            raise SiteError(f"VM template name {template.name!r} is taken",
                            f"VM template {found_template.id} has that name and {why}; it is left alone. Look at "
                            f"it with `onetemplate show {found_template.id}`; choose another final name, or delete "
                            "that template first.")
        planned_templates.append(replace(template, replaces=orphan))
    service = plan.service
    if service is not None:
        found_doc = next((d for d in documents if d.name == service.name and d.uname == user), None)
        if found_doc is not None:
            template_ids = [t.existing_id for t in planned_templates]
            wanted_ids = sorted({template_ids[i] for _, i in service.role_templates}, key=lambda v: (v is None, v))
            have = sorted(set(role_template_ids(found_doc.body or {})))
            if None not in wanted_ids and have == wanted_ids:
                service = replace(service, existing_id=found_doc.id)
            else:
                orphan_doc = _orphan_service(found_doc, service, template_ids_present)
                if orphan_doc is None:
                    gone = ", ".join(str(i) for i in have if i not in template_ids_present)
                    present = ", ".join(str(i) for i in have if i in template_ids_present)
                    why = "other roles" if not gone else \
                        f"roles pointing at VM template(s) {gone}, which are gone, and {present}, which are " \
                        "still there" if present else \
                        f"roles pointing at VM template(s) {gone}, which are gone, but it does not look like " \
                        "this app's export (other roles, or values changed since)"
                    raise SiteError(f"Service template name {service.name!r} is taken",
                                    f"Service template {found_doc.id} has that name and {why}; it is left alone. "
                                    f"Look at it with `oneflow-template show {found_doc.id}`; choose another final "
                                    "name, or delete it first.")
                service = replace(service, replaces=orphan_doc)
    return replace(plan, templates=tuple(planned_templates), service=service)


def _orphan(found: VmTemplate, template: PlannedTemplate, image_ids_present: set[int],
            documents: Sequence[Document]) -> OrphanTemplate | None:
    """`found` (ours, of the planned name) as an orphan an earlier export of this app left, or None.

    Ours means what the export gives (marketplaceapp_ext.rb `export_vm_template`: the app's
    template, NAME, one DISK per image): every scalar attribute of the app's template there with
    its value, as many DISKs as planned. An orphan: every DISK's image is gone (so no live VM
    holds them either: the platform refuses to delete an image in use) and no service template
    names it as a role's template. VMs instantiated from it are checked by `check_orphans_unused`.
    """
    disks = found.image_ids
    if not disks or len(disks) != len(template.disks) or any(i in image_ids_present for i in disks):
        return None
    if len(found.template.vectors("DISK")) != len(disks):
        return None  # a DISK without IMAGE_ID (a volatile disk, an image by name): not the export's
    try:
        wanted = [(k, v) for k, v in parse_template(template.base_text) if isinstance(v, str) and k != "NAME"]
    except TemplateSyntaxError:
        return None
    have = found.template.scalars()
    if any(have.get(key) != value for key, value in wanted):
        return None
    if any(found.id in role_template_ids(d.body or {}) for d in documents):
        return None
    return OrphanTemplate(found.id, found.name, tuple(disks))


#: role keys the export sets or 7.x's old-format conversion rewrites (service_template.rb
#: release-7.4.0 `convert_template`: `vm_template` to `template_id`, `type` added,
#: `vm_template_contents` to `template_contents`, `custom_attrs` to `user_inputs`)
_ROLE_TEMPLATE_KEYS = frozenset({"vm_template", "template_id", "type", "vm_template_contents", "template_contents",
                                 "custom_attrs", "custom_attrs_values", "user_inputs", "user_inputs_values"})


def _scalars(mapping: Any, skip: frozenset[str]) -> dict[str, Any]:
    """The plain values (text, numbers, booleans) of a JSON object, without the `skip` keys."""
    if not isinstance(mapping, dict):
        return {}
    return {k: v for k, v in mapping.items() if k not in skip and isinstance(v, (str, int, float, bool))}


def _orphan_service(found: Document, service: PlannedService, template_ids_present: set[int]) -> OrphanService | None:
    """`found` (ours, of the planned name) as an orphan an earlier export of this app left, or None.

    Ours means what the export gives (marketplaceapp_ext.rb `create_service_template`: the app's
    body, `name`, each role's `vm_template` the id of its exported VM template; on 7.x OneFlow's
    old-format conversion, service_template.rb `convert_template`, turns it into `template_id` and
    adds `type`): the app's roles by name in its order, each with a VM template id, roles sharing
    a planned VM template sharing one id and no other, and every plain value of the body and of
    each role as the app has it. An orphan: none of those VM templates is in the pool any more
    (each is asked for again, and services checked, by `check_orphans_unused`).
    """
    body = found.body
    app_roles = service.body.get("roles")
    if body is None or not isinstance(app_roles, list) or not isinstance(body.get("roles"), list):
        return None
    pointed = role_templates(body)
    doc_roles = [r for r in body["roles"] if isinstance(r, dict)]
    if len(pointed) != len(body["roles"]) or len(doc_roles) != len(app_roles):
        return None  # a role without a VM template id (or not an object): not what the export made
    planned = dict(service.role_templates)
    if [name for name, _ in pointed] != [r.get("name") if isinstance(r, dict) else None for r in app_roles] or \
            set(planned) != {name for name, _ in pointed}:
        return None
    ids = dict(pointed)
    if any((planned[a] == planned[b]) != (ids[a] == ids[b]) for a in planned for b in planned):
        return None  # the roles share VM templates otherwise than the export shares them
    skip_top = frozenset({"name", "roles", "registration_time"})
    if any(body.get(k) != v for k, v in _scalars(service.body, skip_top).items()):
        return None
    for app_role, doc_role in zip(app_roles, doc_roles, strict=True):
        if any(doc_role.get(k) != v for k, v in _scalars(app_role, _ROLE_TEMPLATE_KEYS).items()):
            return None
    missing = tuple(sorted(set(ids.values())))
    if any(i in template_ids_present for i in missing):
        return None
    return OrphanService(found.id, found.name, missing)


async def check_orphans_unused(site: "SiteConnection", plan: DownloadPlan) -> DownloadPlan:
    """Refuse to replace an orphan a live VM was instantiated from (its TEMPLATE_ID), or an orphan
    service template whose VM templates are not surely gone or that a service may come from."""
    if plan.service is not None and plan.service.replaces is not None:
        await _check_service_orphan_unused(site, plan.service.replaces)
    orphans = {t.replaces.id: t.replaces for t in plan.templates if t.replaces is not None}
    if not orphans:
        return plan
    for vm in await site.cloud.list_vms_detail():
        source = vm.template.get("TEMPLATE_ID")
        if source.isdigit() and int(source) in orphans:
            orphan = orphans[int(source)]
            raise SiteError(f"VM template name {orphan.name!r} is taken",
                            f"VM template {orphan.id} has that name; its disk images are gone but VM "
                            f"{vm.summary.id} was instantiated from it, so it is left alone. Look at them with "
                            f"`onetemplate show {orphan.id}` and `onevm show {vm.summary.id}`; choose another final "
                            "name, or delete that template yourself once the VM no longer needs it.")
    return plan


async def _check_service_orphan_unused(site: "SiteConnection", orphan: OrphanService) -> None:
    """Each VM template the orphan's roles point at is asked for by id (the pool listing shows only
    what the user may see): not found is gone, anything else stops the plan; and no service
    (`oneflow list`) may point at one of them or carry the orphan's name (OneFlow's instantiate
    copies the template's body, its name and roles, into the service: oneflow-server.rb
    release-7.4.0 714-870, service_template.rb `instantiate` 572-599)."""
    taken = f"Service template name {orphan.name!r} is taken"
    show = f"Look at it with `oneflow-template show {orphan.id}`"
    for template_id in orphan.missing_templates:
        try:
            await site.cloud.template_info(template_id)
        except SiteError as error:
            if error.code == NO_EXISTS:
                continue
            raise SiteError(taken, f"Service template {orphan.id} has that name and its roles point at VM template "
                            f"{template_id}, which could not be read ({error.title}); whether it is gone is not "
                            f"known, so the service template is left alone. {show}.",
                            retryable=error.retryable, code=error.code) from None
        raise SiteError(taken, f"Service template {orphan.id} has that name and its roles point at VM template "
                        f"{template_id}, which exists; it is left alone. {show}.")
    for doc in await site.cloud.list_documents(SERVICE_DOCUMENT):
        used = sorted(set(role_template_ids(doc.body or {})) & set(orphan.missing_templates))
        if used or doc.name == orphan.name:
            why = f"its roles point at VM template(s) {', '.join(map(str, used))}" if used else "it has that name"
            raise SiteError(taken, f"Service template {orphan.id} has that name; the VM templates its roles point at "
                            f"are gone, but service {doc.id} {doc.name!r} may have been instantiated from it ({why}), "
                            f"so it is left alone. {show} and `oneflow show {doc.id}`; choose another final name, or "
                            "delete the service template yourself once the service no longer needs it.")
