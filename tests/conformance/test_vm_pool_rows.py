"""Conformance rows of the VM pool listing: the query argument per database backend, pages and
id ranges, the order (OpenNebula/one at the tags each row names), on every emulated version."""

from __future__ import annotations

import re

import pytest

from tests.conformance.conftest import failure, ok, rpc
from tests.conftest import SimFactory
from tui.domain.error_codes import INTERNAL, XML_RPC_API
from tui.sim.server import SimServer

REFUSAL = "JSON query search is not supported by the SQL backend"


def _ids(document: str) -> list[int]:
    return [int(i) for i in re.findall(r"<VM><ID>(\d+)</ID>", document)]


def _vm(sim: SimServer, name: str, user_template: str = "") -> int:
    vm_id = int(ok(rpc(sim, "one.template.instantiate", 0, name, True)))
    if user_template:
        ok(rpc(sim, "one.vm.update", vm_id, user_template, 1))
    return vm_id


@pytest.fixture
def mysql_site(sim_factory: SimFactory, one_version: str) -> SimServer:
    return sim_factory(one_version=one_version, db_backend="mysql")


@pytest.mark.parametrize("method", ["one.vmpool.info", "one.vmpool.infoextended"])
@pytest.mark.parametrize("query", ["ROLE_NAME=manager", "VM.USER_TEMPLATE.ROLE_NAME=manager", "x", "&"])
def test_sqlite_refuses_any_query_before_looking_at_anything_else(site: SimServer, method: str, query: str) -> None:
    """6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc 300-310 (7.4.0
    src/rm/api/VirtualMachinePoolAPI.cc 37-42): a non-empty query on a backend without
    JSON_QUERY (src/sql/SqliteDB.cc 68, sqlite never has it) is INTERNAL "JSON query search is not
    supported by the SQL backend", before the state filter is checked (a bad state answers the
    same). An empty query is no query."""
    for state in (-1, 42):
        refused = failure(rpc(site, method, -2, -1, -1, state, query))
        assert (refused.message, refused.code) == (f"[{method}] {REFUSAL}", INTERNAL)
    _vm(site, "plain")
    assert _ids(ok(rpc(site, method, -2, -1, -1, -1, ""))) == _ids(ok(rpc(site, method, -2, -1, -1, -1)))


def test_mysql_matches_a_json_path_as_a_substring(mysql_site: SimServer) -> None:
    """6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc 338-384 (7.4.0
    src/rm/api/VirtualMachinePoolAPI.cc 68-113), src/sql/MySqlDB.cc 255-295 (JSON_QUERY from MySQL
    5.7.8 / MariaDB 10.2): each term is `JSON_UNQUOTE(JSON_EXTRACT(body_json, '$.<key>')) LIKE
    '%<value>%'` over src/vm/VirtualMachine.cc `to_json` (root member VM). `ROLE_NAME=manager` names
    nothing at the root and matches no VM; the JSON path matches `manager-backup` too."""
    manager = _vm(mysql_site, "m", 'ROLE_NAME = "manager"')
    backup = _vm(mysql_site, "b", 'ROLE_NAME = "manager-backup"')
    _vm(mysql_site, "w", 'ROLE_NAME = "worker"')
    flagged = _vm(mysql_site, "f", 'DOCUMENT_DB = "YES"')

    def found(query: str, state: int = -1) -> list[int]:
        return sorted(_ids(ok(rpc(mysql_site, "one.vmpool.infoextended", -2, -1, -1, state, query))))

    assert found("ROLE_NAME=manager") == []
    assert found("VM.USER_TEMPLATE.ROLE_NAME=manager") == [manager, backup]
    assert found("VM.USER_TEMPLATE.ROLE_NAME=anager-b") == [backup]
    assert found("VM.USER_TEMPLATE.DOCUMENT_DB=Y") == [flagged]
    assert found("VM.NAME=m&VM.USER_TEMPLATE.ROLE_NAME=manager") == [manager]
    # LIKE's wildcards stay wildcards: `_` is any one character
    assert found("VM.USER_TEMPLATE.ROLE_NAME=man_ger") == [manager, backup]
    # a term without `=` searches the whole body's JSON text (key `*`)
    assert found("manager-backup") == [backup]
    # each part is read up to its first blank (include/NebulaUtil.h split, `>>`)
    assert found("VM.USER_TEMPLATE.ROLE_NAME=worker ignored") == found("VM.USER_TEMPLATE.ROLE_NAME=worker")
    # the short bodies answer the same query
    assert sorted(_ids(ok(rpc(mysql_site, "one.vmpool.info", -2, -1, -1, -1, "VM.USER_TEMPLATE.ROLE_NAME=manager")))) \
        == [manager, backup]


def test_mysql_fails_the_statement_of_a_malformed_query(mysql_site: SimServer) -> None:
    """6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc 359-379 and `dump` 248-252: a term equal
    to the last one is not followed by AND (`key != keys.back()`), an invalid JSON path, or no term
    after the state filter's AND make invalid SQL: INTERNAL "Internal error"."""
    _vm(mysql_site, "m", 'ROLE_NAME = "manager"')
    for query in ("VM.NAME=m&VM.NAME=m", "VM.USER-TEMPLATE=x", "&&"):
        refused = failure(rpc(mysql_site, "one.vmpool.infoextended", -2, -1, -1, -1, query))
        assert (refused.message, refused.code) == ("[one.vmpool.infoextended] Internal error", INTERNAL)
    # no state filter, no term: no AND left dangling, every VM
    assert _ids(ok(rpc(mysql_site, "one.vmpool.infoextended", -2, -1, -1, -2, "&&")))


