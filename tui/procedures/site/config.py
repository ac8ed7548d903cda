"""Procedures on the site configuration file: encrypt, read, edit, save, check, enable a component.

Spec operation 6 (vault encryption of core.yaml) and the file side of operation 9 (listing a
component in the component map with its site variables). The file stays vault-encrypted at
rest: edits decrypt in memory, change the round-trip document (comments survive), re-encrypt and
replace the file atomically; a wrong password or an invalid result changes nothing. Unchanged
content is not rewritten (re-encrypting would produce new bytes for nothing), so re-runs are
idempotent. Every change is audit-logged with secrets redacted.

The appliance side of operation 9 (download the component's appliances, grant the automation
cloud user permissions) is plugged in through `enable_component(provision_appliances=...)`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Collection, Mapping, Sequence

from tui.adapters.vault import (
    VaultPassword as VaultPassword,  # re-exported: screens name the password type through procedures
)
from tui.adapters.vault import (
    decrypt_text_async,
    encrypt_text_async,
    is_vault_text,
    read_text,
    write_atomic,
)
from tui.domain.components import ComponentDefinition
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.domain.secret_names import MASK, is_secret_key
from tui.domain.site_checks import CloudIds, Finding, check_component_variables, check_site_config
from tui.domain.site_config import MISSING, SiteConfig, SiteConfigError, lookup
from tui.domain.site_fill import appliance_leaves
from tui.errors import SiteError
from tui.procedures.audit import REDACTOR, AuditLog
from tui.procedures.operation import OperationCancelled, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site.lock import config_lock

#: downloads a component's appliances and grants the automation cloud user permissions on their
#: images, templates and service templates; returns the site variable values it learned
#: (e.g. {"template_id": 12, "image_id": 40}, dotted keys for nested ones)
ApplianceProvisioner = Callable[[ComponentDefinition], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True)
class LoadedConfig:
    path: Path
    config: SiteConfig
    #: whether the file on disk is vault-encrypted
    encrypted: bool


@dataclass(frozen=True)
class ConfigWritten:
    """The result of a write of core.yaml (`encrypt_file`, `edit_file`, `save_text`,
    `enable_component`): whether the file changed, the changes (values as shown, secrets masked)
    and what the checks found."""

    path: Path
    changed: bool
    #: (dotted path, old value shown, new value shown)
    changes: tuple[tuple[str, str, str], ...] = ()
    findings: tuple[Finding, ...] = ()
    #: the new values as written, by dotted path, for the audit record (which redacts secrets);
    #: never in `as_json`
    values: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "changed": self.changed,
                "changes": [{"path": p, "old": old, "new": new} for p, old, new in self.changes],
                "findings": [f.as_json() for f in self.findings]}


@dataclass
class WriteLedger:
    """What a write of core.yaml did so far, kept as it goes (`RunContext.keep`): whether the file
    was replaced (one atomic rename: it holds the old text or the new, never a part). A run
    stopped hard after the rename still says so; the operation's `audit_failure` reads it."""

    path: Path
    written: bool = False

    def failure_record(self, error: SiteError) -> dict[str, Any] | None:
        """The audit details of a stopped write, or of a failed one that wrote; None for a run
        refused before it wrote anything (bad input, a wrong password: it changed nothing and said so)."""
        if not (self.written or isinstance(error, OperationCancelled)):
            return None
        return _write_left(self.path, self.written)


def _mark_written(ledger: WriteLedger | None) -> None:
    if ledger is not None:
        ledger.written = True


def _shown(changed: Sequence[tuple[str, Any, Any]]) -> tuple[tuple[str, str, str], ...]:
    return tuple((p, show_value(p, old), show_value(p, new)) for p, old, new in changed)


def invalid_yaml(error: SiteConfigError, path: Path | str) -> SiteError:
    where = f"line {error.line}, column {error.column}: " if error.line else ""
    return SiteError(f"{Path(path).name} is not valid YAML", f"{where}{error.message}. Nothing was written.")


def parse_config(text: str, path: Path | str, naming: NamingProfile = DEFAULT_NAMING) -> SiteConfig:
    try:
        return SiteConfig.parse(text, naming)
    except SiteConfigError as error:
        raise invalid_yaml(error, path) from None


def _register(password: VaultPassword | None) -> None:
    if password is not None:
        REDACTOR.register(password.text)


