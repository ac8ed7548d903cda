"""Credentials written into an endpoint URL (`http://user:pass@host:2633/RPC2`), kept out of sight.

The platform's tools take the session from the credential file (ONE_AUTH, ~/.one/one_auth), yet
an operator may write `user:password@` into ONE_XMLRPC or ONEFLOW_URL. Wherever an endpoint is
shown (`sitetk info`, the console's header, error messages, the audit log) it goes through
`redact_endpoint` (`http://***@host:2633/RPC2`: the reader sees that something was there); wherever
it is copied (the toolkit input skeleton, the site record) through `without_credentials`
(`http://host:2633/RPC2`). `endpoint_secrets` gives what `tui.errors.redact` must hide in text
built from the wire or from an exception.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

REDACTED = "***"


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:(?=/)")


def _userinfo(url: str) -> tuple[str, str, str] | None:
    """`url` split around its credentials, (before, `user:password`, after the `@`); None without.

    By the last `@` after the scheme and its slashes, not by urlsplit's authority: a URL that does
    not parse (a bad port or IPv6 bracket, one slash after the scheme, no scheme at all) is still
    what an operator wrote as an endpoint, and a password holding `/`, `?`, `#` or `@` ends
    urlsplit's authority inside it (`http://u:12/x@host` parses as host `u`, port 12). An `@` in an
    endpoint's path is rare; hiding too much there is the safe side."""
    text = url.strip()
    scheme = _SCHEME.match(text)
    start = scheme.end() if scheme else 0
    while start < len(text) and text[start] == "/":
        start += 1
    at = text.rfind("@", start)
    if at <= start:
        return None
    return text[:start], text[start:at], text[at + 1:]


def has_credentials(url: str) -> bool:
    """Whether `url` carries a user or a password before its host."""
    return _userinfo(url) is not None


def without_credentials(url: str) -> str:
    """`url` with any `user:password@` removed (for copies: input files, records)."""
    found = _userinfo(url)
    if found is None:
        return url
    before, _, after = found
    return before + after


def redact_endpoint(url: str) -> str:
    """`url` with any `user:password@` shown as `***@` (for display: info, errors, audit)."""
    found = _userinfo(url)
    if found is None:
        return url
    before, _, after = found
    return f"{before}{REDACTED}@{after}"


def endpoint_secrets(*urls: str) -> tuple[str, ...]:
    """The user-info parts of `urls` (whole and password alone), for `tui.errors.redact`."""
    secrets: list[str] = []
    for url in urls:
        found = _userinfo(url)
        if found is None:
            continue
        userinfo = found[1]
        secrets.append(userinfo)
        password = userinfo.partition(":")[2]
        if password:
            secrets.append(password)
    return tuple(s for s in secrets if s)


# -- the address the VMs reach the frontend at ------------------------------------------------


def is_loopback_host(host: str) -> bool:
    """`localhost` (and `*.localhost`) or a loopback address (127.0.0.0/8, ::1)."""
    import ipaddress

    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def url_host(url: str) -> str:
    """The host of `url` ("" when it has none or is not a URL)."""
    try:
        return urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""


def endpoint_address(url: str) -> str:
    """`host:port` of an endpoint URL, shown where the whole URL does not fit (credentials, scheme
    and path left out); "" when `url` is not one."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return ""
    return parts.netloc.rpartition("@")[2] if parts.scheme and parts.hostname else ""


def frontend_host(gate_endpoint: str) -> str:
    """The address VMs reach the frontend at: the host of the platform's ONEGATE_ENDPOINT (the
    gate runs on the frontend and VMs report to it), "" when it is unset or loopback itself."""
    host = url_host(gate_endpoint)
    return "" if not host or is_loopback_host(host) else host


def with_host(url: str, host: str) -> str:
    """`url` with its host replaced by `host` (port, path and scheme kept; credentials dropped)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ""
    if not parts.scheme or not parts.hostname:
        return ""
    shown = f"[{host}]" if ":" in host else host
    return urlunsplit(parts._replace(netloc=f"{shown}:{port}" if port else shown))


def vm_facing(url: str, host: str) -> str:
    """`url` as the VMs would use it: unchanged when its host is not loopback, with `host` (the
    frontend's address on the default network) instead of a loopback one, "" when it is loopback
    and `host` is unknown."""
    bare = without_credentials(url.strip())
    if not bare or not is_loopback_host(url_host(bare)):
        return bare
    return with_host(bare, host) if host else ""
