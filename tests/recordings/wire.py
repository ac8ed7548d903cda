"""The recorder's wire side: the console's own clients, with every request and answer captured.

The scenario (`tests.recordings.scenario`) drives `CloudClient` and `FlowClient`, so each call
goes out with exactly the method, parameters and types the console sends. Underneath, every
XML-RPC body is captured at `CloudTransport.post` (reads and pyone's writes both go
through it) and every OneFlow request at the httpx transport, together with the raw answer as it
came off the wire: the success flag, the body string or int, the error code and message, the HTTP
status and text. Nothing is parsed or judged here; `tests.recordings.normalise` turns the raw
exchanges into the stored, comparable form once the run is over (so an ID bound late, such as a
service's VM, is known everywhere).

A call is captured only inside `Run.step`: waits poll through the same clients with capture off,
so how often a wait polled never shows in a recording. Reads are not retried (`NO_RETRY`): a
refusal is one request, one answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, TypeVar

import httpx

from tui.adapters.cloud import CloudClient
from tui.adapters.flow import FlowClient
from tui.adapters.retry import NO_RETRY
from tui.errors import SiteError

T = TypeVar("T")
#: the ID no site has (the scenario's missing object; kept as it is in the recordings)
MISSING = 99999


@dataclass(frozen=True)
class Endpoints:
    """Where the frontend answers and who the scenario is on it (the oneadmin session)."""

    xmlrpc: str
    flow: str
    session: str

    @property
    def user(self) -> str:
        return self.session.split(":", 1)[0]

    @property
    def password(self) -> str:
        return self.session.split(":", 1)[1]


def read_env_file(path: Path) -> Endpoints:
    """The endpoints of an env file as the realsite harness and `sitetk sim` write it: shell lines
    `[export ]ONE_XMLRPC=...`, `ONE_AUTH=<file holding user:password>`, `ONEFLOW_URL=...`."""
    values: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "export":
            words = words[1:]
        for word in words:
            name, sep, value = word.partition("=")
            if sep:
                values[name] = value
    missing = [name for name in ("ONE_XMLRPC", "ONE_AUTH", "ONEFLOW_URL") if not values.get(name)]
    if missing:
        raise SystemExit(f"{path}: no {', '.join(missing)}")
    auth = Path(values["ONE_AUTH"])
    if not auth.is_absolute():
        auth = path.parent / auth
    session = auth.read_text(encoding="utf-8").strip().splitlines()[0].strip()
    return Endpoints(values["ONE_XMLRPC"], values["ONEFLOW_URL"], session)


@dataclass
class Exchange:
    """One request and its answer, raw. `kind` is "xmlrpc" or "http"."""

    step: str
    kind: str
    request: bytes
    answer: bytes
    #: HTTP only: the verb, the path and the status
    verb: str = ""
    path: str = ""
    status: int = 0


@dataclass(frozen=True)
class Ref:
    """An object the scenario uses, by its symbol (`image:os`)."""

    kind: str
    id: int
    symbol: str

    def __int__(self) -> int:
        return self.id

    def __index__(self) -> int:
        return self.id


@dataclass
class Bindings:
    """Object IDs and names the run knows by symbol, and the strings it must hide."""

    ids: dict[tuple[str, int], str] = field(default_factory=dict)
    #: the symbols of the objects this run created (their values are compared; others' only their shape)
    created: set[str] = field(default_factory=set)
    #: literal strings replaced wherever they appear (secrets)
    strings: dict[str, str] = field(default_factory=dict)
    #: values replaced when a value is exactly one of them (the names of the site's own objects)
    names: dict[str, str] = field(default_factory=dict)
    #: (tag, value) -> placeholder: a site's setting a created object copies (its system datastore's TM_MAD)
    values: dict[tuple[str, str], str] = field(default_factory=dict)
    #: created VMs the site's scheduler placed (a service's): where they run is the site's choice
    placed: set[str] = field(default_factory=set)


class Run:
    """One run of the scenario against one site: its clients, its captured exchanges, its symbols."""

    def __init__(self, endpoints: Endpoints, *, poll: float = 0.2, wait_limit: float = 300.0,
                 timeout: float = 60.0) -> None:
        self.endpoints = endpoints
        #: unique per run: the names the scenario gives (a site keeps what an earlier run made)
        self.token = "r" + secrets.token_hex(3)
        self.poll = poll
        self.wait_limit = wait_limit
        self.timeout = timeout
        self.exchanges: list[Exchange] = []
        self.bindings = Bindings()
        self.sessions: dict[str, str] = {}
        self._lock = threading.Lock()
        self._step: str | None = None
        self._clients: list[Any] = []
        self.hide(endpoints.password, "<admin-password>")
        self.sessions[endpoints.session] = "<session:oneadmin>"
        # the platform's own objects every site has (src/*/...Pool.cc bootstrap)
        for kind, oid, symbol in (("user", 0, "oneadmin"), ("group", 0, "oneadmin"), ("group", 1, "users"),
                                  ("cluster", 0, "default"), ("zone", 0, "zone0")):
            self.bindings.ids[(kind, oid)] = f"{kind}:{symbol}"

    # names, symbols, secrets -------------------------------------------------------------------
    def name(self, what: str) -> str:
        """A name for an object this run makes (the run token is normalised away)."""
        return f"rec-{self.token}-{what}"

    def bind(self, kind: str, oid: int, symbol: str, name: str = "") -> Ref:
        """Know object `oid` of `kind`, which this run created, as `kind:symbol`."""
        ref = Ref(kind, int(oid), f"{kind}:{symbol}")
        self.bindings.ids[(kind, int(oid))] = ref.symbol
        self.bindings.created.add(ref.symbol)
        return ref

    def find(self, kind: str, oid: int, symbol: str, name: str) -> Ref:
        """Know the site's own object `oid` of `kind` (a host, a datastore) as `kind:symbol`, and
        its `name` as `<kind:symbol>` wherever a value is exactly that name."""
        ref = Ref(kind, int(oid), f"{kind}:{symbol}")
        self.bindings.ids[(kind, int(oid))] = ref.symbol
        if name:
            self.bindings.names[name] = f"<{ref.symbol}>"
        return ref

    def site_value(self, tag: str, value: str, placeholder: str) -> None:
        """Name a setting of the site (`TM_MAD_SYSTEM` = its system datastore's TM_MAD) where a
        created object carries it under `tag`."""
        if value:
            self.bindings.values[(tag, value)] = placeholder

    def placed_by_site(self, ref: Ref) -> None:
        """`ref` (a VM) was placed by the site's scheduler: its hosts are not compared."""
        self.bindings.placed.add(ref.symbol)

    def hide(self, secret: str, placeholder: str) -> None:
        if secret:
            self.bindings.strings[secret] = placeholder

    # clients -----------------------------------------------------------------------------------
    def cloud(self, session: str | None = None, label: str = "") -> CloudClient:
        """The console's XML-RPC client for `session` (default oneadmin's), capturing."""
        session = session or self.endpoints.session
        if label:
            self.sessions[session] = f"<session:{label}>"
        client = CloudClient(self.endpoints.xmlrpc, session, timeout=self.timeout)
        client.retry_policy = NO_RETRY
        transport = client._transport
        post = transport.post

        def captured(body: bytes, timeout: float | None = None, sink: Callable[[bytes], None] | None = None, *,
                     idempotent: bool = False) -> bytes:
            answer = post(body, timeout, idempotent=idempotent)
            self._capture(Exchange("", "xmlrpc", bytes(body), answer))
            if sink is not None:  # a pool read while it arrives (tui.adapters.pool_stream)
                sink(answer)
                return b""
            return answer

        transport.post = captured  # type: ignore[method-assign]
        self._clients.append(client)
        return client

    def flow(self, user: str | None = None, password: str | None = None) -> FlowClient:
        """The console's OneFlow client (default oneadmin), capturing."""
        user = user or self.endpoints.user
        password = self.endpoints.password if password is None else password
        client = FlowClient(self.endpoints.flow, user, password, timeout=self.timeout,
                            transport=_Capturing(httpx.AsyncHTTPTransport(), self._capture))
        client.retry_policy = NO_RETRY
        self._clients.append(client)
        return client

    async def close(self) -> None:
        for client in self._clients:
            await client.close()

    @property
    def current_step(self) -> str | None:
        """The step running now (None between steps, during waits)."""
        return self._step

    def _capture(self, exchange: Exchange) -> None:
        with self._lock:
            if self._step is None:
                return
            exchange.step = self._step
            self.exchanges.append(exchange)

    # steps and waits ---------------------------------------------------------------------------
    async def call(self, step: str, work: Awaitable[T]) -> T | SiteError:
        """Run one step of the scenario: the console's call `work`, captured under `step`; its
        result, or the `SiteError` it failed with (a failure is an answer like any other)."""
        if any(e.step == step for e in self.exchanges):
            raise ValueError(f"step {step!r} twice: steps are keys of the recording")
        with self._capturing(step):
            try:
                return await work
            except SiteError as error:
                return error

    async def need(self, step: str, work: Awaitable[T]) -> T:
        """`call`, for a step the rest of the scenario builds on: its failure stops the run."""
        result = await self.call(step, work)
        if isinstance(result, SiteError):
            raise ScenarioStopped(f"{step}: {result.title}: {result.detail}")
        return result

    @contextlib.contextmanager
    def _capturing(self, step: str) -> Iterator[None]:
        with self._lock:
            self._step = step
        try:
            yield
        finally:
            with self._lock:
                self._step = None

    async def wait(self, what: str, probe: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> T:
        """Poll `probe` (not captured) until `done`; a wait longer than `wait_limit` stops the run."""
        deadline = time.monotonic() + self.wait_limit
        last: Any = None
        while True:
            try:
                last = await probe()
                if done(last):
                    return last
            except SiteError as error:
                last = error
            if time.monotonic() > deadline:
                raise ScenarioStopped(f"waited {self.wait_limit:g} s for {what}; last seen: {last!r:.300}")
            await asyncio.sleep(self.poll)


class ScenarioStopped(RuntimeError):
    """A step the scenario builds on failed, or a wait ran out."""


class _Capturing(httpx.AsyncBaseTransport):
    """An httpx transport that hands each request and its whole answer to `sink`."""

    def __init__(self, inner: httpx.AsyncBaseTransport, sink: Callable[[Exchange], None]) -> None:
        self._inner = inner
        self._sink = sink

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        response = await self._inner.handle_async_request(request)
        content = await response.aread()
        await response.aclose()
        self._sink(Exchange("", "http", body, content, verb=request.method, path=request.url.raw_path.decode(),
                            status=response.status_code))
        headers = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(response.status_code, headers=headers, content=content, request=request)

    async def aclose(self) -> None:
        await self._inner.aclose()
