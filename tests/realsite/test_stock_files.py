"""The harness's configuration and script changes apply to the stock files of every release tag
it is for (6.10.x, 7.0.x and 7.4.x), read from a git mirror of the platform's repository (never copied
here): `SITETK_ONE_MIRROR`, by default the team's /work/.mirror/OpenNebula+one/repo. Skipped where
no mirror exists (CI); the hand-written stand-ins of tests/realsite/stock.py cover the logic there."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from realsite import config, patches
from realsite.ports import DEAD_URL
from tests.realsite.test_config import PORTS

MIRROR = Path(os.environ.get("SITETK_ONE_MIRROR", "/work/.mirror/OpenNebula+one/repo"))
pytestmark = pytest.mark.skipif(not (MIRROR / "HEAD").exists() and not (MIRROR / ".git").exists(),
                                reason=f"no platform mirror at {MIRROR}")


def _tags() -> list[str]:
    if not MIRROR.exists():
        return []
    out = subprocess.run(["git", "-C", str(MIRROR), "tag", "-l", "release-6.10.*", "release-7.0.*", "release-7.4.*"],
                         capture_output=True, text=True)
    return sorted(t for t in out.stdout.split() if t.count(".") >= 2)


def _show(tag: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(MIRROR), "show", f"{tag}:{path}"], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("tag", _tags() or ["no-mirror"])
def test_every_stock_file_takes_the_harness_changes(tag: str) -> None:
    version = tuple(int(p) for p in tag.split("-")[1].split(".")[:3])
    config.oned_conf(_show(tag, "share/etc/oned.conf"), version, PORTS)
    config.monitord_conf(_show(tag, "src/monitor/etc/monitord.conf"), PORTS)
    config.oneflow_conf(_show(tag, "src/flow/etc/oneflow-server.conf"), PORTS)
    if version < (7, 0):
        config.sched_conf(_show(tag, "src/scheduler/etc/sched.conf"), PORTS)
    for kind in ("one", "linuxcontainers"):
        patched = patches.market_fallback(_show(tag, f"src/market_mad/remotes/{kind}/monitor"), DEAD_URL, kind)
        assert patches.public_urls(patched) == []
    patches.shepherd_match(_show(tag, "src/im_mad/remotes/common.d/monitord-client-shepherd_local.sh"), "/x")
    patches.client_db_path(_show(tag, "src/im_mad/remotes/common.d/monitord-client.rb"), "/x")
    patches.system_probe(_show(tag, "src/im_mad/remotes/dummy-probes.d/host/system/system.rb"), "/x")
    patches.datastore_monitor(_show(tag, "src/datastore_mad/remotes/dummy/monitor"), total_mb=10, free_mb=5)
