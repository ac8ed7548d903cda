"""The soak's world: the embedded site in this process, a private HOME, and the fault switches.

The site runs the `deployed` scenario (the toolkit is there: moves, key grants and re-deploys have
something to act on) with a small time scale so downloads and boots take seconds. Stopping the
site (`outage`) closes its socket and every open connection, as a restarted frontend would; its
state stays (as the platform's database does), and it listens again on the same port.
"""

from __future__ import annotations

import os
import random
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from tui.sim.runner import start_sim
from tui.sim.server import SimServer
from tui.sim.state import SimConfig

#: records of the Site Toolkit marketplace small enough for many downloads (IMAGE appliances)
DOWNLOADABLE = ("service_bastion", "service_dns", "service_route_manager", "service_vm_kvm", "service_traffic_generator")
#: seconds a command may run before the soak kills it and counts a hang
COMMAND_TIMEOUT_S = 240.0


@dataclass
class Outcome:
    """One finished `sitetk` process."""

    argv: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    signal: str = ""
    hung: bool = False


@dataclass
class World:
    """The running site and what a child process needs to reach it."""

    root: Path
    server: SimServer
    env: dict[str, str]
    #: the working clone's core.yaml (after `site open`)
    core: Path | None = None
    #: the toolkit input file for `toolkit deploy`
    inputs: Path | None = None
    #: record id -> the appliance's key (`<marketplace url>#<id>`) in the Site Toolkit marketplace
    appliance_keys: dict[str, str] = field(default_factory=dict)
    #: ids of the objects seeded before the first operation, by kind
    baseline: dict[str, set[int]] = field(default_factory=dict)
    #: every `sitetk` started and not yet seen ended: a stopped soak ends them (`stop`)
    spawned: list[subprocess.Popen[str]] = field(default_factory=list)

    @classmethod
    def start(cls, time_scale: float = 0.02, root: Path | None = None) -> "World":
        root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="sitetk-soak-"))
        server = start_sim(SimConfig(scenario="deployed", time_scale=time_scale), root / "site")
        home = root / "home"
        home.mkdir(parents=True, exist_ok=True)
        state = server.site.state_dir
        env = {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / ".local" / "state"),
               "XDG_CONFIG_HOME": str(home / ".config"), "ONE_AUTH": str(state / "one_auth"),
               "ONE_XMLRPC": server.xmlrpc_url, "ONEFLOW_URL": server.flow_url,
               "SITETK_CONFIG": str(state / "config.toml"), "SITETK_AUDIT_LOG": str(root / "audit.log"),
               "ANSIBLE_LOCAL_TEMP": str(root / "ansible-tmp"), "ANSIBLE_HOME": str(root / "ansible-home"),
               "SITETK_LOCK_TIMEOUT": "180", "GIT_CONFIG_NOSYSTEM": "1", "PYTHONUNBUFFERED": "1"}
        for name in ("SITETK_VAULT_PASSWORD_FILE", "SITETK_SITES_REPO", "SITETK_LIBRARY_REPO"):
            env.pop(name, None)
        world = cls(root, server, env)
        with server.site.lock:
            world.baseline = world.ids()
        return world

    def stop(self, remove: bool = True) -> None:
        """End every command still running (a soak stopped while it started one leaves it unfollowed),
        then the site."""
        for process in self.spawned:
            end_group(process)
        self.spawned.clear()
        self.server.stop()
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)

    def ids(self) -> dict[str, set[int]]:
        """Ids of the site's objects by kind (call under the site's lock)."""
        site = self.server.site
        return {"image": set(site.images), "template": set(site.templates), "document": set(site.documents),
                "vm": set(site.vms)}

    # the fault switches ----------------------------------------------------------------------
    def set_faults(self, latency_ms: int = 0, fail_rate: float = 0.0, market: dict[str, str] | None = None,
                   lost: dict[str, int] | None = None, expire_at: str = "") -> None:
        faults = self.server.site.faults
        with self.server.site.lock:
            faults.latency_ms = latency_ms
            faults.fail_rate = fail_rate
            faults.market_faults = dict(market or {})
            if hasattr(faults, "lost_answers"):
                faults.lost_answers = dict(lost or {})
            # the session expires when this call arrives (tui.sim.state.Faults.expire_at); cleared
            # after the step: the operator logs in again
            faults.expire_at = {expire_at} if expire_at else set()
            faults.expired_credentials = False

    @property
    def audit_log(self) -> Path:
        return Path(self.env["SITETK_AUDIT_LOG"])

    def break_audit_log(self, how: str) -> None:
        """Make the audit log unwritable for one step (item 5 of issue 22): a directory where the
        file is, or a dangling symlink (the log never follows one). The file is set aside."""
        log = self.audit_log
        if log.exists() or log.is_symlink():
            log.rename(log.with_name(log.name + ".held"))
        if how == "directory":
            log.mkdir()
        else:
            log.symlink_to(self.root / "gone" / "audit.log")

    def mend_audit_log(self) -> None:
        """Put the audit log back as it was before `break_audit_log`."""
        log = self.audit_log
        if log.is_symlink():
            log.unlink()
        elif log.is_dir():
            shutil.rmtree(log)
        held = log.with_name(log.name + ".held")
        if held.exists():
            held.rename(log)

    def audit_lines(self) -> int:
        """How many records the audit log holds (0 when there is none)."""
        try:
            with self.audit_log.open("rb") as file:
                return sum(1 for line in file if line.strip())
        except FileNotFoundError:
            return 0

    def clear_faults(self) -> None:
        self.set_faults()

    def outage(self, seconds: float) -> None:
        """The site goes away (every connection dropped) and comes back on the same port."""
        self.server.stop()
        time.sleep(seconds)
        self.server.start()

    # running the CLI -------------------------------------------------------------------------
    def spawn(self, argv: tuple[str, ...]) -> "Command":
        """`sitetk ARGV` in its own session (a signal to its group reaches git and ansible too,
        as a hang-up of the operator's terminal does)."""
        self.spawned = [process for process in self.spawned if process.poll() is None]
        ready, tell = os.pipe()
        try:
            with stop_held():  # a stop inside Popen, once the child exists, would leave it unknown
                process = subprocess.Popen([sys.executable, "-c", LAUNCHER, *argv], stdin=subprocess.DEVNULL,
                                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                           env={**self.env, READY_FD_ENV: str(tell)}, cwd=self.root,
                                           start_new_session=True, pass_fds=(tell,))
                self.spawned.append(process)
        except BaseException:
            os.close(ready)
            raise
        finally:
            os.close(tell)
        return Command(process, ready)

    def run(self, *argv: str) -> Outcome:
        """`sitetk ARGV` to completion, without faults (setup and reads)."""
        return finish(self.spawn(tuple(argv)), tuple(argv))


