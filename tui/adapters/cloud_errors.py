"""Every failure of a cloud call, phrased as one `SiteError`: platform error codes, XML-RPC faults,
HTTP errors, timeouts, refused or dropped connections, TLS problems and malformed answers.

Messages name the endpoint and the method, say what to check, and never carry the session:
`redact` removes the password (or token) from any text taken from the wire or an exception.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import xmlrpc.client

from tui.adapters.cloud_transport import (
    HUGE_NUMBER,
    CallTimeout,
    ControlCharacterAnswer,
    MalformedResponse,
    PlatformFailure,
)
from tui.domain.bounded import is_number_limit
from tui.domain.error_codes import (
    ACTION,
    ALLOCATE,
    AUTHENTICATION,
    AUTHORIZATION,
    INTERNAL,
    LOCKED,
    NO_EXISTS,
    XML_RPC_API,
)
from tui.errors import AuthenticationFailed, SiteError, redact

#: platform error code -> (title, hint, retryable)
PLATFORM_ERRORS: dict[int, tuple[str, str, bool]] = {
    AUTHENTICATION: ("Authentication failed",
                     "The frontend rejected the credentials. Check ONE_AUTH (or ~/.one/one_auth): "
                     "one line user:password for an enabled user.", False),
    AUTHORIZATION: ("Not authorized",
                    "The user lacks the permission for this call: ask a cloud administrator for an ACL rule "
                    "or use a user of the oneadmin group.", False),
    NO_EXISTS: ("Not found", "The object does not exist (any more): refresh and pick another one.", False),
    ACTION: ("Not allowed in this state",
             "The object is in a state that does not allow this action: wait for it to settle or move it "
             "to a state that does.", False),
    XML_RPC_API: ("Bad request", "The frontend refused the parameters of the call.", False),
    INTERNAL: ("Internal error on the frontend", "The frontend failed while serving the call; retry, and "
               "check oned.log on the frontend if it persists.", True),
    ALLOCATE: ("Could not create the object", "The frontend refused to create it (quota, name clash or "
               "invalid template).", False),
    LOCKED: ("Object locked", "The object is locked (an operation is in progress or it was locked by "
             "hand); retry later or unlock it.", True),
}


#: INTERNAL (or ALLOCATE) answers whose text says the call can never succeed as it is: (text, title, hint).
#: The platform answers these with INTERNAL, not ACTION or RPC_API (src/rm/api/VirtualMachineAPI.cc
#: `update_conf`, src/rm/api/SharedAPI.cc `update`, src/rm/api/ImageAPI.cc), so retrying is no fix.
INTERNAL_REFUSALS: tuple[tuple[str, str, str], ...] = (
    ("configuration cannot be updated in state",
     "Not allowed in this state",
     "The VM's state does not allow a configuration update (onevm updateconf): undeploy or power it off "
     "first, or wait until a running operation ends."),
    ("Cannot update template.",
     "Template refused",
     "The frontend could not read or apply the template text; fix the text (the message names the problem)."),
    ("Parse error",
     "Template refused",
     "The frontend could not parse the template text; fix the text (the message names the problem)."),
    # allocate of templates, groups, users, marketplaces answers INTERNAL with the pool's text
    # (src/rm/api/TemplateAPI.cc `pool_allocate`; src/pool/PoolObjectSQL.cc `name_is_valid`); images,
    # and marketplaces on 7.4 (src/rm/api/MarketPlaceAPI.cc line 196), answer the same text ALLOCATE
    ("Invalid NAME",
     "Name refused",
     "The platform refuses this name (the message says why: a character of & | : \\ \" ; / ' # { } $ < >, "
     "a tab or line break, or more than 128 bytes); choose another name."),
    ("NAME is already taken",
     "Name taken",
     "Another object already has this name (among yours for templates and images, on the whole cloud for "
     "groups, users and marketplaces); choose another name or use the existing object."),
    ("Cannot determine image SIZE.",
     "Marketplace app unknown to the cloud",
     "The cloud has no marketplace app with that ID (FROM_APP): refresh the marketplace and pick the app again."),
)


def _internal_refusal(message: str) -> tuple[str, str] | None:
    for text, title, hint in INTERNAL_REFUSALS:
        if text in message:
            return title, hint
    return None


def platform_error(failure: PlatformFailure, method: str, secrets: tuple[str, ...] = ()) -> SiteError:
    title, hint, retryable = PLATFORM_ERRORS.get(
        failure.code, (f"Platform error 0x{failure.code:04x}", "The frontend refused the call.", False))
    refusal = _internal_refusal(failure.message) if failure.code in (INTERNAL, ALLOCATE) else None
    if refusal is not None:
        (title, hint), retryable = refusal, False
    message = redact(failure.message, secrets)
    kind = AuthenticationFailed if failure.code == AUTHENTICATION else SiteError
    return kind(f"{title} ({method})", f"{message}\n{hint}", retryable=retryable, code=failure.code)


def to_site_error(exc: BaseException, *, method: str, endpoint: str, timeout: float,
                  secrets: tuple[str, ...] = ()) -> SiteError:
    """Map any exception of a cloud call to a `SiteError` (SiteErrors pass through)."""
    if isinstance(exc, SiteError):
        return exc
    text = redact(str(exc), secrets)
    if isinstance(exc, PlatformFailure):
        return platform_error(exc, method, secrets)
    if isinstance(exc, xmlrpc.client.Fault):
        return SiteError(
            f"Request rejected by the frontend ({method})",
            f"XML-RPC fault {exc.faultCode}: {redact(str(exc.faultString), secrets)}\n"
            "The call does not match what this frontend accepts (a parameter of the wrong type or a method "
            "it does not know): check the frontend's version.",
            retryable=False, code=exc.faultCode)
    if isinstance(exc, (CallTimeout, socket.timeout, TimeoutError)):
        return SiteError(
            f"No answer from {endpoint} within {timeout:g} s",
            f"{method} did not complete in time. The frontend may be overloaded or unreachable; "
            "raise ONE_XMLRPC_TIMEOUT if it is just slow.",
            retryable=True)
    if isinstance(exc, ConnectionRefusedError):
        return SiteError(
            f"Nothing listening at {endpoint}",
            "The connection was refused: is oned running? Check ONE_XMLRPC (or ~/.one/one_endpoint).",
            retryable=True)
    if isinstance(exc, socket.gaierror):
        return SiteError(
            f"Cannot resolve the host of {endpoint}",
            f"{text}\nCheck the host name in ONE_XMLRPC (or ~/.one/one_endpoint).", retryable=True)
    if isinstance(exc, ssl.SSLError):
        return SiteError(
            f"TLS handshake with {endpoint} failed",
            f"{text}\nFor a self-signed certificate set ONE_CERT_DIR to its CA directory, or "
            "ONE_DISABLE_SSL_VERIFY=yes.", retryable=False)
    if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
                        http.client.RemoteDisconnected, http.client.IncompleteRead)):
        return SiteError(
            f"Connection to {endpoint} dropped",
            f"The frontend closed the connection during {method} ({text or type(exc).__name__}). Retry; "
            "if it persists, check the frontend and any proxy in between.", retryable=True)
    if isinstance(exc, xmlrpc.client.ProtocolError):
        return SiteError(
            f"HTTP {exc.errcode} from {endpoint}",
            f"{redact(str(exc.errmsg), secrets)} during {method}. Check that ONE_XMLRPC points at the "
            "frontend's XML-RPC endpoint (http://<host>:2633/RPC2).",
            retryable=exc.errcode >= 500, code=exc.errcode)
    if isinstance(exc, ControlCharacterAnswer):
        return SiteError(
            f"Unreadable answer from {endpoint}",
            f"{exc.method} answered control character U+{ord(exc.char):04X}, which XML cannot carry, near: "
            f"{exc.context}\nAn object's name or attribute holds it (the platform stores such characters; this "
            "console refuses to send them). Rename the object or fix the attribute with the platform's CLI, "
            "then retry.", retryable=False)
    if isinstance(exc, (MalformedResponse, http.client.HTTPException)):
        return SiteError(
            f"Malformed answer from {endpoint}",
            f"{method}: {text or type(exc).__name__}. Is ONE_XMLRPC pointing at the frontend's XML-RPC "
            "endpoint?", retryable=False)
    if isinstance(exc, OSError):
        return SiteError(
            f"Cannot reach {endpoint}",
            f"{text or type(exc).__name__}. Check the network and ONE_XMLRPC.", retryable=True)
    if is_number_limit(exc):  # a parser's int() of a number of over 4,300 digits (Python's own words)
        return SiteError(
            f"Malformed answer from {endpoint}",
            f"{method}: {HUGE_NUMBER}. Is ONE_XMLRPC pointing at the frontend's XML-RPC endpoint?", retryable=False)
    return SiteError(f"Unexpected failure calling {endpoint}", f"{method}: {type(exc).__name__}: {text}",
                     retryable=False)
