"""Pool answers read while they arrive (tui.adapters.pool_stream.PoolStream) and the VM pool read in
pages (CloudClient.list_vms, list_vms_detail, scan_vms_detail): cut into chunks anywhere, an answer
gives exactly what parsing it whole gives, hostile text kept verbatim; a truncated, malformed or
failed answer is a clear error (a SiteError from the client), never a traceback or a shorter list;
a paged read takes every VM listed throughout exactly once while VMs come and go between pages."""

from __future__ import annotations

import threading
import xmlrpc.client
from typing import Any, Callable

import pytest

from tests.conftest import SimFactory
from tui.adapters import cloud as cloud_module
from tui.adapters import cloud_parse as parse
from tui.adapters.cloud import CloudClient
from tui.adapters.cloud_transport import (
    ControlCharacterAnswer,
    MalformedResponse,
    PlatformFailure,
    check_result,
    decode_response,
    parse_document,
)
from tui.adapters.heap import KEEP_HEAP_FROM_BYTES, keep_heap
from tui.adapters.pool_stream import PoolStream, vm_id_span
from tui.adapters.retry import NO_RETRY
from tui.domain.vm_scan import PageAsk, PoolPager, VmPrefilter
from tui.domain.vms import VmSummary
from tui.errors import SiteError

#: names a user may give a VM: markup, entities, CDATA ends, line ends, the XML-RPC envelope itself
HOSTILE = ("a<b>&amp;c", "]]>x<![CDATA[", "line\r\nbreak\rcr", "</string></value>", "&#x41; &lt;",
           "\u00e9\u4e2d\U0001f600", "'\"quotes\"'")


def _vm(vm_id: int, name: str, extra: str = "") -> str:
    cdata = name.replace("]]>", "]]]]><![CDATA[>")
    return (f"<VM><ID>{vm_id}</ID><UID>0</UID><GID>0</GID><UNAME>oneadmin</UNAME><GNAME>oneadmin</GNAME>"
            f"<NAME><![CDATA[{cdata}]]></NAME><STATE>3</STATE><LCM_STATE>3</LCM_STATE><STIME>1</STIME>"
            f"<TEMPLATE><CPU>1</CPU><MEMORY>512</MEMORY><NIC><IP>10.0.0.{vm_id % 250}</IP></NIC></TEMPLATE>"
            f"<USER_TEMPLATE>{extra}</USER_TEMPLATE><HISTORY_RECORDS/></VM>")


def _document(count: int = 12) -> str:
    bodies = [_vm(i, HOSTILE[i % len(HOSTILE)] + f" {i}",
                  extra="<VM>not a pool item</VM>" if i == 3 else "") for i in range(count, 0, -1)]
    return "<VM_POOL>" + "".join(bodies) + "</VM_POOL>"


def _answer(document: str) -> bytes:
    return xmlrpc.client.dumps(([True, document, 0],), methodresponse=True, encoding="UTF-8").encode("utf-8")


def _whole(raw: bytes) -> list[VmSummary]:
    return list(parse.pool(parse_document(check_result(decode_response(raw)), "test"), "VM_POOL", "VM",
                           parse.vm_summary))


def _stream(raw: bytes, chunk: int, plain: bool = False) -> list[VmSummary]:
    stream = PoolStream("one.vmpool.info", "VM_POOL", "VM", parse.vm_summaries, plain=plain)
    for start in range(0, len(raw), chunk):
        stream.feed(raw[start:start + chunk])
    return stream.close()


#: both ways of reading a pool answer: streamed (items dropped once read) and plain (parsed whole,
#: as the VM list's pages fetched ahead are): the same items, the same errors
PLAIN = pytest.mark.parametrize("plain", [False, True], ids=["streamed", "plain"])


