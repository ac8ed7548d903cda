"""Fill a fresh real frontend with the embedded site's infrastructure, through the XML-RPC API.

In order: the bootstrap marketplaces disabled (0 "OpenNebula Public" would make the `one` driver
fetch its internet fallback), the cloud user of the toolkit's automation, the three bootstrap
datastores on the dummy drivers, the hosts (dummy IM/VM drivers; their KVM facts come from the
fact files the patched probe prints) with the disabled and offline ones set so, the OAM and VXLAN
networks, a base image and VM template, and a `one` marketplace whose ENDPOINT is the embedded
site's marketplace server (with a trailing slash: 6.10.0-6.10.2's driver joins without one).
Then bounded waits until the site is usable: hosts monitored with their KVM facts, datastores
with room, the marketplace's apps imported.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from realsite.facts import (
    DATASTORE_FREE_MB,
    HOST_DISABLED,
    HOST_MONITORED,
    HOST_OFFLINE,
    STATUS_ARGUMENT,
    Scenario,
    template_text,
    vnet_template,
)
from realsite.rpc import OneRpc, RpcError, text

#: the bootstrap marketplaces (MarketPlacePool.cc): 0 "OpenNebula Public", 1 "Linux Containers"
BOOTSTRAP_MARKETS = (0, 1)
#: the toolkit needs about 39 GiB in the image datastore
NEEDED_FREE_MB = 40 * 1024
BASE_IMAGE = "Ubuntu 22.04"
BASE_TEMPLATE = "ubuntu-22.04"


class PopulateError(RuntimeError):
    pass


@dataclass(frozen=True)
class Populated:
    host_ids: dict[str, int]
    vnet_ids: dict[str, int]
    market_id: int
    user_id: int


def wait_for(what: str, check: Callable[[], str | None], timeout: float, *, interval: float = 1.0,
             hint: str = "") -> None:
    """Poll `check` (None: done; else what is still missing) until done or `timeout` seconds."""
    deadline = time.monotonic() + timeout
    missing: str | None = "not checked yet"
    while time.monotonic() < deadline:
        try:
            missing = check()
        except (OSError, RpcError) as exc:
            missing = f"{type(exc).__name__}: {exc}"
        if missing is None:
            return
        time.sleep(interval)
    raise PopulateError(f"timed out after {timeout:.0f} s waiting for {what}: {missing}" + (f"; {hint}" if hint else ""))


def disable_bootstrap_markets(rpc: OneRpc) -> list[int]:
    disabled = []
    for market_id in BOOTSTRAP_MARKETS:
        try:
            node = rpc.xml("one.market.info", market_id, False)
        except RpcError:
            continue
        if text(node, "STATE", "0") != "1":
            rpc.call("one.market.enable", market_id, False)
            disabled.append(market_id)
    return disabled


def _by_name(rpc: OneRpc, pool_method: str, element: str, *args: object) -> dict[str, int]:
    node = rpc.xml(pool_method, *args)
    return {text(e, "NAME"): int(text(e, "ID")) for e in node.findall(element)}


def create_user(rpc: OneRpc, name: str) -> int:
    """The automation's cloud user with the embedded site's known password (AUTOMATION_PASSWORD):
    the console logs in with the input file's app_automation_cloud_password to check it, and the
    tests' input files carry that one (set again on a user an earlier populate made)."""
    from tui.sim.scenarios import AUTOMATION_PASSWORD

    users = _by_name(rpc, "one.userpool.info", "USER")
    if name in users:
        rpc.call("one.user.passwd", users[name], AUTOMATION_PASSWORD)
        return users[name]
    user_id = int(rpc.call("one.user.allocate", name, AUTOMATION_PASSWORD, "core", [1]))
    rpc.call("one.user.update", user_id, 'DESCRIPTION="cloud account of the site toolkit\'s automation"\n', 1)
    return user_id


