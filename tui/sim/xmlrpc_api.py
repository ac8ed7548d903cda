"""The cloud's XML-RPC wire: decode a call, authenticate it, check its types, run it, encode the answer.

Answers are what the platform (oned with xmlrpc-c) sends: `[true, value, 0]` on success,
`[false, "[one.x.y] message", code, resp_id, replication_index]` on a platform error
(`src/rm/xml-rpc/RequestXRPC.cc` `make_response`; 6.10 `src/rm/Request.cc` `failure_response`):
`resp_id` is the object's id for NO_EXISTS and -1 otherwise (`include/RequestAttributes.h` starts
it at -1; the API sets it for NO_EXISTS, and for a few errors this site does not produce, such as
deleting a locked image in `src/rm/api/ImageAPI.cc`), and `replication_index` is the i8 UINT64_MAX,
which reads -1, outside a replicated zone. XML-RPC faults answer an unknown method (-506), a
wrongly typed or missing parameter (-501, xmlrpc-c's wording, e.g. "Parameter that is supposed to
be integer is not") and a body that is not XML-RPC (-32700). The session is checked on every
call, before the parameters.
"""

from __future__ import annotations

import re
import xmlrpc.client
from typing import Any
from xml.parsers.expat import ExpatError

# importing the method modules registers their methods
from tui.domain.error_codes import ACTION, AUTHENTICATION, INTERNAL, NO_EXISTS
from tui.sim import rpc_identity, rpc_read, rpc_vm, rpc_vnet, rpc_write  # noqa: F401
from tui.sim.rpc_context import METHODS, Call, Method, WireEscaped
from tui.sim.rpc_errors import OneError
from tui.sim.state import SimSite
from tui.sim.xml_render import wire_escape

#: `replication_idx` starts as UINT64_MAX (include/RequestAttributes.h); as an xmlrpc-c i8 it reads -1
NO_REPLICATION_INDEX = -1
FAULT_TYPE = -501
FAULT_NO_SUCH_METHOD = -506
FAULT_PARSE = -32700
_METHOD_NAME = re.compile(rb"<methodName>\s*([^<\s]+)\s*</methodName>")
_TYPE_MESSAGES = {
    "i": "Parameter that is supposed to be integer is not",
    "s": "Parameter that is supposed to be a string is not",
    "b": "Parameter that is supposed to be boolean is not",
    "a": "Parameter that is supposed to be an array is not",
}


def method_name(body: bytes) -> str:
    """The method a request body calls, read without decoding the whole body ("" if none)."""
    match = _METHOD_NAME.search(body[:4096])
    return match.group(1).decode(errors="replace") if match else ""


def _fault(code: int, message: str) -> bytes:
    return xmlrpc.client.dumps(xmlrpc.client.Fault(code, message), methodresponse=True).encode()


_PLACEHOLDER = "SITETK-ESCAPED-VALUE"
_HEAD, _TAIL = xmlrpc.client.dumps(([True, _PLACEHOLDER, 0],), methodresponse=True, encoding="UTF-8").split(_PLACEHOLDER)


def _success(value: Any) -> bytes:
    if isinstance(value, WireEscaped):
        # byte for byte what dumps() writes, without escaping 100 MB of cached VM bodies again
        return "".join((_HEAD, value, _TAIL)).encode()
    return xmlrpc.client.dumps(([True, value, 0],), methodresponse=True, encoding="UTF-8").encode()


def failure(method: str, code: int, message: str, oid: int = -1) -> bytes:
    """The failure array; `oid` goes out only for NO_EXISTS (see the module docstring)."""
    resp_id = oid if code == NO_EXISTS else -1
    text = wire_escape(f"[{method}] {message}")
    # written by hand: xmlrpc.client cannot send an <i8>, the type xmlrpc-c gives the index
    return (
        "<?xml version='1.0'?>\n<methodResponse>\n<params>\n<param>\n<value><array><data>\n"
        "<value><boolean>0</boolean></value>\n"
        f"<value><string>{text}</string></value>\n"
        f"<value><int>{code}</int></value>\n"
        f"<value><int>{resp_id}</int></value>\n"
        f"<value><i8>{NO_REPLICATION_INDEX}</i8></value>\n"
        "</data></array></value>\n</param>\n</params>\n</methodResponse>\n"
    ).encode()


def internal_error(method: str) -> bytes:
    """What an injected server failure answers: the platform's internal error."""
    return failure(method or "one.system.version", INTERNAL, "Internal error: the request could not be processed.")


def refused_call(method: str) -> bytes:
    """What an injected refusal answers (`Faults.fail_methods`): the platform's ACTION error, a
    definite answer (the call did nothing), so a client neither retries nor reconciles it."""
    return failure(method, ACTION, "Error performing action: refused by an injected fault.")


def _type_ok(value: Any, letter: str) -> bool:
    if letter == "i":
        return type(value) is int
    if letter == "b":
        return type(value) is bool
    if letter == "a":
        return isinstance(value, list)
    return isinstance(value, str)


def _check_types(spec: Method, params: tuple[Any, ...]) -> bytes | None:
    if len(params) < len(spec.required):
        return _fault(FAULT_TYPE, "Not enough parameters")
    letters = spec.required + spec.optional
    # parameters past the signature are not checked: the call drops them (`args` in `handle_xmlrpc`)
    for value, letter in zip(params, letters, strict=False):
        if not _type_ok(value, letter):
            return _fault(FAULT_TYPE, _TYPE_MESSAGES[letter])
    return None


def handle_xmlrpc(site: SimSite, body: bytes) -> bytes:
    """Answer one XML-RPC request body (the caller advanced the site's clock)."""
    try:
        params, name = xmlrpc.client.loads(body)
    except (ExpatError, ValueError, TypeError, xmlrpc.client.ResponseError) as exc:
        return _fault(FAULT_PARSE, f"parse error. not well formed: {exc}")
    name = name or ""
    spec = METHODS.get(name)
    if spec is None:
        return _fault(FAULT_NO_SUCH_METHOD, f'method "{name}" is not supported')
    if not params or not isinstance(params[0], str):
        return _fault(FAULT_TYPE, "Not enough parameters" if not params else _TYPE_MESSAGES["s"])
    username, _, password = params[0].partition(":")
    with site.lock:
        user = site.authenticate(username, password)
        if user is None:
            return failure(name, AUTHENTICATION, "User couldn't be authenticated, aborting call.")
        bad = _check_types(spec, params[1:])
        if bad is not None:
            return bad
        args = params[1 : 1 + len(spec.required) + len(spec.optional)]
        try:
            value = spec.handler(Call(site, user, name), *args)
        except OneError as exc:
            return failure(name, exc.code, exc.message, exc.oid)
        return _success(value)
