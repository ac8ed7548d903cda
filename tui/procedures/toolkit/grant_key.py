"""Operation 5: give the automation VM's public key to the cloud user the automation server uses.

The user named in the automation's cloud-username input gets the key in its SSH_PUBLIC_KEY
attribute, so VMs it deploys (whose context copies `$USER[SSH_PUBLIC_KEY]`) accept the
automation server without passwords. The update runs in merge mode (`user update` with
append=1) and its text holds only SSH_PUBLIC_KEY: every other attribute of the user stays as it
is. The value keeps every key already there, in order, one a line, and adds this key on its own
line unless it is already there (same type and blob, whatever the comment): a second grant
changes nothing. The value is written with the template text's escaping (quotes and
backslashes), so a comment with either survives.

`plan_grant` reads the user and says what will change (`GrantPlan.preview()`, with the platform
CLI equivalent `oneuser update <user> <file> --append`); `grant_ssh_key(site, plan, context)` re-reads the user right
before the update (keys added meanwhile are kept), updates, reads back to verify that the key is
there and no earlier key was lost, and records the grant in the site record when one is given.
The `GrantKey` operation's run is audit-logged once, by the pipeline (the key's fingerprint, never
a secret; a failure says whether the update reached the user and the command that checks it).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from tui.domain.site_record import SiteRecord
from tui.domain.ssh_keys import SshKeyError, SshPublicKey, has_key, line_has_key, parse_public_key, with_key
from tui.domain.template_text import render_template
from tui.domain.users import SSH_PUBLIC_KEY, User, split_keys
from tui.errors import SiteError
from tui.procedures.operation import Confirmation, Operation, RunContext
from tui.procedures.preview import Change, Preview
from tui.procedures.progress import Progress, ProgressState
from tui.procedures.site_record import load_site_record, save_site_record

if TYPE_CHECKING:  # pragma: no cover
    from tui.procedures.connection import SiteConnection

KEY_FILE_PLACEHOLDER = "<key file>"


@dataclass(frozen=True)
class GrantPlan:
    user_id: int
    user_name: str
    key: SshPublicKey
    #: the user's SSH_PUBLIC_KEY lines now
    existing: tuple[str, ...]
    #: the whole SSH_PUBLIC_KEY value after the grant
    new_value: str

    @property
    def already(self) -> bool:
        return any(line_has_key(line, self.key) for line in self.existing)

    @property
    def text(self) -> str:
        """The update's template text: SSH_PUBLIC_KEY only, escaped."""
        return render_template([(SSH_PUBLIC_KEY, self.new_value)])

    def cli(self, file_path: str = KEY_FILE_PLACEHOLDER) -> str:
        shown = file_path if file_path == KEY_FILE_PLACEHOLDER else shlex.quote(file_path)
        return f"oneuser update {shlex.quote(self.user_name)} {shown} --append"

    def preview(self, file_path: str = KEY_FILE_PLACEHOLDER) -> Preview:
        label = f"user {self.user_id} {self.user_name!r}"
        if self.already:
            change = Change(f"{label} already has the key {self.key.fingerprint}: nothing to change", "", "none")
        else:
            kept = len(self.existing)
            change = Change(f"add the automation key {self.key.short()} to SSH_PUBLIC_KEY of {label}"
                            f" (keeps its {kept} key(s); merge mode, other attributes unchanged)",
                            self.cli(file_path), "update")
        return Preview(f"Give the automation key to cloud user {self.user_name!r}", (change,), target=label)

    def as_json(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "user_name": self.user_name, "public_key": self.key.line,
                "fingerprint": self.key.fingerprint, "existing_keys": list(self.existing),
                "already": self.already, "update_text": self.text}


def _key(key: SshPublicKey | str) -> SshPublicKey:
    if isinstance(key, SshPublicKey):
        return key
    try:
        return parse_public_key(key)
    except SshKeyError as exc:
        raise SiteError("Not an SSH public key", f"{exc}.") from None


async def find_user(site: "SiteConnection", user_name: str) -> User:
    """The cloud user by name (full record); raises SiteError saying what to do when missing."""
    name = user_name.strip()
    if not name:
        raise SiteError("No cloud user named",
                        "The automation's cloud-username input is empty: it names the user the key goes to.")
    users = await site.cloud.list_users()
    match = next((u for u in users if u.name == name), None)
    if match is None:
        raise SiteError(f"No cloud user {name!r}",
                        f"The automation server deploys trial networks as {name!r}, the user named in the "
                        f"{site.naming.input_name(site.naming.role_automation + '_cloud_username')} input. Create it "
                        f"(`oneuser create {shlex.quote(name)} <password>`) or fix the input, then retry.")
    return await site.cloud.user_info(match.id)


def plan_for_user(user: User, key: SshPublicKey) -> GrantPlan:
    value = user.template.get(SSH_PUBLIC_KEY)
    new_value, _ = with_key(value, key)
    return GrantPlan(user.id, user.name, key, split_keys(value), new_value)


async def plan_grant(site: "SiteConnection", key: SshPublicKey | str, user_name: str) -> GrantPlan:
    """Read the user and work out the new SSH_PUBLIC_KEY value; nothing is changed."""
    return plan_for_user(await find_user(site, user_name), _key(key))


def grant_details(plan: GrantPlan, keys_before: int) -> dict[str, Any]:
    """What an audit record of the grant says about the key (its fingerprint, never a secret)."""
    return {"fingerprint": plan.key.fingerprint, "type": plan.key.type, "comment": plan.key.comment,
            "append": 1, "keys_before": keys_before}


