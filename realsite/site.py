"""Start, stop and report on one real frontend, kept in a state directory.

`start(prefix, state)` lays the frontend out over the installed prefix (`realsite.layout`), writes
its configuration (`realsite.config`), patches its driver scripts (`realsite.patches`), then starts,
each in a session of its own (`realsite.processes`): the embedded site's marketplace server
(`sitetk sim`, from this repository), oned (and 6.10's mm_sched), the real OneFlow server, and,
once the site is populated (`realsite.populate`), the guest agent (`realsite.agent`). Every wait is
bounded and a failure names the log to read. It ends by writing, in the state directory:

- `env`: `ONE_XMLRPC`, `ONE_AUTH` (a 0600 file), `ONEFLOW_URL`, `SITETK_CONFIG`,
  `SITETK_REAL_MARKET_URL`, `SITETK_REAL_ONE_VERSION` (`. <state>/env && sitetk hosts check`);
- `cli.env`: what the platform's own Ruby CLI needs (`ONE_LOCATION`, `RUBYLIB`, `PATH`);
- `state.json`: ports, URLs, version, timings; `pids.json`: the daemons.

A stopped frontend starts again from its state directory with its data and ports; `--fresh`
throws the state away first. `stop` ends every daemon and what it started; `status` says what runs.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from realsite import config, mysql, patches, populate
from realsite.facts import DATASTORE_FREE_MB, DATASTORE_TOTAL_MB, Scenario, scenario, write_fact_files
from realsite.layout import Install, LayoutError, build_location, clear_stale_lock, open_install
from realsite.ports import DEAD_URL, busy_ports, choose_ports, free_port
from realsite.processes import (
    Daemon,
    alive,
    end_processes,
    load,
    processes_under,
    save,
    session_members,
    spawn,
    stop_all,
)
from realsite.rpc import OneRpc, RpcError, text

ROOT = Path(__file__).resolve().parents[1]
STATE_FILE = "state.json"
#: the embedded site's versions (tui/sim/platform.py EMULATED_VERSIONS) by platform series
SIM_VERSION = {"6.10": "6.10.0", "7.0": "7.0.0", "7.4": "7.4.0"}
#: bounded waits, in seconds
ONED_TIMEOUT = 120.0
FLOW_TIMEOUT = 120.0
SIM_TIMEOUT = 180.0
HOSTS_TIMEOUT = 240.0
MARKET_TIMEOUT = 240.0

Say = Callable[[str], None]


class SiteError(RuntimeError):
    """The frontend could not be started (the message names the log to read)."""


@dataclass
class Timings:
    marks: dict[str, float] = field(default_factory=dict)
    _start: float = field(default_factory=time.monotonic)

    def mark(self, name: str) -> None:
        self.marks[name] = round(time.monotonic() - self._start, 1)


def _write_private(path: Path, content: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(content)
    os.chmod(path, 0o600)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        content = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"({path} unreadable)"
    return "\n".join("    " + line for line in content[-lines:])


def read_state(state: Path) -> dict[str, Any]:
    path = state / STATE_FILE
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def write_state(state: Path, data: dict[str, Any]) -> None:
    tmp = state / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(state / STATE_FILE)


# -- environment -----------------------------------------------------------------------------------
def daemon_env(state: Path, location: Path, xmlrpc_url: str) -> dict[str, str]:
    """The environment of the frontend's daemons: its own ONE_LOCATION, credentials and Ruby
    library folder, no proxy
    (the market driver honours http_proxy), C locale, a HOME of its own."""
    home = state / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": f"{location / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ONE_LOCATION": str(location),
        "ONE_AUTH": str(state / "one_auth"),
        # the dummy VM probe and other Ruby clients ask oned through OCA's defaults
        "ONE_XMLRPC": xmlrpc_url,
        # a rubygems=no install's drivers `require 'load_opennebula_paths'` before adding their
        # library folder to the load path (lib/mads/one_hm.rb at release-7.0.2)
        "RUBYLIB": str(location / "lib" / "ruby"),
        "no_proxy": "*",
        "NO_PROXY": "*",
    }


def ruby_env(base: dict[str, str], state: Path, location: Path) -> dict[str, str]:
    """OneFlow's and the Ruby CLI's: the install's Ruby libraries on the load path, treetop
    activated as a gem first (OneFlow's models/role.rb reads `Gem.loaded_specs['treetop']`, while
    Debian puts treetop on the plain load path)."""
    activate = state / "ruby" / "activate_treetop.rb"
    activate.parent.mkdir(exist_ok=True)
    activate.write_text("# sitetk realsite: OneFlow reads Gem.loaded_specs['treetop']\ngem 'treetop'\n")
    lib = location / "lib"
    return {**base, "RUBYLIB": f"{lib / 'ruby'}:{lib / 'ruby' / 'cloud'}:{lib / 'oneflow' / 'lib'}",
            "RUBYOPT": f"-r{activate}"}


# -- configuration -------------------------------------------------------------------------------
def configure(install: Install, location: Path, ports: config.Ports, facts_dir: Path,
              db: list[tuple[str, str]] | None = None) -> list[str]:
    """Write the configuration and patch the driver scripts of the frontend at `location`;
    returns what was changed (for the log)."""
    etc, remotes = location / "etc", location / "var" / "remotes"
    version = install.version_tuple
    changed = []

    def rewrite(path: Path, edit: Callable[[str], str]) -> None:
        path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
        changed.append(str(path.relative_to(location)))

    rewrite(etc / "oned.conf", lambda t: config.oned_conf(t, version, ports, db=db))
    if db is not None:  # it holds the database password
        os.chmod(etc / "oned.conf", 0o600)
    rewrite(etc / "monitord.conf", lambda t: config.monitord_conf(t, ports))
    rewrite(etc / "oneflow-server.conf", lambda t: config.oneflow_conf(t, ports))
    if install.has_mm_sched:
        rewrite(etc / "sched.conf", lambda t: config.sched_conf(t, ports))
    # nothing leaves loopback: the market drivers' internet fallbacks, before oned first starts
    rewrite(remotes / "market/one/monitor", lambda t: patches.market_fallback(t, DEAD_URL, "one"))
    lxc = remotes / "market/linuxcontainers/monitor"
    if lxc.exists():
        rewrite(lxc, lambda t: patches.market_fallback(t, DEAD_URL, "linuxcontainers"))
    for driver in ("market/one/monitor", "market/linuxcontainers/monitor"):
        if (remotes / driver).exists():
            found = patches.public_urls((remotes / driver).read_text(encoding="utf-8"))
            if found:
                raise SiteError(f"{remotes / driver} would still contact {found}")
    # each install its own monitoring pid files, shepherd match and client folder
    run_dir, db_dir = location / "var" / "run", location / "var" / "one_db"
    im = remotes / "im"
    for path in sorted(im.rglob("*")):
        if path.is_file() and not path.is_symlink():
            content = path.read_text(encoding="utf-8", errors="surrogateescape")
            new = patches.monitord_pid_files(content, str(run_dir))
            if path.name == "monitord-client-shepherd_local.sh":
                new = patches.shepherd_match(new, str(im / "dummy.d"))
            if path.name == "monitord-client.rb":
                new = patches.client_db_path(new, str(db_dir))
            if new != content:
                path.write_text(new, encoding="utf-8", errors="surrogateescape")
                changed.append(str(path.relative_to(location)))
    rewrite(im / "dummy-probes.d/host/system/system.rb", lambda t: patches.system_probe(t, str(facts_dir)))
    rewrite(remotes / "datastore/dummy/monitor",
            lambda t: patches.datastore_monitor(t, total_mb=DATASTORE_TOTAL_MB, free_mb=DATASTORE_FREE_MB))
    return changed


# -- waits -----------------------------------------------------------------------------------------
def _wait(what: str, check: Callable[[], str | None], timeout: float, daemon: Daemon | None, log: Path) -> None:
    deadline = time.monotonic() + timeout
    missing: str | None = "not checked yet"
    while time.monotonic() < deadline:
        if daemon is not None and not alive(daemon):
            raise SiteError(f"{daemon.name} exited while waiting for {what}; read {log}:\n{_tail(log)}")
        missing = check()
        if missing is None:
            return
        time.sleep(0.5)
    raise SiteError(f"{what} not ready after {timeout:.0f} s ({missing}); read {log}:\n{_tail(log)}")


def _xmlrpc_answers(rpc: OneRpc) -> Callable[[], str | None]:
    def check() -> str | None:
        try:
            rpc.call("one.system.version")
            return None
        except (OSError, RpcError) as exc:
            return str(exc)
    return check


def _flow_answers(url: str, session: str) -> Callable[[], str | None]:
    import base64

    user, _, password = session.partition(":")
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()

    def check() -> str | None:
        request = urllib.request.Request(f"{url}/service_template", headers={"Authorization": f"Basic {auth}"})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return None if answer.status == 200 else f"HTTP {answer.status}"
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code}"
        except OSError as exc:
            return str(exc)
    return check


def _sim_announced(log: Path) -> Callable[[], str | None]:
    def check() -> str | None:
        try:
            for line in log.read_text(errors="replace").splitlines():
                if line.startswith("{") and '"marketplace"' in line:
                    return None
        except OSError:
            pass
        return "no announcement line yet"
    return check


def _sim_market_url(log: Path) -> str:
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"marketplace"' in line:
            return str(json.loads(line)["marketplace"])
    raise SiteError(f"the marketplace server announced no URL; read {log}")


# -- loopback check --------------------------------------------------------------------------------
def _hex_addr(raw: str) -> str:
    host, _, _ = raw.partition(":")
    if len(host) == 8:
        return socket.inet_ntop(socket.AF_INET, bytes.fromhex(host)[::-1])
    words = bytes.fromhex(host)
    return socket.inet_ntop(socket.AF_INET6, b"".join(words[i:i + 4][::-1] for i in range(0, 16, 4)))


def foreign_connections(daemons: list[Daemon]) -> list[str]:
    """TCP connections of the daemons' sessions whose remote end is not loopback (what would mean
    a byte left the machine); [] is the expected answer."""
    inodes: dict[str, str] = {}
    for daemon in daemons:
        for pid in session_members(daemon.pid):
            try:
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        inodes[target[8:-1]] = f"{daemon.name} pid {pid}"
            except OSError:
                continue
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) < 10 or cols[9] not in inodes:
                continue
            remote = _hex_addr(cols[2])
            if cols[2].endswith(":0000"):
                continue  # listening
            if remote.startswith("127.") or remote in ("::1", "::ffff:127.0.0.1") or remote.startswith("::ffff:127."):
                continue
            found.append(f"{inodes[cols[9]]} -> {remote}")
    return found


def log_public_urls(location: Path) -> list[str]:
    """Internet URLs the frontend's logs mention (a driver that tried to reach one)."""
    hits = []
    for log in sorted((location / "var").glob("*.log")):
        try:
            content = log.read_text(errors="replace")
        except OSError:
            continue
        for host in ("marketplace.opennebula.io", "linuxcontainers.org"):
            if host in content:
                hits.append(f"{log.name}: {host}")
    return hits


