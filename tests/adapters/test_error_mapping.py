"""Failures that the embedded site cannot produce on demand (a locked object, an unknown platform
code, TLS and name-resolution errors, HTTP status errors) still map to clear SiteErrors, and no
message carries the session."""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import xmlrpc.client

import pytest

from tui.adapters.cloud_errors import PLATFORM_ERRORS, platform_error, to_site_error
from tui.adapters.cloud_transport import (
    CallTimeout,
    MalformedResponse,
    PlatformFailure,
    check_result,
    decode_response,
    parse_document,
)
from tui.domain.marketapps import decode_apptemplate64

ENDPOINT = "http://frontend:2633/RPC2"


def mapped(exc: BaseException):  # type: ignore[no-untyped-def]
    return to_site_error(exc, method="one.vm.info", endpoint=ENDPOINT, timeout=5, secrets=("s3cret", "u:s3cret"))


@pytest.mark.parametrize("code", sorted(PLATFORM_ERRORS) + [0x10000])
def test_every_platform_code_has_a_title_and_the_session_is_redacted(code: int) -> None:
    failure = PlatformFailure("[one.x] failed for oneadmin:s3cret", code, 5)
    error = platform_error(failure, "one.x", secrets=("s3cret",))
    assert error.code == code and error.title and "(one.x)" in error.title
    assert "s3cret" not in error.detail
    assert error.retryable == (code in (0x2000, 0x8000))


@pytest.mark.parametrize(
    "exc, title, retryable",
    [
        (CallTimeout("late"), "No answer from http://frontend:2633/RPC2 within 5 s", True),
        (ConnectionRefusedError(111, "refused"), "Nothing listening at", True),
        (socket.gaierror(-2, "Name or service not known"), "Cannot resolve", True),
        (ssl.SSLError(1, "certificate verify failed"), "TLS handshake", False),
        (http.client.RemoteDisconnected("closed u:s3cret"), "dropped", True),
        (ConnectionResetError(104, "reset"), "dropped", True),
        (xmlrpc.client.ProtocolError(ENDPOINT, 502, "Bad Gateway", {}), "HTTP 502", True),
        (xmlrpc.client.ProtocolError(ENDPOINT, 404, "Not Found", {}), "HTTP 404", False),
        (xmlrpc.client.Fault(-501, "Parameter that is supposed to be integer is not"), "Request rejected", False),
        (MalformedResponse("not XML"), "Malformed answer", False),
        (OSError(113, "No route to host"), "Cannot reach", True),
        (RuntimeError("s3cret bug"), "Unexpected failure", False),
    ],
)
def test_exceptions_map_to_site_errors(exc: BaseException, title: str, retryable: bool) -> None:
    error = mapped(exc)
    assert title in error.title
    assert error.retryable is retryable
    assert "s3cret" not in f"{error.title} {error.detail}"


def test_result_arrays_and_envelopes() -> None:
    assert check_result([True, "7.3.80", 0]) == "7.3.80"
    with pytest.raises(PlatformFailure) as info:
        check_result([False, "[one.vm.info] Error getting virtual machine [9].", 0x400, 9, 0])
    assert (info.value.code, info.value.object_id) == (0x400, 9)
    for bad in ("<VM/>", [], ["yes", "x", 0]):
        with pytest.raises(MalformedResponse):
            check_result(bad)
    body = xmlrpc.client.dumps(((True, "<VM_POOL/>", 0),), methodresponse=True).encode()
    assert decode_response(body) == [True, "<VM_POOL/>", 0]
    fault = xmlrpc.client.dumps(xmlrpc.client.Fault(-501, "bad type"), methodresponse=True).encode()
    with pytest.raises(xmlrpc.client.Fault):
        decode_response(fault)
    for bad_body in (b"<html>not rpc</html>", b"not xml at all", b"<methodResponse><params/></methodResponse>"):
        with pytest.raises(MalformedResponse):
            decode_response(bad_body)
    assert parse_document("<VM_POOL><VM/></VM_POOL>", "one.vmpool.info").tag == "VM_POOL"
    for bad_value in (7, "", "7.3.80", "<VM_POOL><VM></VM_POOL>"):
        with pytest.raises(MalformedResponse):
            parse_document(bad_value, "one.vmpool.info")


def test_apptemplate64_is_decoded() -> None:
    assert decode_apptemplate64(base64.b64encode(json.dumps({"a": 1}).encode()).decode()) == '{"a": 1}'
    assert decode_apptemplate64("") == "" and decode_apptemplate64("%%%") == ""


@pytest.mark.parametrize("message, code, title", [
    ("[one.template.allocate] Invalid NAME, char '&' is not allowed", 0x2000, "Name refused"),
    ("[one.template.allocate] Invalid NAME, max length is 128 chars", 0x2000, "Name refused"),
    ("[one.group.allocate] NAME is already taken by GROUP 100.", 0x2000, "Name taken"),
    ("[one.template.allocate] NAME is already taken by TEMPLATE 4.", 0x2000, "Name taken"),
    ("[one.image.allocate] Error allocating a new image. NAME is already taken by IMAGE 3.", 0x4000, "Name taken"),
    ("[one.market.allocate] Error allocating a new marketplace. NAME is already taken by MARKETPLACE 100",
     0x4000, "Name taken"),
])
def test_a_refused_name_is_not_retried(message: str, code: int, title: str) -> None:
    """src/rm/api/TemplateAPI.cc `pool_allocate` answers INTERNAL with `name_is_valid`'s text
    (src/pool/PoolObjectSQL.cc), src/rm/api/ImageAPI.cc (and MarketPlaceAPI.cc on 7.4) ALLOCATE
    with "Error allocating a new <object>." before it: no retry fixes it, so it is not retryable."""
    error = platform_error(PlatformFailure(message, code, -1), "one.template.allocate")
    assert error.title.startswith(title) and error.retryable is False
    assert message in error.detail


def test_an_answer_with_a_control_character_names_it_escaped() -> None:
    """XML cannot carry ESC; the platform stores it in names (src/pool/PoolObjectSQL.cc)."""
    from tui.adapters.cloud_transport import ControlCharacterAnswer

    pool = "<VM_POOL><VM><ID>4</ID><NAME>vm \x1b[2J</NAME></VM></VM_POOL>"
    body = xmlrpc.client.dumps(((True, pool, 0),), methodresponse=True).encode()
    with pytest.raises(ControlCharacterAnswer) as raised:
        decode_response(body, "one.vmpool.info")
    assert raised.value.method == "one.vmpool.info" and raised.value.char == "\x1b"
    assert "<NAME>vm \\x1b[2J</NAME>" in raised.value.context and "\x1b" not in raised.value.context
    with pytest.raises(ControlCharacterAnswer):
        parse_document(pool, "one.vmpool.info")
    error = mapped(raised.value)
    assert error.title.startswith("Unreadable answer from") and error.retryable is False
    assert "U+001B" in error.detail and "\x1b" not in error.detail