@PLAIN
@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 8, 13, 64, 1000, 1 << 20])
def test_any_cut_gives_what_the_whole_answer_gives(chunk: int, plain: bool) -> None:
    raw = _answer(_document())
    expected = _whole(raw)
    assert len(expected) == 12
    assert _stream(raw, chunk, plain) == expected
    names = [vm.name for vm in expected]
    # hostile text verbatim (an XML parser reads a CR LF or a lone CR in text as a line feed)
    assert names[0] == HOSTILE[12 % len(HOSTILE)] + " 12"
    assert {name.rsplit(" ", 1)[0] for name in names} == {h.replace("\r\n", "\n").replace("\r", "\n") for h in HOSTILE}


def test_the_xmlrpc_c_envelope_and_escapes() -> None:
    """oned's xmlrpc-c writes a double-quoted declaration, CR LF between elements, an <i4> code
    and may escape a CR as a character reference."""
    document = _document(3)
    text = document.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#x0d;")
    raw = ('<?xml version="1.0" encoding="UTF-8"?>\r\n<methodResponse>\r\n<params>\r\n<param><value><array><data>\r\n'
           f'<value><boolean>1</boolean></value>\r\n<value><string>{text}</string></value>\r\n'
           '<value><i4>0</i4></value>\r\n</data></array></value></param>\r\n</params>\r\n</methodResponse>\r\n')
    for chunk in (1, 7, 4096):
        vms = _stream(raw.encode(), chunk)
        assert [vm.id for vm in vms] == [3, 2, 1]
    assert _stream(raw.encode(), 7) == _whole(raw.encode())


def test_an_empty_pool_and_a_failure() -> None:
    assert _stream(_answer("<VM_POOL/>"), 3) == []
    # as oned writes an empty pool (an ID range past the last VM, recorded on 7.4.0 and 6.10.5)
    assert _stream(_answer("<VM_POOL></VM_POOL>"), 3) == []
    failure = xmlrpc.client.dumps(([False, "[one.vmpool.info] User couldn't be authenticated", 256, -1],),
                                  methodresponse=True).encode()
    with pytest.raises(PlatformFailure) as info:
        _stream(failure, 5)
    assert info.value.code == 256
    fault = xmlrpc.client.dumps(xmlrpc.client.Fault(-501, "Parameter that is supposed to be integer is not"),
                                methodresponse=True).encode()
    with pytest.raises(xmlrpc.client.Fault):
        _stream(fault, 5)


@PLAIN
@pytest.mark.parametrize("cut", [0.0, 0.001, 0.3, 0.5, 0.99])
def test_a_truncated_answer_is_malformed(cut: float, plain: bool) -> None:
    raw = _answer(_document())
    with pytest.raises(MalformedResponse):
        _stream(raw[:int(len(raw) * cut)], 64, plain)
    with pytest.raises(MalformedResponse):  # the string ends but the document inside it does not
        _stream(_answer(_document()[:int(len(_document()) * max(cut, 0.01))]), 64, plain)


@pytest.mark.parametrize("raw, match", [
    (b"<html><body>502 Bad Gateway</body></html>", "methodResponse"),
    (_answer("<VM_POOL>").replace(b"&lt;VM_POOL&gt;", b"<VM_POOL>"), "markup inside its string"),
    (_answer("<HOST_POOL><HOST><ID>1</ID></HOST><VM><ID>1</ID></VM></HOST_POOL>"), "VM_POOL"),
    (_answer("<VM_POOL><VM><ID>1</ID></VM></VM_POOL>").replace(b"</methodResponse>", b""), "XML"),
    (_answer("<VM_POOL><VM><ID>1</ID><NAME>&#1;</NAME></VM></VM_POOL>"), "malformed"),
])
@PLAIN
def test_malformed_answers(raw: bytes, match: str, plain: bool) -> None:
    with pytest.raises(MalformedResponse, match=match):
        _stream(raw, 16, plain)


@PLAIN
def test_a_control_character_is_named(plain: bool) -> None:
    raw = _answer(_vm(1, "x").join(("<VM_POOL>", "</VM_POOL>"))).replace(b"[x]", b"[bad\x01name]")
    with pytest.raises(ControlCharacterAnswer) as info:
        _stream(raw, 32, plain)
    assert info.value.char == "\x01" and "bad" in info.value.context and "name" in info.value.context