def _database_binaries(install: Install, db: str) -> tuple[str, str, str] | None:
    """MariaDB's (server, install-db, client) for `--db mysql` (its oned must be built with MySQL),
    None for sqlite; LayoutError for another backend or an oned without MySQL."""
    if db not in ("sqlite", "mysql"):
        raise LayoutError(f"unknown database backend {db!r}: sqlite or mysql")
    if db == "sqlite":
        return None
    if not mysql.oned_has_mysql(install.prefix / "bin" / "oned"):
        raise LayoutError(f"{install.prefix}/bin/oned was built without MySQL (it holds the "
                          f"'{mysql.STUB.decode()}' stub): --db mysql needs an oned built with -DMYSQL_DB "
                          f"(shared/reference/real-platform.md)")
    return mysql.binaries()


def _previous_state(install: Install, state: Path, db: str, fresh: bool) -> dict[str, Any]:
    """The state of the frontend `state` holds to restart ({} when it is to be laid out anew: none,
    not configured, or `fresh`, its files then removed); SiteError while one runs from it, or for
    one of another install or database without `fresh`."""
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)
    running = [d for d in load(state) if alive(d)]
    if running:
        raise SiteError(f"a frontend already runs from {state} ({', '.join(d.name for d in running)}): "
                        f"python -m realsite stop --state {state} first")
    previous = read_state(state)
    if previous and previous.get("prefix") != str(install.prefix) and not fresh:
        raise SiteError(f"{state} holds a frontend of {previous.get('prefix')}; use --fresh to discard it")
    if previous and previous.get("db", "sqlite") != db and not fresh:
        raise SiteError(f"{state} holds a frontend on {previous.get('db', 'sqlite')}; use --fresh to discard it")
    if not fresh and previous.get("configured"):
        return previous
    for name in ("one", "sim", "facts", "console", "home", "ruby", "logs", "mysql", "repos", STATE_FILE, "env",
                 "cli.env", "config.toml", "one_auth", "base-image.qcow2"):
        target = state / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    return {}


