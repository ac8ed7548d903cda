"""INT, TERM and HUP to a real `sitetk site ...` process at the points that matter for the sites
repository: while core.yaml waits to be written, while the site is made from the template, while
git commits, while git pushes to a git HTTP server (before and after the remote took the push).

Each run is held at a real state, never a sleep: a core.yaml's lock held by the test (the process
has opened the lock file), a `git` wrapper first on PATH that waits at one verb until released, or
the git HTTP server holding the push's request. Checked each time: the exit status (128+N, or 0
when the work had finished), no traceback, no plain or half-written core.yaml, no `index.lock`, a
commit either on the remote or reported as not pushed with the command that pushes it, the audit
record, and the same command run again finishing the work. The runs before and after the one
stopped (creating the site branch, running the command again) run in the test's own process
(`Runner.run_here`): only the stopped run needs a process of its own.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.faults.processes import Runner, Sitetk
from tests.site.git_http import GitHttpServer
from tests.waiting import wait_until
from tui.adapters.vault import VaultPassword, is_vault_text, write_vault_file
from tui.sim.repos import SIM_VAULT_PASSWORD, template_core_yaml
from tui.sim.server import SimServer

STOPS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
IDS = [s.name for s in STOPS]
TOKEN = "github_pat_sitesig_0123456789abcdef"
REAL_GIT = shutil.which("git") or "git"


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REAL_GIT, *args], capture_output=True, text=True, cwd=cwd, check=False)


@dataclass
class Held:
    """The git wrapper's directory: `hold(verb)` makes the next git <verb> wait until `release()`."""

    directory: Path

    def hold(self, verb: str) -> None:
        (self.directory / f"hold-{verb}").touch()

    def reached(self, verb: str) -> bool:
        return (self.directory / f"held-{verb}").exists()

    def release(self) -> None:
        for hold in self.directory.glob("hold-*"):
            hold.unlink()
        (self.directory / "release").touch()


def _wrapper(directory: Path) -> Held:
    """A real git that waits at one verb (a `hold-<verb>` file beside it) until `release` exists."""
    directory.mkdir()
    script = directory / "git"
    script.write_text(
        "#!/bin/sh\n"
        "here=$(dirname \"$0\")\n"
        "verb=\"\"\n"
        "for a in \"$@\"; do\n"
        "  if [ \"$skip\" = 1 ]; then skip=0; continue; fi\n"
        "  case \"$a\" in -c) skip=1 ;; -*) ;; *) verb=$a; break ;; esac\n"
        "done\n"
        "if [ -n \"$verb\" ] && [ -f \"$here/hold-$verb\" ]; then\n"
        "  touch \"$here/held-$verb\"\n"
        "  while [ ! -f \"$here/release\" ]; do sleep 0.05; done\n"
        "fi\n"
        f"exec {REAL_GIT} \"$@\"\n")
    script.chmod(0o700)
    return Held(directory)


@dataclass
class SitesRepo:
    """The embedded site's sites repository behind a git HTTP server, and the CLI's options for it."""

    server: GitHttpServer
    bare: Path
    workdir: Path
    password_file: Path

    @property
    def options(self) -> tuple[str, ...]:
        return ("--repo", f"{self.server.base_url}/{self.bare.name}", "--workdir", str(self.workdir),
                "--vault-password-file", str(self.password_file))

    def remote_head(self, branch: str) -> str | None:
        done = _git("--git-dir", str(self.bare), "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
        return done.stdout.strip() or None

    def local_head(self, branch: str) -> str:
        return _git("rev-parse", f"refs/heads/{branch}", cwd=self.workdir).stdout.strip()


@pytest.fixture
def sites(sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner],
          tmp_path: Path) -> Iterator[tuple[Runner, SitesRepo, Held]]:
    server = sim_factory()
    runner = sitetk(server)
    held = _wrapper(tmp_path / "bin")
    password_file = tmp_path / "vault-pass"
    password_file.write_text(SIM_VAULT_PASSWORD + "\n")
    password_file.chmod(0o600)
    bare = server.site.sites_repo
    assert bare is not None
    runner.extra = {"PATH": f"{held.directory}:{os.environ.get('PATH', '/usr/bin:/bin')}", "SITETK_SITES_TOKEN": TOKEN,
                    "SITETK_LOCK_TIMEOUT": "120"}
    with GitHttpServer(bare.parent, "x-access-token", TOKEN) as http:
        yield runner, SitesRepo(http, bare, tmp_path / "work", password_file), held