def test_a_parsed_page_is_read_batch_by_batch_and_leaves_the_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page parsed whole (`plain`) is read in batches (of 5 here): each batch sees only VMs, in
    order, none of an earlier batch still in the tree; a comment between VMs is skipped; the
    result is the whole answer's."""
    monkeypatch.setattr("tui.adapters.pool_stream.TREE_BATCH", 5)
    raw = _answer(_document().replace("</VM><VM>", "</VM><!-- between --><VM>", 1))
    batches: list[list[int]] = []

    def take(batch: list[Any]) -> list[VmSummary]:
        parent = batch[0].getparent()
        assert parent is not None and all(vm.getparent() is parent for vm in batch)
        assert [child for child in parent if child.tag == "VM"][:len(batch)] == batch  # earlier ones gone
        batches.append([int(vm.findtext("ID")) for vm in batch])
        return parse.vm_summaries(batch)
    stream = PoolStream("one.vmpool.info", "VM_POOL", "VM", take, plain=True)
    stream.feed(raw)
    assert stream.close() == _whole(raw)
    assert [vm_id for batch in batches for vm_id in batch] == list(range(12, 0, -1))
    assert all(len(batch) <= 5 for batch in batches) and len(batches) >= 3


# through the client ------------------------------------------------------------------------------
def _canned(cloud: CloudClient, raw: bytes) -> None:
    """Every call of `cloud` answered `raw`, in chunks of 7 bytes as a slow wire would."""
    def post(body: bytes, timeout: float | None = None, sink: Callable[[bytes], None] | None = None) -> bytes:
        if sink is None:
            return raw
        for start in range(0, len(raw), 7):
            sink(raw[start:start + 7])
        return b""
    cloud._transport.post = post  # type: ignore[method-assign]


@pytest.mark.parametrize("raw", [_answer(_document())[:-200], _answer(_document()[:-30]), b"not xml at all"])
async def test_the_client_says_site_error_for_a_broken_answer(raw: bytes) -> None:
    cloud = CloudClient("http://127.0.0.1:9/RPC2", "oneadmin:secret", 5)
    cloud.retry_policy = NO_RETRY
    _canned(cloud, raw)
    try:
        for call in (cloud.list_vms, cloud.list_vms_detail, lambda: cloud.scan_vms_detail(VmPrefilter(ids=(1,)))):
            with pytest.raises(SiteError) as info:
                await call()
            assert "secret" not in str(info.value) + info.value.detail
    finally:
        await cloud.close()


async def test_pages_take_every_vm_once_while_vms_come_and_go(sim_factory: SimFactory) -> None:
    """Pages of 5 over 40 VMs, newest first: after each page a VM not read yet reaches DONE and a
    VM is created. Every VM listed throughout is read once; none twice; pages are by id range."""
    server = sim_factory(vms=40)
    cloud = CloudClient(server.xmlrpc_url, server.session, 10)
    with server.site.lock:
        before = sorted(vm.id for vm in server.site.vms.values() if vm.state != 6)
    asked: list[tuple[int, int]] = []
    gone: list[int] = []
    original, original_fetch = cloud._stream_pool, cloud._fetch_pool

    def answered(params: tuple[Any, ...]) -> None:
        asked.append((params[1], params[2]))
        with server.site.lock:
            lowest_unread = min(vm.id for vm in server.site.vms.values() if vm.state != 6)
            if lowest_unread not in gone and len(gone) < 4:
                server.site.vms[lowest_unread].state = 6  # DONE before its page is read
                server.site.vms[lowest_unread].touch()
                gone.append(lowest_unread)

    def stream_pool(method: str, pool_tag: str, item_tag: str, take: Any, *params: Any) -> Any:
        page = original(method, pool_tag, item_tag, take, *params)
        answered(params)
        return page

    def fetch_pool(method: str, *params: Any) -> list[bytes]:  # the VM list's pages, read ahead
        chunks = original_fetch(method, *params)
        answered(params)
        return chunks

    cloud._stream_pool = stream_pool  # type: ignore[method-assign]
    cloud._fetch_pool = fetch_pool  # type: ignore[method-assign]
    pages: list[int] = []
    try:
        vms = await cloud.list_vms(page_size=5, on_page=lambda read: pages.append(len(read)))
    finally:
        await cloud.close()
    ids = [vm.id for vm in vms]
    assert len(ids) == len(set(ids)), "a VM read twice"
    assert set(before) - set(gone) <= set(ids), "a VM listed throughout was skipped"
    assert ids == sorted(ids, reverse=True)  # the site's order (API_LIST_ORDER DESC)
    assert asked[0] == (0, -5) and all(end >= 0 for _, end in asked[1:])  # offset 0, then id ranges
    assert pages == sorted(pages) and pages[0] == 5 and pages[-1] == len(ids)


