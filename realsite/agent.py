"""The guest agent: what the appliances inside the VMs would publish, written through the API.

The real frontend's VMs run on dummy drivers: no guest boots, so nothing reports through OneGate.
This background process stands in for the guests. It polls the frontend's running VMs and, a
little after each boot (a new history record reaching RUNNING), writes into the VM's user
template with `one.vm.update` (append), as the guests' OneGate calls would:

- `READY=YES` for a VM whose CONTEXT asks for it (`REPORT_READY=YES`, what the guest's context
  scripts look at before reporting; every appliance of the catalogue asks: `tui/sim/catalog.py`);
- the automation role's VM (`naming.role_automation`): a fresh ed25519 public key under
  `naming.automation_key_attribute`, once (the embedded site's appliance: `tui/sim/appliances.py`);
- a VM running the document database (its role in `naming.document_db_roles`, or
  `naming.document_db_attribute`) reports READY only on an x86_64 host whose KVM_CPU_FEATURES list
  sse4.2 and avx and whose KVM_CPU_MODELS offer the VM's CPU model; otherwise `DB_ERROR` says why,
  as the embedded site's appliance does (`tui/sim/appliances.py` `document_db_problem`); a later
  boot on a good host removes the `DB_ERROR`;
- a VM booted from the route-manager appliance's image publishes an API token once
  (`ROUTE_MANAGER_TOKEN_ATTRIBUTE`, ONEAPP_ROUTEMANAGER_APITOKEN, as the appliance publishes it when
  it generated it: marketplace-community appliances/routemanager/appliance.sh line 148).

It never resets READY: on the platform only the guest writes it and the console clears it when it
moves a VM. Run by the harness: `python -m realsite.agent --state DIR` (logs to DIR/logs/agent.log).
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from realsite.conftext import quote
from realsite.rpc import OneRpc, RpcError, text
from tui.domain.naming import DEFAULT_NAMING, NamingProfile

#: seconds between RUNNING and the agent's reports (a guest's boot)
BOOT_DELAY = 3.0
POLL = 1.0
DB_ERROR_ATTRIBUTE = "DB_ERROR"
ROUTE_MANAGER_APPLIANCE = "Route Manager API"
ROUTE_MANAGER_TOKEN_ATTRIBUTE = "ONEAPP_ROUTEMANAGER_APITOKEN"
#: the platform's VM states (include/VirtualMachine.h): ACTIVE, and its LCM RUNNING
ACTIVE, RUNNING = 3, 3
#: libvirt's and /proc/cpuinfo's spellings of the two flags the database needs
_NEEDED = (("sse4.2", "sse4_2"), ("avx",))


@dataclass(frozen=True)
class HostFacts:
    name: str
    arch: str
    features: str
    models: str


@dataclass(frozen=True)
class VmFacts:
    id: int
    running: bool
    #: what identifies this boot: the last history record's sequence number and host (what the
    #: pool's short VM bodies hold too: 7.x `one.vmpool.info` leaves out CONTEXT and STIME)
    boot: tuple[str, str]
    report_ready: bool
    role: str
    document_db_flag: str
    cpu_model: str
    user_template: dict[str, str]
    image_ids: tuple[int, ...]
    host_id: int | None


@dataclass
class Decision:
    append: dict[str, str] = field(default_factory=dict)
    drop: set[str] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not self.append and not self.drop


def document_db_problem(host: HostFacts | None, cpu_model: str) -> str:
    """Why the document database cannot start on this host with this CPU model ("" when it can):
    the embedded site's rule (`tui/sim/appliances.py`), either spelling of the flags."""
    if host is None:
        return "the VM has no host"
    if host.arch != "x86_64":
        return f"host {host.name} is {host.arch or 'of an unknown architecture'}, the database needs x86_64"
    if not host.features.strip():
        return f"host {host.name} reports no KVM_CPU_FEATURES, sse4_2 and avx cannot be confirmed"
    features = {f.strip().lower() for f in host.features.split(",")}
    missing = [names[-1] for names in _NEEDED if not features & set(names)]
    if missing:
        return f"host {host.name} CPU lacks {' and '.join(missing)}, the database needs sse4_2 and avx"
    if cpu_model and cpu_model != "host-passthrough" and cpu_model not in host.models.split():
        return f"CPU model {cpu_model} is not offered by host {host.name} (KVM_CPU_MODELS)"
    return ""