def dummy_datastores(rpc: OneRpc) -> None:
    """The bootstrap datastores 0 system, 1 default, 2 files on the dummy drivers."""
    pool = rpc.xml("one.datastorepool.info")
    for ds in pool.findall("DATASTORE"):
        ds_id = int(text(ds, "ID"))
        if ds_id == 0:
            rpc.call("one.datastore.update", ds_id, 'TM_MAD="dummy"\n', 1)
        elif ds_id in (1, 2):
            rpc.call("one.datastore.update", ds_id, 'TM_MAD="dummy"\nDS_MAD="dummy"\n', 1)


def create_hosts(rpc: OneRpc, scenario: Scenario) -> dict[str, int]:
    existing = _by_name(rpc, "one.hostpool.info", "HOST")
    ids = {}
    for host in scenario.hosts:
        host_id = existing.get(host.name)
        if host_id is None:
            host_id = int(rpc.call("one.host.allocate", host.name, "dummy", "dummy", -1))
        ids[host.name] = host_id
    return ids


def apply_host_states(rpc: OneRpc, scenario: Scenario) -> None:
    """Disable or set offline the hosts the scenario has so, once they were monitored: the
    embedded site's disabled and offline hosts still show the facts of their last monitoring,
    as a real host set offline after it ran does (one set offline at once would have none)."""
    existing = _by_name(rpc, "one.hostpool.info", "HOST")
    for host in scenario.hosts:
        if host.state in STATUS_ARGUMENT:
            rpc.call("one.host.status", existing[host.name], STATUS_ARGUMENT[host.state])


def create_vnets(rpc: OneRpc, scenario: Scenario) -> dict[str, int]:
    existing = _by_name(rpc, "one.vnpool.info", "VNET", -2, -1, -1)
    ids = {}
    for vnet in scenario.vnets:
        ids[vnet.name] = existing.get(vnet.name) or int(rpc.call("one.vn.allocate", vnet_template(vnet), -1))
    return ids


def create_base_content(rpc: OneRpc, image_path: Path, vnet_id: int) -> None:
    """The image and VM template any frontend has before the toolkit (the embedded site's
    `seed_base_content`); the image's PATH is a local file the dummy datastore never reads."""
    images = _by_name(rpc, "one.imagepool.info", "IMAGE", -2, -1, -1)
    image_id = images.get(BASE_IMAGE)
    if image_id is None:
        image_path.write_bytes(b"QFI\xfb\x00\x00\x00\x03")
        image_id = int(rpc.call("one.image.allocate", template_text([
            ("NAME", BASE_IMAGE), ("PATH", str(image_path)), ("TYPE", "OS"), ("DEV_PREFIX", "vd"),
            ("DRIVER", "qcow2")]), 1, False))
        rpc.call("one.image.chmod", image_id, 1, 1, 0, 1, 0, 0, 1, 0, 0)
    templates = _by_name(rpc, "one.templatepool.info", "VMTEMPLATE", -2, -1, -1)
    if BASE_TEMPLATE not in templates:
        body = (f'NAME="{BASE_TEMPLATE}"\nCPU="1"\nVCPU="2"\nMEMORY="2048"\n'
                f'CONTEXT=[NETWORK="YES",SSH_PUBLIC_KEY="$USER[SSH_PUBLIC_KEY]"]\n'
                f'DISK=[IMAGE_ID="{image_id}"]\nGRAPHICS=[LISTEN="0.0.0.0",TYPE="VNC"]\n'
                f'NIC=[NETWORK_ID="{vnet_id}"]\nOS=[ARCH="x86_64"]\n')
        template_id = int(rpc.call("one.template.allocate", body))
        rpc.call("one.template.chmod", template_id, 1, 1, 0, 1, 0, 0, 1, 0, 0)


def create_marketplace(rpc: OneRpc, scenario: Scenario, endpoint: str) -> int:
    if not endpoint.endswith("/"):
        endpoint += "/"
    markets = _by_name(rpc, "one.marketpool.info", "MARKETPLACE")
    if scenario.market_name in markets:
        return markets[scenario.market_name]
    return int(rpc.call("one.market.allocate", template_text([
        ("NAME", scenario.market_name), ("MARKET_MAD", "one"), ("ENDPOINT", endpoint),
        ("DESCRIPTION", scenario.market_description)])))


