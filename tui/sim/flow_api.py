"""OneFlow's REST API on the embedded site: routing, Basic auth, JSON envelopes, plain-text errors.

Routes and shapes follow reference/oneflow.md. Service templates (DOCUMENT type 101) and services
(type 100) live in `site.documents`, shared with the XML-RPC `one.document*` methods. Envelope
values are strings (`"ID": "5"`), a single document in a pool is still a list, an empty pool is
`{"DOCUMENT_POOL": {}}`, `TEMPLATE.BODY` is a real JSON object. Errors are plain text with 400,
401, 403, 404, 405 or 500; like the real server, every answer is sent as `text/html`.
Orchestration lives in `tui.sim.flow_engine`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
import time
from typing import Any, Mapping

from tui.sim import acl, lifecycle
from tui.sim.flow_engine import (
    SERVICE_TYPE,
    TEMPLATE_TYPE,
    FlowError,
    evaluate,
    evaluate_services,
    identity,
    instantiate,
    recover,
    role_nodes,
    undeploy,
)
from tui.sim.rpc_errors import OneError
from tui.sim.state import Perms, SimDocument, SimSite, SimUser
from tui.sim.toolkit_deploy import deploy_toolkit_now

__all__ = ["deploy_toolkit_now", "envelope", "handle_flow"]

Response = tuple[int, dict[str, str], bytes]

#: Sinatra's default: the real server never sets a JSON content type
_HEADERS = {"Content-Type": "text/html;charset=utf-8"}
_ID = r"([^/]+)"
_ROUTES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), name)
    for pattern, name in (
        (r"^/service_template$", "template_pool"),
        (rf"^/service_template/{_ID}$", "template"),
        (rf"^/service_template/{_ID}/action$", "template_action"),
        (r"^/service$", "service_pool"),
        (rf"^/service/{_ID}$", "service"),
        (rf"^/service/{_ID}/action$", "service_action"),
        (rf"^/service/{_ID}/role/([^/]+)/action$", "role_action"),
    )
)
_ALLOWED = {
    "template_pool": ("GET", "POST"),
    "template": ("GET", "DELETE"),
    "template_action": ("POST",),
    "service_pool": ("GET",),
    "service": ("GET", "DELETE"),
    "service_action": ("POST",),
    "role_action": ("POST",),
}
#: VM actions a role (or a whole service) passes to its VMs (Role::SCHEDULE_ACTIONS)
VM_ACTIONS = frozenset({
    "terminate", "terminate-hard", "undeploy", "undeploy-hard", "hold", "release", "stop", "suspend",
    "resume", "reboot", "reboot-hard", "poweroff", "poweroff-hard",
})


def handle_flow(site: SimSite, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
    """Answer one OneFlow request: (status, headers, body)."""
    lower = {k.lower(): v for k, v in headers.items()}
    credentials = _basic_auth(lower.get("authorization", ""))
    if credentials is None:
        return _error(401, "A username and password must be provided")
    with site.lock:
        user = site.authenticate(*credentials)
        if user is None:
            return _error(401, "Invalid credentials")
        site.advance()
        evaluate_services(site)
        try:
            return _route(site, user, method.upper(), path.split("?", 1)[0].rstrip("/") or "/", body)
        except FlowError as exc:
            return _error(exc.status, exc.message)
        except OneError as exc:
            return _error(_http_status(exc), exc.message)


def _basic_auth(value: str) -> tuple[str, str] | None:
    scheme, _, encoded = value.partition(" ")
    if scheme.lower() != "basic" or not encoded.strip():
        return None
    try:
        text = base64.b64decode(encoded.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = text.partition(":")
    return (user, password) if sep and user else None


def _http_status(exc: OneError) -> int:
    return {0x0100: 401, 0x0200: 403, 0x0400: 404, 0x0800: 405, 0x1000: 400}.get(exc.code, 500)


def _route(site: SimSite, user: SimUser, method: str, path: str, raw: bytes) -> Response:
    for pattern, name in _ROUTES:
        match = pattern.match(path)
        if match is None:
            continue
        if method not in _ALLOWED[name]:
            return _error(405, f"Method {method} is not allowed on {path}")
        args = match.groups()
        if name == "template_pool":
            return _template_pool(site, user) if method == "GET" else _template_create(site, user, raw)
        if name == "service_pool":
            return _pool(site, user, SERVICE_TYPE)
        kind = TEMPLATE_TYPE if name.startswith("template") else SERVICE_TYPE
        # instantiate and clone need USE; ownership actions check MANAGE themselves
        op = "USE" if method == "GET" or name == "template_action" else "MANAGE"
        doc = _document(site, user, args[0], kind, op)
        if name in ("template", "service"):
            if method == "GET":
                return _json(200, {"DOCUMENT": envelope(site, doc)})
            if kind == TEMPLATE_TYPE:
                site.documents.pop(doc.id, None)
            else:
                undeploy(site, doc)
            return 204, dict(_HEADERS), b""
        action, params = _action(raw)
        if name == "template_action":
            return _template_action(site, user, doc, action, params)
        if name == "service_action":
            return _service_action(site, user, doc, action, params)
        return _role_action(site, doc, args[1], action, params)
    return _error(404, f"Not found: {path}")


# envelopes ------------------------------------------------------------------------------------
def _perm_envelope(perms: Perms) -> dict[str, str]:
    return {
        "OWNER_U": str(perms.owner_u), "OWNER_M": str(perms.owner_m), "OWNER_A": str(perms.owner_a),
        "GROUP_U": str(perms.group_u), "GROUP_M": str(perms.group_m), "GROUP_A": str(perms.group_a),
        "OTHER_U": str(perms.other_u), "OTHER_M": str(perms.other_m), "OTHER_A": str(perms.other_a),
    }


def envelope(site: SimSite, doc: SimDocument) -> dict[str, Any]:
    """A DOCUMENT as OneFlow serialises it: every envelope value a string, BODY a JSON object."""
    return {
        **identity(site, doc.id, doc.uid, doc.gid, doc.name),
        "TYPE": str(doc.type),
        "PERMISSIONS": _perm_envelope(doc.perms),
        "TEMPLATE": {"BODY": copy.deepcopy(doc.body)},
    }


def _visible(site: SimSite, user: SimUser, doc: SimDocument, op: str = "USE") -> bool:
    return acl.authorize(site, user, "DOCUMENT", op, doc.id, doc.uid, doc.gid, doc.perms)


def _pool(site: SimSite, user: SimUser, kind: int) -> Response:
    docs = [envelope(site, d) for d in sorted(site.documents.values(), key=lambda d: d.id)
            if d.type == kind and _visible(site, user, d)]
    return _json(200, {"DOCUMENT_POOL": {"DOCUMENT": docs} if docs else {}})


def _template_pool(site: SimSite, user: SimUser) -> Response:
    return _pool(site, user, TEMPLATE_TYPE)


def _document(site: SimSite, user: SimUser, text: str, kind: int, op: str) -> SimDocument:
    try:
        oid = int(text)
    except ValueError:
        raise FlowError(404, f"[one.document.info] Error getting document [{text}].") from None
    doc = site.documents.get(oid)
    if doc is None or doc.type != kind:
        raise FlowError(404, f"[one.document.info] Error getting document [{oid}].")
    if not _visible(site, user, doc, op):
        raise FlowError(403, f"[one.document.info] User [{user.id}] : Not authorized to perform {op} DOCUMENT [{oid}].")
    return doc


def _action(raw: bytes) -> tuple[str, dict[str, Any]]:
    try:
        data = json.loads(raw.decode() or "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FlowError(400, f"Error parsing JSON: {exc}") from None
    action = data.get("action") if isinstance(data, dict) else None
    if not isinstance(action, dict) or not isinstance(action.get("perform"), str):
        raise FlowError(400, 'Wrong action format: expected {"action": {"perform": "<action>", "params": {...}}}')
    params = action.get("params") or {}
    if not isinstance(params, dict):
        raise FlowError(400, "Wrong action format: params must be an object")
    return action["perform"], params


# service templates ----------------------------------------------------------------------------
def _template_create(site: SimSite, user: SimUser, raw: bytes) -> Response:
    try:
        body = json.loads(raw.decode() or "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FlowError(400, f"Error parsing JSON: {exc}") from None
    if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not isinstance(body.get("roles"), list):
        raise FlowError(400, "Wrong service template: a JSON object with a name and a list of roles")
    doc = SimDocument(id=site.next_id("document"), name=body["name"], uid=user.id, gid=user.gid,
                      type=TEMPLATE_TYPE, body=body, regtime=int(time.time()))
    site.documents[doc.id] = doc
    return _json(201, {"DOCUMENT": envelope(site, doc)})


def _template_action(site: SimSite, user: SimUser, doc: SimDocument, action: str, params: dict[str, Any]) -> Response:
    if action == "instantiate":
        service = instantiate(site, doc, params.get("merge_template"), user)
        evaluate(site, service)
        return _json(201, {"DOCUMENT": envelope(site, service)})
    if action == "clone":
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise FlowError(400, "clone needs a name")
        body = copy.deepcopy(doc.body)
        body["name"] = name
        clone = SimDocument(id=site.next_id("document"), name=name, uid=user.id, gid=user.gid,
                            type=TEMPLATE_TYPE, body=body, regtime=int(time.time()))
        site.documents[clone.id] = clone
        return _json(201, {"DOCUMENT": envelope(site, clone)})
    if _ownership(site, user, doc, action, params):
        return 204, dict(_HEADERS), b""
    raise FlowError(400, f"Action {action}: Unknown action")


def _ownership(site: SimSite, user: SimUser, doc: SimDocument, action: str, params: dict[str, Any]) -> bool:
    """chown, chgrp, chmod, rename on a document (and, for a service, on its VMs)."""
    if action not in ("chown", "chgrp", "chmod", "rename"):
        return False
    if not _visible(site, user, doc, "MANAGE"):
        raise FlowError(403, f"[one.document.{action}] User [{user.id}] : Not authorized to perform MANAGE DOCUMENT [{doc.id}].")
    if action in ("chown", "chgrp"):
        uid = _int_param(params, "owner_id", -1) if action == "chown" else -1
        gid = _int_param(params, "group_id", -1)
        if uid >= 0 and uid not in site.users:
            raise FlowError(404, f"[one.document.chown] Error getting user [{uid}].")
        if gid >= 0 and gid not in site.groups:
            raise FlowError(404, f"[one.document.chown] Error getting group [{gid}].")
        if not acl.is_admin(user) and (uid not in (-1, user.id) or (gid >= 0 and gid not in set(user.groups) | {user.gid})):
            raise FlowError(403, f"[one.document.chown] User [{user.id}] : Not authorized to perform ADMIN DOCUMENT [{doc.id}].")
        targets: list[Any] = [doc] + (role_nodes(site, doc) if doc.type == SERVICE_TYPE else [])
        for obj in targets:
            if uid >= 0:
                obj.uid = uid
            if gid >= 0:
                obj.gid = gid
            if hasattr(obj, "touch"):
                obj.touch()
        return True
    if action == "chmod":
        octet = str(params.get("octet", ""))
        if not re.fullmatch(r"[0-7]{3}", octet):
            raise FlowError(400, "chmod needs an octet such as \"640\"")
        bits = [int(c) for c in octet]
        doc.perms = Perms(*(b >> s & 1 for b in bits for s in (2, 1, 0)))
        return True
    if action == "rename":
        name = params.get("name")
        if not isinstance(name, str) or not name.strip():
            raise FlowError(400, "rename needs a name")
        doc.name = name
        if isinstance(doc.body, dict):
            doc.body["name"] = name
        return True
    return False


def _int_param(params: dict[str, Any], key: str, default: int) -> int:
    value = params.get(key, default)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise FlowError(400, f"{key} must be an integer") from None


# services -------------------------------------------------------------------------------------
def _service_action(site: SimSite, user: SimUser, doc: SimDocument, action: str, params: dict[str, Any]) -> Response:
    if action == "recover":
        recover(site, doc, delete=bool(params.get("delete")))
        return 204, dict(_HEADERS), b""
    if action == "release":
        return 204, dict(_HEADERS), b""
    if action in VM_ACTIONS:
        _vm_action(site, doc, None, action)
        return 204, dict(_HEADERS), b""
    if _ownership(site, user, doc, action, params):
        return 204, dict(_HEADERS), b""
    raise FlowError(400, f"Action {action}: Unknown action")


def _role_action(site: SimSite, doc: SimDocument, role_name: str, action: str, params: dict[str, Any]) -> Response:
    roles = [r.get("name") for r in doc.body.get("roles", []) if isinstance(r, dict)]
    if role_name not in roles:
        raise FlowError(404, f"Role {role_name} not found in service {doc.id}")
    if action not in VM_ACTIONS:
        raise FlowError(400, f"Action {action}: Unknown action")
    _vm_action(site, doc, role_name, action)
    return 204, dict(_HEADERS), b""


def _vm_action(site: SimSite, doc: SimDocument, role_name: str | None, action: str) -> None:
    for vm in role_nodes(site, doc, role_name):
        if action.startswith("terminate"):
            lifecycle.terminate_vm(site, vm.id, hard=action.endswith("-hard"))
        else:
            lifecycle.vm_action(site, action, vm.id)


# responses ------------------------------------------------------------------------------------
def _json(status: int, data: Any) -> Response:
    return status, dict(_HEADERS), json.dumps(data).encode()


def _error(status: int, message: str) -> Response:
    return status, dict(_HEADERS), message.encode()
