"""ACL rules as the platform keeps them: 64-bit hex fields, their STRING form, checks, authorization.

A rule is four numbers (user, resource, rights, zone). In `user`, `resource` and `zone` the high
32 bits carry selectors (#id 0x1_0000_0000, @gid 0x2_0000_0000, * 0x4_0000_0000, %cluster
0x8_0000_0000) and, for `resource`, the object types; the low 32 bits carry the id. `rights` is a
mask of USE 1, MANAGE 2, ADMIN 4, CREATE 8. The checks and messages follow the platform's AclRule
(`Rule @1 NET/* USE #0 already exists`, `... is malformed: <reasons>`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.domain.acls import ACL_ALL, ACL_CLUSTER, ACL_GID, ACL_RESOURCES, ACL_RIGHTS, ACL_UID
from tui.domain.error_codes import INTERNAL
from tui.domain.permissions import Permissions
from tui.sim.platform import version_key as _version_key
from tui.sim.rpc_errors import OneError
from tui.sim.state import SimAcl, SimSite, SimUser

# the platform's bits, shared with the client (tui.domain.acls): AclRule's selectors
INDIVIDUAL_ID, GROUP_ID, ALL_ID, CLUSTER_ID = ACL_UID, ACL_GID, ACL_ALL, ACL_CLUSTER
SELECTORS = INDIVIDUAL_ID | GROUP_ID | ALL_ID | CLUSTER_ID

#: object type bits, in the order the platform writes them in a rule's STRING
OBJECT_TYPES: tuple[tuple[str, int], ...] = tuple(ACL_RESOURCES.items())
TYPE_BITS: dict[str, int] = ACL_RESOURCES
#: PoolObjectSQL::ACL (include/PoolObjectSQL.h `enum ObjectType`), a type no rule is written for here
ACL_TYPE_BIT = 0x80000000000

RIGHTS: tuple[tuple[str, int], ...] = tuple(ACL_RIGHTS.items())
RIGHT_BITS: dict[str, int] = ACL_RIGHTS

_INVALID_CLUSTER_OBJECTS = (
    sum(TYPE_BITS[n] for n in ("VM", "IMAGE", "USER", "TEMPLATE", "GROUP", "CLUSTER", "DOCUMENT", "ZONE",
                               "SECGROUP", "VDC", "VROUTER", "MARKETPLACE", "MARKETPLACEAPP", "VMGROUP",
                               "VNTEMPLATE"))
    | ACL_TYPE_BIT
)
_INVALID_GROUP_OBJECTS = sum(TYPE_BITS[n] for n in ("HOST", "GROUP", "CLUSTER", "ZONE", "VDC"))
_FEDERATED_OBJECTS = sum(TYPE_BITS[n] for n in ("USER", "GROUP", "ZONE", "VDC")) | ACL_TYPE_BIT

_HEX = re.compile(r"\s*(?:0[xX])?([0-9a-fA-F]+)")


def parse_hex(text: str) -> int:
    """Read a hex field as the platform does (`iss >> hex`): optional 0x, leading digits, else 0."""
    match = _HEX.match(text)
    return int(match.group(1), 16) & 0xFFFFFFFFFFFFFFFF if match else 0


def _low_id(value: int) -> int:
    low = value & 0xFFFFFFFF
    return low - (1 << 32) if low & 0x80000000 else low


_SELECTOR_MARKS = {GROUP_ID: "@", INDIVIDUAL_ID: "#", CLUSTER_ID: "%"}


def _selector(value: int, checked: tuple[int, ...]) -> str:
    """`@5`, `#5`, `%5` or `*` for the first selector bit set, in the platform's order; `??` for none."""
    for bit in checked:
        if value & bit:
            return "*" if bit == ALL_ID else f"{_SELECTOR_MARKS[bit]}{_low_id(value)}"
    return "??"