async def test_paged_reads_agree_with_one_unpaged_call(sim_factory: SimFactory) -> None:
    server = sim_factory(scenario="deployed", vms=30)
    with server.site.lock:
        server.site.system_config["API_LIST_ORDER"] = "ASC"
        first = min(server.site.vms)
        server.site.vms[first].user_template.append(("VM", "a user attribute named VM"))
        server.site.vms[first].touch()
    cloud = CloudClient(server.xmlrpc_url, server.session, 10)
    try:
        whole = await cloud.list_vms(start=-1, end=-1)
        assert await cloud.list_vms(page_size=4) == whole
        details = await cloud.list_vms_detail(page_size=3)
        assert [d.summary for d in details] == list(whole)
        scan = await cloud.scan_vms_detail(VmPrefilter(ids=(whole[0].id, whole[-1].id)), page_size=4)
        assert [d.id for d in scan.vms] == [whole[0].id, whole[-1].id] and scan.listed == len(whole)
    finally:
        await cloud.close()
    assert whole[0].id == first and len(whole) > 30


class PageLog:
    """Which pages a paged read asked for ahead (`_fetch_pool`), read from what it fetched ahead
    (`_read_fetched`, or `_read_parsed` when it was parsed ahead too, as the VM list's are) or
    asked for the usual way (`_stream_pool`); `before_fetch`, `after_fetch`, `before_parse` and
    `before_stream` run in the worker thread with the page's (start, end)."""

    def __init__(self, cloud: CloudClient) -> None:
        self.fetched: list[tuple[int, int]] = []
        self.read_fetched: list[tuple[int, int]] = []
        self.streamed: list[tuple[int, int]] = []
        self.before_fetch: Callable[[tuple[int, int]], None] = lambda ask: None
        self.after_fetch: Callable[[tuple[int, int]], None] = lambda ask: None
        self.before_stream: Callable[[tuple[int, int]], None] = lambda ask: None
        self.before_parse: Callable[[tuple[int, int]], None] = lambda ask: None
        self._asks: dict[int, tuple[int, int]] = {}
        fetch, read, stream = cloud._fetch_pool, cloud._read_fetched, cloud._stream_pool
        parse_tree, read_tree = cloud._parse_fetched, cloud._read_parsed

        def fetch_pool(method: str, *params: Any) -> list[bytes]:
            ask = (params[1], params[2])
            self.before_fetch(ask)
            chunks = fetch(method, *params)
            self._asks[id(chunks)] = ask
            self.fetched.append(ask)
            self.after_fetch(ask)
            return chunks

        def read_fetched(chunks: list[bytes], *args: Any) -> Any:
            self.read_fetched.append(self._asks[id(chunks)])
            return read(chunks, *args)

        def parse_fetched(chunks: list[bytes], *args: Any) -> Any:
            ask = self._asks[id(chunks)]
            self.before_parse(ask)
            page = parse_tree(chunks, *args)
            self._asks[id(page)] = ask
            return page

        def read_parsed(page: Any, take: Any) -> Any:
            self.read_fetched.append(self._asks[id(page)])
            return read_tree(page, take)

        def stream_pool(method: str, pool_tag: str, item_tag: str, take: Any, *params: Any) -> Any:
            ask = (params[1], params[2])
            self.before_stream(ask)
            self.streamed.append(ask)
            return stream(method, pool_tag, item_tag, take, *params)

        cloud._fetch_pool = fetch_pool  # type: ignore[method-assign]
        cloud._read_fetched = read_fetched  # type: ignore[method-assign]
        cloud._stream_pool = stream_pool  # type: ignore[method-assign]
        cloud._parse_fetched = parse_fetched  # type: ignore[method-assign]
        cloud._read_parsed = read_parsed  # type: ignore[method-assign]


