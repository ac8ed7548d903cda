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

from urllib.parse import SplitResult, urlsplit, urlunsplit

REDACTED = "***"


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    return parts if parts.netloc and "@" in parts.netloc else None


def has_credentials(url: str) -> bool:
    """Whether `url` carries a user or a password before its host."""
    return _split(url) is not None


def _host_part(parts: SplitResult) -> str:
    return parts.netloc.rpartition("@")[2]


def without_credentials(url: str) -> str:
    """`url` with any `user:password@` removed (for copies: input files, records)."""
    parts = _split(url)
    if parts is None:
        return url
    return urlunsplit(parts._replace(netloc=_host_part(parts)))


def redact_endpoint(url: str) -> str:
    """`url` with any `user:password@` shown as `***@` (for display: info, errors, audit)."""
    parts = _split(url)
    if parts is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{REDACTED}@{_host_part(parts)}"))


def endpoint_secrets(*urls: str) -> tuple[str, ...]:
    """The user-info parts of `urls` (whole and password alone), for `tui.errors.redact`."""
    secrets: list[str] = []
    for url in urls:
        parts = _split(url)
        if parts is None:
            continue
        userinfo = parts.netloc.rpartition("@")[0]
        secrets.append(userinfo)
        password = userinfo.partition(":")[2]
        if password:
            secrets.append(password)
    return tuple(s for s in secrets if s)