def runs_document_db(vm: VmFacts, naming: NamingProfile) -> bool:
    return vm.role in naming.document_db_roles or vm.document_db_flag.strip().upper() in ("YES", "TRUE", "1")


def decide(vm: VmFacts, host: HostFacts | None, naming: NamingProfile, appliances: set[str],
           new_key: Callable[[str], str]) -> Decision:
    """What the guest of a VM that has just booted publishes (nothing for a VM not running)."""
    decision = Decision()
    if not vm.running:
        return decision
    published = vm.user_template
    if ROUTE_MANAGER_APPLIANCE in appliances and not published.get(ROUTE_MANAGER_TOKEN_ATTRIBUTE):
        decision.append[ROUTE_MANAGER_TOKEN_ATTRIBUTE] = secrets.token_urlsafe(24)
    if vm.role == naming.role_automation and not published.get(naming.automation_key_attribute):
        decision.append[naming.automation_key_attribute] = new_key(f"{vm.role}@one-{vm.id}")
    if runs_document_db(vm, naming):
        problem = document_db_problem(host, vm.cpu_model)
        if problem:
            message = f"document database cannot start: {problem}"
            if published.get(DB_ERROR_ATTRIBUTE) != message:
                decision.append[DB_ERROR_ATTRIBUTE] = message
            return decision
        if DB_ERROR_ATTRIBUTE in published:
            decision.drop.add(DB_ERROR_ATTRIBUTE)
    if vm.report_ready and published.get("READY", "").upper() != "YES":
        decision.append["READY"] = "YES"
    return decision


def new_public_key(comment: str) -> str:
    """An OpenSSH ed25519 public key line."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate().public_key()
    line = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return f"{line} {comment}"


def vm_facts(node: ET.Element) -> VmFacts:
    """A VM element of `one.vmpool.info` / `one.vm.info`."""
    user = {child.tag: child.text or "" for child in node.findall("USER_TEMPLATE/*") if len(child) == 0}
    history = node.findall("HISTORY_RECORDS/HISTORY")
    last = history[-1] if history else None
    host_id = int(text(last, "HID", "-1")) if last is not None else None
    role = user.get("ROLE_NAME") or text(node, "TEMPLATE/ROLE_NAME")
    images = tuple(int(d.text) for d in node.findall("TEMPLATE/DISK/IMAGE_ID") if d.text and d.text.isdigit())
    return VmFacts(
        id=int(text(node, "ID", "-1")),
        running=text(node, "STATE") == str(ACTIVE) and text(node, "LCM_STATE") == str(RUNNING),
        boot=(text(last, "SEQ"), text(last, "HID")) if last is not None else ("", ""),
        report_ready=text(node, "TEMPLATE/CONTEXT/REPORT_READY").strip().upper() == "YES",
        role=role,
        document_db_flag=user.get(DEFAULT_NAMING.document_db_attribute, "") or text(
            node, f"TEMPLATE/{DEFAULT_NAMING.document_db_attribute}"),
        cpu_model=text(node, "TEMPLATE/CPU_MODEL/MODEL"),
        user_template=user,
        image_ids=images,
        host_id=host_id if host_id is not None and host_id >= 0 else None,
    )



def render_user_template(node: ET.Element, drop: set[str]) -> str:
    """A VM's USER_TEMPLATE as template text, without the attributes in `drop`."""
    lines = []
    for child in node.findall("USER_TEMPLATE/*"):
        if child.tag in drop:
            continue
        if len(child):
            inner = ",".join(f"{sub.tag}={quote(sub.text or '')}" for sub in child)
            lines.append(f"{child.tag}=[{inner}]")
        else:
            lines.append(f"{child.tag}={quote(child.text or '')}")
    return "\n".join(lines) + "\n"


