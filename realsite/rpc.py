"""A minimal client of the platform's XML-RPC API for the harness (stdlib only).

Every platform method answers `[success, value or error text, error code, ...]`; `OneRpc.call`
returns the value or raises `RpcError` with the platform's code and text. The harness talks only
to its own loopback frontend.
"""

from __future__ import annotations

import http.client
import xml.etree.ElementTree as ET
import xmlrpc.client
from typing import Any


class RpcError(RuntimeError):
    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: [{code}] {message}")
        self.method = method
        self.code = code
        self.message = message


class _Transport(xmlrpc.client.Transport):
    def __init__(self, timeout: float) -> None:
        super().__init__()
        self._timeout = timeout

    def make_connection(self, host: Any) -> http.client.HTTPConnection:
        connection = super().make_connection(host)
        connection.timeout = self._timeout
        return connection


class OneRpc:
    def __init__(self, url: str, session: str, *, timeout: float = 30.0) -> None:
        self.url = url
        self._session = session
        self._proxy = xmlrpc.client.ServerProxy(url, transport=_Transport(timeout), allow_none=False)

    def call(self, method: str, *args: Any) -> Any:
        answer = getattr(self._proxy, method)(self._session, *args)
        if not isinstance(answer, list) or not answer:
            raise RpcError(method, -1, f"unexpected answer {answer!r:.200}")
        if not answer[0]:
            code = answer[2] if len(answer) > 2 and isinstance(answer[2], int) else -1
            raise RpcError(method, code, str(answer[1]))
        return answer[1]

    def xml(self, method: str, *args: Any) -> ET.Element:
        """A call whose value is an XML document (the info methods)."""
        return ET.fromstring(self.call(method, *args))


def text(node: ET.Element | None, path: str, default: str = "") -> str:
    if node is None:
        return default
    found = node.find(path)
    return found.text or default if found is not None and found.text is not None else default
