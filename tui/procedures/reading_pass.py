"""One pass of reading the site: each pool read once, its answer shared by every check of the pass.

A setup status pass decides two dozen steps from one reading of the site, and the procedures it
reads with (the marketplaces' catalog, the whole check of core.yaml, the input checks, the toolkit
form, the host inventory) each read what they need themselves: one pass read the marketplaces,
the apps, the users, the images and the system configuration twice, the virtual networks three
times, each toolkit VM template twice. `async with site.reading_pass():` opens a pass: inside it
(the task that opened it and the tasks it starts), `site.cloud` answers each read of `READS`
(the method and its arguments) once, the first caller's read shared by the others, a failure
included (each check that needs it says it could not be read); every other call (a change, a
read outside `READS`) goes to the client as it is. Outside the pass, and in the console's other
tasks meanwhile, nothing is shared: a pass holds what one moment of the site showed, and the next
pass (after a step changed the site, or after another operator may have) reads it all again.

The repositories too: inside a pass, `synced(repo)` fetches a working clone once for every reader
of the pass (the sites repository's facts and the input file's branch check each fetched it:
three git commands, two of them reaching the remote, a dozen times in one setup run), and
`branches(repo)` reads its branches once after that fetch (the facts and the input file's branch
check each ran the same `for-each-ref`: once more per pass).

A pass changes nothing: it opens around reads only (the status pass, the planning of the
components' downloads), never around a step's run, whose own reads must see what it changes.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable, Hashable

if TYPE_CHECKING:  # pragma: no cover
    from tui.adapters.cloud import CloudClient
    from tui.adapters.git_repo import GitRepo, RemoteBranches

#: the cloud's reads a pass shares: those its checks ask more than once, each returning a value
#: nobody changes (a tuple of frozen models, a frozen model); the reads the waits poll (an image's,
#: a host's) are left out, so that a wait started inside a pass by mistake still sees the site move
READS = frozenset({
    "system_config", "list_marketplaces", "list_marketapps", "marketapp_info", "list_datastores", "list_vnets",
    "list_vms", "list_vms_detail", "vm_info", "list_users", "list_images", "list_templates", "template_info",
    "list_documents", "document_info", "acl_list", "list_hosts",
})


class ReadingPass:
    """The reads of one pass of one connection's cloud client (module docstring); `_site` is the
    connection (`SiteConnection`, which imports this module). It stands in for the client, so its
    own names start with an underscore: none hides one of the client's (`close` among them)."""

    def __init__(self, site: object, cloud: "CloudClient") -> None:
        self._site = site
        self._cloud = cloud
        self._reads: dict[Hashable, asyncio.Task[Any]] = {}
        self._syncs: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._branches: dict[tuple[str, str], asyncio.Task[RemoteBranches]] = {}
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._cloud, name)
        if name not in READS:
            return method
        return self._shared(name, method)

    def _shared(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        async def read(*args: Any, **kwargs: Any) -> Any:
            key = (name, args, tuple(sorted(kwargs.items())))
            try:
                task = self._reads.get(key)
            except TypeError:  # an argument that cannot be a key: read as asked
                return await method(*args, **kwargs)
            if task is None:
                task = self._reads[key] = asyncio.ensure_future(method(*args, **kwargs))
                task.add_done_callback(_retrieved)
            # shielded: a caller cancelled (its gather failed) leaves the read to the others
            return await asyncio.shield(task)

        return read

    async def _stop(self) -> None:
        """Stop the reads nobody waits for any more (a pass left by a failure) and wait for them."""
        left = [task for task in (*self._reads.values(), *self._syncs.values(), *self._branches.values()) if not task.done()]
        for task in left:
            task.cancel()
        if left:
            await asyncio.wait(left)


def _retrieved(task: "asyncio.Task[Any]") -> None:
    """A shared read's failure is each caller's; taken here too, so that a read whose callers were
    all cancelled does not end as 'Task exception was never retrieved'."""
    if not task.cancelled():
        task.exception()


_CURRENT: ContextVar[ReadingPass | None] = ContextVar("sitetk_reading_pass", default=None)


async def synced(repo: "GitRepo") -> None:
    """`repo.sync()` (clone or fetch), once per working clone and remote in the pass this task
    reads in (the first caller's fetch shared by the others, a failure included); outside a pass,
    every call fetches."""
    reading = _CURRENT.get()
    if reading is None or reading._closed:
        await repo.sync()
        return
    key = (str(repo.workdir), repo.remote.url)
    task = reading._syncs.get(key)
    if task is None:
        task = reading._syncs[key] = asyncio.ensure_future(repo.sync())
        task.add_done_callback(_retrieved)
    # shielded: a caller cancelled leaves the fetch to the others (`_stop` ends it with the pass)
    await asyncio.shield(task)


async def branches(repo: "GitRepo") -> "RemoteBranches":
    """`repo.remote_branches()` (after `synced(repo)`), read once per working clone in the pass
    this task reads in, the first caller's answer shared by the others. Shared only once the
    pass's fetch of that clone has succeeded: a pass changes no ref, so the answer cannot change
    after it; before it (or outside a pass) every call reads the refs as they are."""
    reading = _CURRENT.get()
    key = (str(repo.workdir), repo.remote.url)
    fetched = reading._syncs.get(key) if reading is not None and not reading._closed else None
    if reading is None or fetched is None or not fetched.done() or fetched.cancelled() or fetched.exception() is not None:
        return await repo.remote_branches()
    task = reading._branches.get(key)
    if task is None:
        task = reading._branches[key] = asyncio.ensure_future(repo.remote_branches())
        task.add_done_callback(_retrieved)
    return await asyncio.shield(task)


def current(site: object) -> ReadingPass | None:
    """The pass `site` is read in by this task, None outside one. A task started inside a pass keeps
    the pass in its context after the pass has closed: a closed pass is no pass, so such a task
    reads the site as it is now, not the answers of a moment gone."""
    reading = _CURRENT.get()
    return reading if reading is not None and reading._site is site and not reading._closed else None


@asynccontextmanager
async def reading_pass(site: object, cloud: "CloudClient") -> AsyncIterator[ReadingPass]:
    """Open a pass of `site` (its client `cloud`) for this task and the tasks it starts (a pass
    already open goes on)."""
    opened = current(site)
    if opened is not None:
        yield opened
        return
    reading = ReadingPass(site, cloud)
    token = _CURRENT.set(reading)
    try:
        yield reading
    finally:
        reading._closed = True
        _CURRENT.reset(token)
        await reading._stop()
