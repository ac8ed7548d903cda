"""OneFlow's REST API on the embedded site: routing, Basic auth, JSON envelopes, plain-text errors.

Follows OpenNebula/one `src/flow/oneflow-server.rb` (release-7.4.0; 6.10 and 7.0 agree unless
said). Service templates (DOCUMENT type 101) and services (type 100) live in `site.documents`,
shared with the XML-RPC `one.document*` methods. Envelope values are strings (`"ID": "5"`), a
single document in a pool is still a list, an empty pool is `{"DOCUMENT_POOL": {}}`,
`TEMPLATE.BODY` is a real JSON object; like the real server, every answer is `text/html`.

Errors are the platform's message as plain text: the before filter (lines 173-183) answers 401
"A username and password must be provided" / "Invalid credentials"; platform errors go through
`one_error_to_http` (lines 212-225): AUTHORIZATION 401, AUTHENTICATION 403, NO_EXISTS 404,
anything else 500; bad bodies (schema, inputs, networks) answer 400 (VALIDATION_EC); 405 is
never sent. A request body that is not JSON where the server parses it unguarded, or an action
without `action`, ends in Sinatra's 500 handler (lines 189-196, a JSON `message`/`reason`).
Routes the server does not have answer Sinatra's 404. Orchestration lives in
`tui.sim.flow_engine`, template validation and the pre-7.0 conversion in `tui.sim.flow_templates`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import re
import time
from typing import Any, Mapping

from tui.domain.error_codes import AUTHENTICATION, AUTHORIZATION, NO_EXISTS
from tui.domain.object_names import name_problem
from tui.domain.permissions import Permissions
from tui.sim import acl, flow_templates, sched_actions
from tui.sim.flow_engine import (
    SERVICE_TYPE,
    TEMPLATE_TYPE,
    FlowError,
    deploy_nets,
    evaluate_services,
    identity,
    instantiate,
    internal_error_body,
    recover,
    role_nodes,
    undeploy,
)
from tui.sim.platform import invalid_name_chars
from tui.sim.rpc_errors import OneError, no_exists, not_authorized
from tui.sim.state import SimDocument, SimSite, SimUser
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
    "template": ("GET", "DELETE", "PUT"),
    "template_action": ("POST",),
    "service_pool": ("GET",),
    "service": ("GET", "DELETE"),
    "service_action": ("POST",),
    "role_action": ("POST",),
}
#: VM actions a role (or a whole service) passes to its VMs (Role::SCHEDULE_ACTIONS, role.rb
#: release-7.4.0 104-124, without the snapshot ones the embedded site does not do)
VM_ACTIONS = frozenset({
    "terminate", "terminate-hard", "undeploy", "undeploy-hard", "hold", "release", "stop", "suspend",
    "resume", "reboot", "reboot-hard", "poweroff", "poweroff-hard",
})
#: Sinatra's answer to a route it does not have
_NOT_FOUND = "<h1>Not Found</h1>"


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
    """`one_error_to_http` (oneflow-server.rb release-7.4.0 212-225): AUTHORIZATION is 401 and
    AUTHENTICATION 403 (sic), NO_EXISTS 404, every other platform error 500."""
    return {AUTHORIZATION: 401, AUTHENTICATION: 403, NO_EXISTS: 404}.get(exc.code, 500)


def _route(site: SimSite, user: SimUser, method: str, path: str, raw: bytes) -> Response:
    for pattern, name in _ROUTES:
        match = pattern.match(path)
        if match is None:
            continue
        if method not in _ALLOWED[name]:
            return _error(404, _NOT_FOUND)
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
            if method == "PUT":
                return _template_update(site, doc, raw)
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
    return _error(404, _NOT_FOUND)


# envelopes ------------------------------------------------------------------------------------
def _perm_envelope(perms: Permissions) -> dict[str, str]:
    return {tag: str(bit) for tag, bit in perms.tagged()}


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
    # OneFlow lists what one.documentpool.info answers: newest first (API_LIST_ORDER DESC)
    docs = [envelope(site, d) for d in sorted(site.documents.values(), key=lambda d: d.id,
                                              reverse=site.lists_descending())
            if d.type == kind and _visible(site, user, d)]
    return _json(200, {"DOCUMENT_POOL": {"DOCUMENT": docs} if docs else {}})


def _template_pool(site: SimSite, user: SimUser) -> Response:
    return _pool(site, user, TEMPLATE_TYPE)


def _document(site: SimSite, user: SimUser, text: str, kind: int, op: str) -> SimDocument:
    """`Document#info` of the platform library (src/oca/ruby/opennebula/document.rb 92-100): the
    core's NO_EXISTS (404) and AUTHORIZATION (401) errors, and a document of another type is
    "[DocumentInfo] Error getting document [N]." with the default code 0x1111 (500)."""
    try:
        oid = int(text)
    except ValueError:
        oid = 0  # Sinatra passes the text on; the core reads it as 0 (`to_i`)
    doc = site.documents.get(oid)
    if doc is None:
        raise FlowError(404, f"[one.document.info] {no_exists('DOCUMENT', oid).message}")
    if not _visible(site, user, doc, op):
        raise FlowError(401, f"[one.document.info] {not_authorized(user.id, op, 'DOCUMENT', oid).message}")
    if doc.type != kind:
        raise FlowError(500, f"[DocumentInfo] Error getting document [{oid}].")
    return doc


def _action(raw: bytes) -> tuple[str, dict[str, Any]]:
    """`JSON.parse(request.body.read)['action']` and its `params`: unguarded upstream, so a body
    that is not JSON or has no action ends in the 500 handler."""
    try:
        data = json.loads(raw.decode() or "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FlowError(500, internal_error_body(f"unexpected token: {exc}")) from None
    action = data.get("action") if isinstance(data, dict) else None
    if not isinstance(action, dict):
        raise FlowError(500, internal_error_body("undefined method `[]' for nil"))
    params = action.get("params") or {}
    if not isinstance(params, dict):
        raise FlowError(500, internal_error_body(f"undefined method `[]' for {type(params).__name__}"))
    return str(action.get("perform")), params


# service templates ----------------------------------------------------------------------------
def _parse_body(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode() or "null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FlowError(400, f"unexpected token: {exc}") from None


def _validated(site: SimSite, body: Any) -> dict[str, Any]:
    """`ServiceTemplate.validate` of the site's version; a refusal is 400 (VALIDATION_EC)."""
    if not isinstance(body, dict):
        raise FlowError(400, "KEY: '' must be an Object;")
    try:
        return flow_templates.validate(site.config.one_version, body)
    except flow_templates.TemplateInvalid as exc:
        raise FlowError(400, exc.message) from None


