"""`CloudClient`: the async client of the cloud's XML-RPC API, returning domain models.

Every call runs in a worker thread through `CloudTransport`, which bounds each call by the
client's timeout; an asyncio deadline slightly above it covers what sockets cannot bound (name
resolution). Every read of a document (each pool, each `*.info` object, the system's
configuration) goes one way: the request posted through the transport, the answer parsed with
lxml straight into domain models (`tui.adapters.cloud_parse`), pools while they arrive
(`PoolStream`). pyone's generated bindings would build a Python object graph of each answer that
nothing reads (2-6x the CPU of reading it: 8.1 ms against 2.5 ms for 17 marketplace apps). Writes
(calls answering a scalar, `_scalar`) are posted the same way, their answer read by the same
decoder, never resent by the transport: going through pyone's dispatch cost each writing process
~0.15-0.3 s of CPU to import pyone and the requests stack under it (issue 23). Only `acl_add`
imports pyone (its rule parser).

Wire rules kept here: append flags are sent as ints (the server is strictly typed and rejects a
boolean), templates as text escaped by `template_text.render_template` (or already-escaped text),
documents' JSON bodies in the XML form with CDATA. Every failure is a `SiteError`; the session
never appears in a message.
"""

from __future__ import annotations

import asyncio
import json
import xmlrpc.client
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Mapping, Sequence, TypeVar, Union

from lxml import etree

from tui import timing
from tui.adapters import cloud_parse as parse
from tui.adapters.cloud_errors import to_site_error
from tui.adapters.cloud_transport import (
    CloudTransport,
    MalformedResponse,
    check_result,
    decode_response,
    parse_document,
)
from tui.adapters.heap import KEEP_HEAP_FROM_BYTES, keep_heap
from tui.adapters.pages_ahead import PagesAhead, ParsedPage, settled
from tui.adapters.pool_stream import PoolStream, take_tree, vm_id_span
from tui.adapters.retry import DEFAULT_POLICY, RetryPolicy, deadline_after, reconciled_write, retry_read
from tui.adapters.vm_summary_page import vm_summary_page
from tui.domain.attributes import Attributes
from tui.domain.endpoints import endpoint_secrets, redact_endpoint
from tui.domain.error_codes import NO_EXISTS
from tui.domain.template_text import parse_template, render_template, scalar
from tui.errors import SiteError, redact

if TYPE_CHECKING:  # pragma: no cover - models the first screen does not need load with their parsers
    from tui.domain.acls import AclRule
    from tui.domain.datastores import Datastore
    from tui.domain.documents import Document
    from tui.domain.groups import Group
    from tui.domain.hosts import Host
    from tui.domain.images import ImageInfo
    from tui.domain.marketapps import MarketApp, Marketplace
    from tui.domain.networks import Vnet
    from tui.domain.permissions import Permissions
    from tui.domain.system import SystemConfig
    from tui.domain.users import User
    from tui.domain.vm_detail import VmDetail
    from tui.domain.vm_scan import PageAsk, PoolPager, VmPrefilter, VmScan
    from tui.domain.vms import VmSummary
    from tui.domain.vmtemplates import VmTemplate

T = TypeVar("T")
#: a template to send: text (sent as is), `Attributes`, or `(NAME, value)` pairs to render
TemplateInput = Union[str, Attributes, Sequence[tuple[str, Any]]]

#: pool filter flags
ALL_RESOURCES, MINE, MINE_AND_GROUPS = -2, -3, -1
#: VM pool state filter
ANY_STATE, ANY_BUT_DONE = -2, -1
#: VMs per page of every read of the VM pool (`tui.domain.vm_scan.PoolPager`: the first page by
#: offset, the rest by id ranges); measured in bench/bench_vm_pages.py (README: Benchmarks)
VM_PAGE_SIZE = 2_000
#: the VM list's pages (short bodies), each parsed whole beside another: two pages' trees (~13 MB
#: each) fit the console's memory bound at 50,000 VMs, two of 2,000 did not (README: issue 24's
#: seventh pass)
VM_LIST_PAGE_SIZE = 1_000
#: the VM list's pages asked for ahead of the one being read (the site prepares them meanwhile)
VM_LIST_AHEAD = 2
#: threads parsing and building the VM list's pages, each a page at a time (one tree each)
VM_LIST_PARSERS = 2
#: actions `one.vm.action` knows
VM_ACTIONS = frozenset({
    "terminate", "terminate-hard", "undeploy", "undeploy-hard", "poweroff", "poweroff-hard", "reboot",
    "reboot-hard", "hold", "release", "stop", "suspend", "resume", "resched", "unresched",
})



def template_text(template: TemplateInput) -> str:
    """The text to send for `template`: strings go as they are, anything else is rendered."""
    if isinstance(template, str):
        return template
    if isinstance(template, Attributes):
        return template.to_text()
    return render_template(list(template))


