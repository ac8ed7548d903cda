"""ACL rules as the platform lists them: USER, RESOURCE, RIGHTS and ZONE bit fields plus the
rule's text form (`@105 NET+CLUSTER/* USE+MANAGE *`)."""

from __future__ import annotations

from dataclasses import dataclass

#: id-component bits (the USER field, and the object part of RESOURCE): AclRule's INDIVIDUAL_ID,
#: GROUP_ID, ALL_ID and CLUSTER_ID (`src/acl/AclRule.cc` 26-29 at release-6.10.0 and 7.4.0), shared
#: with the embedded site (`tui.sim.acl`)
ACL_UID = 0x100000000
ACL_GID = 0x200000000
ACL_ALL = 0x400000000
ACL_CLUSTER = 0x800000000
_ID_MASK = 0xFFFFFFFF

#: resource-type bits of RESOURCE (`include/PoolObjectSQL.h` `enum ObjectType`, line 48 at
#: release-6.10.0 and 7.4.0), in the order the platform writes them in a rule's STRING
ACL_RESOURCES: dict[str, int] = {
    "VM": 0x1000000000, "HOST": 0x2000000000, "NET": 0x4000000000, "IMAGE": 0x8000000000,
    "USER": 0x10000000000, "TEMPLATE": 0x20000000000, "GROUP": 0x40000000000,
    "DATASTORE": 0x100000000000, "CLUSTER": 0x200000000000, "DOCUMENT": 0x400000000000,
    "ZONE": 0x800000000000, "SECGROUP": 0x1000000000000, "VDC": 0x2000000000000,
    "VROUTER": 0x4000000000000, "MARKETPLACE": 0x8000000000000, "MARKETPLACEAPP": 0x10000000000000,
    "VMGROUP": 0x20000000000000, "VNTEMPLATE": 0x40000000000000, "BACKUPJOB": 0x100000000000000,
}
#: RIGHTS bits (`include/AuthRequest.h` `enum Operation`, line 48), in the STRING's order
ACL_RIGHTS: dict[str, int] = {"USE": 0x1, "MANAGE": 0x2, "ADMIN": 0x4, "CREATE": 0x8}


def id_component(value: int) -> str:
    """`#5`, `@1`, `%0` or `*` for the id part of a USER or RESOURCE field."""
    ident = value & _ID_MASK
    if value & ACL_ALL:
        return "*"
    if value & ACL_UID:
        return f"#{ident}"
    if value & ACL_GID:
        return f"@{ident}"
    if value & ACL_CLUSTER:
        return f"%{ident}"
    return "?"


def resource_names(resource: int) -> tuple[str, ...]:
    return tuple(name for name, bit in ACL_RESOURCES.items() if resource & bit)


def right_names(rights: int) -> tuple[str, ...]:
    return tuple(name for name, bit in ACL_RIGHTS.items() if rights & bit)


@dataclass(frozen=True)
class AclRule:
    id: int
    user: int
    resource: int
    rights: int
    zone: int
    #: the server's text form, e.g. `@105 NET+CLUSTER/* USE+MANAGE *`
    string: str

    @property
    def resources(self) -> tuple[str, ...]:
        return resource_names(self.resource)

    @property
    def right_names(self) -> tuple[str, ...]:
        return right_names(self.rights)

    def grants(self, user: int, resource_bit: int, right_bit: int) -> bool:
        """Whether this rule gives `user` (an id-component value) `right_bit` on every object
        of the resource type `resource_bit` (rules naming one object (#id) do not count)."""
        return (self.user == user and bool(self.resource & resource_bit)
                and bool(self.resource & ACL_ALL) and bool(self.rights & right_bit))