@dataclass(frozen=True)
class Rule:
    user: int
    resource: int
    rights: int
    zone: int

    def to_str(self) -> str:
        """`@1 VM+NET/* USE+CREATE #0`, as the platform's AclRule::build_str writes it."""
        types = "+".join(name for name, bit in OBJECT_TYPES if self.resource & bit)
        rights = "+".join(name for name, bit in RIGHTS if self.rights & bit)
        return (f"{_selector(self.user, (GROUP_ID, INDIVIDUAL_ID, ALL_ID))} "
                f"{types}/{_selector(self.resource, (GROUP_ID, INDIVIDUAL_ID, CLUSTER_ID, ALL_ID))} "
                f"{rights} {_selector(self.zone, (INDIVIDUAL_ID, ALL_ID))}")

    def malformed(self) -> str:
        """The reasons the rule is malformed, joined by "; ", or "" when it is well formed (in the
        order of AclRule::malformed: user, resource, rights, zone)."""
        return "; ".join([*self._user_errors(), *self._resource_errors(), *self._rights_errors(), *self._zone_errors()])

    def _user_errors(self) -> list[str]:
        """What is wrong with the user selector."""
        errors: list[str] = []
        user = self.user
        if user & INDIVIDUAL_ID and user & GROUP_ID:
            errors.append("[user] INDIVIDUAL (#) and GROUP (@) bits are exclusive")
        if user & INDIVIDUAL_ID and user & ALL_ID:
            errors.append("[user] INDIVIDUAL (#) and ALL (*) bits are exclusive")
        if user & GROUP_ID and user & ALL_ID:
            errors.append("[user] GROUP (@) and ALL (*) bits are exclusive")
        if user & 0x700000000 == 0:
            errors.append("[user] is missing one of the INDIVIDUAL, GROUP or ALL bits")
        if _low_id(user) < 0:
            errors.append("[user] ID cannot be negative")
        if user & ALL_ID and _low_id(user) != 0:
            errors.append("when using the ALL bit, [user] ID must be 0")
        return errors

    def _resource_errors(self) -> list[str]:
        """What is wrong with the resource's selector and types."""
        errors: list[str] = []
        res = self.resource
        selectors = res & SELECTORS
        if any(res & bit and selectors != bit for bit in (INDIVIDUAL_ID, GROUP_ID, CLUSTER_ID, ALL_ID)):
            errors.append("[resource] INDIVIDUAL (#), GROUP (@), CLUSTER (%) and ALL (*) bits are exclusive")
        res_types = res & 0xFFFFFFF000000000
        if res & CLUSTER_ID and res_types & _INVALID_CLUSTER_OBJECTS:
            errors.append("[resource] CLUSTER(%) selector can be applied only to DATASTORE, HOST and NET types")
        if res & GROUP_ID and res_types & _INVALID_GROUP_OBJECTS:
            errors.append("[resource] GROUP(@) selector cannot be applied to HOST, GROUP, CLUSTER, ZONE or VDC types")
        if selectors == 0:
            errors.append("[resource] is missing one of the INDIVIDUAL, GROUP, CLUSTER or ALL bits")
        if _low_id(res) < 0:
            errors.append("[resource] ID cannot be negative")
        if res & ALL_ID and _low_id(res) != 0:
            errors.append("when using the ALL bit, [resource] ID must be 0")
        if res_types == 0:
            errors.append("[resource] type is missing")
        if res & 0xFE80000000000000:
            errors.append("wrong [resource] type")
        return errors

    def _rights_errors(self) -> list[str]:
        """What is wrong with the rights."""
        errors: list[str] = []
        if self.rights == 0:
            errors.append("wrong [rights], it cannot be 0")
        if self.rights > 0xF:
            errors.append("wrong [rights], it cannot be bigger than 0xF")
        return errors

    def _zone_errors(self) -> list[str]:
        """What is wrong with the zone, alone and with the resource it is applied to."""
        errors: list[str] = []
        res, zone = self.resource, self.zone
        res_types = res & 0xFFFFFFF000000000
        if zone & GROUP_ID:
            errors.append("[zone] GROUP (@) bit is not supported")
        if zone & INDIVIDUAL_ID and zone & ALL_ID:
            errors.append("[zone] INDIVIDUAL (#) and ALL (*) bits are exclusive")
        if zone & 0x700000000 == 0:
            errors.append("[zone] is missing one of the INDIVIDUAL or ALL bits")
        if _low_id(zone) < 0:
            errors.append("[zone] ID cannot be negative")
        if zone & ALL_ID and _low_id(zone) != 0:
            errors.append("when using the ALL bit, [zone] ID must be 0")
        if zone & ALL_ID and res & INDIVIDUAL_ID and (res_types & _FEDERATED_OBJECTS) != res_types:
            errors.append(
                "[resource] INDIVIDUAL(#) selector cannot be applied to ALL zones, except for USER, GROUP and ZONE types"
            )
        return errors

def rule_of(acl: SimAcl) -> Rule:
    return Rule(acl.user, acl.resource, acl.rights, acl.zone)


def acl_string(acl: SimAcl) -> str:
    return rule_of(acl).to_str()


def add_rule(site: SimSite, user: int, resource: int, rights: int, zone: int | None = None) -> int:
    """Add a rule and return its id; duplicates and malformed rules raise an internal error."""
    local_zone = INDIVIDUAL_ID | 0  # zone #0, the only zone of the site
    rule = Rule(user, resource, rights, local_zone if zone is None else zone)
    if any(rule_of(existing) == rule for existing in site.acls.values()):
        raise OneError(INTERNAL, f"Rule {rule.to_str()} already exists")
    reasons = rule.malformed()
    if reasons:
        raise OneError(INTERNAL, f"Rule {rule.to_str()} is malformed: {reasons}")
    acl_id = site.next_id("acl")
    site.acls[acl_id] = SimAcl(acl_id, rule.user, rule.resource, rule.rights, rule.zone)
    return acl_id