class Agent:
    def __init__(self, rpc: OneRpc, naming: NamingProfile = DEFAULT_NAMING, *, boot_delay: float = BOOT_DELAY,
                 log: Callable[[str], None] = print) -> None:
        self.rpc = rpc
        self.naming = naming
        self.boot_delay = boot_delay
        self.log = log
        #: VM id -> (boot, monotonic time first seen running in it, handled)
        self._boots: dict[int, tuple[tuple[str, str], float, bool]] = {}
        self._appliance_of_image: dict[int, str] = {}

    def _host(self, host_id: int | None) -> HostFacts | None:
        if host_id is None:
            return None
        node = self.rpc.xml("one.host.info", host_id)
        return HostFacts(text(node, "NAME"), text(node, "TEMPLATE/ARCH"), text(node, "TEMPLATE/KVM_CPU_FEATURES"),
                         text(node, "TEMPLATE/KVM_CPU_MODELS"))

    def _appliances(self, image_ids: tuple[int, ...]) -> set[str]:
        names = set()
        for image_id in image_ids:
            if image_id not in self._appliance_of_image:
                try:
                    node = self.rpc.xml("one.image.info", image_id, False)
                    self._appliance_of_image[image_id] = text(node, f"TEMPLATE/{self.naming.appliance_name_attribute}")
                except RpcError:
                    self._appliance_of_image[image_id] = ""
            names.add(self._appliance_of_image[image_id])
        return names - {""}

    def poll_once(self, now: float) -> int:
        """One pass over the running VMs; returns how many VMs it wrote to."""
        pool = self.rpc.xml("one.vmpool.info", -2, -1, -1, ACTIVE)
        written = 0
        seen = set()
        for node in pool.findall("VM"):
            vm = vm_facts(node)
            seen.add(vm.id)
            if not vm.running:
                self._boots.pop(vm.id, None)
                continue
            boot, first, handled = self._boots.get(vm.id, (vm.boot, now, False))
            if boot != vm.boot:
                boot, first, handled = vm.boot, now, False
            self._boots[vm.id] = (boot, first, handled)
            if handled or now - first < self.boot_delay:
                continue
            # the pool's answer may be seconds old: decide on the VM as it is now
            fresh = self.rpc.xml("one.vm.info", vm.id, False)
            vm = vm_facts(fresh)
            if vm.boot != boot or not vm.running:
                continue
            decision = decide(vm, self._host(vm.host_id), self.naming, self._appliances(vm.image_ids), new_public_key)
            if decision.drop:
                kept = render_user_template(fresh, decision.drop)
                self.rpc.call("one.vm.update", vm.id, kept, 0)
            if decision.append:
                body = "".join(f"{key}={quote(value)}\n" for key, value in decision.append.items())
                self.rpc.call("one.vm.update", vm.id, body, 1)
            if not decision.empty:
                written += 1
                shown = {k: (v if k == "READY" or k == DB_ERROR_ATTRIBUTE else "<published>")
                         for k, v in decision.append.items()}
                self.log(f"VM {vm.id}: published {shown}" + (f", removed {sorted(decision.drop)}" if decision.drop else ""))
            self._boots[vm.id] = (boot, first, True)
        for gone in set(self._boots) - seen:
            del self._boots[gone]
        return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m realsite.agent", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state", required=True, type=Path, help="the frontend's state directory")
    parser.add_argument("--boot-delay", type=float, default=BOOT_DELAY)
    args = parser.parse_args(argv)
    info = json.loads((args.state / "state.json").read_text())
    session = Path(info["one_auth"]).read_text().strip()
    agent = Agent(OneRpc(info["xmlrpc_url"], session, timeout=30), boot_delay=args.boot_delay,
                  log=lambda line: print(time.strftime("%H:%M:%S"), line, flush=True))
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(time.strftime("%H:%M:%S"), f"guest agent on {info['xmlrpc_url']}", flush=True)
    failures = 0
    while not stopping:
        try:
            agent.poll_once(time.monotonic())
            failures = 0
        except (OSError, RpcError, ET.ParseError) as exc:
            failures += 1
            if failures in (1, 10) or failures % 100 == 0:
                print(time.strftime("%H:%M:%S"), f"poll failed ({failures} in a row): {exc}", flush=True)
        time.sleep(POLL)
    print(time.strftime("%H:%M:%S"), "guest agent stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