async def test_the_next_page_is_asked_for_while_the_current_one_is_read(sim_factory: SimFactory) -> None:
    """Pages of 5 over 40 VMs. The full bodies: from the third page on, each page was asked for
    while the one before it was read (the second page's read waits here until the third has
    arrived: without the read ahead it would wait in vain). The VM list: every page is fetched
    and then parsed in a parsing thread, none streamed; the second and third pages are asked for
    as soon as the first has arrived, while it is parsed (its parse waits here until both have
    arrived), then two pages ahead of the one read. Either way the VMs are those of one unpaged
    call, and every page asked for ahead was read (dense ids: every guess right)."""
    server = sim_factory(vms=40)
    cloud = CloudClient(server.xmlrpc_url, server.session, 10)
    log = PageLog(cloud)
    third_arrived = threading.Event()
    fetches = [1]  # fetched once the third page has: the full bodies' first fetch is the third page
    log.after_fetch = lambda ask: third_arrived.set() if len(log.fetched) >= fetches[0] else None

    def before_stream(ask: tuple[int, int]) -> None:
        if len(log.streamed) == 1:  # the second page (the first was streamed already)
            assert third_arrived.wait(10), "the third page was not asked for while the second was read"

    def before_parse(ask: tuple[int, int]) -> None:
        if ask == (0, -5):
            assert third_arrived.wait(10), "the second and third pages were not asked for while the first was parsed"
    log.before_stream, log.before_parse = before_stream, before_parse
    try:
        whole = await cloud.list_vms(start=-1, end=-1)
        log.streamed.clear()
        details = await cloud.list_vms_detail(page_size=5)
        assert [detail.summary for detail in details] == list(whole)
        assert log.streamed[0] == (0, -5) and len(log.streamed) == 2
        assert sorted(log.read_fetched) == sorted(log.fetched) and len(log.fetched) >= 6  # every guess right
        log.streamed.clear(), log.fetched.clear(), log.read_fetched.clear()
        third_arrived.clear()
        fetches[0] = 3  # the VM list fetches its first page too
        assert await cloud.list_vms(page_size=5) == whole
    finally:
        await cloud.close()
    assert len(whole) >= 40 and not log.streamed and log.fetched[0] == (0, -5)
    assert log.read_fetched == [(0, -5), *log.read_fetched[1:]] and len(log.read_fetched) >= 8
    assert sorted(log.read_fetched) == sorted(log.fetched)  # every page asked for ahead was read


