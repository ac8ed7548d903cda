"""What the `sitetk site` verbs share: the vault password, the sites repository and the component
library from options, environment or settings, `--set` values, the cloud when reachable, the
site of a local operation (the options that name them: `site_args`).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from tui.adapters.vault import VaultPassword, is_vault_text, read_password_file, read_text
from tui.cli.common import UsageError, connect_site, emit_json
from tui.cli.site_args import (
    LIBRARY_REPO_ENV,
    LIBRARY_TOKEN_ENV,
    PASSWORD_FILE_ENV,
    SITES_REPO_ENV,
    SITES_TOKEN_ENV,
    SITES_TOKEN_FILE_ENV,
)
from tui.domain.bounded import BoundedInputError, check_tree, guard, read_text_file, yaml_loader
from tui.domain.naming import DEFAULT_NAMING
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.settings import Settings

if TYPE_CHECKING:  # the git adapter and the component library are imported by the verbs that use them (~0.2 s)
    from tui.adapters.git_repo import GitRepo
    from tui.domain.components import ComponentDefinition, ComponentLibrary
    from tui.domain.site_checks import Finding


def site_settings() -> Settings:
    """The console's settings (config file, environment)."""
    try:
        return Settings.load()
    except SiteError as error:
        raise UsageError(f"{error.title}: {error.detail}") from None


async def connect_if_reachable(args: argparse.Namespace, why: str) -> SiteConnection | None:
    """The cloud, when reachable with the usual credentials; None (with a warning) otherwise."""
    try:
        return await connect_site(site_settings(), read_only=bool(getattr(args, "read_only", False)))
    except SiteError as error:
        if not args.json:
            print(f"warning: the cloud is not reachable ({error.title}): {why}", file=sys.stderr)
        return None


async def connect_for_enable(args: argparse.Namespace) -> SiteConnection:
    """The cloud `site enable` downloads and grants on; when it cannot be reached the command fails
    (it never falls back to writing core.yaml without the appliances: offline is `--no-cloud`)."""
    try:
        return await connect_site(site_settings(), read_only=bool(getattr(args, "read_only", False)))
    except SiteError as error:
        raise SiteError(f"The cloud is not reachable: {error.title}",
                        (f"{error.detail}\n" if error.detail else "") + "Nothing was written: site enable downloads the "
                        "component's appliances and grants them. To write core.yaml without the cloud, give the "
                        "appliance IDs with --set and add --no-cloud.", retryable=error.retryable) from None


# --- argument helpers --------------------------------------------------------------------------


def parse_set(items: list[str] | None) -> list[tuple[str, Any]]:
    """`["a.b=1500", "c=x"]` -> [("a.b", 1500), ("c", "x")]; values are YAML (empty -> null)."""
    yaml = yaml_loader(YAML(typ="safe", pure=True), "the value")
    result = []
    for item in items or []:
        path, sep, raw = item.partition("=")
        if not sep or not path.strip():
            raise UsageError(f"--set {item!r}: write dotted.path=value")
        try:
            with guard("the value"):
                value = yaml.load(raw) if raw.strip() else None
            check_tree(value, "the value")
        except BoundedInputError as exc:
            raise UsageError(f"--set {path.strip()}: {exc.message}") from None
        except YAMLError as exc:
            raise UsageError(f"--set {item!r}: the value is not valid YAML ({str(exc).splitlines()[0]})") from None
        result.append((path.strip(), value))
    return result


def vault_password(args: argparse.Namespace, warnings: list[str]) -> VaultPassword:
    source = args.vault_password_file or os.environ.get(PASSWORD_FILE_ENV)
    if not source and (configured := site_settings().vault_password_file) is not None:
        source = str(configured)
    if source:
        password = read_password_file(source)
        warnings.extend(password.warnings)
        return password
    if not sys.stdin.isatty():
        raise UsageError("no vault password: give --vault-password-file FILE (or set SITETK_VAULT_PASSWORD_FILE)")
    return VaultPassword.from_text(getpass.getpass("Vault password: "), "prompt")


def _token(file_arg: str | None, file_env: str | None, env: str) -> str | None:
    source = file_arg or (os.environ.get(file_env) if file_env else None)
    if source:
        try:
            token = read_text_file(Path(source).expanduser(), f"token file {source}", max_bytes=64 * 1024).strip()
        except BoundedInputError as exc:
            raise UsageError(exc.message) from None
        except OSError as exc:
            raise UsageError(f"token file {source}: {exc.strerror}") from None
        if not token:
            raise UsageError(f"token file {source} is empty")
        return token
    return os.environ.get(env) or None


def sites_repository(args: argparse.Namespace) -> GitRepo:
    from tui.adapters.git_repo import GitRemote, GitRepo
    from tui.procedures.site.repo import default_workdir
    from tui.procedures.site.workspace import sites_repo

    url = args.repo or os.environ.get(SITES_REPO_ENV)
    if not url and not args.workdir and not args.token_file and site_settings().sites_repo:
        return sites_repo(site_settings())
    if not url:
        raise UsageError("no sites repository: give --repo URL (or set SITETK_SITES_REPO, or sites_repo in the config file)")
    token = _token(args.token_file, SITES_TOKEN_FILE_ENV, SITES_TOKEN_ENV)
    workdir = Path(args.workdir) if args.workdir else default_workdir(url, "sites")
    return GitRepo(GitRemote(url, token), workdir)


def library_repository(args: argparse.Namespace) -> GitRepo:
    from tui.adapters.git_repo import GitRemote, GitRepo
    from tui.procedures.site.repo import default_workdir
    from tui.procedures.site.workspace import library_repo

    url = args.library or os.environ.get(LIBRARY_REPO_ENV)
    if not url and not args.library_workdir and not args.library_token_file and site_settings().library_repo:
        return library_repo(site_settings())
    if not url:
        raise UsageError("no component library: give --library URL (or set SITETK_LIBRARY_REPO, or library_repo in the config file)")
    token = _token(args.library_token_file, None, LIBRARY_TOKEN_ENV)
    workdir = Path(args.library_workdir) if args.library_workdir else default_workdir(url, "library")
    return GitRepo(GitRemote(url, token), workdir)


def warn(warnings: list[str], as_json: bool) -> None:
    if not as_json:
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)


def finish(as_json: bool, payload: dict[str, Any], text: str | None = None) -> None:
    if as_json:
        emit_json({"ok": True, **payload})
    elif text:
        print(text)


def findings_text(findings: tuple[Finding, ...] | list[Finding]) -> str:
    if not findings:
        return "no problems found"
    return "\n".join(f"{f.severity.value.upper():7} {f.path}: {f.message}" for f in findings)



async def load_component_library(args: argparse.Namespace) -> ComponentLibrary:
    from tui.procedures.site.component_library import load_library

    repo = library_repository(args)
    try:
        return await load_library(repo, DEFAULT_NAMING)
    finally:
        repo.close()


async def configured_definitions(args: argparse.Namespace) -> Mapping[str, ComponentDefinition] | None:
    """The component library's definitions when a library is configured (options, environment,
    settings); None otherwise (the checks then skip the component variables)."""
    if getattr(args, "library", None) or os.environ.get(LIBRARY_REPO_ENV) or site_settings().library_repo:
        return (await load_component_library(args)).as_mapping()
    return None


def local_site(args: argparse.Namespace) -> SiteConnection:
    """The site of an operation on local files and repositories only (nothing is connected):
    its settings, naming, audit log and `--read-only`."""
    return SiteConnection(site_settings(), read_only=bool(getattr(args, "read_only", False)))


def needs_password(path: Path) -> bool:
    return is_vault_text(read_text(path))