def _lay_out(install: Install, state: Path, db: str, site_facts: Scenario,
             say: Say) -> tuple[config.Ports, dict[str, Any]]:
    """A new frontend in `state`: free ports, its location built and configured, the host facts and
    oneadmin's password written; its ports and its state (saved: configured, not populated)."""
    location = state / "one"
    ports = choose_ports()
    db_port = free_port(ports.all().values()) if db == "mysql" else 0
    say(f"laying out {install.version} from {install.prefix} in {location}")
    build_location(install, location)
    db_vector = mysql.db_vector(mysql.Server(state / "mysql", db_port)) if db == "mysql" else None
    configure(install, location, ports, state / "facts", db_vector)
    write_fact_files(state / "facts", site_facts.hosts)
    _write_private(state / "one_auth", f"oneadmin:{_password()}\n")
    previous = {"prefix": str(install.prefix), "version": install.version, "ports": ports.all(),
                "configured": True, "populated": False, "db": db, "db_port": db_port}
    write_state(state, previous)
    return ports, previous


def _start_mariadb(binaries: tuple[str, str, str], db_server: mysql.Server, state: Path, env: dict[str, str],
                   daemons: list[Daemon], say: Say) -> None:
    """The frontend's own MariaDB server, initialised, started (among `daemons`) and answering."""
    server_bin, install_bin, client_bin = binaries
    mysql.initialise(install_bin, db_server)
    daemons.append(spawn("mariadb", mysql.server_argv(server_bin, db_server), env=env,
                         log=state / "logs" / "mariadb.out"))
    save(state, daemons)
    _wait("MariaDB", lambda: mysql.answers(client_bin, db_server), ONED_TIMEOUT, daemons[-1], db_server.log)
    mysql.run_sql(client_bin, db_server, mysql.setup_sql(mysql.password(db_server)))
    say(f"MariaDB answers on {config.LOOPBACK}:{db_server.port}")


