"""The verbs of `sitetk market` (registered in tui.cli.market, which imports this module only when
one of them runs: the marketplaces, downloads and upgrades cost ~0.4 s of CPU to import).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    emit_json,
    print_error,
    print_event,
    table_console,
    usage,
)
from tui.cli.runner import run_cli
from tui.domain.attribute_file import ApplianceTag
from tui.domain.upgrades import InstallState
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.market.attributes import (
    AttachAttributes,
    attribute_text,
    default_targets,
    images_of_service_template,
    images_of_templates,
    tag_for_record,
    write_attribute_file,
)
from tui.procedures.market.download import (
    DownloadAppliance,
    DownloadResult,
    default_download_name,
    find_market_app,
)
from tui.procedures.market.marketplaces import CatalogEntry, MarketCatalog, load_catalog
from tui.procedures.market.upgrades import ApplyUpgrades, Upgraded, upgrade_plan_json
from tui.procedures.operation import RunContext
from tui.procedures.preview import Preview
from tui.procedures.progress import Progress

if TYPE_CHECKING:  # pragma: no cover
    from rich.table import Table

#: glyphs of the install states (never colour alone)
STATE_MARKS = {"not downloaded": "-", "up to date": "=", "update available": "^", "untagged image found": "?",
               "older build": "<", "newer build listed": "~"}


def _print(*renderables: Any) -> None:
    console = table_console()
    for renderable in renderables:
        console.print(renderable)


def _report_catalog_problems(catalog: MarketCatalog) -> None:
    for failure in catalog.failures:
        print(f"warning: {failure.source.name} ({failure.source.url}): {failure.title}", file=sys.stderr)
        if failure.detail:
            print(f"  {failure.detail}", file=sys.stderr)
    for error in catalog.record_errors:
        print(f"warning: skipped a record: {error}", file=sys.stderr)
    # records of registered marketplaces the cloud cannot export as listed, one line per reason
    reasons: dict[str, list[CatalogEntry]] = {}
    for entry in catalog.entries:
        if entry.source.registered and entry.cloud is not None and entry.cloud.app is None:
            reasons.setdefault(entry.cloud.title, []).append(entry)
    for title, held in reasons.items():
        print(f"note: {title} ({len(held)} appliance(s): {', '.join(e.record.name for e in held[:3])}"
              f"{', ...' if len(held) > 3 else ''}); `sitetk market show {held[0].key}` says what to do",
              file=sys.stderr)


def catalog_table(entries: list[CatalogEntry]) -> Table:
    from rich.table import Table  # imported when a table is printed: ~50 ms of CPU (issue 23)
    from rich.text import Text

    table = Table(box=None, header_style="bold", pad_edge=False)
    for name in ("NAME", "VERSION", "TYPE", "STATUS", "MARKETPLACE", "ID"):
        table.add_column(name)
    for entry in entries:
        version = entry.record.parsed_version
        status = f"{STATE_MARKS.get(entry.state.value, ' ')} {entry.status.label}"
        table.add_row(Text(entry.record.name), Text(version.label + ("" if version.conforming else " (!)")),
                      entry.record.type.value, Text(status), Text(entry.source.name), Text(entry.record.id))
    return table


def _matches(entry: CatalogEntry, text: str) -> bool:
    record = entry.record
    hay = " ".join((record.name, record.version, record.publisher, record.id, record.type.value,
                    entry.status.label, " ".join(record.tags))).casefold()
    return all(word in hay for word in text.casefold().split())


async def list_command(args: argparse.Namespace, site: SiteConnection) -> int:
    catalog = await load_catalog(site, all_versions=args.all_versions)
    entries = [e for e in catalog.entries if not args.filter or _matches(e, args.filter)]
    if args.json:
        emit_json({"ok": not catalog.all_failed, "platform_version": catalog.platform_version,
                   "marketplaces": [s.as_json() for s in catalog.sources],
                   "failures": [f.as_json() for f in catalog.failures], "record_errors": list(catalog.record_errors),
                   "hidden_other_versions": catalog.hidden_other_versions,
                   "other_series": [{"marketplace": name, "lists": listed} for name, listed in catalog.other_series],
                   "appliances": [e.as_json() for e in entries]})
    else:
        _report_catalog_problems(catalog)
        _print(catalog_table(entries))
        print(f"\n{len(entries)} appliance(s) for platform {catalog.platform_version} from "
              f"{len(catalog.sources) - len(catalog.failures)} of {len(catalog.sources)} marketplace(s)"
              + (f"; {catalog.hidden_other_versions} listed only for other platform versions"
                 if catalog.hidden_other_versions else "")
              + "; (!) marks a version that breaks vX.X.X-YYYYMMDD-HHMM")
    for name, listed in catalog.other_series:
        print(f"note: {name} lists nothing for platform {catalog.platform_version}; it answered its latest "
              f"series ({listed}), which the cloud's market driver imports too", file=sys.stderr)
    if not catalog.sources:
        print("warning: no marketplace: the cloud has none registered and the config file lists none "
              "([marketplace] urls)", file=sys.stderr)
    return EXIT_FAILED if catalog.all_failed else EXIT_OK


async def show_command(args: argparse.Namespace, site: SiteConnection) -> int:
    catalog = await load_catalog(site, all_versions=True)
    entry = catalog.find(args.appliance)
    if args.json:
        emit_json({"ok": True, "appliance": {**entry.as_json(), "description": entry.record.description,
                                             "short_description": entry.record.short_description,
                                             "extra": dict(entry.record.extra)}})
        return EXIT_OK
    width = max(len(label) for label, _ in entry.detail_rows())
    for label, value in entry.detail_rows():
        print(f"{label:<{width}}  " + value.replace("\n", "\n" + " " * (width + 2)))
    if entry.record.description:
        print()
        print(entry.record.description.rstrip())
    return EXIT_OK


async def download_command(args: argparse.Namespace, site: SiteConnection) -> int:
    if (args.appliance is None) == (args.app_id is None):
        return usage("give either an APPLIANCE or --app-id", args.json)
    tag: ApplianceTag | None = None
    if args.app_id is not None:
        app = await site.cloud.marketapp_info(args.app_id)
    else:
        entry = (await load_catalog(site, all_versions=True)).find(args.appliance)
        app = await find_market_app(site, entry.record)
        tag = tag_for_record(entry.record)
    operation = DownloadAppliance(app.id, args.datastore, args.name or default_download_name(app.name, app.version),
                                  tag, attach=not args.no_attributes, step_timeout=args.timeout,
                                  poll_interval=args.poll)

    def describe(result: DownloadResult) -> str:
        waited = f"; waited for {result.waited_for}" if result.waited_for else ""
        reused = f"; reused {', '.join(result.reused)} (nothing created twice)" if result.reused else ""
        return (f"{result.name}: downloaded into datastore {args.datastore}"
                + ("" if args.no_attributes else ", attributes attached") + waited + reused)

    return await run_cli(args, site, operation, describe=describe)


async def _attach_targets(args: argparse.Namespace, site: SiteConnection, entry: CatalogEntry) -> tuple[int, ...]:
    ids: list[int] = list(args.image or [])
    if args.template:
        ids += await images_of_templates(site, args.template)
    if args.service_template is not None:
        ids += await images_of_service_template(site, args.service_template)
    if not ids and not (args.image or args.template or args.service_template is not None):
        ids = list(default_targets(entry.status))
    return tuple(dict.fromkeys(ids))


def _nothing_to_tag(args: argparse.Namespace, entry: CatalogEntry) -> SiteError:
    """No image to tag: a state of the cloud (exit 1, as other "not there" refusals), not bad usage."""
    name = entry.record.name
    named = bool(args.image or args.template or args.service_template is not None)
    if not named and entry.status.state is InstallState.NOT_DOWNLOADED:
        return SiteError(f"{name} is not downloaded",
                         f"No image in the cloud looks like {name}: download it first (`sitetk market download "
                         f"{entry.key} --datastore ID`), or name the images with --image, --template or "
                         "--service-template.")
    where = "the templates named use no image" if named else "no untagged image, nor one tagged with this version"
    return SiteError(f"No image of {name} to tag",
                     f"{where.capitalize()}: name the images with --image, --template or --service-template.")


async def attrs_command(args: argparse.Namespace, site: SiteConnection) -> int:
    entry = (await load_catalog(site, all_versions=True)).find(args.appliance)
    tag = tag_for_record(entry.record)
    text = attribute_text(tag, site.naming)
    written: Path | None = None
    if args.write_file and not args.dry_run:
        written = write_attribute_file(text, args.write_file, force=args.force)
        if not args.json:
            print(f"wrote {written}", file=sys.stderr)
    if args.file_only:
        if args.json:
            emit_json({"ok": True, "file": text, "written": str(written) if written else None})
        else:
            sys.stdout.write(text)
        return EXIT_OK
    ids = await _attach_targets(args, site, entry)
    if not ids:
        raise _nothing_to_tag(args, entry)
    file_name = str(written) if written else (args.write_file or "<attribute file>")
    extra = {"file": text, "written": str(written) if written else None}
    return await run_cli(args, site, AttachAttributes(tag, ids, file_name), extra=extra,
                         before=f"attribute file:\n{text}")


async def upgrades_command(args: argparse.Namespace, site: SiteConnection) -> int:
    from tui.cli.site_options import parse_set

    parse_set(args.set)  # a malformed --set is refused before anything changes
    operation = ApplyUpgrades(only=tuple(args.only) if args.only else None, datastore_id=args.datastore,
                              step_timeout=args.timeout, poll_interval=args.poll)
    plan = await operation.plan(site)
    if not args.apply or args.dry_run:
        preview = operation.preview(plan)
        if args.json:
            emit_json({"ok": True, "dry_run": bool(args.dry_run), **upgrade_plan_json(plan),
                       "preview": preview.as_json()})
        else:
            _print(_upgrade_table(plan))
            print(preview.as_text())
        return EXIT_OK
    if args.datastore is None and not args.read_only:
        return usage("--apply needs --datastore DS_ID (the IMAGE datastore for the new versions)", args.json)
    answers: list[dict[str, Any]] = []
    done: list[Upgraded] = []
    code = await run_cli(args, site, operation, plan=plan, extra=upgrade_plan_json(plan),
                         before=lambda plan: _print(_upgrade_table(plan)), describe=lambda result: "upgrade applied",
                         answer_to=answers.append if args.json else emit_json, on_result=done.append,
                         nothing_to_do=lambda plan: "Nothing to upgrade." if plan.empty else None)
    if code != EXIT_OK or not done:
        if answers:
            emit_json(answers[-1])
        return code
    return await _site_follows(args, site, plan, done[-1], answers[-1] if answers else None)


async def _site_follows(args: argparse.Namespace, site: SiteConnection, plan: Any, upgraded: Upgraded,
                        answer: dict[str, Any] | None) -> int:
    """core.yaml changed to the new IDs and submitted with the upgrade named (tui.procedures.site.follow_upgrade)."""
    from tui.cli.site_options import parse_set, vault_password, warn
    from tui.procedures.site.follow_upgrade import update_site_ids, upgrade_message
    from tui.procedures.site.workspace import sites_repo

    changes = [c for c in upgraded.core_yaml if c.old >= 0 and c.new is not None]
    payload: dict[str, Any] = {"site": None}
    events: list[Progress] = []

    def finish(code: int, error: SiteError | None = None, **members: Any) -> int:
        payload["site"] = {**members, "events": [e.as_json() for e in events]}
        if args.json:
            body = {**(answer or {"ok": True}), **payload}
            if error is not None:
                print_error(error, True, **{k: v for k, v in body.items() if k not in ("ok", "error")})
            else:
                emit_json(body)
        elif error is not None:
            print_error(error, False)
        return code

    if not changes:
        return finish(EXIT_OK, skipped="no old ID was replaced")
    listed = "; ".join(f"{c.appliance} {c.kind} {c.old} -> {c.new}" for c in changes)
    if args.no_site or not site.settings.sites_repo:
        why = "--no-site" if args.no_site else "no sites repository is configured"
        if not args.json:
            print(f"core.yaml not changed ({why}): change these IDs in it: {listed}")
        return finish(EXIT_OK, skipped=why, changes=[c.as_json() for c in changes])
    branch, site_dir = await _site_branch(args, site)
    if not branch:
        error = SiteError("No site branch to update", f"The IDs to change: {listed}. Name the site with --branch BRANCH "
                          "[--site DIR] (the live toolkit service names none), then run `sitetk site edit` and "
                          "`sitetk site submit`.")
        return finish(EXIT_FAILED, error)
    warnings: list[str] = []
    try:
        password = vault_password(args, warnings)
    except UsageError as refused:
        error = SiteError("core.yaml not changed: no vault password", f"{refused}. The upgrade itself is done; the "
                          f"IDs to change on {branch}: {listed} (`sitetk site edit`, then `sitetk site submit`).")
        return finish(EXIT_FAILED, error, branch=branch, changes=[c.as_json() for c in changes])
    warn(warnings, args.json)
    repo = sites_repo(site.settings)
    message = upgrade_message(plan, {c.appliance for c in changes})
    records = tuple(s.record.id for s in plan.steps if s.record is not None)

    def show(event: Progress) -> None:
        events.append(event)
        if not args.json:
            print_event(event)

    try:
        updated = await update_site_ids(site, repo, branch, site_dir or branch, password, changes, message, RunContext(show),
                                        override_reason=args.override_reason, record_ids=records,
                                        values=dict(parse_set(args.set)), ask=_variable_asker(args),
                                        show_preview=None if args.json else _print_preview)
    except SiteError as error:
        return finish(EXIT_FAILED, error, branch=branch, message=message)
    finally:
        repo.close()
    found = updated.as_json()
    if not args.json:
        print(events[-1].message if events else "core.yaml: nothing to change")
        _print_site_variables(found["ignored"], found["missing"])
    return finish(EXIT_OK, branch=branch, message=message, **found)


def _print_preview(preview: Preview) -> None:
    """core.yaml's edit before it runs: each key, old -> new, with the hand-run command."""
    print(preview.as_text())


