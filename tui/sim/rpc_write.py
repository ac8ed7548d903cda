"""The XML-RPC methods that change images, VM templates, users, documents and ACLs."""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from tui.domain.documents import SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT
from tui.domain.error_codes import INTERNAL, XML_RPC_API
from tui.domain.template_text import Template, scalar
from tui.sim import acl as acl_rules
from tui.sim.images import allocate_image, delete_image
from tui.sim.rpc_context import (
    Call,
    apply_update,
    check_update_type,
    chmod,
    chown,
    merge_template,
    method,
    parse_text,
    refuse_name,
    update_text,
)
from tui.sim.rpc_errors import OneError, name_taken, no_exists
from tui.sim.state import OWNER_ONLY, SimDocument, SimSite, SimVmTemplate


def _register_ownership(prefix: str, kind: str, table: Callable[[SimSite], dict[int, Any]],
                        chmod_optional: str = "") -> None:
    """one.<prefix>.chmod (id + 9 bits, -1 unchanged) and one.<prefix>.chown (id, uid, gid)."""

    def do_chmod(call: Call, oid: int, *values: Any) -> int:
        obj = call.get(table(call.site), kind, oid, "MANAGE")
        obj.perms = chmod(obj.perms, values[:9])
        return oid

    def do_chown(call: Call, oid: int, uid: int, gid: int) -> int:
        chown(call, call.get(table(call.site), kind, oid, "ADMIN" if uid >= 0 else "MANAGE"), uid, gid)
        return oid

    method(f"one.{prefix}.chmod", "i" * 10, chmod_optional)(do_chmod)
    method(f"one.{prefix}.chown", "iii")(do_chown)


_register_ownership("image", "IMAGE", lambda site: site.images)
_register_ownership("template", "TEMPLATE", lambda site: site.templates, chmod_optional="b")
_register_ownership("document", "DOCUMENT", lambda site: site.documents)


#: every `update` method takes the append flag as an optional fourth argument, 0 when left out
#: (`paramList.size() > 3 ? paramList.getInt(3) : 0` in src/rm/xml-rpc/ImageXRPC.cc, TemplateXRPC.cc,
#: UserXRPC.cc, DocumentXRPC.cc; 6.10 RequestManagerUpdateTemplate.cc); the object is looked up
#: and authorized first, then the flag is checked (`SharedAPI::update`)


# images ---------------------------------------------------------------------------------------


@method("one.image.allocate", "si", "b")
def image_allocate(call: Call, text: str, ds_id: int, skip_capacity_check: bool = False) -> int:
    call.require("IMAGE", "CREATE")
    ds = call.site.datastores.get(ds_id)
    if ds is not None:
        call.require("DATASTORE", "USE", ds)
    image = allocate_image(call.site, parse_text(text), ds_id, call.user.id, call.user.gid)
    return image.id


@method("one.image.update", "is", "i")
def image_update(call: Call, image_id: int, text: str, append: int = 0) -> int:
    image = call.get(call.site.images, "IMAGE", image_id, "MANAGE")
    check_update_type(append)
    image.template = apply_update(image.template, text, append)
    image.modtime = int(time.time())
    return image_id


@method("one.image.delete", "i", "b")
def image_delete(call: Call, image_id: int, force: bool = False) -> int:
    call.get(call.site.images, "IMAGE", image_id, "MANAGE")
    delete_image(call.site, image_id)
    return image_id


# VM templates ---------------------------------------------------------------------------------


def _template_name_free(call: Call, name: str, uid: int, but: int = -1) -> None:
    """A name the owner's other template holds answers INTERNAL with the pool's bare text: src/vm_template/
    VMTemplatePool.cc `allocate` (line 61; 6.10.0 line 77) through src/rm/api/TemplateAPI.cc
    `pool_allocate` (line 666; 6.10.0 and 7.0.0 src/rm/RequestManagerAllocate.cc line 756)."""
    taken = next((t for t in call.site.templates.values() if t.name == name and t.uid == uid and t.id != but), None)
    if taken is not None:
        raise name_taken("TEMPLATE", taken.id, INTERNAL)


@method("one.template.allocate", "s")
def template_allocate(call: Call, text: str) -> int:
    call.require("TEMPLATE", "CREATE")
    attrs = parse_text(text)
    name = scalar(attrs, "NAME", "").strip()
    refuse_name(call, name, INTERNAL)
    _template_name_free(call, name, call.user.id)
    template_id = call.site.next_id("template")
    body: Template = [a for a in attrs if a[0] != "NAME"]
    call.site.templates[template_id] = SimVmTemplate(template_id, name, call.user.id, call.user.gid, body)
    return template_id