def add_vdc_rules(site: SimSite, gid: int) -> None:
    """The default VDC's rules for a group of it: its cluster resource set (every cluster of zone 0)
    gives `@gid HOST/* MANAGE #0`, `@gid NET/* USE #0`, `@gid DATASTORE/* USE #0` (ResourceSet,
    src/vdc/Vdc.cc 415-441 and 588-625 at release-7.0.0, rights from oned.conf
    DEFAULT_VDC_CLUSTER_*_ACL; the bootstrap gives the users group the same, VdcPool.cc 69-70)."""
    for kind, rights in (("HOST", "MANAGE"), ("NET", "USE"), ("DATASTORE", "USE")):
        add_rule(site, GROUP_ID | gid, ALL_ID | TYPE_BITS[kind], RIGHT_BITS[rights], INDIVIDUAL_ID | 0)


def add_group_admin_rules(site: SimSite, gid: int, uid: int) -> None:
    """A group admin's four rules (`Group::add_admin_rules`, src/group/Group.cc 350-440 at
    release-7.0.0, 357-440 at 6.10.0; backup jobs, and BACKUPJOB in the second rule, came with 6.10)."""
    managed: tuple[str, ...] = ("VM", "NET", "IMAGE", "TEMPLATE", "DOCUMENT", "SECGROUP", "VROUTER", "VMGROUP")
    if _version_key(site.config.one_version) >= (6, 10):
        managed += ("BACKUPJOB",)
    for resource, rights in (
        (TYPE_BITS["USER"] | GROUP_ID | gid, ("USE", "MANAGE", "ADMIN", "CREATE")),
        (sum(TYPE_BITS[k] for k in managed) | GROUP_ID | gid, ("USE", "MANAGE")),
        (ALL_ID | TYPE_BITS["VROUTER"], ("CREATE",)),
        (TYPE_BITS["GROUP"] | INDIVIDUAL_ID | gid, ("MANAGE",)),
    ):
        add_rule(site, INDIVIDUAL_ID | uid, resource, sum(RIGHT_BITS[r] for r in rights), ALL_ID)


def del_rule(site: SimSite, acl_id: int) -> None:
    if acl_id not in site.acls:
        raise OneError(INTERNAL, f"Rule {acl_id} does not exist", acl_id)
    del site.acls[acl_id]


def rules_in_dump_order(site: SimSite) -> list[SimAcl]:
    """The platform dumps rules from a multimap keyed by the user field (then insertion order)."""
    return sorted(site.acls.values(), key=lambda acl: (acl.user, acl.id))


# authorization --------------------------------------------------------------------------------


def is_admin(user: SimUser) -> bool:
    """oneadmin and every member of the oneadmin group pass every check."""
    return user.id == 0 or user.gid == 0 or 0 in user.groups


def _perm_bits(perms: Permissions, op: str) -> tuple[int, int, int]:
    suffix = {"USE": "u", "MANAGE": "m", "ADMIN": "a"}.get(op)
    if suffix is None:
        return (0, 0, 0)
    return (
        getattr(perms, f"owner_{suffix}"),
        getattr(perms, f"group_{suffix}"),
        getattr(perms, f"other_{suffix}"),
    )


def authorize(
    site: SimSite,
    user: SimUser,
    kind: str,
    op: str,
    oid: int = -1,
    owner: int = -1,
    group: int = -1,
    perms: Permissions | None = None,
    cluster_ids: tuple[int, ...] = (0,),
) -> bool:
    """Whether `user` may perform `op` (USE, MANAGE, ADMIN, CREATE) on the object."""
    if is_admin(user):
        return True
    groups = set(user.groups) | {user.gid}
    if perms is not None and oid >= 0:
        own, grp, oth = _perm_bits(perms, op)
        if (owner == user.id and own) or (group in groups and grp) or oth:
            return True
    type_bit = ACL_TYPE_BIT if kind == "ACL" else TYPE_BITS.get(kind, 0)
    wanted = RIGHT_BITS.get(op, 0)
    user_keys = {ALL_ID, INDIVIDUAL_ID | user.id} | {GROUP_ID | g for g in groups}
    for acl in site.acls.values():
        if acl.user not in user_keys or acl.rights & wanted != wanted:
            continue
        if acl.zone not in (INDIVIDUAL_ID | 0, ALL_ID):
            continue
        if not acl.resource & type_bit:
            continue
        target = acl.resource & SELECTORS
        target_id = _low_id(acl.resource)
        if target == ALL_ID:
            return True
        if target == INDIVIDUAL_ID and oid >= 0 and target_id == oid:
            return True
        if target == GROUP_ID and group >= 0 and target_id == group:
            return True
        if target == CLUSTER_ID and target_id in cluster_ids:
            return True
    return False