async def grant_ssh_key(site: "SiteConnection", plan: GrantPlan, context: RunContext, *,
                        record: SiteRecord | None = None) -> KeyGranted:
    """Apply the plan (see the module docstring), reporting to `context`; raises SiteError when the
    read-back disagrees."""
    total = 3
    label = f"user {plan.user_id} {plan.user_name}"
    context.report(Progress("read user", 0, total, f"reading {label}"))
    current = plan_for_user(await site.cloud.user_info(plan.user_id), plan.key)
    context.report(Progress("read user", 1, total, f"{label} has {len(current.existing)} key(s)", ProgressState.DONE,
                   {"user_id": plan.user_id, "keys": len(current.existing)}))
    if current.already:
        _remember(site, record, plan.user_name)
        context.report(Progress("update user", 2, total, f"{label} already has the key {plan.key.fingerprint}; unchanged",
                       ProgressState.SKIPPED, {"user_id": plan.user_id, "changed": False}))
        context.report(Progress("verify", 3, total, "nothing to verify", ProgressState.SKIPPED,
                       {"user_id": plan.user_id, "changed": False}))
        return KeyGranted(plan.user_id, plan.user_name, False)
    context.report(Progress("update user", 1, total, current.cli()))
    try:
        await site.cloud.user_update(plan.user_id, current.text, 1)
        after = await site.cloud.user_info(plan.user_id)
    finally:
        site.note_change()  # sent, whatever came back
    context.report(Progress("update user", 2, total, f"SSH_PUBLIC_KEY of {label} updated (merge mode)", ProgressState.DONE,
                   {"user_id": plan.user_id, "changed": True}))
    value = after.template.get(SSH_PUBLIC_KEY)
    lost = [line for line in current.existing if line not in split_keys(value)]
    if not has_key(value, plan.key) or lost:
        why = "the key is missing" if not has_key(value, plan.key) else f"{len(lost)} earlier key(s) are missing"
        context.report(Progress("verify", 2, total, f"read back: {why}", ProgressState.FAILED, {"user_id": plan.user_id}))
        raise SiteError(f"User {plan.user_name}'s keys are not as written",
                        f"The cloud accepted the update but reading {label} back shows that {why}. Check it with "
                        f"`oneuser show {shlex.quote(plan.user_name)}`; the grant can be run again safely.")
    _remember(site, record, plan.user_name)
    context.report(Progress("verify", 3, total, f"{label} now has {len(split_keys(value))} key(s), the automation key among them",
                   ProgressState.DONE, {"user_id": plan.user_id, "changed": True, "keys": len(split_keys(value))}))
    return KeyGranted(plan.user_id, plan.user_name, True, len(current.existing), len(split_keys(value)))


def _remember(site: "SiteConnection", record: SiteRecord | None, user_name: str) -> None:
    if record is None:
        return
    current = load_site_record(site.settings, record.service_id) or record
    if user_name not in current.key_granted_to:
        save_site_record(site.settings, replace(current, key_granted_to=current.key_granted_to + (user_name,)))


@dataclass(frozen=True)
class KeyGranted:
    """The grant's result: whether the user's keys changed."""

    user_id: int
    user_name: str
    changed: bool
    #: the user's keys before and after the update (when it changed them)
    keys_before: int = 0
    keys_after: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "user_name": self.user_name, "changed": self.changed}


@dataclass(frozen=True)
class GrantKey(Operation[GrantPlan, KeyGranted]):
    """Operation 5 as an operation: `key` (a public key line) to the cloud user `user_name`;
    the site record, when given, remembers the grant."""

    key: str
    user_name: str
    record: SiteRecord | None = None

    title: ClassVar[str] = "Give the automation key to the cloud user"
    refusal: ClassVar[str] = "granting the key changes the cloud user"
    action: ClassVar[str] = "user.ssh_key.grant"

    async def plan(self, site: "SiteConnection") -> GrantPlan:
        return await plan_grant(site, self.key, self.user_name)

    def preview(self, plan: GrantPlan) -> Preview:
        return plan.preview()

    def confirmation(self, plan: GrantPlan) -> Confirmation | None:
        if plan.already:
            return None
        detail = "\n".join([c.description for c in plan.preview().changes] + ["", "Update text:", plan.text.rstrip()])
        return Confirmation("Give the key", f"cloud user {plan.user_id} {plan.user_name!r}", detail,
                            command=plan.cli())

    async def execute(self, site: "SiteConnection", plan: GrantPlan, context: RunContext) -> KeyGranted:
        return await grant_ssh_key(site, plan, context, record=self.record)

    def audit_details(self, plan: GrantPlan, result: KeyGranted) -> Mapping[str, Any] | None:
        if not result.changed:
            return None  # the user already had the key: nothing was sent
        return {**grant_details(plan, result.keys_before), "keys_after": result.keys_after}

    def audit_failure(self, plan: GrantPlan, error: SiteError, context: RunContext) -> Mapping[str, Any] | None:
        steps = {(event.step, event.state) for event in context.events}
        check = f"oneuser show {shlex.quote(plan.user_name)}"
        if ("update user", ProgressState.DONE) in steps:
            keys = f"updated, but the read-back disagrees: check them with `{check}`"
        elif ("update user", ProgressState.RUNNING) in steps:
            keys = f"the update was sent and failed: check them with `{check}`"
        else:
            keys = "unchanged (no update was sent)"
        return {**grant_details(plan, len(plan.existing)), "user_keys": keys,
                "fix": f"`{check}`, then give the key again (it adds the key once, whatever is there)"}