async def load_site_config(path: Path, password: VaultPassword | None, naming: NamingProfile = DEFAULT_NAMING) -> LoadedConfig:
    """Read core.yaml (decrypting in memory when it is vault text) and parse it."""
    path = Path(path)
    raw = read_text(path)
    if is_vault_text(raw):
        if password is None:
            raise SiteError("Vault password needed", f"{path} is vault-encrypted; give the vault password file (--vault-password-file).")
        _register(password)
        text = await decrypt_text_async(raw, password, str(path))
        return LoadedConfig(path, parse_config(text, path, naming), True)
    return LoadedConfig(path, parse_config(raw, path, naming), False)


async def _load_encrypted(path: Path, password: VaultPassword, naming: NamingProfile) -> SiteConfig:
    loaded = await load_site_config(path, password, naming)
    if not loaded.encrypted:
        raise SiteError("Not encrypted", f"{path} is plain text; encrypt it first (sitetk site encrypt {shlex.quote(str(path))}).")
    return loaded.config


def vault_cli(verb: str, path: Path, password: VaultPassword) -> str:
    """The equivalent hand-run command (the password file by name, never its content)."""
    source = password.source if password.source not in ("prompt", "") else "<vault password file>"
    return f"ansible-vault {verb} --vault-password-file {shlex.quote(source)} {shlex.quote(str(path))}"


async def preview_encrypt(path: Path, password: VaultPassword) -> Preview:
    """What `encrypt_file` would do: encrypt in place, or nothing when already encrypted."""
    path = Path(path)
    if is_vault_text(read_text(path)):
        return Preview(f"Encrypt {path}", (Change(f"{path} is already vault-encrypted", "", "none"),))
    return Preview(f"Encrypt {path}", (Change(f"encrypt {path} in place (mode 0600)", vault_cli("encrypt", path, password), "update"),))


async def encrypt_file(path: Path, password: VaultPassword, context: RunContext, *, naming: NamingProfile = DEFAULT_NAMING,
                       ledger: WriteLedger | None = None) -> ConfigWritten:
    """Encrypt a plain core.yaml in place (checked to be valid YAML first); already encrypted: skipped.

    Reports to `context`; `ledger` keeps whether the file was replaced. Run as the `EncryptSite`
    operation, which writes the audit record."""
    path = Path(path)
    step, total = "encrypt", 3
    _register(password)
    async with config_lock(path):
        raw = read_text(path)
        context.report(Progress(step, 1, total, f"read {path}"))
        if is_vault_text(raw):
            await decrypt_text_async(raw, password, str(path))  # a wrong password still says so
            context.report(Progress(step, total, total, f"{path} is already vault-encrypted", state=ProgressState.SKIPPED,
                                    data={"path": str(path), "changed": False}))
            return ConfigWritten(path, False)
        parse_config(raw, path, naming)
        context.report(Progress(step, 2, total, "valid YAML"))
        encrypted = await encrypt_text_async(raw, password)
        write_atomic(path, encrypted)
        _mark_written(ledger)
    context.report(Progress(step, total, total, f"encrypted {path} (mode 0600)", state=ProgressState.DONE,
                            data={"path": str(path), "changed": True}))
    return ConfigWritten(path, True)


def show_value(path: str, value: Any) -> str:
    if is_secret_key(path.rsplit(".", 1)[-1]) and value not in (None, ""):
        return MASK
    return "null" if value is None else repr(value) if isinstance(value, str) else str(value)


def _changes(before: SiteConfig, changes: Sequence[tuple[str, Any]]) -> list[tuple[str, Any, Any]]:
    result = []
    for path, value in changes:
        old = before.get(path, MISSING)  # the value alone copied, not the whole file's (`data`)
        if old is MISSING or old != value or type(old) is not type(value):
            result.append((path, None if old is MISSING else old, value))
    return result


async def preview_edit(path: Path, password: VaultPassword, changes: Sequence[tuple[str, Any]], naming: NamingProfile = DEFAULT_NAMING) -> Preview:
    """What `edit_file` would change (secret values masked) and the hand-run equivalent."""
    before = await _load_encrypted(Path(path), password, naming)
    try:
        before.edit(list(changes))
    except SiteConfigError as error:
        raise SiteError("Cannot apply the change", error.message) from None
    diff = _changes(before, changes)
    items = tuple(
        Change(f"{p}: {show_value(p, old)} -> {show_value(p, new)}", vault_cli("edit", Path(path), password), "update") for p, old, new in diff
    ) or (Change(f"{path}: already as requested", "", "none"),)
    return Preview(f"Edit {path}", items)


