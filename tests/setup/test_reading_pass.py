"""A reading pass (`tui.procedures.reading_pass`): each pool read once for every check of one status
pass, read again by the next; changes, other tasks and the time outside the pass untouched."""

from __future__ import annotations

import asyncio
import collections
import functools
import types
from typing import Any

import pytest

from tests.setup.conftest import point_at, run
from tui.adapters.cloud import CloudClient
from tui.adapters.git_repo import GitRepo, RemoteBranches
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.reading_pass import READS, branches, synced
from tui.settings import Settings
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)


class _Cloud:
    """A client that counts what reaches it; `list_users` fails."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, tuple[Any, ...]]] = []
        self.gate = asyncio.Event()

    async def list_vnets(self, filter: int = -2) -> tuple[str, ...]:
        self.asked.append(("list_vnets", (filter,)))
        await self.gate.wait()
        return ("vnet",)

    async def list_users(self) -> tuple[str, ...]:
        self.asked.append(("list_users", ()))
        raise SiteError("Users unreadable", "the sim said no")

    async def image_info(self, image_id: int) -> str:  # polled by waits: never shared
        self.asked.append(("image_info", (image_id,)))
        return f"image {image_id}"

    async def vm_action(self, action: str, vm_id: int) -> int:
        self.asked.append(("vm_action", (action, vm_id)))
        return vm_id

    async def close(self) -> None:  # the pass stands in for the client: none of its names hides the client's
        self.asked.append(("close", ()))


def _site() -> tuple[SiteConnection, _Cloud]:
    site = SiteConnection(Settings.for_site("http://127.0.0.1:1/RPC2", "u:p", "http://127.0.0.1:2"))
    cloud = _Cloud()
    site._cloud = cloud  # type: ignore[assignment]
    return site, cloud


async def test_a_pass_asks_each_read_once_and_shares_its_answer_and_failure() -> None:
    site, cloud = _site()
    async with site.reading_pass():
        waiting = [asyncio.ensure_future(site.cloud.list_vnets()) for _ in range(3)]
        await asyncio.sleep(0)
        cloud.gate.set()
        assert [await w for w in waiting] == [("vnet",)] * 3
        assert await site.cloud.list_vnets() == ("vnet",)
        assert await site.cloud.list_vnets(3) == ("vnet",)  # other arguments: another read
        for _ in range(2):  # the failure is every caller's, asked once
            with pytest.raises(SiteError, match="Users unreadable"):
                await site.cloud.list_users()
        await site.cloud.image_info(4)
        await site.cloud.image_info(4)
        await site.cloud.vm_action("resume", 7)
        await site.cloud.vm_action("resume", 7)
        await site.cloud.close()
    assert cloud.asked == [("list_vnets", (-2,)), ("list_vnets", (3,)), ("list_users", ()),
                           ("image_info", (4,)), ("image_info", (4,)), ("vm_action", ("resume", 7)),
                           ("vm_action", ("resume", 7)), ("close", ())]
    cloud.asked.clear()
    await site.cloud.list_vnets()  # after the pass: read again
    async with site.reading_pass():  # the next pass: read again
        await site.cloud.list_vnets()
    assert cloud.asked == [("list_vnets", (-2,))] * 2


async def test_other_tasks_and_a_cancelled_caller_are_left_as_they_are() -> None:
    site, cloud = _site()
    outside = asyncio.Event()

    async def elsewhere() -> None:  # a task of the console started before the pass: not in it
        await outside.wait()
        assert site.cloud is cloud

    other = asyncio.ensure_future(elsewhere())
    async with site.reading_pass():
        first = asyncio.ensure_future(site.cloud.list_vnets())
        second = asyncio.ensure_future(site.cloud.list_vnets())
        await asyncio.sleep(0)
        first.cancel()  # its gather failed: the read goes on for the other
        outside.set()
        await other
        cloud.gate.set()
        assert await second == ("vnet",)
        assert first.cancelled()
    assert cloud.asked == [("list_vnets", (-2,))]


async def test_a_task_started_in_a_pass_reads_afresh_once_the_pass_closed() -> None:
    site, cloud = _site()
    cloud.gate.set()
    closed = asyncio.Event()

    async def lingering() -> tuple[Any, Any]:  # started inside the pass, reads after it closed
        during = await site.cloud.list_vnets()
        await closed.wait()
        return during, site.cloud

    async with site.reading_pass():
        await site.cloud.list_vnets()
        task = asyncio.ensure_future(lingering())
        await asyncio.sleep(0)
    closed.set()
    during, after = await task
    assert during == ("vnet",) and after is cloud  # the client itself, not the closed pass's answers
    assert await after.list_vnets() == ("vnet",)
    assert cloud.asked == [("list_vnets", (-2,)), ("list_vnets", (-2,))]


def test_a_status_pass_reads_each_pool_once(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch)
    asked: collections.Counter[tuple[str, tuple[Any, ...]]] = collections.Counter()
    pools = {"list_vnets", "list_images", "list_marketplaces", "list_marketapps", "list_users", "system_config",
             "list_templates", "list_documents", "acl_list", "list_hosts", "list_datastores", "template_info", "vm_info"}
    assert pools <= READS
    for name in pools:
        read = getattr(CloudClient, name)

        async def counted(self: CloudClient, *args: Any, _read: Any = read, _name: str = name, **kwargs: Any) -> Any:
            asked[(_name, args)] += 1
            return await _read(self, *args, **kwargs)

        monkeypatch.setattr(CloudClient, name, functools.wraps(read)(counted))
    for passes in (1, 2):
        code, data, _ = run(capsys, "setup", "status", "--json")
        assert code == 3 and data["steps"]
        # every pool the checks read (the catalog, the whole check, the inputs, the form, the
        # inventory among them), each once a pass, and again by the next
        assert {name for name, _ in asked} == pools
        assert set(asked.values()) == {passes}, [k for k, n in asked.items() if n != passes]


class _Repo:
    """A working clone that counts its fetches (`GitRepo.sync`)."""

    def __init__(self, workdir: str, url: str = "file:///sites.git") -> None:
        self.workdir = workdir
        self.remote = types.SimpleNamespace(url=url)
        self.fetched = 0
        self.listed = 0

    async def sync(self) -> None:
        self.fetched += 1
        await asyncio.sleep(0)

    async def remote_branches(self) -> RemoteBranches:
        self.listed += 1
        await asyncio.sleep(0)
        return RemoteBranches("main", {"main": "c0", "site-a": f"c{self.fetched}"})


async def test_a_pass_fetches_each_working_clone_once() -> None:
    site, _ = _site()
    sites, library, again = _Repo("/clones/sites"), _Repo("/clones/library"), _Repo("/clones/sites")
    await synced(sites)
    await synced(sites)
    assert sites.fetched == 2  # outside a pass each call fetches
    async with site.reading_pass():
        await asyncio.gather(synced(sites), synced(sites), synced(library))
        await synced(again)  # another object for the same clone and remote: the pass's fetch
    assert (sites.fetched, library.fetched, again.fetched) == (3, 1, 0)
    async with site.reading_pass():  # the next pass fetches again
        await synced(sites)
    assert sites.fetched == 4


async def test_a_pass_reads_a_clones_branches_once_after_its_fetch() -> None:
    site, _ = _site()
    sites, library = _Repo("/clones/sites"), _Repo("/clones/library")
    await branches(sites)
    await branches(sites)
    assert sites.listed == 2  # outside a pass each call reads the refs
    async with site.reading_pass():
        await branches(sites)  # before the pass's fetch: read as they are, not kept
        await synced(sites)
        seen = await asyncio.gather(branches(sites), branches(sites), branches(library))
        assert seen[0] is seen[1] and seen[0].heads["site-a"] == "c1"  # the refs of the pass's fetch
    assert (sites.listed, library.listed) == (4, 1)  # the library was not fetched in the pass: read each time
    async with site.reading_pass():  # the next pass fetches and reads again
        await synced(sites)
        assert (await branches(sites)).heads["site-a"] == "c2"
    assert sites.listed == 5


def test_a_status_pass_runs_each_git_read_once(sim_factory, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The sites repository as a pass reads it: its origin checked, fetched, its default branch
    asked, its branches listed, its write permission probed, each once, and again by the next pass."""
    server: SimServer = sim_factory(scenario="deployed")
    point_at(server, monkeypatch)
    ran: collections.Counter[str] = collections.Counter()
    git = GitRepo._run

    async def counted(self: GitRepo, *args: str, **kwargs: Any) -> Any:
        if "sites-" in self.workdir.name:
            ran[" ".join(args[:2]) if args[0] in ("remote", "push") else args[0]] += 1
        return await git(self, *args, **kwargs)

    monkeypatch.setattr(GitRepo, "_run", counted)
    reads = ("clone", "remote get-url", "fetch", "remote set-head", "for-each-ref", "push --dry-run")
    for passes, fetches in ((1, 0), (2, 1), (3, 2)):  # the first pass clones, the next ones fetch
        code, data, _ = run(capsys, "setup", "status", "--json")
        assert code == 3 and data["steps"]
        assert {name: ran[name] for name in reads} == {
            "clone": 1, "remote get-url": fetches, "fetch": fetches, "remote set-head": fetches,
            "for-each-ref": passes, "push --dry-run": passes}, ran
