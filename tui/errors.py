"""The one error type every layer may raise and catch (a title, a detail, whether retrying may
help), and `redact` for messages built from wire text."""

from __future__ import annotations

from typing import Callable


class SiteError(Exception):
    """A failure talking to the site, phrased for an operator.

    `title` is one short line (fits a toast), `detail` says what was wrong and what to do,
    `retryable` tells whether the same call may succeed later (timeouts, refused connections,
    server errors) as opposed to needing a change (bad credentials, wrong state, bad input).
    `code` carries the platform error code or HTTP status when there is one.
    """

    def __init__(self, title: str, detail: str = "", *, retryable: bool = False, code: int | None = None) -> None:
        super().__init__(title if not detail else f"{title}: {detail}")
        self.title = title
        self.detail = detail
        self.retryable = retryable
        self.code = code

    # keep pickling (e.g. across threads/processes) faithful
    def __reduce__(self) -> tuple[Callable[[type[SiteError], str, str, bool, int | None], SiteError],
                                  tuple[type[SiteError], str, str, bool, int | None]]:
        return (_rebuild, (type(self), self.title, self.detail, self.retryable, self.code))


class AuthenticationFailed(SiteError):
    """The site refused the session's credentials: a session that expired or was revoked, a changed
    password, a disabled user (the cloud's AUTHENTICATION, OneFlow's refused login). Every later
    call fails the same way, so no reader turns it into "not found", "not known" or a note: it
    stops the read and is reported as itself (issue 22 item 2)."""


class OutcomeUnknown(SiteError):
    """A write failed and reading back failed too: whether it happened is not known (the
    object may have been made or deleted). Asking again later, once the site answers, can tell."""


def _rebuild(kind: type[SiteError], title: str, detail: str, retryable: bool, code: int | None) -> SiteError:
    return kind(title, detail, retryable=retryable, code=code)


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """`text` with every secret replaced by `***` (for messages built from wire text)."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
