"""OneFlow's HTTP error answers as `SiteError`s, read the way the server writes them.

OpenNebula/one `src/flow/oneflow-server.rb` (release-7.4.0; 6.10 and 7.0 agree): the before
filter (lines 173-183) answers 401 "Invalid credentials" or "A username and password must be
provided"; every platform error goes through `one_error_to_http` (lines 212-225), so the core's
AUTHORIZATION ("Not authorized to perform ...") is also 401 and its AUTHENTICATION is 403; NO_EXISTS
is 404; bad bodies are 400 (VALIDATION_EC); everything else is 500 (GENERAL_EC), including refusals
that will never succeed as asked ("Service cannot be undeployed in state: FAILED_DEPLOYING",
"Action x not supported", a document of another type) and Sinatra's handler for exceptions (a
JSON `{"message": "Internal server error", ...}`). 405 is defined and never sent. The body is the
platform's message, so the status alone cannot tell "credentials refused" from "not allowed".
"""

from __future__ import annotations

import json

from tui.errors import AuthenticationFailed, SiteError

#: what the before filter answers when the Basic credentials are missing or wrong
CREDENTIALS_REFUSED = ("Invalid credentials", "A username and password must be provided")
#: 500 messages that say the same request can never succeed (LifeCycleManager.rb, oneflow-server.rb,
#: document.rb, validator.rb texts)
_PERMANENT_500 = (
    "cannot be undeployed in state", "cannot be recovered in state", "cannot be scaled in state",
    "not supported", "You have to specify", "[DocumentInfo] Error getting document", "Mandatory document key",
    "KEY: '", "is repeated", "not found", "Immutable value", "Unsupported role type", "has no roles in HOLD",
    "old service template format",
)
_RECOVER_DELETE = ("A failed or transient service is removed with `oneflow recover --delete <id>` "
                   "(the recover action with delete), which terminates its VMs and drops it.")


def credentials_refused(status: int, text: str) -> bool:
    """Whether a 401 is the before filter refusing the login (not the core refusing an action)."""
    return status == 401 and text.strip() in CREDENTIALS_REFUSED


def never_succeeds(text: str) -> bool:
    """Whether a 500's message says retrying the same request is useless."""
    if _sinatra_exception(text) is not None:
        return True
    return any(marker in text for marker in _PERMANENT_500)


def _sinatra_exception(text: str) -> str | None:
    """The reason of Sinatra's 500 handler answer (oneflow-server.rb 189-196), else None."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("message") == "Internal server error":
        return str(data.get("reason", ""))
    return None


def flow_http_error(method: str, path: str, status: int, text: str) -> SiteError:
    """The `SiteError` for one error answer; `text` is the (already redacted) body."""
    where = f"{method} {path}: {text}" if text else f"{method} {path}"
    if status == 401 and credentials_refused(status, text):
        return AuthenticationFailed("OneFlow rejected the credentials", f"{where}\nCheck ONEFLOW_USER / ONEFLOW_PASSWORD, or the "
                         "user:password in ONE_AUTH (~/.one/one_auth).", code=401)
    if status == 401:
        return SiteError("Not allowed by the cloud", f"{where}\nThe cloud refused this action to the user "
                         "(AUTHORIZATION): ask a cloud administrator for the permission, or act as the owner.",
                         code=401)
    if status == 403:
        return AuthenticationFailed("The cloud refused OneFlow's session", f"{where}\nOneFlow accepted the login but the cloud "
                         "did not authenticate the request it made for the user (AUTHENTICATION): check that the "
                         "user is enabled and that OneFlow's own server credentials work (oneflow.log).", code=403)
    if status == 404:
        return SiteError("Not found in OneFlow", f"{where}\nThe service or template does not exist (any more): "
                         "refresh.", code=404)
    if status == 400:
        return SiteError("OneFlow refused the request", where, code=400)
    if status >= 500:
        reason = _sinatra_exception(text)
        if reason is not None:
            return SiteError("OneFlow failed on the request", f"{method} {path}: {reason}\nThe server raised an "
                             "exception on this request (see oneflow.log); sending it again gives the same.",
                             code=status)
        if never_succeeds(text):
            hint = f"\n{_RECOVER_DELETE}" if "cannot be undeployed in state" in text else ""
            return SiteError("OneFlow refused the request", where + hint, code=status)
        return SiteError("OneFlow internal error", f"{where}\nOneFlow failed serving the request; retry, and check "
                         "oneflow.log on the frontend if it persists.", retryable=True, code=status)
    return SiteError(f"OneFlow answered HTTP {status}", where, code=status)
