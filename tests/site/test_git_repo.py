"""The sites repository through real git: new and existing sites, refusals, and the token's path."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from tests.site.git_http import GitHttpServer
from tui.adapters.git_repo import TOKEN_ENV, GitRemote, GitRepo, redact
from tui.adapters.vault import VaultPassword, is_vault_text, read_vault_file, write_vault_file
from tui.errors import SiteError
from tui.sim.repos import SIM_VAULT_PASSWORD

TOKEN = "github_pat_11AAAAAAA0TestTokenValue_zzzzzzzzzzzz"
SIM_PASSWORD = VaultPassword.from_text(SIM_VAULT_PASSWORD, "test")


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def argv_log(tmp_path: Path) -> tuple[str, Path]:
    """A `git` wrapper that records every argument list (and whether the token env was set)."""
    log = tmp_path / "git-argv.log"
    wrapper = tmp_path / "git-wrapper"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> "{log}"\n'
        f'if [ -n "${TOKEN_ENV}" ]; then echo "token-env-set" >> "{log}"; fi\n'
        'exec git "$@"\n'
    )
    wrapper.chmod(0o700)
    return str(wrapper), log


async def test_new_site_from_the_template(seeded: tuple[Path, Path], tmp_path: Path, password: VaultPassword) -> None:
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    await repo.sync()
    assert await repo.default_branch() == "main"
    assert await repo.site_branches() == ["demo-site"]
    path = await repo.start_site("lab-a", "lab-a")
    assert path == tmp_path / "work" / "lab-a" / "core.yaml"
    assert not (tmp_path / "work" / ".dummy").exists()
    assert path.read_text().startswith("# Site configuration")
    head = await repo.head()
    with pytest.raises(SiteError, match="Refusing to commit plain text"):
        await repo.commit("plain", ["lab-a"])
    assert await repo.head() == head  # nothing committed
    write_vault_file(path, path.read_text(), password)
    sha = await repo.commit("lab-a: new site", ["lab-a"])
    assert sha and await repo.head() == sha
    # no global identity in the isolated HOME: a local one was set
    assert git("config", "--local", "user.name", cwd=repo.workdir).strip() == "sitetk"
    await repo.push("lab-a")
    assert "lab-a" in await repo.site_branches()
    tree = git("--git-dir", str(sites), "ls-tree", "-r", "--name-only", "lab-a").split()
    assert "lab-a/core.yaml" in tree and ".dummy/core.yaml" not in tree
    assert is_vault_text(git("--git-dir", str(sites), "show", "lab-a:lab-a/core.yaml"))
    # the default branch keeps its template
    assert git("--git-dir", str(sites), "ls-tree", "-r", "--name-only", "main").split() == [".dummy/core.yaml", "README.md"]
    assert await repo.commit("again", ["lab-a"]) is None  # nothing new: no empty commit
    assert not await repo.unpushed("lab-a")


async def test_the_remote_branches_and_default_in_one_command(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    await repo.sync()
    branches = await repo.remote_branches()
    assert branches.default == "main" and branches.sites == ("demo-site",)
    assert branches.heads == {name: git("-C", str(sites), "rev-parse", name).strip() for name in ("demo-site", "main")}
    # the remote's HEAD names the default: another branch, then none (main, else master, else no default)
    git("-C", str(repo.workdir), "remote", "set-head", "origin", "demo-site")
    assert (await repo.remote_branches()).default == "demo-site" and await repo.site_branches() == ["main"]
    git("-C", str(repo.workdir), "remote", "set-head", "origin", "--delete")
    assert await repo.default_branch() == "main"
    git("-C", str(repo.workdir), "update-ref", "-d", "refs/remotes/origin/main")
    with pytest.raises(SiteError, match="No default branch"):
        await repo.default_branch()


async def test_existing_site_open_change_submit(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    await repo.sync()
    await repo.checkout("demo-site")
    assert await repo.current_branch() == "demo-site"
    path = repo.workdir / "demo-site" / "core.yaml"
    plain = read_vault_file(path, SIM_PASSWORD)
    assert "https://10.0.0.21:9000" in plain
    stored = await repo.read_file("origin/demo-site", "demo-site/core.yaml")
    assert stored is not None and is_vault_text(stored)
    assert await repo.read_file("origin/demo-site", "nope.txt") is None
    write_vault_file(path, plain.replace("192.0.2.10", "192.0.2.99"), SIM_PASSWORD)
    assert await repo.changed_paths() == ["demo-site/core.yaml"]
    await repo.commit("demo-site: public ip", ["demo-site"])
    assert await repo.unpushed("demo-site")
    await repo.push("demo-site")
    other = GitRepo(GitRemote(str(sites)), tmp_path / "other")
    await other.sync()
    await other.checkout("demo-site")
    assert "192.0.2.99" in read_vault_file(other.workdir / "demo-site" / "core.yaml", SIM_PASSWORD)
    # reopening the first clone after a remote change fast-forwards it
    write_vault_file(other.workdir / "demo-site" / "core.yaml", plain, SIM_PASSWORD)
    await other.commit("back", ["demo-site"])
    await other.push("demo-site")
    await repo.sync()
    await repo.checkout("demo-site")
    assert "192.0.2.10" in read_vault_file(path, SIM_PASSWORD)


async def test_staged_plain_core_yaml_is_refused(seeded: tuple[Path, Path], tmp_path: Path, password: VaultPassword) -> None:
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    await repo.sync()
    await repo.checkout("demo-site")
    other = repo.workdir / "elsewhere" / "core.yaml"
    other.parent.mkdir()
    other.write_text("site_domain: plain\n")
    git("add", "elsewhere/core.yaml", cwd=repo.workdir)
    with pytest.raises(SiteError, match="elsewhere/core.yaml is not vault-encrypted"):
        await repo.commit("sneak", ["demo-site"])


async def test_push_rejected_when_the_remote_moved(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    sites, _ = seeded
    first, second = (GitRepo(GitRemote(str(sites)), tmp_path / name) for name in ("a", "b"))
    for repo, ip in ((first, "192.0.2.1"), (second, "192.0.2.2")):
        await repo.sync()
        await repo.checkout("demo-site")
        path = repo.workdir / "demo-site" / "core.yaml"
        write_vault_file(path, read_vault_file(path, SIM_PASSWORD).replace("192.0.2.10", ip), SIM_PASSWORD)
        await repo.commit(ip, ["demo-site"])
    await first.push("demo-site")
    with pytest.raises(SiteError) as caught:
        await second.push("demo-site")
    assert caught.value.title == "Push rejected"
    await second.sync()
    with pytest.raises(SiteError, match="diverged"):
        await second.checkout("demo-site")


async def test_bad_requests_are_refused(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    await repo.sync()
    with pytest.raises(SiteError, match="No such site branch"):
        await repo.checkout("unknown")
    with pytest.raises(SiteError, match="Site branch exists"):
        await repo.start_site("demo-site", "demo-site")
    with pytest.raises(SiteError, match="Invalid branch name"):
        await repo.checkout("../escape")
    with pytest.raises(SiteError, match="Invalid site directory name"):
        await repo.start_site("ok-branch", ".hidden")
    with pytest.raises(SiteError, match="No site template"):
        await repo.start_site("lab-b", "lab-b", template_dir=".missing")


async def test_work_directory_conflicts(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    sites, library = seeded
    await GitRepo(GitRemote(str(sites)), tmp_path / "work").sync()
    with pytest.raises(SiteError, match="another repository"):
        await GitRepo(GitRemote(str(library)), tmp_path / "work").sync()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "file").write_text("x")
    with pytest.raises(SiteError, match="not empty"):
        await GitRepo(GitRemote(str(sites)), busy).sync()


async def test_missing_repository(tmp_path: Path) -> None:
    with pytest.raises(SiteError) as caught:
        await GitRepo(GitRemote(str(tmp_path / "nothing.git")), tmp_path / "work").sync()
    assert caught.value.title == "Repository not found"


async def test_unreachable_repository_is_retryable(tmp_path: Path) -> None:
    repo = GitRepo(GitRemote("http://127.0.0.1:9/sites.git", TOKEN), tmp_path / "work")
    with pytest.raises(SiteError) as caught:
        await repo.sync()
    assert caught.value.title == "Repository unreachable" and caught.value.retryable
    assert TOKEN not in str(caught.value)


def test_credentials_in_url_are_refused() -> None:
    for url in ("https://user:secret@host/org/sites.git", f"https://{TOKEN}@host/org/sites.git"):
        with pytest.raises(SiteError, match="Credentials in the repository URL"):
            GitRemote(url)
    assert TOKEN not in repr(GitRemote("https://host/org/sites.git", TOKEN))


def test_redact() -> None:
    text = f"fatal: unable to access 'https://me:{TOKEN}@host/x.git/': {TOKEN} refused"
    cleaned = redact(text, [TOKEN])
    assert TOKEN not in cleaned and "https://***@host/x.git/" in cleaned


def test_askpass_script_holds_no_secret(tmp_path: Path) -> None:
    repo = GitRepo(GitRemote("https://host/org/sites.git", TOKEN), tmp_path / "work")
    script = repo._askpass()
    assert stat.S_IMODE(script.stat().st_mode) == 0o700
    assert TOKEN not in script.read_text()
    env = {"PATH": os.environ["PATH"], TOKEN_ENV: TOKEN, "SITETK_GIT_USERNAME": "x-access-token"}
    ask = lambda prompt: subprocess.run([str(script), prompt], capture_output=True, text=True, env=env, check=True).stdout  # noqa: E731
    assert ask("Username for 'https://host': ") == "x-access-token\n"
    assert ask("Password for 'https://x-access-token@host': ") == TOKEN + "\n"
    directory = script.parent
    repo.close()
    assert not directory.exists()


async def test_token_travels_only_through_askpass_over_http(
    seeded: tuple[Path, Path], tmp_path: Path, isolated_home: Path, password: VaultPassword, argv_log: tuple[str, Path]
) -> None:
    sites, _ = seeded
    # a configured credential store would save the token in plain text: it must stay unused
    (isolated_home / ".gitconfig").write_text("[credential]\n\thelper = store\n")
    wrapper, log = argv_log
    with GitHttpServer(sites.parent, "x-access-token", TOKEN) as server:
        url = f"{server.base_url}/{sites.name}"
        repo = GitRepo(GitRemote(url, TOKEN), tmp_path / "work", git=wrapper)
        await repo.sync()
        assert await repo.site_branches() == ["demo-site"]
        path = await repo.start_site("lab-http", "lab-http")
        write_vault_file(path, path.read_text(), password)
        await repo.commit("lab-http: new site", ["lab-http"])
        await repo.push("lab-http")
        await repo.sync()  # fetch path too
        repo.close()
        assert server.failed_auth >= 1  # git was challenged and answered through askpass
        assert all(TOKEN not in line for line in server.request_lines)
    assert "lab-http" in git("--git-dir", str(sites), "branch", "--list").split()
    recorded = log.read_text()
    assert TOKEN not in recorded
    assert "token-env-set" in recorded  # the token went by environment to network commands
    assert git("remote", "get-url", "origin", cwd=repo.workdir).strip() == url
    assert TOKEN not in (repo.workdir / ".git" / "config").read_text()
    assert not (isolated_home / ".git-credentials").exists()
    # local-only commands never receive the token
    lines = recorded.splitlines()
    for index, line in enumerate(lines[:-1]):
        if " rev-parse " in f" {line} " or " for-each-ref " in f" {line} ":
            assert lines[index + 1] != "token-env-set"


async def test_wrong_token_over_http(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    sites, _ = seeded
    wrong = "github_pat_wrong_value_0000000000"
    with GitHttpServer(sites.parent, "x-access-token", TOKEN) as server:
        repo = GitRepo(GitRemote(f"{server.base_url}/{sites.name}", wrong), tmp_path / "work")
        with pytest.raises(SiteError) as caught:
            await repo.sync()
        no_token = GitRepo(GitRemote(f"{server.base_url}/{sites.name}"), tmp_path / "work2")
        with pytest.raises(SiteError) as missing:
            await no_token.sync()
    assert caught.value.title == "Repository authentication failed"
    assert "Contents: read and write" in caught.value.detail
    assert wrong not in str(caught.value)
    assert missing.value.title == "Repository authentication failed"


def _slow_git(tmp_path: Path, trap_term: bool) -> tuple[str, Path]:
    """A `git` that writes its pid, then runs for a minute (ignoring SIGTERM when asked)."""
    pid_file = tmp_path / "git.pid"
    script = tmp_path / "slow-git"
    trap = "trap '' TERM\n" if trap_term else ""
    script.write_text(f"#!/bin/sh\n{trap}echo $$ > \"{pid_file}.tmp\"\nmv \"{pid_file}.tmp\" \"{pid_file}\"\n"
                      "i=0\nwhile [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n")
    script.chmod(0o700)
    return str(script), pid_file


@pytest.mark.parametrize("trap_term", [False, True], ids=["ends-on-term", "ignores-term"])
async def test_a_cancelled_run_ends_and_reaps_its_git(tmp_path: Path, trap_term: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal cancels the command's task while git runs: git is stopped and waited for before the
    cancellation goes on (left running, asyncio's child watcher reported it as a traceback once the
    event loop had closed: found by the soak, `site enable` under SIGTERM)."""
    import asyncio

    import tui.adapters.git_process as git_process
    from tests.waiting import wait_until

    monkeypatch.setattr(git_process, "_STOP_GRACE_S", 0.5)
    slow, pid_file = _slow_git(tmp_path, trap_term)
    repo = GitRepo(GitRemote(str(tmp_path / "remote.git")), tmp_path / "work", git=slow)
    (tmp_path / "work").mkdir()
    task = asyncio.ensure_future(repo._run("status"))
    while not pid_file.exists():  # the event loop must run for the child to start
        await asyncio.sleep(0.02)
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # reaped: no longer our child (a running or unreaped one would still answer waitpid)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    wait_until(lambda: not _alive(pid), what=f"git (pid {pid}) to be gone")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