def _template_create(site: SimSite, user: SimUser, raw: bytes) -> Response:
    """`POST /service_template` (oneflow-server.rb release-7.4.0 691-712): `ServiceTemplate#allocate`
    validates the body, converting a pre-7.0 one on 7.x, and stores it with registration_time."""
    body = _validated(site, _parse_body(raw))
    body["registration_time"] = int(time.time())
    doc = SimDocument(id=site.next_id("document"), name=body["name"], uid=user.id, gid=user.gid,
                      type=TEMPLATE_TYPE, body=body, regtime=int(time.time()))
    site.documents[doc.id] = doc
    return _json(201, {"DOCUMENT": envelope(site, doc)})


def _template_update(site: SimSite, doc: SimDocument, raw: bytes) -> Response:
    """`PUT /service_template/:id` (lines 661-689): the whole body replaced, validated,
    registration_time kept (IMMUTABLE_ATTRS)."""
    body = _parse_body(raw)
    if isinstance(body, dict):
        registered = doc.body.get("registration_time") if isinstance(doc.body, dict) else None
        if body.get("registration_time") is None:
            body["registration_time"] = registered
        elif body["registration_time"] != registered:
            raise FlowError(500, "Immutable value: `service_template/registration_time` can not be changed")
    doc.body = _validated(site, body)
    doc.name = str(doc.body["name"])
    return _json(200, {"DOCUMENT": envelope(site, doc)})