def _populate_and_monitor(rpc: OneRpc, site_facts: Scenario, previous: dict[str, Any], state: Path, market_url: str,
                          oned_daemon: Daemon, timings: Timings, say: Say) -> None:
    """A new frontend populated (infrastructure, host states, then content once the datastores are
    monitored: `previous` saved as populated); every start waits for the hosts' and datastores'
    monitoring."""
    var = state / "one" / "var"
    fresh = not previous.get("populated")
    if fresh:
        made = populate.populate_infrastructure(rpc, site_facts)
        say(f"populated: {len(made.host_ids)} hosts, networks {sorted(made.vnet_ids)}; waiting for monitoring")
        _wait("the hosts' first monitoring", lambda: populate.hosts_missing(rpc, site_facts, states=False),
              HOSTS_TIMEOUT, oned_daemon, var / "monitor.log")
        populate.apply_host_states(rpc, site_facts)
    _wait("the hosts' monitoring", lambda: populate.hosts_missing(rpc, site_facts), HOSTS_TIMEOUT,
          oned_daemon, var / "monitor.log")
    _wait("the datastores' monitoring", lambda: populate.datastores_missing(rpc), HOSTS_TIMEOUT, oned_daemon,
          var / "oned.log")
    timings.mark("monitored")
    say(f"hosts and datastores monitored ({timings.marks['monitored']} s)")
    if fresh:
        made = populate.populate_content(rpc, site_facts, made, market_url + "/", state)
        previous.update(populated=True, market_id=made.market_id, host_ids=made.host_ids)
        write_state(state, previous)


