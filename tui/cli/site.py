"""`sitetk site ...`: the site configuration (core.yaml), the sites repository and components.

    sitetk site encrypt PATH            vault-encrypt a plain core.yaml in place (checked first)
    sitetk site decrypt PATH            print the decrypted text (never written to disk)
    sitetk site edit PATH --set K=V     change values in memory and re-encrypt (comments kept)
    sitetk site check PATH              the checks: components, variables, MTU, object store
                                        (--cloud: also the IDs and the NIC MTU of the cloud)
    sitetk site fill PATH               fill the object store endpoint, gate, network and
                                        appliance IDs from the cloud (--dry-run: preview)
    sitetk site confirm PATH VAR --reason TEXT
                                        record that an appliance ID that is not marked as the
                                        component's appliance is right (audit-logged)
    sitetk site components              the component library with each component's variables
    sitetk site enable COMPONENT        offer a component (operation 9): download its appliance,
                                        grant the automation cloud user, list it with its site
                                        variables (--set var=value); --submit pushes it after
    sitetk site branches|open|create    the sites repository's site branches
    sitetk site submit                  check, show the decrypted diff, then commit and push;
                                        refused while the check has errors unless
                                        --override-reason TEXT (commit message, audit log)

The vault password comes from `--vault-password-file` (or SITETK_VAULT_PASSWORD_FILE, or
vault_password_file in the [site] table of the config file), else a prompt. Repositories come
from --repo/--library, else the settings (sites_repo, library_repo). Repository tokens come from
`--token-file`, the settings' token files or the SITETK_SITES_TOKEN / SITETK_LIBRARY_TOKEN
environment variables, never from the command line. Commands that read the cloud use the
platform's usual credentials (ONE_AUTH, ONE_XMLRPC).
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from tui.adapters.git_repo import GitRemote, GitRepo
from tui.adapters.vault import VaultPassword, is_vault_text, read_password_file, read_text
from tui.cli.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    confirm,
    connect_site,
    emit_json,
    follow,
    local_command,
    print_error,
    print_preview,
    show_preview,
    write_data,
)
from tui.domain.bounded import BoundedInputError, check_tree, guard, read_text_file
from tui.domain.components import ComponentDefinition, ComponentLibrary
from tui.domain.naming import DEFAULT_NAMING
from tui.domain.site_checks import Finding
from tui.errors import SiteError
from tui.procedures.component_library import load_library
from tui.procedures.connection import SiteConnection
from tui.procedures.preview import Preview
from tui.procedures.provision_component import GRANT_POLICY, offer_component, plan_provision
from tui.procedures.site_config import (
    check_enable_inputs,
    edit_file,
    enable_component,
    encrypt_file,
    load_site_config,
    preview_edit,
    preview_enable_component,
    preview_encrypt,
)
from tui.procedures.site_confirmations import confirm_appliance_id, plan_confirmation
from tui.procedures.site_fill import fill_site_file, gather_cloud_facts, plan_fill
from tui.procedures.site_repo import (
    SubmitPreview,
    create_site,
    current_site,
    default_message,
    default_workdir,
    list_sites,
    locate_site,
    open_site,
    preview_create_site,
    preview_submit,
    submit_site,
)
from tui.procedures.site_verdict import SiteVerdict, SubmitGate, site_verdict, submit_gate, verdict_of
from tui.procedures.site_workspace import library_repo, sites_repo
from tui.settings import Settings

PASSWORD_FILE_ENV = "SITETK_VAULT_PASSWORD_FILE"
SITES_REPO_ENV = "SITETK_SITES_REPO"
SITES_TOKEN_ENV = "SITETK_SITES_TOKEN"
SITES_TOKEN_FILE_ENV = "SITETK_SITES_TOKEN_FILE"
LIBRARY_REPO_ENV = "SITETK_LIBRARY_REPO"
LIBRARY_TOKEN_ENV = "SITETK_LIBRARY_TOKEN"


def _settings() -> Settings:
    """The console's settings (config file, environment)."""
    try:
        return Settings.load()
    except SiteError as error:
        raise UsageError(f"{error.title}: {error.detail}") from None