def _template_action(site: SimSite, user: SimUser, doc: SimDocument, action: str, params: dict[str, Any]) -> Response:
    if action == "instantiate":
        service = instantiate(site, doc, params.get("merge_template"), user)
        answer = _json(201, {"DOCUMENT": envelope(site, service)})  # the service as allocated: PENDING
        deploy_nets(site, service)
        return answer
    if action == "clone":
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise FlowError(500, "[one.document.clone] Clone failed: the new document needs a name.")
        body = copy.deepcopy(doc.body)
        body["name"] = name
        body["registration_time"] = int(time.time())
        clone = SimDocument(id=site.next_id("document"), name=name, uid=user.id, gid=user.gid,
                            type=TEMPLATE_TYPE, body=body, regtime=int(time.time()))
        site.documents[clone.id] = clone
        return _json(201, {"DOCUMENT": envelope(site, clone)})
    if _ownership(site, user, doc, action, params):
        return 204, dict(_HEADERS), b""
    # the `else` branch builds an Error but never returns it (lines 952-959): 200, empty body
    return 200, dict(_HEADERS), b""


def _ownership(site: SimSite, user: SimUser, doc: SimDocument, action: str, params: dict[str, Any]) -> bool:
    """chown, chgrp, chmod, rename on a document (and, for a service, on its VMs).

    Refusals as the service routes answer them (oneflow-server.rb release-7.4.0 381-413): a
    missing parameter is "Action chown: You have to specify a UID" (500), the core's
    AUTHORIZATION 401. (The template route builds the same errors and never returns them: it
    answers 204 whatever happened; the embedded site reports them there too.)"""
    if action not in ("chown", "chgrp", "chmod", "rename"):
        return False
    needs = {"chown": ("owner_id", "a UID"), "chgrp": ("group_id", "a GID"), "chmod": ("octet", "an OCTET"),
             "rename": ("name", "a name")}[action]
    if not params.get(needs[0]) and params.get(needs[0]) != 0:
        raise FlowError(500, f"Action {action}: You have to specify {needs[1]}")
    if not _visible(site, user, doc, "MANAGE"):
        raise FlowError(401, f"[one.document.{action}] "
                             f"{not_authorized(user.id, 'MANAGE', 'DOCUMENT', doc.id).message}")
    if action in ("chown", "chgrp"):
        _chown(site, user, doc, _int_param(params, "owner_id", -1) if action == "chown" else -1,
               _int_param(params, "group_id", -1))
    elif action == "chmod":
        octet = str(params.get("octet", ""))
        if not re.fullmatch(r"[0-7]{3}", octet):
            raise FlowError(500, f"[one.document.chmod] Wrong permissions octet: {octet}")
        doc.perms = Permissions.from_octal(octet)
    else:
        _rename(site, doc, params.get("name"))
    return True


def _chown(site: SimSite, user: SimUser, doc: SimDocument, uid: int, gid: int) -> None:
    """one.document.chown (-1 keeps the owner or group), and on a service's VMs too."""
    if uid >= 0 and uid not in site.users:
        raise FlowError(404, f"[one.document.chown] {no_exists('USER', uid).message}")
    if gid >= 0 and gid not in site.groups:
        raise FlowError(404, f"[one.document.chown] {no_exists('GROUP', gid).message}")
    if not acl.is_admin(user) and (uid not in (-1, user.id) or (gid >= 0 and gid not in set(user.groups) | {user.gid})):
        raise FlowError(401, f"[one.document.chown] "
                             f"{not_authorized(user.id, 'ADMIN', 'DOCUMENT', doc.id).message}")
    targets: list[Any] = [doc] + (role_nodes(site, doc) if doc.type == SERVICE_TYPE else [])
    for obj in targets:
        if uid >= 0:
            obj.uid = uid
        if gid >= 0:
            obj.gid = gid
        if hasattr(obj, "touch"):
            obj.touch()


