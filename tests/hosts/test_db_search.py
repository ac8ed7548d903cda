"""Finding the document-database VMs (issue 19): the whole VM pool read in pages and judged in the
console, so `sitetk hosts list|check|move` give the same verdicts and exit codes whether the site's
oned runs on sqlite (the platform's default: it refuses the pool's query argument) or MySQL (it
matches the query as a substring of a JSON path: `ROLE_NAME=manager` matches nothing there)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.hosts.conftest import Connect
from tui.__main__ import main
from tui.cli.common import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK
from tui.procedures.hosts.cpu_inventory import load_inventory
from tui.sim.server import SimServer

METHOD = "one.vmpool.infoextended"
BACKENDS = ("sqlite", "mysql")


def _use(server: SimServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The environment a frontend user would have: ONE_AUTH and ONE_XMLRPC name the site."""
    monkeypatch.setenv("ONE_AUTH", str(server.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
    monkeypatch.setenv("ONE_XMLRPC_TIMEOUT", "10")
    monkeypatch.setenv("SITETK_AUDIT_LOG", str(tmp_path / "audit.log"))


def _check(capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["hosts", "check", "--json"])
    return code, json.loads(capsys.readouterr().out)


def _page_size(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    monkeypatch.setattr("tui.adapters.cloud.VM_PAGE_SIZE", size)


def _listing(server: SimServer) -> list[int]:
    """The VM ids as the site lists them (not DONE, in its API_LIST_ORDER)."""
    with server.site.lock:
        ids = [vm.id for vm in server.site.vms.values() if vm.state != 6]
        descending = server.site.system_config.get("API_LIST_ORDER", "DESC").upper() == "DESC"
    return sorted(ids, reverse=descending)


def test_same_verdicts_and_exit_codes_on_sqlite_and_mysql(sim_factory: Callable[..., SimServer],
                                                          monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The deployed scenario's manager VM sits on the AVX-less host: `hosts check` exits 3 on both
    backends with the same rows (on MySQL the old `ROLE_NAME=manager` query found nothing and the
    check exited 0)."""
    seen: dict[str, tuple[int, list[Any], list[int]]] = {}
    for backend in BACKENDS:
        server = sim_factory(scenario="deployed", db_backend=backend)
        _use(server, monkeypatch, tmp_path)
        code, data = _check(capsys)
        rows = [(vm["id"], vm["name"], vm["identified_by"], vm["verdict"]) for vm in data["document_db_vms"]]
        seen[backend] = (code, rows, data["at_risk"])
        assert data["vms_searched"] == len(_listing(server))
        assert main(["hosts", "list"]) == EXIT_OK
        assert "manager_0_(service_1)" in capsys.readouterr().out
    assert seen["sqlite"] == seen["mysql"]
    code, rows, at_risk = seen["sqlite"]
    assert code == EXIT_FINDINGS and len(at_risk) == 1
    assert rows[0][1] == "manager_0_(service_1)" and rows[0][2] == "role manager"


@pytest.mark.parametrize("backend", BACKENDS)
def test_check_exits_0_only_once_every_database_vm_is_fine(backend: str, sim_factory: Callable[..., SimServer],
                                                           monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    server = sim_factory(scenario="deployed", db_backend=backend)
    _use(server, monkeypatch, tmp_path)
    assert main(["hosts", "check"]) == EXIT_FINDINGS
    assert "At risk" in capsys.readouterr().out
    assert main(["hosts", "move", "--all-flagged", "--yes", "--timeout", "60"]) == EXIT_OK
    capsys.readouterr()
    code, data = _check(capsys)
    assert (code, data["at_risk"], len(data["document_db_vms"])) == (EXIT_OK, [], 1)
    assert data["document_db_vms"][0]["verdict"] == "fine"


def test_a_database_vm_beyond_the_first_page_is_found(sim_factory: Callable[..., SimServer],
                                                      monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """40 extra VMs listed newest first (the site's API_LIST_ORDER is DESC): the manager VM, made
    before them, is pages away from the first page of 6; a VM flagged with the attribute sits at
    the first new place of the second page."""
    _page_size(monkeypatch, 6)
    server = sim_factory(scenario="deployed", vms=40)
    listing = _listing(server)
    flagged = listing[6]  # the first VM of the second page (an id range below the first page)
    with server.site.lock:
        server.site.vms[flagged].user_template.append(("DOCUMENT_DB", "YES"))
        server.site.vms[flagged].touch()
    _use(server, monkeypatch, tmp_path)
    code, data = _check(capsys)
    found = {vm["name"]: vm for vm in data["document_db_vms"]}
    manager = next(vm for vm in data["document_db_vms"] if vm["name"] == "manager_0_(service_1)")
    assert listing.index(manager["id"]) >= 12  # not in the first two pages
    assert flagged in {vm["id"] for vm in found.values()}
    assert code == EXIT_FINDINGS and manager["id"] in data["at_risk"]
    assert data["vms_searched"] == len(listing)


def test_a_vm_leaving_the_listing_between_two_pages_hides_no_database_vm(
        sim_factory: Callable[..., SimServer], connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listed oldest first in pages of 5: after the first page, one of its VMs reaches DONE, which
    moves every later VM one place back in the listing. The database VM that was sixth is still
    found: the pages after the first are id ranges (tui.domain.vm_scan), not offsets."""
    _page_size(monkeypatch, 5)
    server = sim_factory(scenario="deployed", vms=20)
    with server.site.lock:
        server.site.system_config["API_LIST_ORDER"] = "ASC"
    listing = _listing(server)
    leaving, database = listing[1], listing[5]
    with server.site.lock:
        server.site.vms[database].user_template.append(("DOCUMENT_DB", "YES"))
        server.site.vms[database].touch()
    site = connect(server)
    cloud = site.cloud
    original = cloud._stream_pool
    pages: list[tuple[Any, ...]] = []

    def stream_pool(method: str, *args: Any) -> Any:
        answer = original(method, *args)
        if method == METHOD:
            pages.append(args[3:])
            if len(pages) == 1:
                with server.site.lock:
                    server.site.vms[leaving].state = 6
                    server.site.vms[leaving].touch()
        return answer

    monkeypatch.setattr(cloud, "_stream_pool", stream_pool)

    async def run() -> Any:
        return await load_inventory(site, record_vm_ids=())

    inventory = asyncio.run(run())
    assert database in {row.id for row in inventory.db_vms}
    assert pages[0][1:3] == (0, -5) and pages[1][1:3] == (listing[4] + 1, listing[4] + 5)  # then an id range
    assert all(len(p) == 4 for p in pages)  # filter, start, end, state: never a query argument
    assert inventory.vms_searched == len(listing)  # the VM that left was read before it left


def test_a_page_that_cannot_be_read_is_an_error_not_none_found(sim_factory: Callable[..., SimServer],
                                                               monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The first page is read, the second refused: `hosts check`, `list` and `move --all-flagged`
    fail (exit 1) with the platform's answer; none says "No document-database VM"."""
    _page_size(monkeypatch, 6)
    server = sim_factory(scenario="deployed", vms=20)
    _use(server, monkeypatch, tmp_path)
    for command in (["hosts", "check"], ["hosts", "list"], ["hosts", "move", "--all-flagged", "--yes"]):
        with server.site.lock:
            server.site.faults.fail_methods[METHOD] = 100
            server.site.faults.fail_methods_after[METHOD] = 1
        assert main(command) == EXIT_FAILED, command
        out, err = capsys.readouterr()
        assert "No document-database VM" not in out + err
        assert "refused by an injected fault" in err, err
    with server.site.lock:
        server.site.faults.fail_methods[METHOD] = 100
        server.site.faults.fail_methods_after[METHOD] = 2
    code, data = _check(capsys)
    assert code == EXIT_FAILED and data["ok"] is False and "document_db_vms" not in data


def test_the_site_record_and_the_name_find_vms_without_role_name(sim_factory: Callable[..., SimServer],
                                                                 connect: Connect) -> None:
    """A VM named `manager_<n>_(service_<id>)` without ROLE_NAME, and a VM the site record lists,
    are database VMs too (tui.procedures.hosts.cpu_inventory.document_db_reason); a VM whose ROLE_NAME only
    contains the role (`manager-backup`) is not."""
    server = sim_factory(vms=6)
    listing = _listing(server)
    named, recorded, backup = listing[0], listing[2], listing[4]
    with server.site.lock:
        server.site.vms[named].name = "manager_3_(service_7)"
        server.site.vms[backup].user_template.append(("ROLE_NAME", "manager-backup"))
        for vm_id in (named, backup):
            server.site.vms[vm_id].touch()
    site = connect(server)

    async def run() -> Any:
        return await load_inventory(site, record_vm_ids=(recorded,))

    inventory = asyncio.run(run())
    reasons = {row.id: row.identified_by for row in inventory.db_vms}
    assert reasons == {named: "role manager", recorded: "site record"}