def populate_infrastructure(rpc: OneRpc, scenario: Scenario) -> Populated:
    """The user, datastores, hosts and networks (the marketplace comes once the datastores are
    monitored: `populate_content`)."""
    disable_bootstrap_markets(rpc)
    user_id = create_user(rpc, scenario.automation_user)
    dummy_datastores(rpc)
    host_ids = create_hosts(rpc, scenario)
    vnet_ids = create_vnets(rpc, scenario)
    return Populated(host_ids, vnet_ids, -1, user_id)


def populate_content(rpc: OneRpc, scenario: Scenario, made: Populated, market_endpoint: str,
                     work_dir: Path) -> Populated:
    """The base image and template (an image needs a monitored datastore: "Not enough space in
    datastore" before) and the marketplace."""
    create_base_content(rpc, work_dir / "base-image.qcow2", next(iter(made.vnet_ids.values())))
    market_id = create_marketplace(rpc, scenario, market_endpoint)
    return Populated(made.host_ids, made.vnet_ids, market_id, made.user_id)


# -- readiness -----------------------------------------------------------------------------------
def hosts_missing(rpc: OneRpc, scenario: Scenario, *, states: bool = True) -> str | None:
    """None once every host is in its wanted state (with `states`; else every host monitored)
    and the monitored ones publish their KVM facts."""
    pool = {text(h, "NAME"): h for h in rpc.xml("one.hostpool.info").findall("HOST")}
    missing = []
    for spec in scenario.hosts:
        node = pool.get(spec.name)
        if node is None:
            missing.append(f"{spec.name} absent")
            continue
        state = int(text(node, "STATE", "-1"))
        if states and spec.state in (HOST_DISABLED, HOST_OFFLINE):
            if state != spec.state:
                missing.append(f"{spec.name} state {state}, wanted {spec.state}")
            continue
        if state != HOST_MONITORED:
            missing.append(f"{spec.name} state {state}")
        elif text(node, "TEMPLATE/HYPERVISOR") != "kvm":
            missing.append(f"{spec.name} reports HYPERVISOR={text(node, 'TEMPLATE/HYPERVISOR')!r}")
    return "; ".join(missing) or None


def datastores_missing(rpc: OneRpc) -> str | None:
    missing = []
    for ds in rpc.xml("one.datastorepool.info").findall("DATASTORE"):
        if text(ds, "ID") == "1" and int(text(ds, "FREE_MB", "0")) < NEEDED_FREE_MB:
            missing.append(f"datastore 1 has {text(ds, 'FREE_MB')} MB free")
        if text(ds, "TEMPLATE/TM_MAD") != "dummy":
            missing.append(f"datastore {text(ds, 'ID')} TM_MAD {text(ds, 'TEMPLATE/TM_MAD')}")
    if DATASTORE_FREE_MB < NEEDED_FREE_MB:
        missing.append("the dummy monitor's figures are too small")
    return "; ".join(missing) or None


def market_apps(rpc: OneRpc, market_id: int) -> list[tuple[str, str]]:
    """(name, state) of the marketplace's apps."""
    node = rpc.xml("one.marketapppool.info", -2, -1, -1)
    return [(text(a, "NAME"), text(a, "STATE")) for a in node.findall("MARKETPLACEAPP")
            if text(a, "MARKETPLACE_ID") == str(market_id)]


def served_records(market_url: str, one_version: str) -> int:
    """How many records the marketplace serves the `one` driver of this version (it sends
    `User-Agent: OpenNebula <version>`: `market/one/monitor` at release-7.0.2, 68-73)."""
    request = urllib.request.Request(market_url.rstrip("/") + "/appliance",
                                     headers={"User-Agent": f"OpenNebula {one_version}", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        records = json.loads(answer.read()).get("appliances", [])
    return len(records)


def market_missing(rpc: OneRpc, market_id: int, expected: int) -> str | None:
    """None once the marketplace holds `expected` apps, all READY (MarketPlaceApp state 1)."""
    apps = market_apps(rpc, market_id)
    ready = [name for name, state in apps if state == "1"]
    if len(ready) < expected:
        return f"{len(ready)} of {expected} apps imported and READY"
    return None
