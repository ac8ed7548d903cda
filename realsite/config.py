"""The daemons' configuration for a loopback-only frontend, written over the installed files.

Each function takes the stock text an install ships (`etc/oned.conf`, `etc/monitord.conf`,
`etc/sched.conf` of 6.10, `etc/oneflow-server.conf`) and returns it with the harness's values:
every listener on 127.0.0.1 on the ports the harness chose, sqlite, the dummy drivers, the rank
scheduler placing VMs within seconds, short monitoring periods, only the dummy VM and IM drivers
(the stock kvm, qemu and lxc ones go: each is one more Ruby process to start within oned's and
monitord's driver timeouts, which a loaded machine missed), a ONEGATE_ENDPOINT that is not
loopback (the console's setup refuses a loopback gate: `tui/procedures/setup/status.py`
`gate_step`) on which nothing needs to listen. What differs by version:

- 7.x: oned runs the scheduler as its `SCHED_MAD`; its `-o one_drs` optimiser needs Python PuLP,
  so it goes, and `DRS_INTERVAL = -1` turns DRS off (oned.conf of release-7.0.2).
- 6.10: the scheduler is the separate `mm_sched` daemon configured by `sched.conf`, and the
  system-datastore list of `DATASTORE_MAD` (`-s`) lacks `dummy` (oned.conf of release-6.10.5 615).
- 7.4: gRPC (`GRPC_PORT`, `GRPC_LISTEN_ADDRESS`) listens too (oned.conf of release-7.4.0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from realsite.conftext import ConfText, Entry, VectorMatch

LOOPBACK = "127.0.0.1"
#: where the console's VMs would reach OneGate: the embedded site's value (tui/sim/scenarios.py
#: ONEGATE_ENDPOINT), an address on its OAM network; no guest exists, so nothing connects to it
ONEGATE_ENDPOINT = "http://10.11.28.1:5030"
#: seconds between datastore and marketplace monitoring (stock: 300 and 600)
DATASTORE_INTERVAL = 15
MARKET_INTERVAL = 30
#: the dummy drivers' vectors, as the stock files show them commented out
DUMMY_VM_MAD = [("NAME", "dummy"), ("SUNSTONE_NAME", "Testing"), ("EXECUTABLE", "one_vmm_dummy"), ("TYPE", "xml")]
DUMMY_IM_MAD = [("NAME", "dummy"), ("SUNSTONE_NAME", "Dummy"), ("EXECUTABLE", "one_im_sh"),
                ("ARGUMENTS", "-r 3 -t 15 -w 90 dummy"), ("THREADS", "0")]
#: the monitoring client's probe periods in seconds (stock: 30, 600, 120, 5, 30, 180)
PROBES_PERIOD = {"BEACON_HOST": "15", "SYSTEM_HOST": "20", "MONITOR_HOST": "20", "STATE_VM": "5",
                 "MONITOR_VM": "20", "SYNC_STATE_VM": "60"}


class ConfigError(ValueError):
    """The installed file lacks something the harness must change (an install it does not know)."""


@dataclass(frozen=True)
class Ports:
    """Every TCP (and monitord's UDP) port one frontend listens on, all on 127.0.0.1."""

    xmlrpc: int
    oneflow: int
    hook_publisher: int
    hook_replier: int
    monitord: int
    grpc: int
    market: int

    def all(self) -> dict[str, int]:
        return {"xmlrpc": self.xmlrpc, "oneflow": self.oneflow, "hook_publisher": self.hook_publisher,
                "hook_replier": self.hook_replier, "monitord": self.monitord, "grpc": self.grpc,
                "market": self.market}

    @property
    def xmlrpc_url(self) -> str:
        return f"http://{LOOPBACK}:{self.xmlrpc}/RPC2"

    @property
    def oneflow_url(self) -> str:
        return f"http://{LOOPBACK}:{self.oneflow}"


def _named(name: str) -> VectorMatch:
    return lambda entry: entry.get("NAME").lower() == name


def _one(conf: ConfText, vector: str, changes: dict[str, str], what: str) -> None:
    if conf.update_vector(vector, changes) == 0:
        raise ConfigError(f"no {vector} vector to change ({what})")


def _driver_list(arguments: str, flag: str, add: str) -> str:
    """`arguments` with `add` in the comma list after `flag` (`-d a,b` -> `-d a,b,dummy`)."""
    match = re.search(rf"(^|\s){re.escape(flag)}\s+(\S+)", arguments)
    if match is None:
        raise ConfigError(f"no {flag} list in driver arguments {arguments!r}")
    items = match.group(2).split(",")
    if add in items:
        return arguments
    return arguments[:match.start(2)] + ",".join([*items, add]) + arguments[match.end(2):]


def without_option(arguments: str, flag: str) -> str:
    """`arguments` without `flag` and its value (`-t 15 -p rank -o one_drs` -> `-t 15 -p rank`)."""
    return re.sub(rf"\s*(?<!\S){re.escape(flag)}\s+\S+", "", arguments).strip()


def oned_conf(text: str, version: tuple[int, ...], ports: Ports, *, onegate_endpoint: str = ONEGATE_ENDPOINT,
              db: list[tuple[str, str]] | None = None) -> str:
    """The stock oned.conf with the harness's values (see the module docstring); `db` replaces
    the DB vector (None keeps the stock sqlite)."""
    conf = ConfText(text)
    conf.set_scalar("LISTEN_ADDRESS", LOOPBACK, quoted=True)
    conf.set_scalar("PORT", str(ports.xmlrpc))
    if conf.scalar("GRPC_PORT") is not None or version >= (7, 4):
        conf.set_scalar("GRPC_PORT", str(ports.grpc))
        conf.set_scalar("GRPC_LISTEN_ADDRESS", LOOPBACK, quoted=True)
    conf.set_scalar("MONITORING_INTERVAL_DATASTORE", str(DATASTORE_INTERVAL))
    conf.set_scalar("MONITORING_INTERVAL_MARKET", str(MARKET_INTERVAL))
    conf.set_scalar("ONEGATE_ENDPOINT", onegate_endpoint, quoted=True)
    if db is not None:
        conf.set_vector("DB", db)
    # only the dummy drivers run: each stock driver is one more Ruby process to start (oned and
    # monitord give their drivers about 10 s to answer INIT, which a loaded machine missed)
    conf.remove("VM_MAD", lambda entry: entry.get("NAME").lower() != "dummy")
    conf.set_vector("VM_MAD", DUMMY_VM_MAD, _named("dummy"))
    for vector, flags in (("TM_MAD", ("-d",)), ("DATASTORE_MAD", ("-d", "-s"))):
        found = conf.vectors(vector)
        if len(found) != 1:
            raise ConfigError(f"expected one {vector} vector, found {len(found)}")
        arguments = found[0].get("ARGUMENTS")
        for flag in flags:
            arguments = _driver_list(arguments, flag, "dummy")
        _one(conf, vector, {"ARGUMENTS": arguments}, "dummy drivers")
    _one(conf, "HM_MAD", {"ARGUMENTS": f"-p {ports.hook_publisher} -l {ports.hook_replier} -b {LOOPBACK}"},
         "hook manager ports")
    sched = conf.vectors("SCHED_MAD")
    if version >= (7, 0):
        if len(sched) != 1:
            raise ConfigError(f"a {'.'.join(map(str, version))} oned.conf needs one SCHED_MAD, found {len(sched)}")
        _one(conf, "SCHED_MAD", {"ARGUMENTS": without_option(sched[0].get("ARGUMENTS"), "-o")}, "rank scheduler")
        conf.set_scalar("DRS_INTERVAL", "-1")
        conf.set_scalar("SCHED_MAX_WND_TIME", "2")
        conf.set_scalar("SCHED_RETRY_TIME", "10")
    return conf.text


def monitord_conf(text: str, ports: Ports) -> str:
    """The stock monitord.conf: listening on loopback on the chosen port, the dummy IM driver,
    short probe periods."""
    conf = ConfText(text)
    _one(conf, "NETWORK", {"ADDRESS": LOOPBACK, "MONITOR_ADDRESS": LOOPBACK, "PORT": str(ports.monitord)},
         "monitoring address")
    _one(conf, "PROBES_PERIOD", PROBES_PERIOD, "probe periods")
    conf.remove("IM_MAD", lambda entry: entry.get("NAME").lower() != "dummy")
    conf.set_vector("IM_MAD", DUMMY_IM_MAD, _named("dummy"))
    return conf.text


def sched_conf(text: str, ports: Ports) -> str:
    """6.10's sched.conf: mm_sched asks this frontend's oned, every few seconds."""
    conf = ConfText(text)
    conf.set_scalar("ONE_XMLRPC", ports.xmlrpc_url, quoted=True)
    conf.set_scalar("SCHED_INTERVAL", "3")
    return conf.text


def _yaml_key(text: str, key: str, value: str) -> str:
    pattern = re.compile(rf"^{re.escape(key)}[ \t]*.*$", re.MULTILINE)
    found = pattern.findall(text)
    if len(found) != 1:
        raise ConfigError(f"expected one top-level {key} in oneflow-server.conf, found {len(found)}")
    return pattern.sub(lambda _: f"{key} {value}", text)


def oneflow_conf(text: str, ports: Ports) -> str:
    """oneflow-server.conf: this frontend's XML-RPC, its hook manager's ZeroMQ publisher, loopback."""
    text = _yaml_key(text, ":one_xmlrpc:", ports.xmlrpc_url)
    text = _yaml_key(text, ":subscriber_endpoint:", f"'tcp://{LOOPBACK}:{ports.hook_publisher}'")
    text = _yaml_key(text, ":host:", LOOPBACK)
    return _yaml_key(text, ":port:", str(ports.oneflow))


def mysql_db(*, port: int, user: str, password: str, database: str, server: str = LOOPBACK) -> list[tuple[str, str]]:
    """oned.conf's DB vector for a MySQL/MariaDB backend (`--db mysql`)."""
    return [("BACKEND", "mysql"), ("SERVER", server), ("PORT", str(port)), ("USER", user),
            ("PASSWD", password), ("DB_NAME", database), ("CONNECTIONS", "25"), ("COMPARE_BINARY", "no")]


def entry_attrs(entry: Entry) -> dict[str, str]:
    return dict(entry.vector or ())
