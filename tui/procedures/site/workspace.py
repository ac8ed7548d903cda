"""The site configuration's repositories and vault password, as the settings name them.

- `sites_repo(settings)` / `library_repo(settings)`: a `GitRepo` on the configured URL (or local
  path), its working clone under `repos_dir` (default `<state_dir>/repos`, one per URL), its token
  read from the configured token file, else `$SITETK_SITES_TOKEN` / `$SITETK_LIBRARY_TOKEN`. The
  token only ever reaches git through the askpass environment (see `adapters.git_repo`).
- `vault_password(settings)`: the password from the configured vault password file (its
  warnings, such as a group-readable file, travel with it), None when no file is configured so
  the caller asks for it; `prompted_password(text)` wraps what the operator typed.
Nothing here changes anything.
"""

from __future__ import annotations

import os
from pathlib import Path

from tui.adapters.git_repo import GitRemote, GitRepo
from tui.adapters.vault import VaultPassword, read_password_file
from tui.domain.bounded import BoundedInputError, read_text_file
from tui.errors import SiteError
from tui.procedures.audit import REDACTOR
from tui.procedures.site.repo import default_workdir
from tui.settings import Settings

SITES_TOKEN_ENV = "SITETK_SITES_TOKEN"
LIBRARY_TOKEN_ENV = "SITETK_LIBRARY_TOKEN"


def read_token(file: Path | None, env_name: str) -> str | None:
    """The token from `file` (first line, stripped), else from `$env_name`; None when neither."""
    if file is not None:
        path = Path(file).expanduser()
        try:
            token = read_text_file(path, str(path), max_bytes=64 * 1024).strip().splitlines()
        except FileNotFoundError:
            raise SiteError("Token file not found", f"{path} does not exist; create it (mode 0600) holding the repository token.") from None
        except BoundedInputError as exc:
            raise SiteError("Token file unreadable", f"{exc.message}; it holds one line, the token.") from None
        except OSError as exc:
            raise SiteError("Token file unreadable", f"{path}: {exc.strerror}") from None
        if not token or not token[0].strip():
            raise SiteError("Token file empty", f"{path} holds no token; put the fine-grained access token on its first line.")
        value = token[0].strip()
    else:
        value = os.environ.get(env_name, "").strip()
    if value:
        REDACTOR.register(value)
    return value or None


def repos_dir(settings: Settings) -> Path:
    return settings.repos_dir if settings.repos_dir is not None else Path(settings.state_dir) / "repos"


def sites_repo(settings: Settings) -> GitRepo:
    """The sites repository's working clone (not cloned yet: `list_sites` clones it)."""
    if not settings.sites_repo:
        raise SiteError(
            "No sites repository configured",
            "Set sites_repo in the [site] table of the config file, or SITETK_SITES_REPO, to the repository's URL.",
        )
    token = read_token(settings.sites_token_file, SITES_TOKEN_ENV)
    return GitRepo(GitRemote(settings.sites_repo, token), default_workdir(settings.sites_repo, "sites", repos_dir(settings)))


def library_repo(settings: Settings) -> GitRepo:
    """The component library's working clone."""
    if not settings.library_repo:
        raise SiteError(
            "No component library configured",
            "Set library_repo in the [site] table of the config file, or SITETK_LIBRARY_REPO, to the repository's URL.",
        )
    token = read_token(settings.library_token_file, LIBRARY_TOKEN_ENV)
    return GitRepo(GitRemote(settings.library_repo, token), default_workdir(settings.library_repo, "library", repos_dir(settings)))


def vault_password(settings: Settings) -> VaultPassword | None:
    """The vault password from the configured file; None when none is configured (ask for it)."""
    if settings.vault_password_file is None:
        return None
    password = read_password_file(settings.vault_password_file)
    REDACTOR.register(password.text)
    return password


def prompted_password(text: str) -> VaultPassword:
    """The vault password the operator typed (registered for redaction; never written anywhere)."""
    password = VaultPassword.from_text(text, "prompt")
    REDACTOR.register(password.text)
    return password
