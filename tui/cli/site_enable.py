"""`sitetk site components` and `sitetk site enable`: the component library and offering a
component (spec operation 9).

`enable` is the `EnableComponent` operation (tui.procedures.components.enable_operation) through the CLI
runner: with the cloud (the component has appliances, the cloud is reachable, no `--no-cloud`)
the appliances are downloaded and granted before the component is listed; without it only the
site variables are written. `--submit` then runs `site submit`'s operation, and one JSON answer
holds both (the submit's events under `submit`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tui.adapters.git_repo import GitRepo
from tui.adapters.vault import VaultPassword
from tui.cli.common import EXIT_OK, UsageError, emit_json
from tui.cli.runner import run_cli
from tui.cli.site_branches import submit
from tui.cli.site_options import (
    connect_for_enable,
    load_component_library,
    local_site,
    parse_set,
    sites_repository,
    vault_password,
    warn,
)
from tui.domain.components import ComponentDefinition
from tui.procedures.components.enable_operation import EnableComponent
from tui.procedures.components.provision import GRANT_POLICY
from tui.procedures.site.repo import current_site


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


async def components_command(args: argparse.Namespace) -> int:
    library = await load_component_library(args)
    if args.json:
        emit_json({"ok": True, "components": [_component_json(d) for d in library.definitions], "problems": list(library.problems)})
    else:
        print("\n".join(_component_text(d) for d in library.definitions))
        for problem in library.problems:
            print(f"warning: {problem}", file=sys.stderr)
    return EXIT_OK




async def enable_command(args: argparse.Namespace) -> int:
    values = dict(parse_set(args.set))
    warnings: list[str] = []
    password = vault_password(args, warnings)
    warn(warnings, args.json)
    library = await load_component_library(args)
    definition = library.get(args.component)
    if definition is None:
        raise UsageError(f"{args.component!r} is not in the component library (known: {', '.join(library.names()) or 'none'})")
    repo: GitRepo | None = None
    if args.path:
        path = Path(args.path)
        if args.submit:
            raise UsageError("--submit works on the open site of the sites repository, not with --path")
    else:
        repo = sites_repository(args)
        path = (await current_site(repo, args.site)).path
    try:
        code, answer = await _enable(args, path, password, definition, values, warnings)
        if code != EXIT_OK:
            return code
        if args.submit and repo is not None and not args.dry_run:
            submitted: list[dict[str, Any]] = []
            code = await submit(args, repo, await current_site(repo, args.site), password, answer_to=submitted.append)
            if code != EXIT_OK:
                return code
            if answer is not None:
                answer["submit"] = submitted[0]["events"] if submitted else []
    finally:
        if repo is not None:
            repo.close()
    if answer is not None:
        emit_json(answer)
    return EXIT_OK


def cloud_user_of(args: argparse.Namespace) -> str | None:
    """The automation cloud user: --cloud-user, or the input file's app_automation_cloud_username
    (--input); both given must agree. None: not named (a component with appliances is refused)."""
    named = (getattr(args, "cloud_user", None) or "").strip()
    path = getattr(args, "input", None)
    if not path:
        return named or None
    from tui.domain.naming import DEFAULT_NAMING
    from tui.domain.toolkit_inputs import secret_names
    from tui.errors import SiteError
    from tui.procedures.toolkit.service import read_input_file

    try:
        loaded = read_input_file(path, secret_names(DEFAULT_NAMING))
    except SiteError as error:
        raise UsageError(f"{error.title}: {error.detail}") from None
    field = DEFAULT_NAMING.input_name("automation_cloud_username")
    from_file = loaded.file.value_map().get(field, "").strip()
    if not from_file:
        raise UsageError(f"{path} names no {field}")
    if named and named != from_file:
        raise UsageError(f"--cloud-user {named} differs from {field} {from_file!r} of {path}")
    return from_file


async def _enable(args: argparse.Namespace, path: Path, password: VaultPassword, definition: ComponentDefinition,
                  values: dict[str, Any], warnings: list[str]) -> tuple[int, dict[str, Any] | None]:
    """The `EnableComponent` operation through the runner: with the cloud when the component has
    appliances (an unreachable cloud is an error), else only listed (`--no-cloud`: offline). Returns the exit code and the JSON
    answer (held back so that a submit after it adds to the same answer)."""
    site = None
    if definition.appliances and not args.no_cloud:
        site = await connect_for_enable(args)
    operation = EnableComponent(path, password, definition, values, cloud=site is not None,
                                allow_incomplete=args.allow_incomplete, cloud_user=cloud_user_of(args),
                                datastore_id=args.datastore, poll_interval=args.poll)
    answers: list[dict[str, Any]] = []
    runner_site = site if site is not None else local_site(args)
    try:
        code = await run_cli(args, runner_site, operation, extra={"warnings": warnings}, answer_to=answers.append,
                             before=f"note: {GRANT_POLICY}\n" if operation.provisions else "",
                             describe=lambda done: f"{done.component}: " + (f"enabled in {done.path}" if done.changed
                                                                             else "already enabled as requested"))
    finally:
        await runner_site.close()
    return code, answers[0] if answers else None