async def _site_branch(args: argparse.Namespace, site: SiteConnection) -> tuple[str, str | None]:
    """The site branch and folder to change: `--branch` and `--site`, else the ones the live toolkit
    service names (`toolkit.service.site_branch`); "" when none is known."""
    from tui.procedures.toolkit.service import site_branch

    if args.branch:
        return args.branch, args.site
    branch, named_dir = await site_branch(site)
    return branch, args.site or named_dir or None


def _print_site_variables(ignored: list[str], missing: list[dict[str, str]]) -> None:
    """The `--set` values core.yaml did not take, and the new site variables still to set."""
    for path in ignored:
        print(f"--set {path}: ignored, not a site variable the upgraded components need and core.yaml lacks")
    for item in missing:
        print(f"new site variable to set: {item['path']} ({item['about']}): `sitetk site edit FILE --set "
              f"{item['path']}=VALUE` then `sitetk site submit` (or --set it on the next upgrade)")


def _variable_asker(args: argparse.Namespace) -> Any:
    """Asks each new site variable on a terminal (empty: left unset, listed); None without one."""
    import sys

    from tui.cli.site_options import parse_set

    if args.json or not sys.stdin.isatty():
        return None

    async def ask(wanted: list[tuple[str, str]]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for path, about in wanted:
            answer = input(f"new site variable {path} ({about}; empty: leave it unset): ").strip()
            if answer:
                answers.update(parse_set([f"{path}={answer}"]))
        return answers

    return ask


def _upgrade_table(plan: Any) -> Table:
    from rich.table import Table  # imported when a table is printed: ~50 ms of CPU (issue 23)
    from rich.text import Text

    table = Table(box=None, header_style="bold", pad_edge=False)
    for name in ("Software", "Previous", "New"):
        table.add_column(name)
    for row in plan.rows:
        table.add_row(*(Text(cell) for cell in row.cells()))
    return table