def json_document_template(body: Mapping[str, Any], name: str | None = None) -> str:
    """A document template carrying a JSON body, in the XML form (as the platform's own JSON
    documents are written): `<TEMPLATE><NAME/>?<BODY><![CDATA[json]]></BODY></TEMPLATE>`."""
    text = json.dumps(body, separators=(",", ":")).replace("]]>", "]]\\u003e")
    name_part = f"<NAME><![CDATA[{name.replace(']]>', '')}]]></NAME>" if name is not None else ""
    return f"<TEMPLATE>{name_part}<BODY><![CDATA[{text}]]></BODY></TEMPLATE>"


def template_name(text: str) -> str:
    """The NAME of a template text ("" when it has none or cannot be read)."""
    try:
        return scalar(parse_template(text), "NAME")
    except ValueError:
        return ""


def _flag(value: bool | int) -> int:
    return 1 if value else 0


class CloudClient:
    """Async client of one frontend's XML-RPC endpoint (`http://host:2633/RPC2`)."""

    def __init__(self, endpoint: str, session: str, timeout: float = 30.0, *, verify_ssl: bool = True,
                 cert_dir: str | None = None, max_workers: int = 4) -> None:
        if ":" not in session:
            raise SiteError("Malformed session", "A session is user:password (or user:token).")
        try:
            self._transport = CloudTransport(endpoint, timeout, verify_ssl=verify_ssl, cert_dir=cert_dir)
        except ValueError as exc:
            shown = redact_endpoint(endpoint)
            raise SiteError(f"Bad XML-RPC endpoint {shown!r}",
                            redact(f"{exc}", endpoint_secrets(endpoint)) + ". ONE_XMLRPC must look like "
                            "http://<host>:2633/RPC2.") from None
        #: the endpoint as messages show it (credentials written into the URL as `***@`)
        self.endpoint = redact_endpoint(endpoint)
        self.timeout = float(timeout)
        self.user = session.split(":", 1)[0]
        self._session = session
        self._secrets = (session, session.split(":", 1)[1], *endpoint_secrets(endpoint))
        self._executor = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="cloud-rpc")
        #: the threads that parse and build the VM list's pages (`_vm_pages`); the first large
        #: page makes the process keep its C heap between pages (`keep_heap`)
        self._parse_executor = ThreadPoolExecutor(max_workers=VM_LIST_PARSERS, thread_name_prefix="cloud-parse")
        #: how reads are retried and writes reconciled (`tui.adapters.retry`)
        self.retry_policy: RetryPolicy = DEFAULT_POLICY

    def __repr__(self) -> str:
        return f"CloudClient({self.endpoint!r}, user={self.user!r}, timeout={self.timeout:g})"

    async def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
        self._parse_executor.shutdown(wait=False, cancel_futures=True)
        self._transport.close()

    async def __aenter__(self) -> "CloudClient":
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # plumbing ----------------------------------------------------------------------------------
    async def _run(self, method: str, work: Callable[[], T], deadline: float | None = None,
                   executor: ThreadPoolExecutor | None = None) -> T:
        """One attempt of `work` in a worker thread (of `executor`, default the calls' own),
        bounded by `deadline` (default: the timeout)."""
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = deadline_after(self.timeout)
        transport = self._transport

        def bounded() -> T:
            transport.set_deadline(deadline)
            try:
                return work()
            finally:
                transport.set_deadline(None)

        try:
            future = loop.run_in_executor(executor or self._executor, bounded)
        except RuntimeError as exc:  # executor shut down
            raise SiteError("Cloud client closed", f"{method} was called after close().") from exc
        try:
            return await asyncio.wait_for(future, timing.left_until(deadline) + timing.PROFILE.call_grace)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a SiteError (cancellation passes)
            raise to_site_error(exc, method=method, endpoint=self.endpoint, timeout=self.timeout,
                                secrets=self._secrets) from None

    async def _read(self, method: str, work: Callable[[], T]) -> T:
        """`work` as a read: retried while it can succeed, within one deadline (`tui.adapters.retry`)."""
        return await retry_read(lambda deadline: self._run(method, work, deadline), timeout=self.timeout,
                                policy=self.retry_policy)

    async def _allocate(self, method: str, text: str, *params: Any,
                        named: Callable[[], Awaitable[Iterable[tuple[int, str]]]]) -> int:
        """`one.<method>` creating an object named by `text`'s NAME (`_create`)."""
        return await self._create(method, template_name(text), (text, *params), named)

    async def _create(self, method: str, name: str, params: tuple[Any, ...],
                      named: Callable[[], Awaitable[Iterable[tuple[int, str]]]], what: str = "") -> int:
        """`one.<method>(*params)` creating an object called `name`, reconciled: after a failure
        whose outcome is unknown, an object of that name that was not there before is the one
        this call made; none means the call did not happen and may be sent again. Without a
        name the call is sent once."""
        if not name:
            return await self._scalar(method, int, *params)
        what = what or f"an object named {name!r}"
        before = {oid for oid, oname in await named() if oname == name}

        async def read_back() -> int | None:
            new = sorted(oid for oid, oname in await named() if oname == name and oid not in before)
            if len(new) > 1:
                raise SiteError(f"Several new objects: {what}", f"one.{method} may have run twice (or another "
                                f"operator made one at the same time): ids {', '.join(map(str, new))}.")
            return new[0] if new else None

        return await reconciled_write(lambda deadline: self._scalar(method, int, *params, deadline=deadline),
                                      read_back, timeout=self.timeout, what=what, policy=self.retry_policy)

    async def _delete(self, method: str, object_id: int, info: Callable[[int], Awaitable[Any]],
                      going: Callable[[Any], bool] = lambda _: False) -> int:
        """`one.<method>` of one object, reconciled: after a failure whose outcome is unknown the
        object is read back; a NO_EXISTS answer, or the object in a state `going` says is on its
        way out, means the delete happened."""

        async def read_back() -> int | None:
            try:
                found = await info(object_id)
            except SiteError as error:
                if error.code == NO_EXISTS:
                    return object_id
                raise
            return object_id if going(found) else None

        return await reconciled_write(lambda deadline: self._scalar(method, int, int(object_id), deadline=deadline),
                                      read_back, timeout=self.timeout, what=f"object {object_id}",
                                      policy=self.retry_policy)

    async def _scalar(self, method: str, kind: type[T], *params: Any, deadline: float | None = None,
                      idempotent: bool = False) -> T:
        """`one.<method>` answering a scalar: sent once (a write), or retried when `idempotent`
        (a second send leaves the same state: an update with the same text, chmod, chown)."""
        def work() -> T:
            return self._checked_scalar(method, kind, self._raw_call(f"one.{method}", *params, idempotent=False))
        if idempotent:
            return await self._read(f"one.{method}", work)
        return await self._run(f"one.{method}", work, deadline)

    @staticmethod
    def _checked_scalar(method: str, kind: type[T], value: Any) -> T:
        """A scalar answer of `kind` (an empty value or another type is a malformed answer)."""
        if value == "":
            raise MalformedResponse(f"one.{method} answered an empty value")
        if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
            raise MalformedResponse(f"one.{method} answered {type(value).__name__}, expected {kind.__name__}")
        return value

    def _raw_call(self, method: str, *params: Any, idempotent: bool = True) -> Any:
        """POST `method` (full name) with `params` after the session, through the transport, and
        return the platform's success value (blocking: runs in a worker thread); a read unless
        `idempotent` is False (then never sent twice by the transport)."""
        # encoded as xmlrpc.client.ServerProxy does (a lone surrogate sent as a character reference)
        body = xmlrpc.client.dumps((self._session, *params), method, allow_none=False).encode("utf-8", "xmlcharrefreplace")
        return check_result(decode_response(self._transport.post(body, idempotent=idempotent), method))

    def _stream_pool(self, method: str, pool_tag: str, item_tag: str, take: Callable[[list[etree._Element]], list[T]],
                     *params: Any) -> list[T]:
        """POST `method` and read its pool document while it arrives (`PoolStream`): `take` makes
        results of each batch of complete items, which are then dropped (blocking: runs in a
        worker thread)."""
        body = xmlrpc.client.dumps((self._session, *params), method, allow_none=False).encode("utf-8")
        stream = PoolStream(method, pool_tag, item_tag, take)
        self._transport.post(body, sink=stream.feed, idempotent=True)
        return stream.close()

    def _fetch_pool(self, method: str, *params: Any) -> list[bytes]:
        """POST `method` and keep its answer's body as it arrived, unread (blocking: a worker
        thread); `_read_fetched` reads it as `_stream_pool` would have."""
        body = xmlrpc.client.dumps((self._session, *params), method, allow_none=False).encode("utf-8")
        chunks: list[bytes] = []
        self._transport.post(body, sink=chunks.append, idempotent=True)
        return chunks

    @staticmethod
    def _read_fetched(chunks: list[bytes], method: str, pool_tag: str, item_tag: str,
                      take: Callable[[list[etree._Element]], list[T]]) -> list[T]:
        stream = PoolStream(method, pool_tag, item_tag, take)
        while chunks:  # each chunk dropped once fed: the page's body is never held twice
            stream.feed(chunks.pop(0))
        return stream.close()

    @staticmethod
    def _parse_fetched(chunks: list[bytes], method: str, take: Callable[[list[etree._Element]], list[T]],
                       read_page: "Callable[[etree._Element], list[T]] | None" = None) -> "ParsedPage[T]":
        """A page's answer fetched ahead, parsed whole with a plain parser (`PoolStream.tree`) and
        its items built, all in a parsing thread: lxml parses without the GIL (no event calls back
        into Python) and `read_page` (the whole pool element; else `take` a batch at a time) reads
        the VM list's page with a stylesheet, without it too, while other threads parse and build
        the pages before and after it (issue 24). The tree is dropped here, once read."""
        stream = PoolStream(method, "VM_POOL", "VM", take, plain=True)
        body = b"".join(chunks)  # one feed: the GIL handed over once, not once per chunk
        chunks.clear()
        if len(body) >= KEEP_HEAP_FROM_BYTES:
            keep_heap()
        stream.feed(body)
        del body
        tree = stream.tree()
        if isinstance(tree, list):
            return ParsedPage(tree)
        return ParsedPage(take_tree(tree, "VM", take) if read_page is None else read_page(tree))

    @staticmethod
    def _read_parsed(page: "ParsedPage[T]", take: Callable[[list[etree._Element]], list[T]]) -> list[T]:
        items, page.items = page.items, []
        return items

    async def _pool(self, method: str, pool_tag: str, item_tag: str, build: Callable[[etree._Element], T],
                    *params: Any) -> tuple[T, ...]:
        """`one.<method>`'s pool document, read while it arrives (`_stream_pool`) into `build`'s models."""
        def work() -> tuple[T, ...]:
            return tuple(self._stream_pool(f"one.{method}", pool_tag, item_tag, lambda batch: [build(e) for e in batch],
                                           *params))
        return await self._read(f"one.{method}", work)

    async def _vm_pages(self, method: str, take: Callable[[list[etree._Element]], list[T]], vm_id: Callable[[T], int],
                        filter: int, state: int, page_size: int | None,
                        on_page: Callable[[Sequence[T]], None] | None = None,
                        parse_ahead: bool = False,
                        read_page: "Callable[[etree._Element], list[T]] | None" = None,
                        ) -> tuple[list[T], "PoolPager"]:
        """The whole VM pool in pages (`tui.domain.vm_scan.PoolPager`), each page read while it
        arrives and retried on its own; `on_page` sees what has been read after each page. A page
        that cannot be read fails the whole read with its SiteError: never a shorter answer.

        Pipelined: while a page is read, the page the pager will most likely ask for next
        (`PoolPager.guess_next`) is already asked for and its answer kept as it arrives, so the
        site prepares it while this client parses the current one. It is read only if the pager
        does ask for it next (otherwise dropped, unread); if asking for it failed, the page is
        asked for again the usual way, retries included.

        With `parse_ahead` (the VM list's short bodies, issue 24) every page, the current one
        too, is fetched and then parsed and built in the parsing threads (`_parse_fetched`;
        `read_page` builds a parsed page whole), and `VM_LIST_AHEAD` pages are asked for ahead
        (`PoolPager.guesses`): the site prepares them while two pages are parsed at once, each
        mostly without the GIL, on both cores. The pages after the first are asked for as soon as
        the first has arrived, before it is parsed, from the ids its answer seems to hold
        (`vm_id_span`, `PoolPager.guesses_after_first`): only a guess, read only if the pager asks
        for that page once the first is read."""
        from tui.domain.vm_scan import PoolOutOfOrder, PoolPager

        pager = PoolPager(int(VM_PAGE_SIZE if page_size is None else page_size))
        read: list[T] = []
        ahead: PagesAhead = PagesAhead(lambda ask: fetch(ask))

        async def fetch(ask: PageAsk) -> "list[bytes] | ParsedPage[T]":
            chunks = await self._run(method, partial(self._fetch_pool, method, int(filter), ask.start, ask.end,
                                                     int(state)))
            if not parse_ahead:
                return chunks
            if not ask.is_range and pager.pages == 0:  # the first page: the next ones asked for at once
                chunks[:] = [b"".join(chunks)]
                span = vm_id_span(chunks[0])
                if span is not None:
                    ahead.ask(pager.guesses_after_first(*span, VM_LIST_AHEAD))
            # in the parsing threads: the trees' memory comes from their malloc arenas, reused page
            # after page (parsed in any worker thread, each arena kept its own high-water mark)
            return await self._run(method, partial(self._parse_fetched, chunks, method, take, read_page),
                                   executor=self._parse_executor)
        try:
            while pager.ask is not None:
                ask = pager.ask
                if parse_ahead:
                    ahead.ask([ask])  # the VM list's page itself is parsed and built the same way
                fetched = ahead.take(ask)
                guesses = pager.guesses(VM_LIST_AHEAD if parse_ahead else 1)
                ahead.keep_only(guesses)
                ahead.ask(guesses)
                chunks = await settled(fetched)  # None: asked for again below, the usual way
                if isinstance(chunks, ParsedPage):  # built in a parsing thread: taken here, no thread hop
                    page = self._read_parsed(chunks, take)
                else:
                    page = await self._read(method, self._page_work(method, take, chunks, int(filter), ask.start,
                                                                    ask.end, int(state)))
                try:
                    pager.take([vm_id(item) for item in page])
                except PoolOutOfOrder as exc:
                    raise SiteError("The VM pool could not be read in pages",
                                    f"{method} (start {ask.start}, end {ask.end}): {exc}. Try again; if it persists, "
                                    "the platform is not paging as its source says.") from None
                read.extend(page)
                if on_page is not None:
                    on_page(read)
        finally:
            ahead.keep_only(())
        return read, pager

    def _page_work(self, method: str, take: Callable[[list[etree._Element]], list[T]],
                   chunks: "list[bytes] | None", *params: Any) -> Callable[[], list[T]]:
        """One page's read for `_read`: the first attempt reads the answer fetched ahead when
        there is one, every attempt after it (or without one) asks the site (a page parsed and
        built ahead is taken as it is, `_read_parsed`)."""
        def work() -> list[T]:
            nonlocal chunks
            if chunks is not None:
                fetched, chunks = chunks, None
                return self._read_fetched(fetched, method, "VM_POOL", "VM", take)
            return self._stream_pool(method, "VM_POOL", "VM", take, *params)
        return work

    async def _fast_scalar(self, method: str, kind: type[T], *params: Any) -> T:
        """A read answering a scalar (`system.version`, ...), retried like every read."""
        def work() -> T:
            return self._checked_scalar(method, kind, self._raw_call(f"one.{method}", *params))
        return await self._read(f"one.{method}", work)

    async def _object(self, method: str, root_tag: str, build: Callable[[etree._Element], T], *params: Any) -> T:
        """`one.<method>`'s document (one object, or the system's configuration), parsed with lxml
        into `build`'s model."""
        def work() -> T:
            document = parse_document(self._raw_call(f"one.{method}", *params), f"one.{method}")
            return build(parse.expect_root(document, root_tag))
        return await self._read(f"one.{method}", work)

    async def raw(self, method: str, *params: Any) -> Any:
        """Call `method` (full name, e.g. `one.vm.update`) with `params` exactly as given, bypassing
        pyone's casting; the platform's success value (a string or an int, never a parsed object).
        For probing the server's strict typing and for methods this client does not wrap."""
        return await self._run(method, lambda: self._raw_call(method, *params, idempotent=False))

    @staticmethod
    async def _names(pool: Awaitable[Iterable[Any]]) -> list[tuple[int, str]]:
        return [(int(item.id), str(item.name)) for item in await pool]

    # system ------------------------------------------------------------------------------------
    async def version(self) -> str:
        return await self._fast_scalar("system.version", str)

    async def system_config(self) -> SystemConfig:
        return await self._object("system.config", "OPENNEBULA_CONFIGURATION", parse.system_config)

    async def whoami(self) -> User:
        """The caller's user (`user.info` of -1)."""
        return await self._object("user.info", "USER", parse.user, -1)

    # VMs ---------------------------------------------------------------------------------------
    async def list_vms(self, filter: int = ALL_RESOURCES, state: int = ANY_BUT_DONE,
                       start: int | None = None, end: int | None = None, *, page_size: int | None = None,
                       on_page: Callable[[Sequence[VmSummary]], None] | None = None) -> tuple[VmSummary, ...]:
        """The VM list (short bodies): the whole pool in pages (`_vm_pages`), each read while it
        arrives; with `start` and `end`, that one call of the platform's as it is."""
        method = "one.vmpool.info"
        if start is not None or end is not None:
            return await self._pool("vmpool.info", "VM_POOL", "VM", parse.vm_summary, int(filter),
                                    -1 if start is None else int(start), -1 if end is None else int(end),
                                    int(state))
        vms, _ = await self._vm_pages(method, parse.vm_summaries, _summary_id, filter, state,
                                      VM_LIST_PAGE_SIZE if page_size is None else page_size, on_page, parse_ahead=True,
                                      read_page=vm_summary_page)
        return tuple(vms)

    async def list_vms_detail(self, filter: int = ALL_RESOURCES, state: int = ANY_BUT_DONE,
                              start: int | None = None, end: int | None = None, *,
                              page_size: int | None = None) -> tuple[VmDetail, ...]:
        """Full VM bodies (`infoextended`): CPU model, context, user template of every VM, in
        pages as `list_vms`. The platform's query argument is never sent: sqlite refuses it and
        MySQL matches substrings of a JSON path (tui.domain.vm_scan); `scan_vms_detail` finds
        VMs by their template."""
        method = "one.vmpool.infoextended"
        if start is not None or end is not None:
            return await self._pool("vmpool.infoextended", "VM_POOL", "VM", parse.vm_detail, int(filter),
                                    -1 if start is None else int(start), -1 if end is None else int(end),
                                    int(state))
        vms, _ = await self._vm_pages(method, lambda batch: [parse.vm_detail(e) for e in batch], _detail_id,
                                      filter, state, page_size)
        return tuple(vms)

    async def scan_vms_detail(self, wanted: "VmPrefilter", *, page_size: int | None = None,
                              filter: int = ALL_RESOURCES, state: int = ANY_BUT_DONE) -> "VmScan":
        """The whole VM pool's full bodies read in pages as `list_vms_detail`, keeping the full
        record of each VM whose body passes `wanted` (a superset: the caller decides with exact
        equality); the others are only counted."""
        from tui.domain.vm_scan import VmScan

        select = parse.vm_prefilter(wanted)

        def take(batch: list[etree._Element]) -> list[tuple[int, VmDetail | None]]:
            return [(parse.vm_id(vm), parse.vm_detail(vm) if select(vm) else None) for vm in batch]

        read, pager = await self._vm_pages("one.vmpool.infoextended", take, lambda item: item[0], filter, state,
                                           page_size)
        kept = tuple(detail for _, detail in read if detail is not None)
        return VmScan(kept, pager.listed, pager.pages, pager.size)

    async def vm_info(self, vm_id: int) -> VmDetail:
        return await self._object("vm.info", "VM", parse.vm_detail, int(vm_id))

    async def vm_action(self, action: str, vm_id: int) -> int:
        if action not in VM_ACTIONS:
            raise SiteError(f"Unknown VM action {action!r}", f"Known actions: {', '.join(sorted(VM_ACTIONS))}.")
        return await self._scalar("vm.action", int, action, int(vm_id))

    async def vm_deploy(self, vm_id: int, host_id: int, enforce: bool = False, ds_id: int = -1) -> int:
        return await self._scalar("vm.deploy", int, int(vm_id), int(host_id), bool(enforce), int(ds_id))

    async def vm_updateconf(self, vm_id: int, template: TemplateInput, append: bool | int = 1) -> int:
        """Update OS/CPU_MODEL/CONTEXT/... sections. Keep append=1: with 0 the platform erases every
        updateconf section missing from `template`."""
        return await self._scalar("vm.updateconf", int, int(vm_id), template_text(template), _flag(append))

    async def vm_disk_resize(self, vm_id: int, disk_id: int, size_mb: int) -> int:
        """`onevm disk-resize <vm> <disk> <size>`: grow the disk to `size_mb` MB (sent as the
        platform's string of MB); answers the disk id. The VM then passes DISK_RESIZE* states."""
        return await self._scalar("vm.diskresize", int, int(vm_id), int(disk_id), str(int(size_mb)))

    async def vm_recover(self, vm_id: int, operation: int) -> int:
        """`onevm recover`: 0 failure, 1 success, 2 retry, 3 delete, 4 delete-recreate, 5 delete-db."""
        if operation not in range(6):
            raise SiteError(f"Unknown recover operation {operation}", "Operations are 0 to 5 (onevm recover).")
        return await self._scalar("vm.recover", int, int(vm_id), int(operation))

    async def vm_update(self, vm_id: int, template: TemplateInput, append: bool | int) -> int:
        """Update the USER_TEMPLATE (append 1 merges, 0 replaces)."""
        return await self._scalar("vm.update", int, int(vm_id), template_text(template), _flag(append))

    # hosts -------------------------------------------------------------------------------------
    async def list_hosts(self) -> tuple[Host, ...]:
        return await self._pool("hostpool.info", "HOST_POOL", "HOST", parse.host)

    async def host_info(self, host_id: int) -> Host:
        return await self._object("host.info", "HOST", parse.host, int(host_id))

    # images ------------------------------------------------------------------------------------
    async def list_images(self, filter: int = ALL_RESOURCES, start: int = -1, end: int = -1) -> tuple[ImageInfo, ...]:
        return await self._pool("imagepool.info", "IMAGE_POOL", "IMAGE", parse.image,
                                     int(filter), int(start), int(end))

    async def image_info(self, image_id: int) -> ImageInfo:
        return await self._object("image.info", "IMAGE", parse.image, int(image_id))

    async def image_update(self, image_id: int, template: TemplateInput, append: bool | int) -> int:
        """Update the image TEMPLATE (append 1 merges: how marketplace attributes are attached)."""
        return await self._scalar("image.update", int, int(image_id), template_text(template), _flag(append),
                                  idempotent=True)

    async def image_allocate(self, template: TemplateInput, ds_id: int) -> int:
        """Create an image (reconciled by NAME after a failure whose outcome is unknown)."""
        return await self._allocate("image.allocate", template_text(template), int(ds_id),
                                    named=lambda: self._names(self.list_images(MINE)))

    async def image_delete(self, image_id: int) -> int:
        from tui.domain.one_states import ImageState

        # an image with a SOURCE is not dropped at once: it goes to DELETE while the datastore driver
        # removes the file (src/image/ImageManagerActions.cc, ImageManager::delete_image, release-7.0.0
        # ~l.534-622); a DELETE image read back means the delete happened
        return await self._delete("image.delete", image_id, self.image_info,
                                  going=lambda image: image.state == ImageState.DELETE)

    async def image_chmod(self, image_id: int, perms: Permissions | Sequence[int]) -> int:
        return await self._scalar("image.chmod", int, int(image_id), *_perm_args(perms), idempotent=True)

    async def image_chown(self, image_id: int, uid: int = -1, gid: int = -1) -> int:
        return await self._scalar("image.chown", int, int(image_id), int(uid), int(gid), idempotent=True)

    # VM templates ------------------------------------------------------------------------------
    async def list_templates(self, filter: int = ALL_RESOURCES, start: int = -1, end: int = -1) -> tuple[VmTemplate, ...]:
        return await self._pool("templatepool.info", "VMTEMPLATE_POOL", "VMTEMPLATE", parse.vm_template,
                                      int(filter), int(start), int(end))

    async def template_info(self, template_id: int) -> VmTemplate:
        return await self._object("template.info", "VMTEMPLATE", parse.vm_template, int(template_id))

    async def template_allocate(self, template: TemplateInput) -> int:
        """Create a VM template (reconciled by NAME after a failure whose outcome is unknown)."""
        return await self._allocate("template.allocate", template_text(template),
                                    named=lambda: self._names(self.list_templates(MINE)))

    async def template_delete(self, template_id: int) -> int:
        return await self._delete("template.delete", template_id, self.template_info)

    async def template_chmod(self, template_id: int, perms: Permissions | Sequence[int]) -> int:
        return await self._scalar("template.chmod", int, int(template_id), *_perm_args(perms), idempotent=True)

    async def template_chown(self, template_id: int, uid: int = -1, gid: int = -1) -> int:
        return await self._scalar("template.chown", int, int(template_id), int(uid), int(gid), idempotent=True)

    async def template_instantiate(self, template_id: int, name: str = "", hold: bool = False,
                                   extra: TemplateInput = "", persistent: bool = False) -> int:
        return await self._scalar("template.instantiate", int, int(template_id), name, bool(hold),
                                  template_text(extra), bool(persistent))

    # users and groups --------------------------------------------------------------------------
    async def list_users(self) -> tuple[User, ...]:
        return await self._pool("userpool.info", "USER_POOL", "USER", parse.user)

    async def user_info(self, user_id: int) -> User:
        """A user; -1 is the caller."""
        return await self._object("user.info", "USER", parse.user, int(user_id))

    async def user_update(self, user_id: int, template: TemplateInput, append: bool | int) -> int:
        return await self._scalar("user.update", int, int(user_id), template_text(template), _flag(append))

    async def user_allocate(self, name: str, password: str, driver: str = "", group_ids: Sequence[int] = ()) -> int:
        """Create a user (`oneuser create`); the first of `group_ids` is its main group. User names
        are unique: reconciled by name after a failure whose outcome is unknown."""
        params: list[Any] = [str(name), str(password), str(driver)]
        if group_ids:
            params.append([int(g) for g in group_ids])
        return await self._create("user.allocate", str(name), tuple(params), lambda: self._names(self.list_users()))

    async def group_allocate(self, name: str) -> int:
        """Create a group (`onegroup create` without the default ACL rules the CLI adds after)."""
        return await self._create("group.allocate", str(name), (str(name),), lambda: self._names(self.list_groups()))

    async def group_addadmin(self, group_id: int, user_id: int) -> int:
        return await self._scalar("group.addadmin", int, int(group_id), int(user_id))

    async def market_allocate(self, template: TemplateInput) -> int:
        """Register a marketplace (`onemarket create <file>`)."""
        return await self._allocate("market.allocate", template_text(template),
                                    named=lambda: self._names(self.list_marketplaces()))

    async def market_update(self, market_id: int, template: TemplateInput, append: bool | int) -> int:
        """Update a marketplace's TEMPLATE (`onemarket update`; append 1 merges)."""
        return await self._scalar("market.update", int, int(market_id), template_text(template), _flag(append),
                                  idempotent=True)

    async def market_enable(self, market_id: int, enable: bool) -> int:
        """Enable (the cloud monitors it at once) or disable (its apps are dropped) a marketplace
        (`onemarket enable|disable`)."""
        return await self._scalar("market.enable", int, int(market_id), bool(enable), idempotent=True)

    async def list_groups(self) -> tuple[Group, ...]:
        return await self._pool("grouppool.info", "GROUP_POOL", "GROUP", parse.group)

    async def group_info(self, group_id: int) -> Group:
        return await self._object("group.info", "GROUP", parse.group, int(group_id))

    # networks and datastores -------------------------------------------------------------------
    async def list_vnets(self, filter: int = ALL_RESOURCES, start: int = -1, end: int = -1) -> tuple[Vnet, ...]:
        return await self._pool("vnpool.info", "VNET_POOL", "VNET", parse.vnet, int(filter), int(start), int(end))

    async def vnet_info(self, vnet_id: int) -> Vnet:
        return await self._object("vn.info", "VNET", parse.vnet, int(vnet_id))

    async def list_datastores(self) -> tuple[Datastore, ...]:
        return await self._pool("datastorepool.info", "DATASTORE_POOL", "DATASTORE", parse.datastore)

    # marketplaces ------------------------------------------------------------------------------
    async def list_marketplaces(self) -> tuple[Marketplace, ...]:
        return await self._pool("marketpool.info", "MARKETPLACE_POOL", "MARKETPLACE", parse.marketplace)

    async def list_marketapps(self, filter: int = ALL_RESOURCES, start: int = -1, end: int = -1) -> tuple[MarketApp, ...]:
        return await self._pool("marketapppool.info", "MARKETPLACEAPP_POOL", "MARKETPLACEAPP", parse.marketapp,
                                      int(filter), int(start), int(end))

    async def marketapp_info(self, app_id: int) -> MarketApp:
        return await self._object("marketapp.info", "MARKETPLACEAPP", parse.marketapp, int(app_id))

    # documents ---------------------------------------------------------------------------------
    async def list_documents(self, doc_type: int, filter: int = ALL_RESOURCES, start: int = -1,
                             end: int = -1) -> tuple[Document, ...]:
        return await self._pool("documentpool.info", "DOCUMENT_POOL", "DOCUMENT", parse.document,
                                      int(filter), int(start), int(end), int(doc_type))

    async def document_info(self, doc_id: int) -> Document:
        return await self._object("document.info", "DOCUMENT", parse.document, int(doc_id))

    async def document_allocate(self, template: TemplateInput, doc_type: int) -> int:
        """Create a document; for a JSON body pass `json_document_template(body, name)`."""
        return await self._allocate("document.allocate", template_text(template), int(doc_type),
                                    named=lambda: self._names(self.list_documents(int(doc_type), MINE)))

    async def document_update(self, doc_id: int, template: TemplateInput, append: bool | int = 0) -> int:
        return await self._scalar("document.update", int, int(doc_id), template_text(template), _flag(append),
                                  idempotent=True)

    async def document_delete(self, doc_id: int) -> int:
        return await self._delete("document.delete", doc_id, self.document_info)

    # ACLs --------------------------------------------------------------------------------------
    async def acl_list(self) -> tuple[AclRule, ...]:
        return await self._pool("acl.info", "ACL_POOL", "ACL", parse.acl)

    async def acl_addrule(self, user_hex: str, resource_hex: str, rights_hex: str,
                          zone_hex: str | None = None) -> int:
        """Add a rule from its hex fields (as `acl_list` shows them, with or without 0x). Reconciled:
        after a failure whose outcome is unknown, a rule with these fields that was not there
        before is the one this call added; none means it may be sent again."""
        params = [_hex(user_hex), _hex(resource_hex), _hex(rights_hex)]
        if zone_hex is not None:
            params.append(_hex(zone_hex))
        wanted = tuple(int(value, 16) for value in params)

        async def matching() -> list[tuple[int, str]]:
            # the zone is compared only when given (the frontend fills in its own otherwise)
            return [(rule.id, "rule") for rule in await self.acl_list()
                    if (rule.user, rule.resource, rule.rights, rule.zone)[:len(wanted)] == wanted]

        return await self._create("acl.addrule", "rule", tuple(params), matching,
                                  what=f"an ACL rule {' '.join(params)} (oneacl list)")

    async def acl_add(self, rule: str) -> int:
        """Add a rule from its text form, e.g. `#5 IMAGE+TEMPLATE+DOCUMENT/* USE`."""
        try:
            from pyone.acl import OneAcl  # on first use: pyone (and requests under it) is ~0.15-0.3 s of CPU

            fields = OneAcl().parse_rule(rule.strip())
        except Exception as exc:  # pyone raises a bare Exception naming the bad component
            raise SiteError(f"Malformed ACL rule {rule!r}", f"{exc}. Shape: <#uid|@gid|*> <RES+RES/#id|@gid|*> "
                            "<USE+MANAGE+ADMIN+CREATE> [zone].") from None
        return await self.acl_addrule(*fields)

    async def acl_delrule(self, rule_id: int) -> int:
        return await self._scalar("acl.delrule", int, int(rule_id))


def _hex(value: str) -> str:
    text = value.strip().lower()
    text = text[2:] if text.startswith("0x") else text
    try:
        int(text, 16)
    except ValueError:
        raise SiteError(f"Not a hexadecimal ACL field: {value!r}", "ACL fields are hex numbers such as 100000005.") from None
    return text


def _summary_id(vm: "VmSummary") -> int:
    return vm.id


def _detail_id(vm: "VmDetail") -> int:
    return vm.id


def _perm_args(perms: Permissions | Iterable[int]) -> tuple[int, ...]:
    from tui.domain.permissions import Permissions

    args = perms.as_args() if isinstance(perms, Permissions) else tuple(int(x) for x in perms)
    if len(args) != 9 or any(x not in (-1, 0, 1) for x in args):
        raise SiteError("Bad permissions", "chmod takes nine values, each 1, 0 or -1 (unchanged).")
    return args