# -- start -----------------------------------------------------------------------------------------
def start(prefix: Path, state: Path, *, fresh: bool = False, db: str = "sqlite", say: Say = print) -> dict[str, Any]:
    timings = Timings()
    install = open_install(prefix)
    mysql_bins = _database_binaries(install, db)
    state = state.resolve()
    previous = _previous_state(install, state, db, fresh)
    location, logs = state / "one", state / "logs"
    logs.mkdir(exist_ok=True)
    site_facts = scenario(SIM_VERSION.get(install.series, "7.0.0"))
    if previous:
        ports = config.Ports(**previous["ports"])
        busy = busy_ports(ports)
        if busy:
            raise SiteError(f"ports of this frontend are taken by something else: {', '.join(busy)}; "
                            f"use --fresh to start anew on other ports")
        say(f"restarting the frontend of {state} ({install.version}) on its ports")
        if clear_stale_lock(location):  # none of its daemons runs (checked above): a killed oned's
            say("removed the lock file a stopped oned left (var/lock/.lock)")
    else:
        ports, previous = _lay_out(install, state, db, site_facts, say)
    db_server = mysql.Server(state / "mysql", int(previous.get("db_port", 0))) if mysql_bins is not None else None
    session = (state / "one_auth").read_text().strip()
    timings.mark("configured")
    env = daemon_env(state, location, ports.xmlrpc_url)
    daemons: list[Daemon] = []
    try:
        if db_server is not None and mysql_bins is not None:
            _start_mariadb(mysql_bins, db_server, state, env, daemons, say)
        # the embedded site's marketplace server (the whole embedded site; only its marketplace is used)
        sim_log = logs / "sim.log"
        sim_dir = state / "sim"
        if sim_dir.exists():
            shutil.rmtree(sim_dir)
        sim_env = {k: v for k, v in os.environ.items() if not k.startswith(("ONE_", "ONEFLOW_", "SITETK_"))}
        sim_env.update({"no_proxy": "*", "NO_PROXY": "*", "PYTHONUNBUFFERED": "1"})
        sim_daemon = spawn("marketplace", [sys.executable, "-m", "tui", "sim", "--one-version",
                                           SIM_VERSION.get(install.series, "7.0.0"), "--host", config.LOOPBACK,
                                           "--port", str(ports.market), "--state-dir", str(sim_dir)],
                           env=sim_env, log=sim_log, cwd=ROOT)
        daemons.append(sim_daemon)
        save(state, daemons)
        oned_log = location / "var" / "oned.log"
        oned_daemon = spawn("oned", [str(location / "bin" / "oned"), "-f"], env=env, log=logs / "oned.out",
                            cwd=location / "var")
        daemons.append(oned_daemon)
        save(state, daemons)
        rpc = OneRpc(ports.xmlrpc_url, session, timeout=30)
        _wait("oned's XML-RPC", _xmlrpc_answers(rpc), ONED_TIMEOUT, oned_daemon, oned_log)
        version = str(rpc.call("one.system.version"))
        timings.mark("oned")
        say(f"oned {version} answers on {ports.xmlrpc_url} ({timings.marks['oned']} s)")
        disabled = populate.disable_bootstrap_markets(rpc)
        if disabled:
            say(f"disabled bootstrap marketplaces {disabled}")
        if install.has_mm_sched:
            daemons.append(spawn("mm_sched", [str(location / "bin" / "mm_sched")], env=env, log=logs / "mm_sched.out",
                                 cwd=location / "var"))
            save(state, daemons)
        flow_log = location / "var" / "oneflow.log"
        daemons.append(spawn("oneflow", ["ruby", str(location / "lib" / "oneflow" / "oneflow-server.rb")],
                             env=ruby_env(env, state, location), log=logs / "oneflow.out", cwd=location / "var"))
        save(state, daemons)
        _wait("the marketplace server", _sim_announced(sim_log), SIM_TIMEOUT, sim_daemon, sim_log)
        market_url = _sim_market_url(sim_log)
        _wait("OneFlow", _flow_answers(ports.oneflow_url, session), FLOW_TIMEOUT, daemons[-1], flow_log)
        timings.mark("oneflow")
        say(f"OneFlow answers on {ports.oneflow_url}; marketplace server on {market_url}")
        _populate_and_monitor(rpc, site_facts, previous, state, market_url, oned_daemon, timings, say)
        market_id = int(previous["market_id"])
        expected = populate.served_records(market_url, version)
        _wait("the marketplace import", lambda: populate.market_missing(rpc, market_id, expected), MARKET_TIMEOUT,
              oned_daemon, oned_log)
        apps = populate.market_apps(rpc, market_id)
        timings.mark("imported")
        say(f"{len(apps)} marketplace apps imported ({timings.marks['imported']} s)")
        daemons.append(spawn("agent", [sys.executable, "-m", "realsite.agent", "--state", str(state)],
                             env={**sim_env, "PYTHONPATH": str(ROOT)}, log=logs / "agent.log", cwd=ROOT))
        save(state, daemons)
        # no byte left loopback
        foreign = foreign_connections(daemons)
        mentioned = log_public_urls(location)
        if foreign or mentioned:
            raise SiteError(f"traffic beyond loopback: connections {foreign}, log mentions {mentioned}")
        info = {**previous, "xmlrpc_url": ports.xmlrpc_url, "oneflow_url": ports.oneflow_url,
                "market_url": market_url + "/", "one_version": version, "one_auth": str(state / "one_auth"),
                "location": str(location), "timings": timings.marks, "apps": len(apps)}
        write_state(state, info)
        write_client_files(state, info, location, sim_dir)
        timings.mark("ready")
        info["timings"] = timings.marks
        write_state(state, info)
        say(f"ready in {timings.marks['ready']} s: . {state / 'env'}")
        return info
    except BaseException:
        say(f"start failed: stopping what it started (logs stay in {logs} and {location / 'var'})")
        stop_all(state, say=say)
        _end_monitoring_clients(location, say)
        raise