def test_a_negative_end_is_a_page_at_a_row_offset(site: SimServer) -> None:
    """src/pool/PoolSQL.cc `oid_filter` 412-428 and `dump` 168-193, include/SqlDB.h `limit_string`
    143-150, 6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc `dump` 223-246 (7.4.0
    src/rm/api/PoolSharedAPI.cc 149-171): `end < -1` is `LIMIT start, -end` over the listing
    (start a row offset, not an id); otherwise `start != -1` is an id range and `start` -1 the whole
    pool whatever `end`. sqlite reads the offset -1 as 0."""
    vms = [_vm(site, f"v{n}") for n in range(5)]
    listing = _ids(ok(rpc(site, "one.vmpool.info", -2, -1, -1, -1)))
    assert sorted(listing) == vms
    assert _ids(ok(rpc(site, "one.vmpool.info", -2, 0, -2, -1))) == listing[0:2]
    assert _ids(ok(rpc(site, "one.vmpool.info", -2, 3, -2, -1))) == listing[3:5]
    assert _ids(ok(rpc(site, "one.vmpool.info", -2, 5, -2, -1))) == []
    assert _ids(ok(rpc(site, "one.vmpool.info", -2, -1, -3, -1))) == listing[0:3]
    assert sorted(_ids(ok(rpc(site, "one.vmpool.info", -2, vms[1], vms[3], -1)))) == vms[1:4]
    assert sorted(_ids(ok(rpc(site, "one.vmpool.info", -2, vms[3], -1, -1)))) == vms[3:]
    assert _ids(ok(rpc(site, "one.vmpool.info", -2, -1, vms[1], -1))) == listing


def test_mysql_refuses_a_page_at_offset_minus_one(mysql_site: SimServer) -> None:
    """include/SqlDB.h `limit_string` 143-150 writes `LIMIT -1,N` for start -1; MySQL refuses a
    negative LIMIT, so `dump` fails (6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc 248-252):
    INTERNAL "Internal error". The platform's own client pages from 0
    (src/oca/ruby/opennebula/pool.rb `info_paginated`)."""
    _vm(mysql_site, "v")
    refused = failure(rpc(mysql_site, "one.vmpool.info", -2, -1, -2, -1))
    assert (refused.message, refused.code) == ("[one.vmpool.info] Internal error", INTERNAL)
    assert len(_ids(ok(rpc(mysql_site, "one.vmpool.info", -2, 0, -2, -1)))) == 1


@pytest.mark.parametrize("order", ["ASC", "desc", "", None])
def test_the_listing_follows_api_list_order(site: SimServer, order: str | None) -> None:
    """6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc 228-245 (7.4.0
    src/rm/api/PoolSharedAPI.cc 154-171): `ORDER BY oid`, DESC when API_LIST_ORDER is DESC in any
    case (`icasecmp`), else ascending; unset it is DESC (src/template/OpenNebulaTemplate.cc
    `set_conf_single`, 384 at 7.0.2; share/etc/oned.conf leaves it commented out). Seen on the real
    7.0.2 frontend: its pools list newest first."""
    vms = [_vm(site, f"v{n}") for n in range(3)]
    with site.site.lock:
        if order is None:
            site.site.system_config.pop("API_LIST_ORDER", None)
        else:
            site.site.system_config["API_LIST_ORDER"] = order
    listed = _ids(ok(rpc(site, "one.vmpool.infoextended", -2, -1, -1, -1)))
    assert listed == (sorted(vms, reverse=True) if order is None or order.upper() == "DESC" else sorted(vms))


def test_a_bad_state_filter_is_named_per_version(site: SimServer, one_version: str) -> None:
    """src/rm/api/VirtualMachinePoolAPI.cc 46-51 (7.4.0): "Incorrect state filter <n>"; before,
    6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc 315-321: "Incorrect filter_flag, state"."""
    refused = failure(rpc(site, "one.vmpool.info", -2, -1, -1, 12))
    expected = "Incorrect state filter 12" if one_version.startswith("7.4") else "Incorrect filter_flag, state"
    assert (refused.message, refused.code) == (f"[one.vmpool.info] {expected}", XML_RPC_API)


def test_body_json_carries_the_templates_as_template_to_json_writes_them(mysql_site: SimServer) -> None:
    """src/template/Template.cc `to_json` 411-470: an attribute that appears once is a value, a
    repeated one (and DISK, NIC always) an array, a vector an object; so a repeated attribute is
    found through `[*]` or as the array's JSON text, a vector's part through its name."""
    vm_id = _vm(mysql_site, "t", 'TAG = "a"\nTAG = "b"\nDB = [ KIND = "doc", PORT = "1" ]')

    def found(query: str) -> list[int]:
        return _ids(ok(rpc(mysql_site, "one.vmpool.infoextended", -2, -1, -1, -1, query)))

    assert found("VM.USER_TEMPLATE.TAG[*]=b") == [vm_id]
    assert found('VM.USER_TEMPLATE.TAG=["a",') == [vm_id]  # the array's JSON text ["a", "b"]
    assert found("VM.USER_TEMPLATE.DB.KIND=doc") == [vm_id]
    assert found("VM.USER_TEMPLATE.DB=doc") == [vm_id]  # the vector's JSON text
