"""XML-RPC transport with a real per-call deadline, for every call (reads posted raw, writes through pyone).

pyone's own `timeout` only sets the process-wide default socket timeout (and its requests-based
transport passes none), so a slow frontend can hold a call forever. `CloudTransport` bounds the
whole call: connecting, sending and every read get the time left until one deadline, and a
call past it raises `CallTimeout`. Each thread keeps its own keep-alive HTTP connection, so one
transport serves a pool of worker threads.

`decode_response` reads a `methodResponse` with lxml (the pool documents of a large cloud are
tens of megabytes of escaped XML, which the stdlib unmarshaller reads slowly).
"""

from __future__ import annotations

import errno
import http.client
import re
import select
import socket
import ssl
import threading
import xmlrpc.client
from typing import Any, Callable, cast
from urllib.parse import urlsplit

from lxml import etree

from tui import timing
from tui.domain.bounded import is_number_limit
from tui.domain.printable import escape_controls

USER_AGENT = "sitetk (pyone XML-RPC)"
_CHUNK = 1 << 20
#: the largest answer read (the pool documents of a large cloud are tens of megabytes)
MAX_RPC_RESPONSE_BYTES = 512 * 1024 * 1024


class CallTimeout(TimeoutError):
    """The call did not complete before its deadline."""


class MalformedResponse(ValueError):
    """The answer is not the XML-RPC document the platform sends."""


class ControlCharacterAnswer(MalformedResponse):
    """The answer carries a control character XML cannot hold: the platform stores any but a few
    in names and attributes (`tui.domain.object_names`) and then answers unreadable XML."""

    def __init__(self, method: str, char: str, context: str) -> None:
        self.method = method
        self.char = char
        #: the text around the character, unescaped from the XML-RPC string, controls shown as escapes
        self.context = context
        super().__init__(f"{method} answered control character U+{ord(char):04X}, which XML cannot carry, "
                         f"near: {context}")


#: characters XML 1.0 cannot carry (C0 controls but tab, newline, carriage return)
_XML_UNSAFE_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_METHOD_NAME = re.compile(rb"<methodName>([\w.]{1,100})</methodName>")


def control_character_answer(raw: bytes, method: str) -> ControlCharacterAnswer | None:
    """A `ControlCharacterAnswer` when `raw` holds a character XML cannot carry, else None."""
    found = _XML_UNSAFE_BYTES.search(raw)
    if found is None:
        return None
    start = max(0, found.start() - 80)
    text = raw[start:found.end() + 40].decode("utf-8", errors="replace")
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return ControlCharacterAnswer(method, chr(found.group(0)[0]), escape_controls(" ".join(text.split())))


class PlatformFailure(Exception):
    """The platform answered `[false, message, code, object_id]`."""

    def __init__(self, message: str, code: int, object_id: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.object_id = object_id


def huge_parser() -> etree.XMLParser:
    """An lxml parser for large documents (one per call: lxml parsers are not shared across threads)."""
    return etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True)