def _password() -> str:
    import secrets

    return secrets.token_urlsafe(24)


def _toml(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_client_files(state: Path, info: dict[str, Any], location: Path, sim_dir: Path) -> None:
    """`config.toml` (the console's: the sites repository, component library and vault password
    file, the real frontend's marketplace), `env` and `cli.env`. The repositories are the embedded
    site's, copied once into `<state>/repos`: the marketplace server seeds new ones at every start,
    while what the console pushed (site branches) must outlive a restart."""
    sim_info: dict[str, str] = {}
    sim_log = state / "logs" / "sim.log"
    for line in sim_log.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"marketplace"' in line:
            sim_info = json.loads(line)
    repos = state / "repos"
    kept: dict[str, str] = {}
    for key in ("sites_repo", "library_repo", "vault_password_file"):
        source = Path(sim_info.get(key) or "")
        if not sim_info.get(key) or not source.exists():
            continue
        target = repos / source.name
        if not target.exists():
            repos.mkdir(mode=0o700, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
                target.chmod(0o600)
        kept[key] = str(target)
    lines = ["# the console's config file for the real frontend (python -m realsite)",
             f"state_dir = {_toml(str(state / 'console'))}", "", "[marketplace]",
             f"urls = [{_toml(info['market_url'])}]", "", "[site]"]
    for key, value in kept.items():
        lines.append(f"{key} = {_toml(value)}")
    (state / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    exports = {"ONE_XMLRPC": info["xmlrpc_url"], "ONE_AUTH": info["one_auth"], "ONEFLOW_URL": info["oneflow_url"],
               "SITETK_CONFIG": str(state / "config.toml"), "SITETK_REAL_MARKET_URL": info["market_url"],
               "SITETK_REAL_ONE_VERSION": info["one_version"]}
    (state / "env").write_text(
        f"# a real OpenNebula {info['one_version']} frontend on loopback (python -m realsite): . <this file>\n"
        + "".join(f"export {name}={shlex.quote(str(value))}\n" for name, value in exports.items()), encoding="utf-8")
    lib = location / "lib"
    cli = {"ONE_LOCATION": str(location), "ONE_AUTH": info["one_auth"], "ONE_XMLRPC": info["xmlrpc_url"],
           "ONEFLOW_URL": info["oneflow_url"],
           "RUBYLIB": f"{lib / 'ruby'}:{lib / 'ruby' / 'cloud'}:{lib / 'oneflow' / 'lib'}",
           "RUBYOPT": f"-r{state / 'ruby' / 'activate_treetop.rb'}"}
    (state / "cli.env").write_text(
        "# the platform's own Ruby CLI (onevm, onehost, oneflow ...) against this frontend: . <this file>\n"
        + "".join(f"export {name}={shlex.quote(str(value))}\n" for name, value in cli.items())
        + f"export PATH={shlex.quote(str(location / 'bin'))}:\"$PATH\"\n", encoding="utf-8")


# -- stop and status -------------------------------------------------------------------------------
def stop(state: Path, *, say: Say = print) -> int:
    state = state.resolve()
    if not state.exists():
        say(f"{state}: no such state directory, nothing to stop")
        return 0
    count = stop_all(state, say=say)
    say(f"{count} daemon(s) stopped" if count else "nothing was running")
    _end_monitoring_clients(state / "one", say)
    return count


def _end_monitoring_clients(location: Path, say: Say) -> None:
    """The dummy hosts' monitoring clients run detached from oned (a session each): end the ones
    started from this frontend's own scripts."""
    clients = processes_under(location / "var" / "remotes")
    if clients:
        survivors = end_processes(clients)
        say(f"stopped {len(clients) - len(survivors)} monitoring client(s)")
        if survivors:
            raise SiteError(f"monitoring clients {survivors} survived SIGKILL")


def status(state: Path) -> dict[str, Any]:
    """What runs, and what the frontend says about itself when oned answers."""
    state = state.resolve()
    info = read_state(state)
    daemons = load(state)
    report: dict[str, Any] = {"state": str(state), "version": info.get("one_version") or info.get("version"),
                              "daemons": {d.name: ("running" if alive(d) else "stopped") + f" (pid {d.pid})"
                                          for d in daemons}}
    if not info:
        report["error"] = "no frontend in this state directory"
        return report
    report.update({k: info.get(k) for k in ("xmlrpc_url", "oneflow_url", "market_url", "timings")})
    if any(alive(d) for d in daemons if d.name == "oned"):
        try:
            rpc = OneRpc(info["xmlrpc_url"], (state / "one_auth").read_text().strip(), timeout=10)
            hosts = rpc.xml("one.hostpool.info").findall("HOST")
            report["hosts"] = {text(h, "NAME"): int(text(h, "STATE", "-1")) for h in hosts}
            report["vms"] = len(rpc.xml("one.vmpool.info", -2, -1, -1, -1).findall("VM"))
            report["market_apps"] = len(populate.market_apps(rpc, int(info.get("market_id", 100))))
        except (OSError, RpcError) as exc:
            report["error"] = f"oned does not answer: {exc}"
        report["foreign_connections"] = foreign_connections([d for d in daemons if alive(d)])
    return report


def stock_diff(install: Install, location: Path) -> str:
    """`diff -u` of the stock configuration against the frontend's (what the harness changed)."""
    out = []
    for name in ("oned.conf", "monitord.conf", "oneflow-server.conf", "sched.conf"):
        stock, mine = install.prefix / "etc" / name, location / "etc" / name
        if stock.exists() and mine.exists():
            result = subprocess.run(["diff", "-u", str(stock), str(mine)], capture_output=True, text=True)
            out.append(result.stdout)
    return "".join(out)