async def edit_file(
    path: Path,
    password: VaultPassword,
    changes: Sequence[tuple[str, Any]],
    context: RunContext,
    *,
    naming: NamingProfile = DEFAULT_NAMING,
    definitions: Mapping[str, ComponentDefinition] | None = None,
    audit: AuditLog | None = None,
    ledger: WriteLedger | None = None,
) -> ConfigWritten:
    """Apply dotted-path changes to an encrypted core.yaml in memory and re-encrypt it.

    The file is read, changed and written under its lock (`site_lock`): another process's edit
    at the same time lands before or after this one, never instead of it. Reports to `context`;
    records the change only when handed `audit` (a direct caller; the `EditSite` operation
    records its run itself)."""
    path = Path(path)
    step, total = "edit", 3
    async with config_lock(path):
        before = await _load_encrypted(path, password, naming)
        context.report(Progress(step, 1, total, f"decrypted {path} in memory"))
        try:
            after = before.edit(list(changes))
        except SiteConfigError as error:
            raise SiteError("Cannot apply the change", f"{error.message}. Nothing was written.") from None
        write = _Write(path, password, step, total, naming, definitions, ledger)
        written = await _write_config(write, before, after, _changes(before, changes), context)
    if audit is not None and written.changed:  # a direct caller; an operation records the run itself (`write_details`)
        audit.record("site.edit", str(path), details=write_details(path, password, written.values))
    return written


async def save_text(
    path: Path,
    password: VaultPassword,
    text: str,
    context: RunContext,
    *,
    naming: NamingProfile = DEFAULT_NAMING,
    definitions: Mapping[str, ComponentDefinition] | None = None,
    expected: str | None = None,
    ledger: WriteLedger | None = None,
) -> ConfigWritten:
    """Replace the configuration with `text` (from the editor): valid YAML only, encrypted, atomic.
    Run as the `SaveSite` operation, which writes the audit record.

    `expected` is the decrypted text the editor started from: when the file now holds something
    else (another operator or process changed it meanwhile), nothing is written and the SiteError
    says so, rather than silently replacing their change."""
    path = Path(path)
    step, total = "save", 3
    after = parse_config(text, path, naming)
    async with config_lock(path):
        raw = read_text(path)
        if is_vault_text(raw):
            before = parse_config(await decrypt_text_async(raw, password, str(path)), path, naming)
        else:
            before = SiteConfig("", naming.site_variables_key)
        if expected is not None and before.text != expected and before.text != after.text:
            raise SiteError(
                f"{path.name} changed since it was opened",
                f"Another process changed {path} after the editor loaded it. Nothing was written: copy your change, "
                "reload the file to see theirs, then apply yours again.",
            )
        context.report(Progress(step, 1, total, "valid YAML"))
        return await _write_config(_Write(path, password, step, total, naming, definitions, ledger), before, after, [], context)


def write_details(path: Path, password: VaultPassword, values: Mapping[str, Any]) -> dict[str, Any]:
    """The audit details of a write of core.yaml: the new values by dotted path (the audit log
    redacts secrets) and the hand-run equivalent."""
    return {"changes": dict(values), "cli": vault_cli("edit", path, password)}


def _write_left(path: Path, written: bool) -> dict[str, Any]:
    return {"path": str(path), "written": written,
            "left": "the new text was written (vault-encrypted, mode 0600)" if written else f"nothing: {path} is as it was"}


def write_failure_details(ledger: WriteLedger) -> dict[str, Any]:
    """The audit details of a component's enable that failed or was stopped (a stop signal): whether
    core.yaml was replaced (the run's `WriteLedger`), whatever the error."""
    return _write_left(ledger.path, ledger.written)


@dataclass(frozen=True)
class _Write:
    """Where a write goes and how it is checked: the file, its password and step, the naming and
    definitions of the checks, and the run's `WriteLedger`."""

    path: Path
    password: VaultPassword
    step: str
    total: int
    naming: NamingProfile
    definitions: Mapping[str, ComponentDefinition] | None
    ledger: WriteLedger | None