def _clean_clone(repo: SitesRepo, branch: str) -> None:
    """What a stopped run must never leave in the working clone."""
    assert not (repo.workdir / ".git" / "index.lock").exists()
    config = repo.workdir / branch / "core.yaml"
    assert is_vault_text(config.read_text())
    assert (config.stat().st_mode & 0o777) == 0o600
    assert not list(config.parent.glob(".core.yaml.*.tmp"))
    status = _git("status", "--porcelain", cwd=repo.workdir).stdout
    assert status == "", status  # committed or not, nothing half-staged


def _finished(run: Sitetk, code: int) -> None:
    assert run.finish() == code, run.stderr
    assert "Traceback" not in run.stderr, run.stderr


def _submit(branch: str, repo: SitesRepo) -> tuple[str, ...]:
    return ("site", "submit", "--branch", branch, *repo.options, "--yes", "--override-reason", "lab site, filled later")


def _create(runner: Runner, repo: SitesRepo, branch: str) -> None:
    code, run = runner.run_here("site", "create", branch, *repo.options, "--yes")
    assert code == 0, run.stderr


@pytest.mark.parametrize("stop", STOPS, ids=IDS)
def test_a_stop_while_the_push_has_not_reached_the_remote_leaves_the_commit_reported_and_the_rerun_pushes_it(
        sites: tuple[Runner, SitesRepo, Held], stop: signal.Signals) -> None:
    runner, repo, _ = sites
    _create(runner, repo, "lab")
    repo.server.hold = "before-receive"
    run = runner.start(*_submit("lab", repo))
    wait_until(lambda: repo.server.reached.is_set(), 60, "the push at the server")
    run.process.send_signal(stop)
    _finished(run, 128 + stop)
    repo.server.release.set()
    commit = repo.local_head("lab")
    assert repo.remote_head("lab") is None  # the remote never took it
    assert "Submit of lab stopped during the push" in run.stderr, run.stderr
    assert f"Commit {commit[:12]} is in the working clone, not pushed" in run.stderr
    assert "sitetk site submit --branch lab" in run.stderr
    _clean_clone(repo, "lab")
    record = [e for e in runner.audit_entries() if e["action"] == "site.submit"][-1]
    assert record["outcome"] == "cancelled" and record["details"]["commit"] == commit, record
    assert record["details"]["pushed"] is False and record["details"]["resume"] == "sitetk site submit --branch lab"

    code, again = runner.run_here(*_submit("lab", repo))
    assert code == 0, again.stderr
    assert repo.remote_head("lab") == commit  # the same commit, pushed; nothing committed twice
    assert f"pushed {commit}" in again.stdout


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_after_the_remote_took_the_push_is_reported_as_pushed(
        sites: tuple[Runner, SitesRepo, Held], stop: signal.Signals) -> None:
    """The remote updated the branch, but git is stopped before it heard so: the branch is read
    back from the remote, the run reports the push and records it, and a re-run has nothing to do."""
    runner, repo, _ = sites
    _create(runner, repo, "lab")
    repo.server.hold = "after-receive"
    run = runner.start(*_submit("lab", repo))
    wait_until(lambda: repo.server.reached.is_set(), 60, "the push at the server")
    commit = repo.local_head("lab")
    assert repo.remote_head("lab") == commit  # landed; the client does not know yet
    run.process.send_signal(stop)
    _finished(run, 0)  # the work was done: the run says so, not "stopped"
    repo.server.release.set()
    assert f"{stop.name} came too late to stop it" in run.stderr, run.stderr
    assert f"pushed {commit}" in run.stdout
    _clean_clone(repo, "lab")
    record = [e for e in runner.audit_entries() if e["action"] == "site.submit"][-1]
    assert record["outcome"] == "ok" and record["details"]["commit"] == commit, record

    code, again = runner.run_here(*_submit("lab", repo))
    assert code == 0 and "lab: nothing to submit" in again.stdout, again.stderr


@pytest.mark.parametrize("stop", STOPS, ids=IDS)
def test_a_stop_while_git_commits_lets_the_commit_finish_and_stops_before_the_push(
        sites: tuple[Runner, SitesRepo, Held], stop: signal.Signals) -> None:
    runner, repo, held = sites
    _create(runner, repo, "lab")
    held.hold("commit")
    run = runner.start(*_submit("lab", repo))
    wait_until(lambda: held.reached("commit"), 60, "git commit")
    run.process.send_signal(stop)
    run.wait_for_line(f"{stop.name}: stopping")
    held.release()
    _finished(run, 128 + stop)
    commit = repo.local_head("lab")
    assert repo.remote_head("lab") is None
    assert "Submit of lab stopped before the push" in run.stderr, run.stderr
    assert f"Commit {commit[:12]} is in the working clone, not pushed" in run.stderr
    _clean_clone(repo, "lab")
    record = [e for e in runner.audit_entries() if e["action"] == "site.submit"][-1]
    assert record["outcome"] == "cancelled" and record["details"]["commit"] == commit, record

    code, again = runner.run_here(*_submit("lab", repo))
    assert code == 0, again.stderr
    assert repo.remote_head("lab") == commit


