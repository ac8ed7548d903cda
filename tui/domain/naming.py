"""The naming profile: every product-specific word the console uses, in one settings object.

The spec replaced product names by neutral words (attribute prefix `PLATFORM`, input prefix
`app_`, roles objectstore/automation/manager/timeseries, ...). A real site uses other words, so
they live here with the spec's words as defaults; nothing else in the code spells them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any


@dataclass(frozen=True)
class NamingProfile:
    """The names the toolkit's objects and attributes carry on a site (prefixes, role names): one place,
    so that every check and procedure reads the same."""

    attribute_prefix: str = "PLATFORM"
    input_prefix: str = "app_"
    role_objectstore: str = "objectstore"
    role_automation: str = "automation"
    role_manager: str = "manager"
    role_timeseries: str = "timeseries"
    site_variables_key: str = "site_variables"
    component_manager_dir: str = ".manager"
    #: USER_TEMPLATE attribute where the automation VM publishes its generated public SSH key.
    automation_key_attribute: str = "AUTOMATION_SSH_PUBLIC_KEY"
    #: Marketplace record name of the toolkit service appliance.
    toolkit_appliance_name: str = "Site Toolkit"
    #: Roles whose VMs run the document database (CPU compatibility checks).
    document_db_roles: tuple[str, ...] = ("manager",)
    #: A VM attribute that marks any other VM as running the document database.
    document_db_attribute: str = "DOCUMENT_DB"
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def roles(self) -> tuple[str, str, str, str]:
        return (self.role_objectstore, self.role_automation, self.role_manager, self.role_timeseries)

    @property
    def appliance_name_attribute(self) -> str:
        return f"{self.attribute_prefix}_MARKETPLACE_APPLIANCE_NAME"

    @property
    def appliance_version_attribute(self) -> str:
        return f"{self.attribute_prefix}_MARKETPLACE_APPLIANCE_VERSION"

    @property
    def appliance_software_version_attribute(self) -> str:
        return f"{self.attribute_prefix}_MARKETPLACE_APPLIANCE_SOFTWARE_VERSION"

    def input_name(self, suffix: str) -> str:
        """`input_name("automation_cloud_username")` -> `app_automation_cloud_username`."""
        return f"{self.input_prefix}{suffix}"

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> "NamingProfile":
        known = {f.name for f in fields(cls)} - {"extra"}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}
        if "document_db_roles" in values:
            roles = values["document_db_roles"]
            values["document_db_roles"] = tuple(roles if isinstance(roles, list) else str(roles).split(","))
        extra = {k: str(v) for k, v in data.items() if k not in known}
        return replace(cls(), **values, extra=extra)


DEFAULT_NAMING = NamingProfile()