async def _write_config(write: _Write, before: SiteConfig, after: SiteConfig, changed: list[tuple[str, Any, Any]],
                        context: RunContext) -> ConfigWritten:
    path, step, total = write.path, write.step, write.total
    findings = check_site_config(after, naming=write.naming, definitions=write.definitions)
    data: dict[str, Any] = {
        "path": str(path),
        "changes": [{"path": p, "old": show_value(p, old), "new": show_value(p, new)} for p, old, new in changed],
        "findings": [f.as_json() for f in findings],
    }
    if after.text == before.text:
        context.report(Progress(step, total, total, "no change: file left as it was", state=ProgressState.SKIPPED,
                                data={**data, "changed": False}))
        return ConfigWritten(path, False, _shown(changed), tuple(findings))
    encrypted = await encrypt_text_async(after.text, write.password)
    context.report(Progress(step, 2, total, "re-encrypted"))
    write_atomic(path, encrypted)
    _mark_written(write.ledger)
    context.report(Progress(step, total, total, f"wrote {path} (vault-encrypted, mode 0600)", state=ProgressState.DONE,
                            data={**data, "changed": True}))
    return ConfigWritten(path, True, _shown(changed), tuple(findings), {p: new for p, _old, new in changed})


async def check_site_file(
    path: Path,
    password: VaultPassword | None,
    *,
    naming: NamingProfile = DEFAULT_NAMING,
    definitions: Mapping[str, ComponentDefinition] | None = None,
    cloud: CloudIds | None = None,
    nic_mtu: int | None = None,
) -> tuple[Finding, ...]:
    """Every check of point 3 on a core.yaml (encrypted or plain); a parse error is a SiteError."""
    loaded = await load_site_config(Path(path), password, naming)
    return check_site_config(loaded.config, naming=naming, definitions=definitions, cloud=cloud, nic_mtu=nic_mtu)


def component_values(definition: ComponentDefinition, current: Any, *layers: Mapping[str, Any]) -> dict[str, Any]:
    """The component's site variables as dotted leaf -> value: current values, then each layer on top."""
    values: dict[str, Any] = {}
    for leaf, _description in definition.variable_paths():
        found = lookup(current, leaf) if isinstance(current, Mapping) else MISSING
        values[leaf] = None if found is MISSING else found
    known = set(values)
    for layer in layers:
        for key, value in layer.items():
            if key not in known:
                raise SiteError(
                    f"{definition.name} has no site variable {key!r}",
                    f"Its site variables are: {', '.join(sorted(known)) or 'none'}.",
                )
            values[key] = value
    return values


@dataclass(frozen=True)
class EnablePlan:
    """What enabling a component changes: the new configuration and each changed variable."""

    after: SiteConfig
    values: Mapping[str, Any]
    changed: tuple[tuple[str, Any, Any], ...]
    missing: tuple[str, ...]


def plan_enable(
    before: SiteConfig,
    definition: ComponentDefinition,
    values: Mapping[str, Any] | None = None,
    learned: Mapping[str, Any] | None = None,
    naming: NamingProfile = DEFAULT_NAMING,
) -> EnablePlan:
    """The component listed with its variables: current values, then `learned`, then `values`."""
    merged = _offered_versions(definition, component_values(definition, before.component_variables(definition.name), learned or {}, values or {}))
    missing = tuple(leaf for leaf, value in merged.items() if value is None or value == "")
    after = before.with_component(definition.name, merged or None)
    prefix = f"{naming.site_variables_key}.{definition.name}"
    changed = _changes(before, [(f"{prefix}.{leaf}", value) for leaf, value in merged.items()] or [(prefix, None)])
    return EnablePlan(after, merged, tuple(changed), missing)


def missing_before_enable(
    before: SiteConfig,
    definition: ComponentDefinition,
    values: Mapping[str, Any] | None,
    from_appliance: Collection[str],
    naming: NamingProfile = DEFAULT_NAMING,
) -> tuple[str, ...]:
    """The site variables that would stay unset: not in the file, not given, not filled by the appliance."""
    stand_ins = {leaf: _FROM_APPLIANCE for leaf in from_appliance}  # the appliance's IDs, known once it is downloaded
    given = values or {}
    return tuple(leaf for leaf in plan_enable(before, definition, values, stand_ins, naming).missing if leaf not in from_appliance or leaf in given)


