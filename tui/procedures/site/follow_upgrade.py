"""After an upgrade, the sites repository follows it (the spec's upgrade rules: "update core.yaml so
it points to the new image and template IDs, and add any new site variables").

`id_edits(config, changes)` finds, in the component map of the site's core.yaml, every variable
that holds an ID the upgrade replaced (`IdChange`: the old image, VM template or service template
and the new one) and pairs it with the new ID: a key ending in `image_id` holds an image, one
ending in `service_template_id` a service template, any other ending in `template_id` a VM
template (`collector_image_id`, nested versions such as `cluster.131.template_id` included). Only
values equal to an old ID change, so a variable of another appliance is never touched.

`missing_variables(config, definitions, records)` names the site variables the component library
defines (public.yaml) for the components offering an upgraded appliance that core.yaml lacks: the
new version's new variables (the library describes the version it holds now, so a variable never
set before is asked the same way). `update_site_ids` takes their values given (`values`, the CLI's
`--set PATH=VALUE`) or asks for the others (`ask`, a terminal's prompt); each answered one joins the
same edit, preview and commit as the IDs; one left unanswered is listed with the command that sets
it. A given path that is not one of them is ignored and said (`ignored`): the upgrade is done by
then, and its IDs must reach core.yaml all the same.

`update_site_ids(...)` does it with the site machinery every other core.yaml change uses: the site
branch opened in the working clone (`open_site`), the `EditSite` operation (one preview line per
key, old -> new, re-encrypted with the same vault password, comments kept, its own audit record),
then the `SubmitSite` operation with a commit message naming the upgrade (the check gate of every
submit: errors refuse unless an override reason is given; the edit then stays in the working clone
for `sitetk site submit`). Nothing in core.yaml to change: nothing is edited or committed.

`preview_site_ids(...)` is what the console's upgrade dialog shows once an upgrade is applied: the
same per-key edits and missing site variables, read from the pushed core.yaml of the site branch
(the one the live toolkit names, `tui.procedures.toolkit.service.site_branch`), decrypted in
memory with the configured vault password, changing nothing; what it could not read is said
(`reason`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Mapping, Sequence

from tui.domain.site_config import SiteConfig
from tui.errors import SiteError
from tui.procedures.market.upgrades import IdChange
from tui.procedures.progress import Progress, ProgressState

if TYPE_CHECKING:  # pragma: no cover
    from tui.adapters.git_repo import GitRepo
    from tui.adapters.vault import VaultPassword
    from tui.domain.components import ComponentDefinition
    from tui.domain.upgrades import UpgradePlan
    from tui.procedures.connection import SiteConnection
    from tui.procedures.operation import RunContext
    from tui.procedures.preview import Preview


@dataclass(frozen=True)
class IdEdit:
    """One core.yaml variable that held an old ID, and the new ID it gets."""

    path: str
    old: int
    new: int
    appliance: str
    kind: str

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "old": self.old, "new": self.new, "appliance": self.appliance, "kind": self.kind}


def id_kind(key: str) -> str | None:
    """The kind of object a site variable named `key` holds an ID of, None for other variables."""
    name = key.lower()
    if name.endswith("service_template_id"):
        return "service template"
    if name.endswith("template_id"):
        return "VM template"
    if name.endswith("image_id"):
        return "image"
    return None


def _leaves(prefix: str, value: Any) -> Iterable[tuple[str, str, Any]]:
    """(dotted path, last key, value) of every scalar under `value`."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(f"{prefix}.{key}", item) if isinstance(item, Mapping) else [(f"{prefix}.{key}", str(key), item)]


def _as_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def id_edits(config: SiteConfig, changes: Sequence[IdChange]) -> tuple[IdEdit, ...]:
    """The component-map variables holding an ID `changes` replaces (module docstring)."""
    replaced = {(c.kind, c.old): c for c in changes if c.old >= 0 and c.new is not None}
    variables = config.get(config.variables_key)
    edits: list[IdEdit] = []
    for path, key, value in _leaves(config.variables_key, variables if isinstance(variables, Mapping) else {}):
        kind, found = id_kind(key), _as_id(value)
        change = replaced.get((kind, found)) if kind is not None and found is not None else None
        if change is not None and change.new is not None:
            edits.append(IdEdit(path, change.old, change.new, change.appliance, change.kind))
    return tuple(edits)