def _rename(site: SimSite, doc: SimDocument, name: Any) -> None:
    """one.document.rename, the name in the template's body too."""
    if not isinstance(name, str) or not name.strip():
        raise FlowError(500, "[one.document.rename] Invalid NAME, it cannot be empty")
    # one.document.rename answers ACTION with `PoolObjectSQL::name_is_valid`'s text (src/rm/RequestManagerRename.cc
    # release-7.0.0 100-108); OneFlow relays an ACTION failure as 500 (`one_error_to_http`, oneflow-server.rb)
    problem = name_problem(name, invalid_name_chars(site.config.one_version))
    if problem is not None:
        raise FlowError(500, f"[one.document.rename] {problem}")
    doc.name = name
    if isinstance(doc.body, dict):
        doc.body["name"] = name


def _int_param(params: dict[str, Any], key: str, default: int) -> int:
    value = params.get(key, default)
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0  # Ruby's to_i


# services -------------------------------------------------------------------------------------
def _service_action(site: SimSite, user: SimUser, doc: SimDocument, action: str, params: dict[str, Any]) -> Response:
    """`POST /service/:id/action` (oneflow-server.rb release-7.4.0 370-439): `recover` (with
    `params.delete` it is `oneflow recover --delete`), ownership, `release`, a VM action; anything
    else is "Action X not supported" (500)."""
    if action == "recover":
        recover(site, doc, delete=bool(params.get("delete")))
        return 204, dict(_HEADERS), b""
    if action == "release":
        return 204, dict(_HEADERS), b""
    if action in VM_ACTIONS:
        _vm_action(site, doc, action, params)
        return 204, dict(_HEADERS), b""
    if _ownership(site, user, doc, action, params):
        return 204, dict(_HEADERS), b""
    raise FlowError(500, f"Action {action} not supported")


def _role_action(site: SimSite, doc: SimDocument, role_name: str, action: str, params: dict[str, Any]) -> Response:
    """`POST /service/:id/role/:name/action` (release-7.4.0 lines 508-529, `ServiceLCM#sched_action`):
    the action is scheduled on the role's VMs, `number` per `period` seconds (`sched_actions`)."""
    role = next((r for r in doc.body.get("roles", []) if isinstance(r, dict) and r.get("name") == role_name), None)
    if role is None:
        raise FlowError(500, f"Role '{role_name}' not found")
    if action not in VM_ACTIONS:
        raise FlowError(500, f"Action {action} not supported")
    period, number = sched_actions.period_and_number(params)
    try:
        sched_actions.batch_action(site, role, role_nodes(site, doc, role_name), action, period, number,
                                   params.get("args"))
    except sched_actions.RoleActionRefused as refused:
        raise FlowError(500, str(refused)) from None
    return 204, dict(_HEADERS), b""


def _vm_action(site: SimSite, doc: SimDocument, action: str, params: dict[str, Any]) -> None:
    """A service action on every role (`service_sched_action`, LifeCycleManager.rb release-7.4.0
    lines 166-177): each role's batch, a role's refusal ignored as the platform does."""
    period, number = sched_actions.period_and_number(params)
    for role in doc.body.get("roles", []):
        if not isinstance(role, dict):
            continue
        try:
            sched_actions.batch_action(site, role, role_nodes(site, doc, str(role.get("name"))), action, period,
                                       number, params.get("args"))
        except sched_actions.RoleActionRefused:
            continue


# responses ------------------------------------------------------------------------------------
def _json(status: int, data: Any) -> Response:
    return status, dict(_HEADERS), json.dumps(data).encode()


def _error(status: int, message: str) -> Response:
    return status, dict(_HEADERS), message.encode()