class _Stop:
    """Whether a stop (SIGINT/SIGTERM to `python -m bench.soak`) is put off, and whether one came."""

    held = 0
    pending = False


def request_stop(signum: int, frame: object) -> None:
    """bench.soak's SIGINT and SIGTERM handler: KeyboardInterrupt, at once or, while a command is
    being started (`stop_held`), as soon as it has been."""
    if _Stop.held:
        _Stop.pending = True
        return
    raise KeyboardInterrupt


@contextmanager
def stop_held() -> Iterator[None]:
    """Put off `request_stop` until the block ends."""
    _Stop.held += 1
    try:
        yield
    finally:
        _Stop.held -= 1
        if not _Stop.held and _Stop.pending:
            _Stop.pending = False
            raise KeyboardInterrupt


READY_FD_ENV = "SITETK_SOAK_READY_FD"
#: `python -m tui` with one difference: once the interpreter has started and sitetk's entry is
#: imported, it writes a byte to the pipe named by $SITETK_SOAK_READY_FD. Signals are timed from
#: that moment: a Ctrl-C while Python itself starts (site-packages, .pth files) is no sitetk code's to handle.
LAUNCHER = (
    "import os, sys\n"
    "from tui.__main__ import main\n"
    f"fd = int(os.environ.pop({READY_FD_ENV!r}))\n"
    "try:\n"
    "    os.write(fd, b'.')\n"
    "except OSError:\n"
    "    pass\n"
    "os.close(fd)\n"
    "sys.argv[0] = 'sitetk'\n"
    "sys.exit(main())\n"
)


@dataclass
class Command:
    """A running `sitetk` process and the pipe that says its entry point has started."""

    process: subprocess.Popen[str]
    ready: int

    def wait_started(self, timeout: float) -> bool:
        """Wait until sitetk's entry runs (True), or the process ended or `timeout` passed (False)."""
        readable, _, _ = select.select([self.ready], [], [], timeout)
        if not readable:
            return False
        return os.read(self.ready, 1) == b"."

    def close(self) -> None:
        try:
            os.close(self.ready)
        except OSError:
            pass


def finish(command: Command, argv: tuple[str, ...], signal_name: str = "") -> Outcome:
    """Wait for a spawned command (killing its group after COMMAND_TIMEOUT_S: a hang)."""
    process = command.process
    command.close()
    try:
        out, err = process.communicate(timeout=COMMAND_TIMEOUT_S)
        hung = False
    except subprocess.TimeoutExpired:
        signal_group(process, signal.SIGKILL)
        out, err = process.communicate()
        hung = True
    except BaseException:  # the soak is stopped while it waits (a setup read): the command goes too
        end_group(process)
        raise
    return Outcome(argv, process.returncode, out, err, signal_name, hung)


#: how long a stopped soak gives a command to end its git and ansible after SIGTERM
END_GRACE_S = 15.0


def end_group(process: subprocess.Popen[str]) -> None:
    """End a spawned command when the soak is stopped: SIGTERM to its session, as a stopping
    terminal sends, so that sitetk ends the git it runs in a process group of its own
    (tui/adapters/git_repo.py), which a SIGKILL to sitetk's group would leave running; SIGKILL
    after END_GRACE_S. Reaped either way."""
    if process.poll() is None:
        signal_group(process, signal.SIGTERM)
        try:
            process.wait(timeout=END_GRACE_S)
        except subprocess.TimeoutExpired:
            signal_group(process, signal.SIGKILL)
    process.wait()


def signal_group(process: subprocess.Popen[str], number: int) -> bool:
    """`number` to the command's session (its process group); False when it is gone."""
    try:
        os.killpg(process.pid, number)
    except OSError:
        return False
    return True


def pick(rng: random.Random, options: Any) -> Any:
    return options[rng.randrange(len(options))]