async def check_enable_inputs(
    path: Path,
    password: VaultPassword,
    definition: ComponentDefinition,
    values: Mapping[str, Any] | None,
    from_appliance: Collection[str],
    naming: NamingProfile = DEFAULT_NAMING,
) -> None:
    """Raise the "site variables missing" SiteError before anything is planned or confirmed."""
    before = await _load_encrypted(Path(path), password, naming)
    missing = missing_before_enable(before, definition, values, from_appliance, naming)
    if missing:
        raise _missing_error(definition, missing, nothing_created=True)


def _offered_versions(definition: ComponentDefinition, merged: dict[str, Any]) -> dict[str, Any]:
    """Versioned groups (`129`, `131`) that nothing fills (not in the file, not given, no build of
    that version downloaded or offered) are left out, once at least one version is filled."""
    groups = definition.version_groups()
    if not groups:
        return merged

    def group_of(leaf: str) -> str:
        return leaf.split(".", 1)[0] if "." in leaf else ""

    filled = {group_of(leaf) for leaf, value in merged.items() if group_of(leaf) in groups and value not in (None, "")}
    if not filled:
        return merged
    return {leaf: value for leaf, value in merged.items() if group_of(leaf) not in groups or group_of(leaf) in filled}


def _missing_error(definition: ComponentDefinition, missing: Sequence[str], *, nothing_created: bool = False) -> SiteError:
    described = dict(definition.variable_paths())
    wanted = "; ".join(f"{leaf} ({described[leaf]})" if described.get(leaf) else leaf for leaf in missing)
    also = " Nothing was downloaded or granted." if nothing_created else ""
    return SiteError(f"{definition.name}: site variables missing", f"Give {wanted} (--set VAR=VALUE). Nothing was written.{also}")


async def preview_enable_component(
    path: Path,
    password: VaultPassword,
    definition: ComponentDefinition,
    values: Mapping[str, Any] | None = None,
    naming: NamingProfile = DEFAULT_NAMING,
    from_appliance: Collection[str] = (),
) -> Preview:
    """The site-variable changes of `enable_component` (the appliance step previews its own).

    `from_appliance` names the variables the appliance step will fill (shown as such, not as unset).
    """
    path = Path(path)
    before = await _load_encrypted(path, password, naming)
    stand_ins = {leaf: _FROM_APPLIANCE for leaf in from_appliance if leaf not in (values or {})}
    plan = plan_enable(before, definition, values, stand_ins, naming)
    cli = vault_cli("edit", path, password)
    changes = []
    for p, old, new in plan.changed:
        was = show_value(p, old) if before.has(p) else "(not there)"
        will = "the appliance's ID" if new == _FROM_APPLIANCE else show_value(p, new)
        changes.append(Change(f"{p}: {was} -> {will}", cli, "update"))
    if not changes:
        changes.append(Change(f"{definition.name}: already listed as requested", "", "none"))
    for record in definition.appliance_record_ids():
        changes.append(Change(f"appliance {record}: downloaded and shared with the automation cloud user by the appliance step", "", "action"))
    warnings = tuple(f"{leaf} is not set yet" for leaf in plan.missing)
    versions = definition.version_groups()
    left_out = sorted({leaf.split(".", 1)[0] for leaf, _ in definition.variable_paths()
                       if leaf.split(".", 1)[0] in versions and leaf not in plan.values})
    if left_out:
        warnings += (f"version(s) {', '.join(left_out)}: no build is downloaded or offered by a marketplace and no ID is given; "
                     f"left out (give --set {left_out[0]}.<variable>=ID to list it)",)
    return Preview(f"Enable {definition.name} in {path}", tuple(changes), warnings=warnings)


#: stands for an ID the appliance step will give (previews and the early check; never written)
_FROM_APPLIANCE = "<the appliance's ID>"


def enable_details(definition: ComponentDefinition, path: Path, changes: Mapping[str, Any]) -> dict[str, Any]:
    """The audit details of an enabled component: the file, the values written, its appliances."""
    return {"path": str(path), "changes": dict(changes), "appliances": list(definition.appliance_record_ids())}