async def _connect(as_json: bool, why: str) -> SiteConnection | None:
    """The cloud, when reachable with the usual credentials; None (with a warning) otherwise."""
    try:
        return await connect_site(_settings())
    except SiteError as error:
        if not as_json:
            print(f"warning: the cloud is not reachable ({error.title}): {why}", file=sys.stderr)
        return None


# --- argument helpers --------------------------------------------------------------------------


def parse_set(items: list[str] | None) -> list[tuple[str, Any]]:
    """`["a.b=1500", "c=x"]` -> [("a.b", 1500), ("c", "x")]; values are YAML (empty -> null)."""
    yaml = YAML(typ="safe", pure=True)
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


def _password(args: argparse.Namespace, warnings: list[str]) -> VaultPassword:
    source = args.vault_password_file or os.environ.get(PASSWORD_FILE_ENV)
    if not source and (configured := _settings().vault_password_file) is not None:
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


def _sites_repo(args: argparse.Namespace) -> GitRepo:
    url = args.repo or os.environ.get(SITES_REPO_ENV)
    if not url and not args.workdir and not args.token_file and _settings().sites_repo:
        return sites_repo(_settings())
    if not url:
        raise UsageError("no sites repository: give --repo URL (or set SITETK_SITES_REPO, or sites_repo in the config file)")
    token = _token(args.token_file, SITES_TOKEN_FILE_ENV, SITES_TOKEN_ENV)
    workdir = Path(args.workdir) if args.workdir else default_workdir(url, "sites")
    return GitRepo(GitRemote(url, token), workdir)


def _library_repo(args: argparse.Namespace) -> GitRepo:
    url = args.library or os.environ.get(LIBRARY_REPO_ENV)
    if not url and not args.library_workdir and not args.library_token_file and _settings().library_repo:
        return library_repo(_settings())
    if not url:
        raise UsageError("no component library: give --library URL (or set SITETK_LIBRARY_REPO, or library_repo in the config file)")
    token = _token(args.library_token_file, None, LIBRARY_TOKEN_ENV)
    workdir = Path(args.library_workdir) if args.library_workdir else default_workdir(url, "library")
    return GitRepo(GitRemote(url, token), workdir)


def _warn(warnings: list[str], as_json: bool) -> None:
    if not as_json:
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)


def _finish(as_json: bool, payload: dict[str, Any], text: str | None = None) -> None:
    if as_json:
        emit_json({"ok": True, **payload})
    elif text:
        print(text)


def _findings_text(findings: tuple[Finding, ...] | list[Finding]) -> str:
    if not findings:
        return "no problems found"
    return "\n".join(f"{f.severity.value.upper():7} {f.path}: {f.message}" for f in findings)


def _component_text(definition: ComponentDefinition) -> str:
    lines = [f"{definition.name}: {definition.short_description}"]
    for leaf, description in definition.variable_paths():
        lines.append(f"    {leaf}: {description}")
    if definition.appliances:
        lines.append(f"    appliances: {', '.join(definition.appliance_record_ids())}")
    return "\n".join(lines)


def _component_json(definition: ComponentDefinition) -> dict[str, Any]:
    return {
        "name": definition.name,
        "short_description": definition.short_description,
        "long_description": definition.long_description,
        "maintainers": list(definition.maintainers),
        "hypervisors": list(definition.hypervisors),
        "appliances": list(definition.appliances),
        "appliance_record_ids": list(definition.appliance_record_ids()),
        "site_variables": {leaf: description for leaf, description in definition.variable_paths()},
    }


async def _library(args: argparse.Namespace) -> ComponentLibrary:
    repo = _library_repo(args)
    try:
        return await load_library(repo, DEFAULT_NAMING)
    finally:
        repo.close()


# --- commands ----------------------------------------------------------------------------------