class CloudTransport(xmlrpc.client.Transport):
    """POSTs XML-RPC bodies to one endpoint; every call is bounded by `timeout` seconds in total."""

    def __init__(self, endpoint: str, timeout: float, *, verify_ssl: bool = True, cert_dir: str | None = None) -> None:
        super().__init__()
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {endpoint!r}")
        self.endpoint = endpoint
        self.timeout = float(timeout)
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._handler = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._ssl_context: ssl.SSLContext | None = None
        if self._https:
            context = ssl.create_default_context(capath=cert_dir) if cert_dir else ssl.create_default_context()
            if not verify_ssl:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            self._ssl_context = context
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: set[http.client.HTTPConnection] = set()

    # connections -----------------------------------------------------------------------
    def _new_connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=self._ssl_context)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        conn._create_connection = _create_connection  # type: ignore[attr-defined]
        with self._lock:
            self._all.add(conn)
        return conn

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        with self._lock:
            self._all.discard(conn)
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            conns, self._all = list(self._all), set()
        for conn in conns:
            conn.close()

    # the call ---------------------------------------------------------------------------
    def set_deadline(self, deadline: float | None) -> None:
        """Bound this thread's next calls by a `tui.timing.monotonic()` deadline too (None: only the
        timeout): a retried read keeps one deadline over all its attempts."""
        self._local.deadline = deadline

    def post(self, body: bytes, timeout: float | None = None, sink: Callable[[bytes], None] | None = None, *,
             idempotent: bool = False) -> bytes:
        """POST one XML-RPC request and return the raw response body, within the deadline; with
        `sink`, a successful (HTTP 200) answer goes to `sink` chunk by chunk as it is read instead,
        and b"" is returned (an exception from `sink` ends the call and drops the connection).

        A kept-alive connection the server has closed is dropped before the request is sent. If
        the connection fails once the request is out and before any answer, an `idempotent`
        request (a read) is sent once more on a new connection; any other is not: the server may
        have carried it out, and the caller's read-back decides (a write sent twice could be
        applied twice, or answer "already taken" for the object it made)."""
        limit = self.timeout if timeout is None else timeout
        deadline = timing.deadline_after(limit)
        outer: float | None = getattr(self._local, "deadline", None)
        if outer is not None:
            deadline = min(deadline, outer)

        def remaining() -> float:
            left = deadline - timing.monotonic()
            if left <= 0:
                raise CallTimeout(f"no answer within {limit:g} s")
            return left

        for attempt in (0, 1):
            conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
            if conn is not None and conn.sock is not None and _closed_by_peer(conn.sock):
                self._drop(conn)
                conn = None
            if conn is None:
                conn = self._local.conn = self._new_connection(remaining())
            reused = conn.sock is not None
            answered = False
            try:
                sock, response = self._send(conn, body, remaining)
                answered = True
                chunks = self._read(sock, response, remaining, sink if response.status == 200 else None)
            except (http.client.RemoteDisconnected, ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as exc:
                self._drop(conn)
                # a kept-alive connection that failed before any answer: the server closed it as
                # the request went out (nothing done) or failed while carrying it out (unknown)
                if idempotent and reused and not answered and attempt == 0 and _is_stale(exc):
                    continue
                raise
            except TimeoutError as exc:
                self._drop(conn)
                raise CallTimeout(f"no answer within {limit:g} s") from exc
            except BaseException:
                self._drop(conn)
                raise
            if response.will_close:
                self._drop(conn)
            if response.status != 200:
                raise xmlrpc.client.ProtocolError(self.endpoint, response.status, response.reason,
                                                  dict(response.getheaders()))
            return b"".join(chunks)
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _send(self, conn: http.client.HTTPConnection, body: bytes,
              remaining: Callable[[], float]) -> tuple[socket.socket, http.client.HTTPResponse]:
        if conn.sock is None:
            conn.timeout = remaining()
            conn.connect()
        sock = conn.sock
        sock.settimeout(remaining())
        conn.putrequest("POST", self._handler, skip_accept_encoding=True)
        conn.putheader("Content-Type", "text/xml")
        conn.putheader("User-Agent", USER_AGENT)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        sock.settimeout(remaining())
        # with `Connection: close`, getresponse() hands the socket to the response and forgets
        # it: our own reference `sock` keeps bounding the reads
        return sock, conn.getresponse()

    @staticmethod
    def _read(sock: socket.socket, response: http.client.HTTPResponse, remaining: Callable[[], float],
              sink: Callable[[bytes], None] | None = None) -> list[bytes]:
        chunks: list[bytes] = []
        size = 0
        while True:
            sock.settimeout(remaining())
            chunk = response.read1(_CHUNK)  # at most one recv: each read is bounded by the deadline
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_RPC_RESPONSE_BYTES:
                raise MalformedResponse(f"the answer is larger than {MAX_RPC_RESPONSE_BYTES // 2**20} MiB")
            if sink is None:
                chunks.append(chunk)
            else:
                sink(chunk)
        response.close()  # done with this answer: the kept-alive connection may carry the next
        return chunks

    # xmlrpc.client.Transport interface (used by pyone's ServerProxy) --------------------------
    def request(  # type: ignore[override]  # typeshed says SizedBuffer; pyone's ServerProxy passes bytes
        self, host: Any, handler: Any, request_body: bytes, verbose: bool = False
    ) -> tuple[Any, ...]:
        raw = self.post(request_body)
        parser, unmarshaller = self.getparser()
        try:
            parser.feed(raw)
            parser.close()
        except xmlrpc.client.Fault:
            raise
        except Exception as exc:  # expat errors, ResponseError
            if is_number_limit(exc):  # xmlrpc.client's int() of a number of over 4,300 digits
                raise MalformedResponse(HUGE_NUMBER) from exc
            method = _METHOD_NAME.search(request_body)
            raise (control_character_answer(raw, method.group(1).decode() if method else "the answer")
                   or MalformedResponse(f"not an XML-RPC answer: {exc}")) from exc
        return unmarshaller.close()


def _create_connection(address: tuple[str, int], timeout: float | None,
                       source_address: tuple[str, int] | None) -> socket.socket:
    """`socket.create_connection` for `http.client`'s connections (its `_create_connection` hook):
    an ASCII host name goes to the resolver as bytes, as the `idna` codec would have encoded it
    (`getaddrinfo` encodes a `str` host with that codec, whose first use imports `encodings.idna`
    and `stringprep`, ~1 ms of every start-up, issue 24); another one as it is."""
    host, port = address
    name: Any = host.encode("ascii") if host.isascii() else host  # typeshed says str; getaddrinfo takes bytes too
    return socket.create_connection((name, port), timeout, source_address)


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the server has closed (or written unasked to) an idle kept-alive connection: it is
    readable before any request was sent."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _is_stale(exc: BaseException) -> bool:
    if isinstance(exc, http.client.RemoteDisconnected):
        return True
    return getattr(exc, "errno", None) in (errno.ECONNRESET, errno.ECONNABORTED, errno.EPIPE)


# fast response decoding -----------------------------------------------------------------------
def _value(node: etree._Element) -> Any:
    """One XML-RPC <value>: the scalar types the platform answers with."""
    if len(node) == 0:
        return node.text or ""
    typed = node[0]
    tag = cast(str, typed.tag)
    text = typed.text or ""
    if tag == "string":
        return text
    if tag in ("int", "i4", "i8"):
        return _integer(text, tag)
    if tag == "boolean":
        return text.strip() == "1"
    if tag == "double":
        return float(text)
    if tag == "nil":
        return None
    raise MalformedResponse(f"unexpected XML-RPC value type <{tag}>")


#: the platform's XML-RPC integers are 64-bit at most: 19 digits and a sign
_MAX_INT_CHARS = 20
#: what a number Python's parsers refuse (over 4,300 digits) means, in place of their own words
HUGE_NUMBER = "the answer holds a number of over 4,300 digits, where the platform's integers have at most 19"


def _integer(text: str, tag: str) -> int:
    """An XML-RPC integer; `MalformedResponse` naming its length for a number no platform sends
    (int() would refuse one of over 4,300 digits with Python's own words)."""
    value = text.strip()
    if len(value) > _MAX_INT_CHARS:
        raise MalformedResponse(f"<{tag}> holds a number of {len(value):,} characters, where the platform's "
                                "integers have at most 19 digits")
    try:
        return int(value)
    except ValueError:
        raise MalformedResponse(f"<{tag}> holds {escape_controls(value)!r}, not an integer") from None


def decode_response(raw: bytes, method: str = "the answer") -> list[Any]:
    """The platform's result array from a raw `methodResponse` (huge string values welcome).

    Raises `xmlrpc.client.Fault` for a fault and `MalformedResponse` for anything else unexpected.
    """
    try:
        root = etree.fromstring(raw, parser=huge_parser())
    except etree.XMLSyntaxError as exc:
        raise control_character_answer(raw, method) or MalformedResponse(f"not XML: {exc}") from exc
    if root.tag != "methodResponse":
        raise MalformedResponse(f"expected <methodResponse>, got <{root.tag!s}>")
    if root.find("fault") is not None:
        xmlrpc.client.loads(raw)  # raises the Fault with its code and string
        raise MalformedResponse("a fault without a fault structure")
    data = root.find("params/param/value/array/data")
    if data is None:
        raise MalformedResponse("expected an array of results")
    return [_value(value) for value in data if value.tag == "value"]


def parse_document(value: Any, method: str) -> etree._Element:
    """A success value that must be an XML document (a pool of any size), parsed with lxml."""
    if not isinstance(value, str) or not value.startswith("<"):
        raise MalformedResponse(f"{method} did not answer an XML document")
    try:
        return etree.fromstring(value.encode("utf-8"), parser=huge_parser())
    except etree.XMLSyntaxError as exc:
        raise (control_character_answer(value.encode("utf-8"), method)
               or MalformedResponse(f"{method} answered malformed XML: {exc}")) from exc


def check_result(result: Any) -> Any:
    """The success value of the platform's `[ok, value, code, ...]` array; raises `PlatformFailure`."""
    if not isinstance(result, (list, tuple)) or len(result) < 2 or not isinstance(result[0], bool):
        raise MalformedResponse("expected the platform's [success, value, code] array")
    if result[0]:
        return result[1]
    code = result[2] if len(result) > 2 and isinstance(result[2], int) else 0
    object_id = result[3] if len(result) > 3 and isinstance(result[3], int) else None
    raise PlatformFailure(str(result[1]), code, object_id)