async def test_a_page_guessed_wrong_is_never_read_and_one_not_fetched_is_asked_for_again(
        sim_factory: SimFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Oldest first, the range after the last VMs lists nothing and the open range follows, not
    the range guessed: that guess is dropped (whether its answer came or not, it is never read).
    A page whose asking ahead failed (the connection dropped) is asked for again the usual way.
    Either way the VMs are those of one unpaged call, each once, in the short and the full bodies."""
    server = sim_factory(scenario="deployed", vms=30)
    with server.site.lock:
        server.site.system_config["API_LIST_ORDER"] = "ASC"
    cloud = CloudClient(server.xmlrpc_url, server.session, 10)
    failed: list[tuple[int, int]] = []
    guesses: list[tuple[int, int]] = []
    guesses_of = PoolPager.guesses

    def guessing(pager: PoolPager, count: int) -> list[PageAsk]:
        asks = guesses_of(pager, count)
        guesses.extend((guess.start, guess.end) for guess in asks)
        return asks
    monkeypatch.setattr(PoolPager, "guesses", guessing)

    def before_fetch(ask: tuple[int, int]) -> None:
        if not failed:
            failed.append(ask)
            raise ConnectionResetError("dropped by the test")
    try:
        whole = await cloud.list_vms(start=-1, end=-1)
        log = PageLog(cloud)
        log.before_fetch = before_fetch
        assert await cloud.list_vms(page_size=4) == whole
        assert failed[0] in log.streamed  # asked for again, the usual way
        read = log.streamed + log.read_fetched
        assert len(read) == len(set(read))
        (open_range,) = [ask for ask in read if ask[1] == -1]  # the last read: (s, -1)
        wrong = [guess for guess in guesses if guess not in read]
        assert wrong and all(guess[0] >= open_range[0] for guess in wrong)  # guessed (s, s+3) and after it
        assert read[-1] == open_range
        details = await cloud.list_vms_detail(page_size=4)
        assert [detail.summary for detail in details] == list(whole)
    finally:
        await cloud.close()


def test_stream_results_are_kept_per_page_not_as_a_tree() -> None:
    """Each item leaves the tree once `take` has seen it: `take` sees each VM element once, with
    no earlier VM still attached to the pool element."""
    seen: list[int] = []

    def take(batch: list[Any]) -> list[int]:
        parent = batch[0].getparent()
        assert parent is not None
        attached = [child for child in parent if child.tag == "VM"]
        # the VMs of this batch, and at most the one being read: none of an earlier batch
        assert all(any(child is vm for vm in batch) for child in attached[:len(batch)])
        assert len(attached) <= len(batch) + 1
        seen.extend(parse.vm_id(vm) for vm in batch)
        return [parse.vm_id(vm) for vm in batch]

    stream = PoolStream("one.vmpool.info", "VM_POOL", "VM", take)
    raw = _answer(_document(30))
    for start in range(0, len(raw), 50):
        stream.feed(raw[start:start + 50])
    assert stream.close() == list(range(30, 0, -1)) and seen == list(range(30, 0, -1))


def test_a_glance_at_a_page_tells_its_first_and_last_vm() -> None:
    """`vm_id_span`: the first and last VM ids an answer not parsed yet seems to hold, and how many
    VMs (the guess of the pages after the first rests on it, never what is read); a `<VM>` that is
    not a pool item (in a template) is not one of them; an answer without VMs shows none."""
    assert vm_id_span(_answer(_document(12))) == (12, 1, 12)
    assert vm_id_span(_answer("<VM_POOL></VM_POOL>")) is None and vm_id_span(b"not xml at all") is None
    cdata = "<VM_POOL>" + _vm(5, "a") + _vm(4, "<![CDATA[<VM><ID>99</ID>]]>") + "</VM_POOL>"
    assert vm_id_span(_answer(cdata))[:2] == (5, 99)  # text that looks like a VM: only a guess


def test_only_a_large_page_makes_the_process_keep_its_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heap is kept (`keep_heap`) from the first page of `KEEP_HEAP_FROM_BYTES` on, not for the
    small pages of a small site (whose console then never loads ctypes); the page is read either way."""
    calls: list[int] = []
    monkeypatch.setattr(cloud_module, "keep_heap", lambda: calls.append(1) or True)
    small = _answer(_document(12))
    assert [vm.id for vm in CloudClient._parse_fetched([small], "one.vmpool.info", parse.vm_summaries).items] == \
        list(range(12, 0, -1))
    assert calls == []
    count = KEEP_HEAP_FROM_BYTES // len(_vm(1, "x")) + 1
    large = _answer(_document(count))
    assert len(large) >= KEEP_HEAP_FROM_BYTES
    assert len(CloudClient._parse_fetched([large], "one.vmpool.info", parse.vm_summaries).items) == count
    assert calls == [1]


def test_the_heap_is_kept_once_per_process() -> None:
    """`keep_heap` sets glibc's thresholds once and says so on every later call (False without glibc)."""
    first = keep_heap()
    assert keep_heap() is first