@pytest.mark.parametrize("stop", STOPS, ids=IDS)
def test_a_stop_while_the_site_is_made_from_the_template_waits_for_it(
        sites: tuple[Runner, SitesRepo, Held], stop: signal.Signals) -> None:
    """The branch, the renamed template and its encryption are one change: a stop waits for it,
    so no plain core.yaml stays in the site directory; the re-run opens the site it made."""
    runner, repo, held = sites
    held.hold("checkout")
    run = runner.start("site", "create", "lab", *repo.options, "--yes")
    wait_until(lambda: held.reached("checkout"), 60, "git checkout of the new branch")
    run.process.send_signal(stop)
    run.wait_for_line(f"{stop.name}: stopping")
    held.release()
    _finished(run, 0)
    assert f"{stop.name} came too late to stop it" in run.stderr, run.stderr
    config = repo.workdir / "lab" / "core.yaml"
    assert is_vault_text(config.read_text()) and (config.stat().st_mode & 0o777) == 0o600
    assert not (repo.workdir / ".git" / "index.lock").exists()
    record = [e for e in runner.audit_entries() if e["action"] == "site.create"][-1]
    assert record["outcome"] == "ok", record

    code, again = runner.run_here("site", "create", "lab", *repo.options, "--yes", "--json")
    assert code == 0 and '"created": false' in again.stdout, again.stderr


def _lock_open_by(pid: int, lock: Path) -> bool:
    """The process has opened `lock` (it waits for it): read from its file descriptors."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(lock) for fd in fds.iterdir())
    except OSError:
        return False


#: each verb's arguments after the file, and its audit action
_WRITES = {
    "edit": (("--set", "site_domain=other.internal"), "site.edit"),
    "encrypt": ((), "site.encrypt"),
    "enable": (("--set", "template_id=3", "--set", "image_id=4", "--no-cloud"), "site.enable_component"),
}


@pytest.mark.parametrize("stop", STOPS, ids=IDS)
@pytest.mark.parametrize("verb", list(_WRITES))
def test_a_stop_while_core_yaml_waits_to_be_written_leaves_it_as_it_was(
        sim_factory: Callable[..., SimServer], sitetk: Callable[[SimServer], Runner], tmp_path: Path,
        stop: signal.Signals, verb: str) -> None:
    server = sim_factory()
    runner = sitetk(server)
    runner.extra = {"SITETK_LOCK_TIMEOUT": "120"}
    password_file = tmp_path / "vault-pass"
    password_file.write_text(SIM_VAULT_PASSWORD + "\n")
    password_file.chmod(0o600)
    config = tmp_path / "site" / "core.yaml"
    config.parent.mkdir()
    text = template_core_yaml()
    if verb == "encrypt":
        config.write_text(text)
        config.chmod(0o600)
    else:
        write_vault_file(config, text, VaultPassword.from_text(SIM_VAULT_PASSWORD))
    before = config.read_bytes()
    options, action = _WRITES[verb]
    if verb == "enable":
        argv: tuple[str, ...] = ("site", "enable", "vm_kvm", "--path", str(config), "--library", str(server.site.library_repo),
                                 "--library-workdir", str(tmp_path / "library"))
    else:
        argv = ("site", verb, str(config))
    argv = (*argv, "--vault-password-file", str(password_file), "--yes", *options)
    lock = config.parent / ".core.yaml.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another operator's write in progress
        run = runner.start(*argv)
        wait_until(lambda: _lock_open_by(run.process.pid, lock), 60, f"site {verb} waiting for {lock}")
        run.process.send_signal(stop)
        _finished(run, 128 + stop)
    finally:
        os.close(fd)
    assert config.read_bytes() == before
    assert not list(config.parent.glob(".core.yaml.*.tmp"))
    record = [e for e in runner.audit_entries() if e["action"] == action][-1]
    assert record["outcome"] == "cancelled" and record["details"]["written"] is False, record
    assert record["details"]["left"] == f"nothing: {config} is as it was"

    code, again = runner.run_here(*argv)
    assert code == 0, again.stderr
    assert is_vault_text(config.read_text()) and config.read_bytes() != before
