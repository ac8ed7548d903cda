"""Two downloads of the same appliance at once: the second waits for the first, says so, then
reuses what the first created; nothing is created twice, neither exits with a silent success."""

from __future__ import annotations

import threading
from typing import Callable

from tests.faults.processes import POLL, Runner
from tui.sim.server import SimServer


def _named(server: SimServer, name: str) -> tuple[list[int], list[int], list[int]]:
    with server.site.lock:
        site = server.site
        return ([i.id for i in site.images.values() if i.name == name],
                [t.id for t in site.templates.values() if t.name == name],
                [d.id for d in site.documents.values() if d.name == name])


def test_the_second_of_two_identical_downloads_waits_for_the_first_and_reuses_its_objects(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner]) -> None:
    server = sim_factory()
    runner = sitetk(server)
    allocation = threading.Event()  # both plan before either has created anything: the first allocation is held
    with server.site.lock:
        server.site.faults.hold_methods["one.image.allocate"] = allocation
    argv = ("market", "download", f"{server.market_url}#service_dns", "--datastore", "1", "--name", "dns-race",
            "--yes", "--poll", POLL)
    try:
        first = runner.start(*argv)
        first.wait_for_line("creating the image")
        second = runner.start(*argv)
        waiting = second.wait_for_line("waiting for process")
    finally:
        allocation.set()
    assert f"process {first.process.pid} (" in waiting and "downloading the same appliance" in waiting
    assert first.finish() == 0, first.stderr
    assert second.finish() == 0, second.stderr
    images, templates, _ = _named(server, "dns-race")
    assert len(images) == 1 and len(templates) == 1  # nothing created twice
    assert "planned again: 2 object(s) it left are reused" in second.stderr
    assert f"waited for process {first.process.pid} (" in second.stdout
    assert f"reused image {images[0]}, VM template {templates[0]} (nothing created twice)" in second.stdout
    exports = [e for e in runner.audit_entries() if e["action"] == "marketapp.export" and e["outcome"] == "ok"]
    assert [e["details"]["created"]["images"] for e in exports] == [images, []]  # the second created nothing


def test_a_second_download_that_waits_too_long_fails_naming_the_first_and_changes_nothing(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner]) -> None:
    server = sim_factory()
    runner = sitetk(server)
    allocation = threading.Event()  # the first holds the lock until the second has given up
    with server.site.lock:
        server.site.faults.hold_methods["one.image.allocate"] = allocation
    argv = ("market", "download", f"{server.market_url}#service_dns", "--datastore", "1", "--name", "dns-slow",
            "--yes", "--poll", POLL)
    first = runner.start(*argv)
    first.wait_for_line("creating the image")
    try:
        code, second = runner.run_here(*argv, "--timeout", "0.2")
    finally:
        allocation.set()
    assert code == 1, second.stderr
    assert "Another download of DNS Server" in second.stderr and "is still running" in second.stderr
    assert f"process {first.process.pid} (" in second.stderr and "Nothing was changed" in second.stderr
    assert first.finish() == 0, first.stderr
    images, templates, _ = _named(server, "dns-slow")
    assert len(images) == 1 and len(templates) == 1
    exports = [e for e in runner.audit_entries() if e["action"] == "marketapp.export"]
    assert [e["outcome"] for e in exports] == ["failed", "ok"]  # the loser's entry: it created nothing
    assert exports[0]["details"]["created"] == {"images": [], "templates": [], "service_templates": []}
    assert "still running" in exports[0]["details"]["error"]