async def _encrypt(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = _password(args, warnings)
    _warn(warnings, args.json)
    if args.dry_run:
        print_preview(await preview_encrypt(Path(args.path), password), args.json)
        return EXIT_OK
    events = await follow(encrypt_file(Path(args.path), password), args.json)
    _finish(args.json, {"warnings": warnings, "events": [e.as_json() for e in events]})
    return EXIT_OK


async def _decrypt(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = _password(args, warnings)
    _warn(warnings, args.json)
    loaded = await load_site_config(Path(args.path), password)
    if args.json:
        emit_json({"ok": True, "warnings": warnings, "path": str(loaded.path), "encrypted": loaded.encrypted, "text": loaded.config.text})
    else:
        write_data(loaded.config.text)
    return EXIT_OK


async def _edit(args: argparse.Namespace) -> int:
    changes = parse_set(args.set)
    if not changes:
        raise UsageError("nothing to change: give --set dotted.path=value (repeatable)")
    warnings: list[str] = []
    password = _password(args, warnings)
    _warn(warnings, args.json)
    if args.dry_run:
        print_preview(await preview_edit(Path(args.path), password, changes), args.json)
        return EXIT_OK
    events = await follow(edit_file(Path(args.path), password, changes), args.json)
    findings = events[-1].data.get("findings", []) if events else []
    if not args.json:
        for finding in findings:
            print(f"{finding['severity']}: {finding['path']}: {finding['message']}", file=sys.stderr)
    _finish(args.json, {"warnings": warnings, "events": [e.as_json() for e in events]})
    return EXIT_OK


async def _check(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = _password(args, warnings) if _needs_password(Path(args.path)) else None
    _warn(warnings, args.json)
    definitions = None
    problems: tuple[str, ...] = ()
    if args.library or os.environ.get(LIBRARY_REPO_ENV) or _settings().library_repo:
        library = await _library(args)
        definitions, problems = library.as_mapping(), library.problems
    if args.cloud:
        site = await connect_site(_settings())
        try:
            loaded = await load_site_config(Path(args.path), password, site.naming)
            facts = await gather_cloud_facts(site, loaded.config, definitions)
        finally:
            await site.close()
        verdict = verdict_of(loaded.config, naming=site.naming, definitions=definitions, facts=facts, nic_mtu=args.nic_mtu)
    else:
        loaded = await load_site_config(Path(args.path), password)
        verdict = verdict_of(loaded.config, definitions=definitions, nic_mtu=args.nic_mtu)
    findings, notes = verdict.findings, verdict.notes
    if args.json:
        emit_json({"ok": verdict.ok, "complete": verdict.complete, "unchecked": list(verdict.unchecked()), "warnings": warnings,
                   "library_problems": list(problems), "cloud_notes": list(notes), "findings": [f.as_json() for f in findings]})
    else:
        for problem in problems:
            print(f"warning: component library: {problem}", file=sys.stderr)
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        print(_findings_text(findings))
        for item in verdict.unchecked():
            print(f"not checked: {item}")
    return EXIT_FINDINGS if verdict.errors else EXIT_OK


def _needs_password(path: Path) -> bool:
    return is_vault_text(read_text(path))


async def _components(args: argparse.Namespace) -> int:
    library = await _library(args)
    if args.json:
        emit_json({"ok": True, "components": [_component_json(d) for d in library.definitions], "problems": list(library.problems)})
    else:
        print("\n".join(_component_text(d) for d in library.definitions))
        for problem in library.problems:
            print(f"warning: {problem}", file=sys.stderr)
    return EXIT_OK


async def _enable(args: argparse.Namespace) -> int:
    values = dict(parse_set(args.set))
    warnings: list[str] = []
    password = _password(args, warnings)
    _warn(warnings, args.json)
    library = await _library(args)
    definition = library.get(args.component)
    if definition is None:
        raise UsageError(f"{args.component!r} is not in the component library (known: {', '.join(library.names()) or 'none'})")
    repo: GitRepo | None = None
    if args.path:
        path = Path(args.path)
        if args.submit:
            raise UsageError("--submit works on the open site of the sites repository, not with --path")
    else:
        repo = _sites_repo(args)
        path = (await current_site(repo, args.site)).path
    try:
        site = None
        if definition.appliances and not args.no_cloud:
            site = await _connect(args.json, "appliances are not downloaded and nothing is granted; give their IDs with --set")
        events: list[Any] | None
        if site is None:
            if args.dry_run:
                print_preview(await preview_enable_component(path, password, definition, values), args.json)
                return EXIT_OK
            events = await follow(enable_component(path, password, definition, values, allow_incomplete=args.allow_incomplete), args.json)
        else:
            try:
                events = await _enable_with_cloud(args, site, path, password, definition, values)
            finally:
                await site.close()
            if events is None:
                return EXIT_OK if args.dry_run else EXIT_USAGE
        payload: dict[str, Any] = {"warnings": warnings, "events": [e.as_json() for e in events]}
        if args.submit and repo is not None:
            submitted, code = await _submit_after(args, repo, password)
            if submitted is None:
                return code
            payload["submit"] = [e.as_json() for e in submitted]
    finally:
        if repo is not None:
            repo.close()
    _finish(args.json, payload)
    return EXIT_OK


async def _enable_with_cloud(
    args: argparse.Namespace, site: SiteConnection, path: Path, password: VaultPassword, definition: ComponentDefinition, values: dict[str, Any]
) -> list[Any] | None:
    """Operation 9 against the cloud: preview (provisioning and site variables), confirm, run."""
    if args.read_only:
        raise UsageError("read-only mode: enabling a component downloads appliances and adds ACL rules")
    plan = await plan_provision(site, definition, cloud_user=args.cloud_user, datastore_id=args.datastore)
    if not args.allow_incomplete:  # every site variable the appliance does not give, before anything is asked or created
        await check_enable_inputs(path, password, definition, values, plan.fills(), site.naming)
    variables = await preview_enable_component(path, password, definition, values, site.naming, from_appliance=plan.fills())
    preview = Preview(
        f"Enable {definition.name}",
        plan.preview().changes + tuple(c for c in variables.changes if not c.description.startswith("appliance ")),
        warnings=plan.preview().warnings + variables.warnings,
    )
    if show_preview(preview, args, {"plan": plan.as_json()}, after=f"note: {GRANT_POLICY}\n"):
        return None
    if not preview.is_noop and not confirm(f"Enable {definition.name} (download, grant {plan.user.name}, write core.yaml)", args.yes):
        return None
    return await follow(
        offer_component(site, path, password, definition, values, plan=plan, allow_incomplete=args.allow_incomplete, poll_interval=max(0.01, args.poll)),
        args.json,
    )


async def _submit_after(args: argparse.Namespace, repo: GitRepo, password: VaultPassword) -> tuple[list[Any] | None, int]:
    """(events, EXIT_OK) once submitted; (None, exit code) when the check or the operator said no."""
    site_ref = await current_site(repo, args.site)
    preview = await preview_submit(repo, site_ref, password)
    if not preview.pending:
        return [], EXIT_OK
    verdict = await _verdict(args, site_ref.path, password)
    gate = _gate(args, verdict)
    if gate is None:
        return None, EXIT_FINDINGS
    if not args.json:
        _print_submit(preview)
    if not confirm(f"Commit and push {site_ref.site_dir}/core.yaml to {site_ref.branch}", args.yes):
        return None, EXIT_USAGE
    return await follow(submit_site(repo, site_ref, password, gate=gate), args.json), EXIT_OK


async def _verdict(args: argparse.Namespace, path: Path, password: VaultPassword) -> SiteVerdict:
    """The check a submit goes ahead on: the library when configured, the cloud when reachable."""
    definitions = None
    if getattr(args, "library", None) or os.environ.get(LIBRARY_REPO_ENV) or _settings().library_repo:
        definitions = (await _library(args)).as_mapping()
    config = (await load_site_config(path, password)).config
    site = await _connect(args.json, "the IDs are checked without it")
    try:
        return await site_verdict(config, site=site, definitions=definitions)
    finally:
        if site is not None:
            await site.close()


def _gate(args: argparse.Namespace, verdict: SiteVerdict) -> SubmitGate | None:
    """The submit gate; None (after printing the refusal and the findings) when it refuses."""
    try:
        gate = submit_gate(verdict, args.override_reason)
    except SiteError as error:
        if args.json:
            print_error(error, True, verdict=verdict.as_json())
        else:
            print(_findings_text(verdict.findings), file=sys.stderr)
            print_error(error, False)
        return None
    if not args.json:
        for item in verdict.unchecked():
            print(f"warning: not checked: {item}", file=sys.stderr)
        if gate.overridden:
            print(f"warning: submitting with {len(gate.overridden)} check error(s) overridden: {gate.override_reason}", file=sys.stderr)
    return gate


async def _fill(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = _password(args, warnings)
    _warn(warnings, args.json)
    definitions = None
    if args.library or os.environ.get(LIBRARY_REPO_ENV) or _settings().library_repo:
        definitions = (await _library(args)).as_mapping()
    site = await connect_site(_settings())
    try:
        plan = await plan_fill(site, Path(args.path), password, definitions)
        if args.read_only and not args.dry_run:
            raise UsageError("read-only mode: fill writes core.yaml")
        if show_preview(plan.preview(password), args, {"plan": plan.as_json()}):
            return EXIT_OK
        events = await follow(fill_site_file(site, plan, password, definitions), args.json)
    finally:
        await site.close()
    _finish(args.json, {"warnings": warnings, "plan": plan.as_json(), "events": [e.as_json() for e in events]})
    return EXIT_OK


async def _confirm(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = _password(args, warnings) if _needs_password(Path(args.path)) else None
    _warn(warnings, args.json)
    if args.read_only and not args.dry_run:
        raise UsageError("read-only mode: a confirmation is recorded in the state directory")
    definitions = (await _library(args)).as_mapping()
    site = await connect_site(_settings())
    try:
        config = (await load_site_config(Path(args.path), password, site.naming)).config
        plan = await plan_confirmation(site, config, args.variable, args.reason, definitions)
        if show_preview(plan.preview(), args, {"confirmation": plan.confirmation.as_json()}):
            return EXIT_OK
        if not confirm(f"Record that {plan.confirmation.kind} {plan.confirmation.object_id} is right for {args.variable}", args.yes):
            return EXIT_USAGE
        written = confirm_appliance_id(site, plan)
    finally:
        await site.close()
    _finish(args.json, {"confirmation": plan.confirmation.as_json(), "file": written},
            f"recorded in {written} (audit-logged); sitetk site check --cloud shows it as a warning")
    return EXIT_OK


async def _branches(args: argparse.Namespace) -> int:
    repo = _sites_repo(args)
    try:
        listing = await list_sites(repo)
    finally:
        repo.close()
    _finish(args.json, {"default_branch": listing.default_branch, "sites": list(listing.sites)}, "\n".join(listing.sites) or "(no site branches)")
    return EXIT_OK


async def _open(args: argparse.Namespace) -> int:
    repo = _sites_repo(args)
    try:
        events = await follow(open_site(repo, args.branch, args.site), args.json)
    finally:
        repo.close()
    site = events[-1].data
    _finish(args.json, {"site": site, "events": [e.as_json() for e in events]}, site.get("path"))
    return EXIT_OK


async def _create(args: argparse.Namespace) -> int:
    initial = dict(parse_set(args.set))
    warnings: list[str] = []
    password = _password(args, warnings)
    _warn(warnings, args.json)
    repo = _sites_repo(args)
    try:
        if args.dry_run:
            print_preview(await preview_create_site(repo, args.branch, args.site or args.branch, password), args.json)
            return EXIT_OK
        events = await follow(create_site(repo, args.branch, args.site or args.branch, password, initial=initial), args.json)
    finally:
        repo.close()
    site = events[-1].data
    _finish(args.json, {"warnings": warnings, "site": site, "events": [e.as_json() for e in events]}, site.get("path"))
    return EXIT_OK


async def _submit(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    password = _password(args, warnings)
    _warn(warnings, args.json)
    repo = _sites_repo(args)
    try:
        site = await current_site(repo, args.site) if not args.branch else locate_site(repo, args.branch, args.site)
        preview = await preview_submit(repo, site, password, reveal=args.reveal)
        if not preview.pending:
            _finish(args.json, {"preview": preview.as_json(), "events": []}, f"{site.branch}: nothing to submit")
            return EXIT_OK
        verdict = await _verdict(args, site.path, password)
        if args.dry_run:
            changes = preview.as_preview(args.message)
            _finish(args.json, {"dry_run": True, "preview": preview.as_json(), "changes": changes.as_json(), "verdict": verdict.as_json()},
                    f"{preview.diff}\n{changes.as_text()}\ncheck: {_findings_text(verdict.findings)}")
            return EXIT_OK
        gate = _gate(args, verdict)
        if gate is None:
            return EXIT_FINDINGS
        if not args.json:
            _print_submit(preview, gate.commit_message(args.message or default_message(site)))
        if not confirm(f"Commit and push {site.site_dir}/core.yaml to {site.branch}", args.yes):
            return EXIT_USAGE
        events = await follow(submit_site(repo, site, password, gate=gate, message=args.message), args.json)
    finally:
        repo.close()
    _finish(args.json, {"warnings": warnings, "preview": preview.as_json(), "verdict": verdict.as_json(), "events": [e.as_json() for e in events]})
    return EXIT_OK


def _print_submit(preview: SubmitPreview, message: str | None = None) -> None:
    """The decrypted diff of a submit and its steps (text mode)."""
    print(f"Diff against {preview.base}:")
    print(preview.diff or "(no change to the configuration)")
    print(preview.as_preview(message).as_text())


# --- registration ------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, password: bool = True) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    if password:
        parser.add_argument("--vault-password-file", metavar="FILE", help=f"vault password file (default: ${PASSWORD_FILE_ENV}, else a prompt)")


def _repo_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", metavar="URL", help=f"sites repository (default: ${SITES_REPO_ENV})")
    parser.add_argument("--workdir", metavar="DIR", help="working clone (default: under the state directory)")
    parser.add_argument("--token-file", metavar="FILE", help=f"file holding the repository token (or ${SITES_TOKEN_FILE_ENV} / ${SITES_TOKEN_ENV})")


def _library_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--library", metavar="URL", help=f"component library repository (default: ${LIBRARY_REPO_ENV})")
    parser.add_argument("--library-workdir", metavar="DIR", help="working clone of the library")
    parser.add_argument("--library-token-file", metavar="FILE", help=f"file holding the library token (or ${LIBRARY_TOKEN_ENV})")


def register(subparsers: argparse._SubParsersAction) -> None:
    site = subparsers.add_parser("site", help="site configuration, sites repository and components")
    verbs = site.add_subparsers(dest="verb", required=True)

    p = verbs.add_parser("encrypt", help="vault-encrypt a plain core.yaml in place")
    p.add_argument("path")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    _common(p)
    p.set_defaults(func=local_command(_encrypt))

    p = verbs.add_parser("decrypt", help="print the decrypted core.yaml (nothing is written)")
    p.add_argument("path")
    _common(p)
    p.set_defaults(func=local_command(_decrypt))

    p = verbs.add_parser("edit", help="set values in an encrypted core.yaml (comments kept)")
    p.add_argument("path")
    p.add_argument("--set", action="append", metavar="PATH=VALUE", help="dotted path and YAML value; repeatable")
    p.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
    _common(p)
    p.set_defaults(func=local_command(_edit))

    p = verbs.add_parser("check", help="check a core.yaml (encrypted or plain)")
    p.add_argument("path")
    p.add_argument("--nic-mtu", type=int, help="MTU of the NIC/bridge the VXLAN rides on")
    p.add_argument("--cloud", action="store_true", help="also check IDs against the cloud and take the NIC MTU from its default network")
    _library_options(p)
    _common(p)
    p.set_defaults(func=local_command(_check))

    p = verbs.add_parser("fill", help="fill core.yaml from the cloud (object store, gate, network, appliance IDs)")
    p.add_argument("path")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    _library_options(p)
    _common(p)
    p.set_defaults(func=local_command(_fill))

    p = verbs.add_parser("confirm", help="record that an appliance ID is right although it is not marked as the appliance")
    p.add_argument("path", help="core.yaml")
    p.add_argument("variable", help="dotted path of the ID, e.g. site_variables.tn_bastion.image_id")
    p.add_argument("--reason", required=True, metavar="TEXT", help="why this object is right (audit-logged)")
    p.add_argument("--dry-run", action="store_true", help="show what would be recorded")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    _library_options(p)
    _common(p)
    p.set_defaults(func=local_command(_confirm))

    p = verbs.add_parser("components", help="list the component library")
    _library_options(p)
    _common(p, password=False)
    p.set_defaults(func=local_command(_components))

    p = verbs.add_parser("enable", help="list a component in site_variables with its site variables")
    p.add_argument("component")
    p.add_argument("--path", help="core.yaml to change (default: the open site of the working clone)")
    p.add_argument("--site", help="site directory (default: named after the branch)")
    p.add_argument("--set", action="append", metavar="VAR=VALUE", help="site variable value; repeatable")
    p.add_argument("--allow-incomplete", action="store_true", help="write even when site variables are left unset")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    p.add_argument("--cloud-user", metavar="NAME", help="the automation cloud user (default: from the toolkit deployment)")
    p.add_argument("--datastore", type=int, metavar="ID", help="IMAGE datastore for downloads (default: the first)")
    p.add_argument("--no-cloud", action="store_true", help="do not download or grant; only list the component")
    p.add_argument("--poll", type=float, default=2.0, metavar="SECONDS", help="seconds between checks of a downloading image")
    p.add_argument("--submit", action="store_true", help="then show the diff and commit and push the site branch")
    p.add_argument("--override-reason", metavar="TEXT", help="with --submit: submit even though the check has errors, for this reason")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    _library_options(p)
    _repo_options(p)
    _common(p)
    p.set_defaults(func=local_command(_enable))

    p = verbs.add_parser("branches", help="list the site branches of the sites repository")
    _repo_options(p)
    _common(p, password=False)
    p.set_defaults(func=local_command(_branches))

    p = verbs.add_parser("open", help="open an existing site branch in the working clone")
    p.add_argument("branch")
    p.add_argument("--site", help="site directory (default: named after the branch)")
    _repo_options(p)
    _common(p, password=False)
    p.set_defaults(func=local_command(_open))

    p = verbs.add_parser("create", help="create a site from the template (pushed on submit)")
    p.add_argument("branch")
    p.add_argument("--site", help="site directory, app_manager_deployment_site (default: the branch name)")
    p.add_argument("--set", action="append", metavar="PATH=VALUE", help="initial value; repeatable")
    p.add_argument("--dry-run", action="store_true", help="show what would change, change nothing")
    _repo_options(p)
    _common(p)
    p.set_defaults(func=local_command(_create))

    p = verbs.add_parser("submit", help="show the decrypted diff, then commit and push core.yaml")
    p.add_argument("--branch", help="site branch (default: the open one)")
    p.add_argument("--site", help="site directory (default: named after the branch)")
    p.add_argument("--message", "-m", help="commit message")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--dry-run", action="store_true", help="show the diff only")
    p.add_argument("--reveal", action="store_true", help="show secret values in the diff")
    p.add_argument("--override-reason", metavar="TEXT",
                   help="submit even though the check has errors; the reason goes into the commit message and the audit log")
    _repo_options(p)
    _library_options(p)
    _common(p)
    p.set_defaults(func=local_command(_submit))