@method("one.template.update", "is", "i")
def template_update(call: Call, template_id: int, text: str, append: int = 0) -> int:
    tpl = call.get(call.site.templates, "TEMPLATE", template_id, "MANAGE")
    check_update_type(append)
    tpl.template = [a for a in apply_update(tpl.template, text, append) if a[0] != "NAME"]
    return template_id


@method("one.template.delete", "i", "b")
def template_delete(call: Call, template_id: int, recursive: bool = False) -> int:
    tpl = call.get(call.site.templates, "TEMPLATE", template_id, "MANAGE")
    if recursive:
        for name, disk in tpl.template:
            if name == "DISK" and isinstance(disk, list):
                image_id = next((v for k, v in disk if k == "IMAGE_ID"), "")
                if image_id.isdigit() and int(image_id) in call.site.images:
                    delete_image(call.site, int(image_id))
    del call.site.templates[template_id]
    return template_id


# users ----------------------------------------------------------------------------------------


@method("one.user.update", "is", "i")
def user_update(call: Call, user_id: int, text: str, append: int = 0) -> int:
    user = call.site.users.get(user_id)
    if user is None:
        raise no_exists("USER", user_id)
    if user.id != call.user.id:
        call.require("USER", "MANAGE", user)
    check_update_type(append)
    user.template = apply_update(user.template, text, append)
    return user_id


# documents ------------------------------------------------------------------------------------


def _document_body(attrs: Template, doc_type: int) -> tuple[dict[str, Any], Template]:
    """Split BODY (JSON for OneFlow's types 100/101) from the other document attributes."""
    body_text = scalar(attrs, "BODY", "")
    rest = [a for a in attrs if a[0] not in ("NAME", "BODY")]
    if doc_type in (SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT):
        try:
            body = json.loads(body_text) if body_text else {}
        except json.JSONDecodeError as exc:
            raise OneError(XML_RPC_API, f"BODY is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise OneError(XML_RPC_API, "BODY must be a JSON object.")
        return body, rest
    return {}, rest + ([("BODY", body_text)] if body_text else [])


@method("one.document.allocate", "si")
def document_allocate(call: Call, text: str, doc_type: int) -> int:
    call.require("DOCUMENT", "CREATE")
    attrs = parse_text(text)
    body, rest = _document_body(attrs, doc_type)
    doc_id = call.site.next_id("document")
    name = scalar(attrs, "NAME", "") or str(body.get("name", ""))
    call.site.documents[doc_id] = SimDocument(doc_id, name, call.user.id, call.user.gid, doc_type, body,
                                              perms=OWNER_ONLY, template=rest)
    return doc_id


@method("one.document.update", "is", "i")
def document_update(call: Call, doc_id: int, text: str, append: int = 0) -> int:
    doc = call.get(call.site.documents, "DOCUMENT", doc_id, "MANAGE")
    check_update_type(append)
    new = update_text(text)
    current = list(doc.template)
    if doc.body or doc.type in (SERVICE_DOCUMENT, SERVICE_TEMPLATE_DOCUMENT):
        current.append(("BODY", json.dumps(doc.body)))
    merged = new if append == 0 else merge_template(current, new)
    doc.body, doc.template = _document_body(merged, doc.type)
    return doc_id


@method("one.document.delete", "i")
def document_delete(call: Call, doc_id: int) -> int:
    call.get(call.site.documents, "DOCUMENT", doc_id, "MANAGE")
    del call.site.documents[doc_id]
    return doc_id


# ACLs -----------------------------------------------------------------------------------------


@method("one.acl.addrule", "sss", "s")
def acl_addrule(call: Call, user: str, resource: str, rights: str, zone: str | None = None) -> int:
    call.require("ACL", "MANAGE")
    return acl_rules.add_rule(
        call.site, acl_rules.parse_hex(user), acl_rules.parse_hex(resource), acl_rules.parse_hex(rights),
        None if zone is None else acl_rules.parse_hex(zone),
    )


@method("one.acl.delrule", "i")
def acl_delrule(call: Call, acl_id: int) -> int:
    call.require("ACL", "MANAGE")
    acl_rules.del_rule(call.site, acl_id)
    return acl_id