async def enable_component(
    path: Path,
    password: VaultPassword,
    definition: ComponentDefinition,
    context: RunContext,
    values: Mapping[str, Any] | None = None,
    *,
    naming: NamingProfile = DEFAULT_NAMING,
    provision_appliances: ApplianceProvisioner | None = None,
    from_appliance: Collection[str] | None = None,
    allow_incomplete: bool = False,
    audit: AuditLog | None = None,
    ledger: WriteLedger | None = None,
) -> ConfigWritten:
    """List a component in the component map with its site variables (spec operation 9), reporting
    to `context`; `ledger` marks the file replaced right after the atomic rename. Returns what the
    write did (`ConfigWritten`: unchanged when the component is enabled as requested already).

    Order: decrypt (a wrong password stops everything), check that every variable is given
    except `from_appliance` (the IDs the appliance step fills, by default those the standard
    provisioner fills, `domain.site_fill.appliance_leaves`; unless `allow_incomplete`: before
    anything is created), appliances (the provisioner downloads them and grants permissions; the
    values it returns fill the IDs), site variables (given `values` override), check again, write.
    """
    path = Path(path)
    step, total = f"enable {definition.name}", 5
    before = await _load_encrypted(path, password, naming)
    context.report(Progress(step, 1, total, f"decrypted {path} in memory"))
    if not allow_incomplete:
        # everything the operator must give is checked before the cloud changes: only the IDs the
        # appliance step fills by itself may be missing now
        given_later: Collection[str] = frozenset()
        if provision_appliances is not None and definition.appliances:
            given_later = appliance_leaves(definition) if from_appliance is None else from_appliance
        early = missing_before_enable(before, definition, values, given_later, naming)
        if early:
            raise _missing_error(definition, early, nothing_created=provision_appliances is not None and bool(definition.appliances))
    learned: Mapping[str, Any] = {}
    if not definition.appliances:
        context.report(Progress(step, 2, total, f"{definition.name} uses no appliance", state=ProgressState.SKIPPED))
    elif provision_appliances is None:
        ids = ", ".join(definition.appliance_record_ids())
        context.report(Progress(step, 2, total, f"appliances ({ids}) not downloaded here: give their IDs as site variables",
                                state=ProgressState.SKIPPED))
    else:
        context.report(Progress(step, 2, total, "downloading appliances and granting permissions: "
                                f"{', '.join(definition.appliance_record_ids())}"))
        learned = dict(await provision_appliances(definition))
    plan = plan_enable(before, definition, values, learned, naming)
    if plan.missing and not allow_incomplete:
        raise _missing_error(definition, plan.missing)
    context.report(Progress(step, 3, total, f"{definition.name} listed with {len(plan.values)} site variable(s)"))
    own = f"{naming.site_variables_key}.{definition.name}"
    findings = [f for f in check_component_variables(plan.after, {definition.name: definition}) if f.path == own or f.path.startswith(own + ".")]
    context.report(Progress(step, 4, total, "site variables checked" if not findings else f"{len(findings)} problem(s) left",
                            data={"findings": [f.as_json() for f in findings]}))
    async with config_lock(path):
        # the appliance step can take minutes: another operator may have changed the file
        # meanwhile, so the component is listed in what the file holds now, not in `before`
        before = await _load_encrypted(path, password, naming)
        plan = plan_enable(before, definition, values, learned, naming)
        if plan.missing and not allow_incomplete:
            raise _missing_error(definition, plan.missing)
        if plan.after.text == before.text:
            context.report(Progress(step, total, total, f"{definition.name} already enabled as requested",
                                    state=ProgressState.SKIPPED, data={"path": str(path), "changed": False}))
            return ConfigWritten(path, False, (), tuple(findings))
        write_atomic(path, await encrypt_text_async(plan.after.text, password))
        _mark_written(ledger)
    if audit is not None:  # a direct caller (the guided setup); the `EnableComponent` operation records the run itself
        audit.record("site.enable_component", definition.name,
                     details=enable_details(definition, path, {p: new for p, _old, new in plan.changed}))
    context.report(Progress(
        step,
        total,
        total,
        f"{definition.name} enabled in {path}",
        state=ProgressState.DONE,
        data={"path": str(path), "changed": True, "changes": [{"path": p, "old": show_value(p, o), "new": show_value(p, n)} for p, o, n in plan.changed]},
    ))
    return ConfigWritten(path, True, _shown(plan.changed), tuple(findings), {p: new for p, _old, new in plan.changed})
