"""Giving the automation cloud user the use of an appliance's images, VM templates and service
templates (spec operation 9), decided without I/O.

How: one ACL rule per object, `#<uid> IMAGE/#<id> USE` (TEMPLATE for a VM template, DOCUMENT for
a service template), the equivalent of `oneacl create "#<uid> IMAGE/#<id> USE"`. Why this and not
`oneimage chgrp` + `oneimage chmod`: the objects keep their owner, group and permissions (other
tooling, upgrades and the platform's own defaults rely on them), only the one user named in the
automation's cloud-username input gains access (a group permission would open the object to the
whole group), the right is USE only (instantiate, attach; not change or delete), and every grant
is one rule an administrator can list (`oneacl list`) and revoke (`oneacl delete <id>`).
A rule naming several resource types with one `#<id>` would cover unrelated objects that happen to
share the number, so each object gets its own rule.

An object the user can already use (it owns it, a group or other USE bit, or an ACL rule for that
object, its group or all objects of the type) needs no rule; `plan_grants` says why.
"""

from __future__ import annotations

import builtins
import shlex
from dataclasses import dataclass
from typing import Iterable, Sequence

from tui.domain.acls import ACL_ALL, ACL_GID, ACL_RESOURCES, ACL_RIGHTS, ACL_UID, AclRule
from tui.domain.permissions import Permissions
from tui.domain.users import User

_ID_MASK = 0xFFFFFFFF
_SELECTORS = ACL_UID | ACL_GID | ACL_ALL | 0x800000000

#: object kind -> (ACL resource name, words for people)
KINDS: dict[str, tuple[str, str]] = {
    "image": ("IMAGE", "image"),
    "template": ("TEMPLATE", "VM template"),
    "service_template": ("DOCUMENT", "service template"),
}


@dataclass(frozen=True)
class CloudObject:
    """An image, VM template or service template with its ownership and permissions."""

    kind: str
    id: int
    name: str
    uid: int
    gid: int
    permissions: Permissions

    @property
    def resource(self) -> str:
        return KINDS[self.kind][0]

    @property
    def label(self) -> str:
        return f"{KINDS[self.kind][1]} {self.id} ({self.name})"


@dataclass(frozen=True)
class Grant:
    """One object and what the user needs on it: a rule to add, or why none is needed."""

    object: CloudObject
    user_id: int
    user_name: str
    #: why the user can already use the object ("" when the rule must be added)
    already: str = ""

    @property
    def needed(self) -> bool:
        return not self.already

    @property
    def rule(self) -> str:
        return acl_rule(self.user_id, self.object)

    @property
    def cli(self) -> str:
        return f"oneacl create {shlex.quote(self.rule)}"

    def as_json(self) -> dict[str, builtins.object]:  # `object` is a field here
        return {"kind": self.object.kind, "id": self.object.id, "name": self.object.name, "user": self.user_name,
                "rule": self.rule, "needed": self.needed, "already": self.already}


def acl_rule(user_id: int, obj: CloudObject) -> str:
    """`#5 IMAGE/#40 USE`: the rule giving one user the use of one object."""
    return f"#{user_id} {obj.resource}/#{obj.id} USE"


def _rule_covers(rule: AclRule, user: User, obj: CloudObject) -> bool:
    groups = set(user.group_ids) | {user.gid}
    user_keys = {ACL_ALL, ACL_UID | user.id} | {ACL_GID | g for g in groups}
    if rule.user not in user_keys or not rule.rights & ACL_RIGHTS["USE"]:
        return False
    if not rule.resource & ACL_RESOURCES[obj.resource]:
        return False
    selector = rule.resource & _SELECTORS
    ident = rule.resource & _ID_MASK
    if selector == ACL_ALL:
        return True
    if selector == ACL_UID:
        return ident == obj.id
    if selector == ACL_GID:
        return ident == obj.gid
    return False


def already_usable(obj: CloudObject, user: User, rules: Iterable[AclRule]) -> str:
    """Why `user` can already USE `obj` ("" when it cannot)."""
    perms = obj.permissions
    if obj.uid == user.id and perms.owner_u:
        return f"{user.name} owns it"
    if obj.gid in (set(user.group_ids) | {user.gid}) and perms.group_u:
        return f"its group may use it (permissions {perms.octal})"
    if perms.other_u:
        return f"everyone may use it (permissions {perms.octal})"
    for rule in rules:
        if _rule_covers(rule, user, obj):
            return f"ACL rule {rule.id} ({rule.string}) allows it"
    return ""


def plan_grants(objects: Sequence[CloudObject], user: User, rules: Sequence[AclRule]) -> tuple[Grant, ...]:
    """One `Grant` per object (each object once, in the given order)."""
    seen: set[tuple[str, int]] = set()
    grants: list[Grant] = []
    for obj in objects:
        if (obj.kind, obj.id) in seen:
            continue
        seen.add((obj.kind, obj.id))
        grants.append(Grant(obj, user.id, user.name, already_usable(obj, user, rules)))
    return tuple(grants)
