"""The sites repository and the component library through the real `git` command.

The repository token is a secret. It never goes into a URL, an argument list, a config file, a
log or an error: git gets it from a GIT_ASKPASS helper, a small script (mode 0700, no secret in
it) that prints the token from an environment variable of the git child process only. Every git
command runs with `credential.helper=` reset, so no configured helper (such as `store`) can save
the token to disk, and with terminal prompts disabled, so a missing or wrong token fails at once.
Error text from git passes through `redact` before it reaches a SiteError.

Layout facts (see the reference): one branch per site, the site's directory (named after
`app_manager_deployment_site`) holding `core.yaml`; the default branch holds a README and a
hidden template directory whose `core.yaml` a new site starts from. A `core.yaml` that is not
vault text is never committed.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import stat
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Sequence
from urllib.parse import urlsplit

from tui.adapters import git_process
from tui.adapters.vault import is_vault_text
from tui.domain.bounded import MAX_FILE_BYTES, read_regular_file
from tui.errors import SiteError
from tui.errors import redact as redact_secrets

SITE_CONFIG_FILE = "core.yaml"
TOKEN_ENV = "SITETK_GIT_TOKEN"
USERNAME_ENV = "SITETK_GIT_USERNAME"
DEFAULT_TEMPLATE_DIR = ".dummy"
_REDACTED = "***"

_ASKPASS_SCRIPT = f"""#!/bin/sh
# sitetk: git asks for a user name, then a password; both come from this process's environment.
case "$1" in
  [Uu]sername*) printf '%s\\n' "${USERNAME_ENV}" ;;
  *) printf '%s\\n' "${TOKEN_ENV}" ;;
esac
"""
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.\-]*://)[^/@\s]+@", re.IGNORECASE)
_DROPPED_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_OBJECT_DIRECTORY", TOKEN_ENV, USERNAME_ENV)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret and any credentials in URLs replaced by ***."""
    text = redact_secrets(text, tuple(secrets))
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{_REDACTED}@", text)


def check_name(kind: str, name: str) -> str:
    """A branch or directory name that git and the site layout accept (no slashes, no leading dot)."""
    if not _SAFE_NAME.match(name) or name.endswith((".lock", ".")) or ".." in name:
        raise SiteError(f"Invalid {kind} name", f"{name!r}: use letters, digits, '.', '_' and '-', starting with a letter or digit.")
    return name


@dataclass(frozen=True)
class GitRemote:
    """Where a repository lives and how to authenticate (`token` stays out of reprs)."""

    url: str
    token: str | None = field(default=None, repr=False)
    #: any non-empty user name works with a fine-grained personal access token
    username: str = "x-access-token"

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme.lower() in ("http", "https") and (parts.username is not None or parts.password is not None):
            raise SiteError(
                "Credentials in the repository URL",
                "Give the repository URL without user or token (https://host/org/repo.git) and the token separately; "
                "a token in a URL ends up in git's config and logs.",
            )


@dataclass(frozen=True)
class RemoteBranches:
    """The remote's default branch and its branches (sorted) with their commits."""

    default: str
    heads: dict[str, str]

    @property
    def sites(self) -> tuple[str, ...]:
        """Every branch but the default one: one per site."""
        return tuple(name for name in self.heads if name != self.default)


@dataclass(frozen=True)
class TreeEntry:
    name: str
    kind: str  # "tree" (directory) or "blob" (file)



