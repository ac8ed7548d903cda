"""The VM list's refresh cache (tui.adapters.vm_pool_cache): always the same VMs as parsing the
whole pool document, reusing unchanged VMs, and falling back to the whole document whenever the
text does not split cleanly into VM bodies (a template value holding `</VM><VM>`, whitespace)."""

from __future__ import annotations

import xmlrpc.client

import pytest

from tests.conftest import SimFactory
from tui.adapters import cloud_parse as parse
from tui.adapters.cloud import CloudClient
from tui.adapters.cloud_transport import MalformedResponse, parse_document
from tui.adapters.vm_pool_cache import VmSummaryCache


def _whole(text: str) -> tuple[object, ...]:
    return parse.pool(parse_document(text, "test"), "VM_POOL", "VM", parse.vm_summary)


def _pool_text(endpoint: str, session: str) -> str:
    proxy = xmlrpc.client.ServerProxy(endpoint)
    ok, value, *_ = proxy.one.vmpool.info(session, -2, -1, -1, -1)
    assert ok
    return str(value)


async def test_same_vms_as_the_whole_document_cold_and_warm(sim_factory: SimFactory) -> None:
    server = sim_factory(scenario="deployed", vms=60)
    cache = VmSummaryCache()
    text = _pool_text(server.xmlrpc_url, server.session)
    expected = _whole(text)
    assert len(expected) > 60

    assert cache.summaries(text) == expected
    assert (cache.reused, cache.parsed) == (0, len(expected))  # first call: the whole document
    again = cache.summaries(text)
    assert again == expected and (cache.reused, cache.parsed) == (len(expected), 0)
    assert all(a is b for a, b in zip(again, cache.summaries(text)))  # the very same objects

    cloud = CloudClient(server.xmlrpc_url, server.session, 10)
    try:
        # LABELS is part of the pool's short VM body: the two VMs' texts change
        await cloud.vm_update(expected[5].id, 'LABELS="changed"', 1)
        await cloud.vm_update(expected[7].id, 'LABELS="changed/too"', 1)
    finally:
        await cloud.close()
    text = _pool_text(server.xmlrpc_url, server.session)
    assert cache.summaries(text) == _whole(text)
    assert cache.parsed == 2 and cache.reused == len(expected) - 2


def test_a_template_value_holding_the_boundary_falls_back_to_the_whole_document(sim_factory: SimFactory) -> None:
    server = sim_factory(vms=3)
    proxy = xmlrpc.client.ServerProxy(server.xmlrpc_url)
    first = _whole(_pool_text(server.xmlrpc_url, server.session))[0]
    ok, *_ = proxy.one.vm.update(server.session, first.id, 'LABELS="a</VM><VM>b"', 1)  # in the short body
    assert ok
    text = _pool_text(server.xmlrpc_url, server.session)
    assert "</VM><VM>b" in text  # the boundary, inside a CDATA section
    cache = VmSummaryCache()
    expected = _whole(text)
    assert cache.summaries(text) == expected and len(expected) == 3
    assert cache.summaries(text) == expected  # not paired, so nothing was cached: parsed again
    assert cache.parsed == 3


def test_documents_that_do_not_split_are_parsed_whole() -> None:
    cache = VmSummaryCache()
    assert cache.summaries("<VM_POOL/>") == () and cache.summaries("<VM_POOL></VM_POOL>") == ()
    pretty = "<VM_POOL>\n  <VM><ID>4</ID><NAME>a</NAME></VM>\n  <VM><ID>5</ID><NAME>b</NAME></VM>\n</VM_POOL>"
    assert [vm.id for vm in cache.summaries(pretty)] == [4, 5]
    joined = "<VM_POOL><VM><ID>4</ID><NAME>a</NAME></VM><VM><ID>5</ID><NAME>b</NAME></VM></VM_POOL>"
    assert [vm.name for vm in cache.summaries(joined)] == ["a", "b"]
    assert [vm.name for vm in cache.summaries(joined)] == ["a", "b"] and cache.reused == 2
    with pytest.raises(MalformedResponse):
        cache.summaries("<HOST_POOL/>")
    with pytest.raises(MalformedResponse):
        cache.summaries("<VM_POOL><VM><ID>4</VM></VM_POOL>")


def test_an_answer_that_is_not_a_document_is_malformed() -> None:
    with pytest.raises(MalformedResponse):
        VmSummaryCache().summaries(7)  # type: ignore[arg-type]  # a server answering an int