def missing_variables(config: SiteConfig, definitions: Mapping[str, "ComponentDefinition"],
                      record_ids: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(dotted path, description) of each site variable the library defines for a listed component
    offering one of the upgraded appliances (`record_ids`) that core.yaml does not hold."""
    wanted = set(record_ids)
    missing: list[tuple[str, str]] = []
    for component in config.components():
        definition = definitions.get(component)
        if definition is None or not wanted & set(definition.appliance_record_ids()):
            continue
        base = f"{config.variables_key}.{component}"
        groups = set(definition.version_groups())
        for inner, description in definition.variable_paths():
            group = inner.split(".", 1)[0]
            if group in groups and not config.has(f"{base}.{group}"):
                continue  # a version the site does not offer
            if not config.has(f"{base}.{inner}"):
                missing.append((f"{base}.{inner}", description))
    return tuple(missing)


def upgrade_message(plan: "UpgradePlan", appliances: Iterable[str]) -> str:
    """The commit message: the upgrade named, appliance by appliance (`Bastion v1.3.0-... -> v1.3.0-...`)."""
    names = set(appliances)
    rows = [f"{row.software} {row.previous.label} -> {row.new.label}" for row in plan.rows if row.software in names]
    return f"Upgrade {', '.join(rows) or ', '.join(sorted(names))}: core.yaml image and template IDs"


@dataclass(frozen=True)
class SiteIdsPreview:
    """core.yaml's keys an applied upgrade changes, and the new site variables it needs."""

    branch: str = ""
    site_dir: str = ""
    edits: tuple[IdEdit, ...] = ()
    missing: tuple[tuple[str, str], ...] = ()
    #: why core.yaml was not read ("" when it was)
    reason: str = ""

    @property
    def commands(self) -> tuple[str, ...]:
        """The commands that apply it by hand (the CLI's `market upgrades --apply` does it itself);
        CORE_YAML is the path `sitetk site open` prints (in the working clone)."""
        if self.reason or not (self.edits or self.missing):
            return ()
        sets = " ".join(f"--set {e.path}={e.new}" for e in self.edits)
        sets += "".join(f" --set {path}=VALUE" for path, _ in self.missing)
        site_dir = self.site_dir or self.branch
        return (f"sitetk site open {self.branch}" + (f" --site {site_dir}" if site_dir != self.branch else ""),
                f"sitetk site edit CORE_YAML {sets.strip()}",
                "sitetk site submit")


async def preview_site_ids(site: "SiteConnection", branch: str, site_dir: str, changes: Sequence[IdChange],
                           record_ids: Sequence[str] = ()) -> SiteIdsPreview:
    """Read the site branch's pushed core.yaml and say which keys `changes` changes (module docstring)."""
    from tui.adapters.git_repo import SITE_CONFIG_FILE
    from tui.adapters.vault import decrypt_text_async, is_vault_text
    from tui.procedures.site.component_library import library_definitions
    from tui.procedures.site.workspace import sites_repo, vault_password

    if not site.settings.sites_repo:
        return SiteIdsPreview(reason="no sites repository is configured (sites_repo in the [site] table)")
    if not branch:
        return SiteIdsPreview(reason="the live toolkit service names no site branch")
    site_dir = site_dir or branch
    try:
        password = vault_password(site.settings)
    except SiteError as error:
        return SiteIdsPreview(branch, site_dir, reason=f"{error.title}")
    if password is None:
        return SiteIdsPreview(branch, site_dir, reason="no vault password file is configured (vault_password_file)")
    repo = sites_repo(site.settings)
    try:
        await repo.sync()
        text = await repo.read_file(f"origin/{branch}", f"{site_dir}/{SITE_CONFIG_FILE}")
        if text is None:
            return SiteIdsPreview(branch, site_dir, reason=f"{branch} holds no {site_dir}/{SITE_CONFIG_FILE}")
        if is_vault_text(text):
            text = await decrypt_text_async(text, password, f"{branch}:{site_dir}/{SITE_CONFIG_FILE}")
    except SiteError as error:
        return SiteIdsPreview(branch, site_dir, reason=f"{error.title}: {error.detail}")
    finally:
        repo.close()
    config = SiteConfig.parse(text, site.naming)
    try:
        definitions: Mapping[str, ComponentDefinition] | None = await library_definitions(site)
    except SiteError:
        definitions = None
    missing = missing_variables(config, definitions, record_ids) if definitions else ()
    return SiteIdsPreview(branch, site_dir, id_edits(config, changes), missing)


#: asks the operator for site variables: (dotted path, what it is) -> {path: value}
AskVariables = Callable[[list[tuple[str, str]]], Awaitable[Mapping[str, Any]]]


def _variable_values(missing: Sequence[tuple[str, str]], values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The given values of the missing variables, and the given paths that are not one of them
    (ignored and said: the upgrade itself is done by then, and its IDs must still reach core.yaml)."""
    wanted = {path for path, _ in missing}
    stray = sorted(set(values) - wanted)
    return {p: v for p, v in values.items() if p in wanted and v not in (None, "")}, stray


@dataclass(frozen=True)
class SiteIdsUpdated:
    """What `update_site_ids` did to core.yaml: the IDs changed, the new site variables written
    (`set`), those the library defines that core.yaml still lacks (`missing`: path, what it is) and
    the given paths that are not one of them (`ignored`)."""

    edits: tuple[IdEdit, ...] = ()
    set: tuple[str, ...] = ()
    missing: tuple[tuple[str, str], ...] = ()
    ignored: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {"edits": [e.as_json() for e in self.edits], "set": list(self.set),
                "missing": [{"path": p, "about": a} for p, a in self.missing], "ignored": list(self.ignored)}


async def update_site_ids(site: "SiteConnection", repo: "GitRepo", branch: str, site_dir: str,
                          password: "VaultPassword", changes: Sequence[IdChange], message: str, context: "RunContext", *,
                          override_reason: str | None = None, record_ids: Sequence[str] = (),
                          values: Mapping[str, Any] | None = None, ask: AskVariables | None = None,
                          show_preview: "Callable[[Preview], None] | None" = None) -> SiteIdsUpdated:
    """Edit and submit core.yaml (module docstring), reporting to `context`; the edit and the submit
    are operations run through `run_operation`, each with its own record (`RunContext.relay`).
    The edit's preview (each key, old -> new, with the hand-run command) goes to `show_preview`
    before the edit runs, as a verb shows an operation's preview before its run."""
    from tui.procedures.operation import run_operation
    from tui.procedures.site.component_library import library_definitions
    from tui.procedures.site.config import load_site_config
    from tui.procedures.site.file_operations import EditSite
    from tui.procedures.site.repo import open_site
    from tui.procedures.site.submit_operation import SubmitSite

    ref = await open_site(repo, branch, site_dir, context)
    config = (await load_site_config(ref.path, password, site.naming)).config
    edits = id_edits(config, changes)
    try:
        definitions: Mapping[str, ComponentDefinition] | None = await library_definitions(site)
    except SiteError:
        definitions = None
    missing = missing_variables(config, definitions, record_ids) if definitions else ()
    given, stray = _variable_values(missing, values or {})
    if not edits:
        found = SiteIdsUpdated(missing=tuple(missing), ignored=tuple(stray))
        context.report(Progress("core.yaml", 1, 1, f"{ref.site_dir}/core.yaml on {branch} holds none of the replaced IDs: "
                                "nothing to change", ProgressState.SKIPPED, found.as_json()))
        return found
    to_ask = [(p, a) for p, a in missing if p not in given]
    if to_ask and ask is not None:
        answers = await ask(to_ask)
        given.update({p: v for p, v in answers.items() if p in dict(to_ask) and v not in (None, "")})
    variables = [(p, given[p]) for p, _ in missing if p in given]
    found = SiteIdsUpdated(edits, tuple(p for p, _ in variables), tuple((p, a) for p, a in missing if p not in given),
                           tuple(stray))
    if variables:
        message += f"; new site variables {', '.join(p.rsplit('.', 1)[-1] for p, _ in variables)}"
    edit = EditSite(ref.path, password, [(e.path, e.new) for e in edits] + variables, definitions)
    planned = await edit.plan(site)
    preview = edit.preview(planned)
    context.report(Progress("core.yaml", 0, 1, f"{len(edits)} key(s) of {ref.site_dir}/core.yaml to change", ProgressState.RUNNING,
                            {**found.as_json(), "preview": preview.as_json()}))
    if show_preview is not None:
        show_preview(preview)
    await run_operation(site, edit, planned, context.relay(lambda event: event))
    submit = SubmitSite(repo, ref, password, message, override_reason, definitions)
    try:
        plan = await submit.plan(site)
    except SiteError as error:
        raise SiteError(f"core.yaml's new IDs are not submitted: {error.title}",
                        f"{error.detail}\nThe IDs are changed in the working clone ({ref.path}); fix what the check "
                        "says, or give a reason, then `sitetk site submit` (with --override-reason TEXT to go ahead "
                        "despite the errors).") from None
    await run_operation(site, submit, plan, context.relay(lambda event: event))
    said = "; ".join([f"{e.path} {e.old} -> {e.new}" for e in edits] + [f"{p} set" for p, _ in variables])
    context.report(Progress("core.yaml", 1, 1, f"{ref.site_dir}/core.yaml on {branch}: {said}", ProgressState.DONE, found.as_json()))
    return found