class GitRepo:
    """One working clone of a remote repository, driven by the git command."""

    def __init__(self, remote: GitRemote, workdir: Path, *, timeout: float = 120.0, git: str = "git") -> None:
        self.remote = remote
        self.workdir = Path(workdir)
        self.timeout = timeout
        self.git = git
        self._askpass_dir: Path | None = None
        self._finalizer: weakref.finalize[..., GitRepo] | None = None

    # --- plumbing --------------------------------------------------------------------------

    def _askpass(self) -> Path:
        if self._askpass_dir is None:
            directory = Path(tempfile.mkdtemp(prefix="sitetk-askpass-"))
            script = directory / "askpass.sh"
            script.write_text(_ASKPASS_SCRIPT, encoding="utf-8")
            script.chmod(stat.S_IRWXU)
            self._askpass_dir = directory
            self._finalizer = weakref.finalize(self, shutil.rmtree, str(directory), True)
        return self._askpass_dir / "askpass.sh"

    def close(self) -> None:
        """Remove the askpass helper directory (it holds no secret, but tidy up)."""
        if self._finalizer is not None:
            self._finalizer()
        self._askpass_dir = None
        self._finalizer = None

    async def __aenter__(self) -> "GitRepo":
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def _env(self, network: bool) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
        env["GIT_TERMINAL_PROMPT"] = "0"
        env["LC_ALL"] = "C"
        env["LANGUAGE"] = "C"
        if network and self.remote.token:
            env["GIT_ASKPASS"] = str(self._askpass())
            env[TOKEN_ENV] = self.remote.token
            env[USERNAME_ENV] = self.remote.username
        return env

    def _secrets(self) -> list[str]:
        return [self.remote.token] if self.remote.token else []

    async def _run(self, *args: str, cwd: Path | None = None, network: bool = False, check: bool = True, what: str = "") -> tuple[int, str, str]:
        argv = [self.git, "-c", "credential.helper=", "-c", "core.quotePath=false", *args]
        try:
            # returns only once git has ended and asyncio has closed its pipes and transport, on every
            # path: a timeout or a cancellation stops git's process group first (`git_process`)
            finished = await git_process.run(argv, cwd=str(cwd or self.workdir), env=self._env(network),
                                             timeout=self.timeout)
        except FileNotFoundError:
            raise SiteError("git is not installed", f"The {self.git!r} command was not found; install git.") from None
        except asyncio.TimeoutError:
            raise SiteError("git timed out", f"git {args[0]} took longer than {self.timeout:.0f}s ({self._where()}).", retryable=True) from None
        stdout = finished.stdout.decode("utf-8", errors="replace")
        stderr = redact(finished.stderr.decode("utf-8", errors="replace"), self._secrets())
        if check and finished.returncode != 0:
            raise self._error(args[0], stderr, what)
        return finished.returncode, stdout, stderr

    def _where(self) -> str:
        return redact(self.remote.url, self._secrets())

    def _error(self, command: str, stderr: str, what: str) -> SiteError:
        text = stderr.strip()
        lowered = text.lower()
        where = self._where()
        if "authentication failed" in lowered or "could not read username" in lowered or "could not read password" in lowered or "returned error: 403" in lowered:
            return SiteError(
                "Repository authentication failed",
                f"{where} refused the credentials. Check the token: a fine-grained personal access token with "
                "Contents: read and write on this repository.",
            )
        if any(words in lowered for words in ("repository not found", "does not appear to be a git repository", "' does not exist", "not found")):
            return SiteError("Repository not found", f"{where}: no such repository, or the token cannot see it.")
        if any(word in lowered for word in ("could not resolve host", "connection refused", "timed out", "network is unreachable", "failed to connect", "couldn't connect")):
            return SiteError("Repository unreachable", f"{where}: {_last_line(text)}", retryable=True)
        if "non-fast-forward" in lowered or "fetch first" in lowered or "[rejected]" in lowered:
            return SiteError("Push rejected", "The branch changed on the remote since it was opened; open the site again to update it, then submit again.")
        return SiteError(f"git {command} failed", f"{what + ': ' if what else ''}{_last_line(text) or 'no message'}")

    # --- clone, branches -------------------------------------------------------------------

    def is_cloned(self) -> bool:
        return (self.workdir / ".git").is_dir()

    async def sync(self) -> None:
        """Clone the repository into the work dir, or fetch it (with pruning) when already cloned."""
        if self.is_cloned():
            _, url, _ = await self._run("remote", "get-url", "origin")
            if url.strip() != self.remote.url:
                raise SiteError(
                    "Work directory holds another repository",
                    f"{self.workdir} is a clone of {redact(url.strip(), self._secrets())}, not {self._where()}; choose another work directory.",
                )
            await self._run("fetch", "--prune", "origin", network=True, what=f"fetching {self._where()}")
            await self._run("remote", "set-head", "origin", "--auto", network=True, check=False)
            return
        if self.workdir.exists() and any(self.workdir.iterdir()):
            raise SiteError("Work directory not empty", f"{self.workdir} exists and is not a clone; choose an empty or new directory.")
        self.workdir.parent.mkdir(parents=True, exist_ok=True)
        await self._run("clone", "--", self.remote.url, str(self.workdir), cwd=self.workdir.parent, network=True, what=f"cloning {self._where()}")

    async def default_branch(self) -> str:
        return (await self.remote_branches()).default

    async def remote_branches(self) -> RemoteBranches:
        """The remote's default branch and every branch's commit (after `sync`), with one git command
        (`for-each-ref` names the remote HEAD's target too): the default is what origin/HEAD points
        to, else main, else master."""
        _, out, _ = await self._run("for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)", "refs/remotes/origin/")
        heads: dict[str, str] = {}
        default = ""
        for line in out.splitlines():
            name, _, rest = line.partition("\0")
            commit, _, target = rest.partition("\0")
            name = name.removeprefix("refs/remotes/origin/")
            if name == "HEAD":
                if target.startswith("refs/remotes/origin/"):
                    default = target.removeprefix("refs/remotes/origin/")
            elif name:
                heads[name] = commit
        if not default:
            default = next((candidate for candidate in ("main", "master") if candidate in heads), "")
        if not default:
            raise SiteError("No default branch", f"{self._where()} has no default branch (is it empty?).")
        return RemoteBranches(default, dict(sorted(heads.items())))

    async def branches(self) -> list[str]:
        """Remote branches (after `sync`), sorted."""
        _, out, _ = await self._run("for-each-ref", "--format=%(refname)", "refs/remotes/origin/")
        names = [line.removeprefix("refs/remotes/origin/") for line in out.splitlines() if line.strip()]
        return sorted(name for name in names if name != "HEAD")

    async def site_branches(self) -> list[str]:
        """Every remote branch except the default one: one per site."""
        return list((await self.remote_branches()).sites)

    async def head(self) -> str:
        """The commit id the work tree is on."""
        _, out, _ = await self._run("rev-parse", "HEAD")
        return out.strip()

    async def commit_of(self, ref: str) -> str | None:
        """The commit id `ref` names (`origin/main`), None when it names none."""
        code, out, _ = await self._run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return out.strip() if code == 0 and out.strip() else None

    async def current_branch(self) -> str | None:
        code, out, _ = await self._run("symbolic-ref", "--short", "HEAD", check=False)
        return out.strip() if code == 0 else None

    async def _local_branch_exists(self, branch: str) -> bool:
        code, _, _ = await self._run("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
        return code == 0

    async def checkout(self, branch: str) -> None:
        """Switch the work tree to `branch`, fast-forwarded to the remote one."""
        check_name("branch", branch)
        remote_exists = branch in await self.branches()
        if await self._local_branch_exists(branch):
            await self._run("checkout", "--quiet", branch, what=f"switching to {branch}")
            if remote_exists:
                code, _, err = await self._run("merge", "--ff-only", "--quiet", f"origin/{branch}", check=False)
                if code != 0:
                    raise SiteError(
                        "Local site branch diverged",
                        f"The local branch {branch} has commits the remote does not have and the remote moved on: {_last_line(err)}",
                    )
            return
        if not remote_exists:
            raise SiteError("No such site branch", f"{branch} is not a branch of {self._where()}.")
        await self._run("checkout", "--quiet", "-b", branch, "--track", f"origin/{branch}", what=f"opening {branch}")

    async def start_site(self, branch: str, site_dir: str, template_dir: str = DEFAULT_TEMPLATE_DIR) -> Path:
        """Branch from the default branch and turn the template directory into `site_dir` (staged, not committed)."""
        check_name("branch", branch)
        check_name("site directory", site_dir)
        if branch in await self.branches():
            raise SiteError("Site branch exists", f"{branch} already exists on {self._where()}; open it instead.")
        default = await self.default_branch()
        if await self._local_branch_exists(branch):
            await self._run("checkout", "--quiet", branch)
        else:
            if await self.read_file(f"origin/{default}", f"{template_dir}/{SITE_CONFIG_FILE}") is None:
                raise SiteError("No site template", f"{default} has no {template_dir}/{SITE_CONFIG_FILE} to start a site from.")
            await self._run("checkout", "--quiet", "--no-track", "-b", branch, f"origin/{default}", what=f"creating {branch}")
        target = self.workdir / site_dir
        if not (target / SITE_CONFIG_FILE).exists():
            if target.exists():
                raise SiteError("Site directory exists", f"{site_dir} exists on {branch} without {SITE_CONFIG_FILE}; remove it or pick another name.")
            await self._run("mv", "--", template_dir, site_dir, what=f"turning {template_dir} into {site_dir}")
        return target / SITE_CONFIG_FILE

    # --- reading -------------------------------------------------------------------------------

    async def read_file(self, ref: str, path: str) -> str | None:
        """A file's text at a ref (`origin/site-a`, `HEAD`), or None when it is not there."""
        code, out, _ = await self._run("show", f"{ref}:{_posix(path)}", check=False)
        return out if code == 0 else None

    async def list_files(self, ref: str) -> list[str]:
        """Every file path at a ref (recursive)."""
        code, out, _ = await self._run("ls-tree", "-r", "-z", "--name-only", ref, check=False)
        return [p for p in out.split("\0") if p] if code == 0 else []

    async def list_dir(self, ref: str, path: str = "") -> list[TreeEntry]:
        spec = f"{ref}:{_posix(path)}" if path else f"{ref}:"
        code, out, err = await self._run("ls-tree", spec, check=False)
        if code != 0:
            return []
        entries = []
        for line in out.splitlines():
            meta, _, name = line.partition("\t")
            parts = meta.split()
            if len(parts) >= 2:
                entries.append(TreeEntry(name, parts[1]))
        return entries

    async def changed_paths(self) -> list[str]:
        """Paths with changes (staged, unstaged or untracked) in the work tree."""
        _, out, _ = await self._run("status", "--porcelain=v1", "-z", "--untracked-files=all")
        paths = []
        records = out.split("\0")
        index = 0
        while index < len(records):
            record = records[index]
            index += 1
            if len(record) < 4:
                continue
            status, path = record[:2], record[3:]
            paths.append(path)
            if "R" in status or "C" in status:
                index += 1  # the rename's source follows
        return paths

    # --- writing -------------------------------------------------------------------------------

    async def ensure_identity(self, name: str = "sitetk", email: str | None = None) -> None:
        """Set a repository-local commit identity when git has none configured."""
        for key, value in (("user.name", name), ("user.email", email or f"sitetk@{socket.gethostname() or 'localhost'}")):
            code, out, _ = await self._run("config", "--get", key, check=False)
            if code != 0 or not out.strip():
                await self._run("config", "--local", key, value)

    async def commit(self, message: str, paths: Sequence[str]) -> str | None:
        """Stage `paths` and commit; refuse any core.yaml that is not vault text. None when nothing changed."""
        for path in paths:
            target = self.workdir / path
            files = target.rglob(SITE_CONFIG_FILE) if target.is_dir() else [target]
            for file in files:
                if file.name == SITE_CONFIG_FILE and file.is_file() and not is_vault_text(
                        read_regular_file(file, str(file), MAX_FILE_BYTES)):
                    raise _plain_refusal(str(file.relative_to(self.workdir)))
        await self._run("add", "--all", "--", *paths, what="staging")
        _, staged, _ = await self._run("diff", "--cached", "--name-only", "--diff-filter=ACMR", "-z")
        for path in (p for p in staged.split("\0") if p):
            if PurePosixPath(path).name == SITE_CONFIG_FILE:
                blob = await self.read_file("", path)  # ":path" is the staged version
                if blob is None or not is_vault_text(blob):
                    raise _plain_refusal(path)
        code, _, _ = await self._run("diff", "--cached", "--quiet", check=False)
        if code == 0:
            return None
        await self.ensure_identity()
        await self._run("commit", "--quiet", "--no-verify", "-m", message, what="committing")
        _, sha, _ = await self._run("rev-parse", "HEAD")
        return sha.strip()

    async def push(self, branch: str) -> None:
        check_name("branch", branch)
        await self._run("push", "--quiet", "--set-upstream", "origin", f"refs/heads/{branch}:refs/heads/{branch}", network=True, what=f"pushing {branch}")

    async def remote_head(self, branch: str) -> str | None:
        """The commit `branch` is at on the remote, asked of the remote now (`git ls-remote`); None
        when the remote has no such branch. What a push stopped half-way left is read here: the
        remote updates the branch whole or not at all, but the client may not have heard which."""
        check_name("branch", branch)
        _, out, _ = await self._run("ls-remote", "--heads", "origin", f"refs/heads/{branch}", network=True,
                                    what=f"reading {branch} on {self._where()}")
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            if ref.strip() == f"refs/heads/{branch}":
                return sha.strip()
        return None

    async def note_pushed(self, branch: str, commit: str) -> None:
        """Record that the remote's `branch` is at `commit` (what a finished push records itself:
        the remote-tracking branch), after `remote_head` found a stopped push had landed."""
        check_name("branch", branch)
        await self._run("update-ref", f"refs/remotes/origin/{branch}", commit)

    async def can_push(self) -> tuple[bool, str]:
        """Whether the remote accepts pushes with these credentials, asked without changing it:
        `git push --dry-run` of HEAD to a probe branch (the host checks the write permission when
        the push starts, e.g. a token without Contents: write gets 403). (ok, git's last line)."""
        code, out, err = await self._run("push", "--dry-run", "--porcelain", "origin",
                                         "HEAD:refs/heads/sitetk-write-check", network=True, check=False)
        return code == 0, redact(_last_line(err if code else out), self._secrets())

    async def unpushed(self, branch: str, remote: Sequence[str] | None = None) -> bool:
        """True when the local branch has commits the remote branch lacks (or the remote lacks it);
        `remote`: the remote's branches when the caller has just read them (else read here)."""
        if branch not in (await self.branches() if remote is None else remote):
            return await self._local_branch_exists(branch)
        _, out, _ = await self._run("rev-list", "--count", f"origin/{branch}..refs/heads/{branch}")
        return out.strip() != "0"


def _plain_refusal(path: str) -> SiteError:
    return SiteError(
        "Refusing to commit plain text",
        f"{path} is not vault-encrypted; every {SITE_CONFIG_FILE} on a site branch must start with $ANSIBLE_VAULT;1.1;AES256. Encrypt it first.",
    )


def _posix(path: str) -> str:
    return str(PurePosixPath(str(path).replace(os.sep, "/")))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
