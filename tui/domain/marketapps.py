"""Marketplaces and their apps as the cloud registers them (MARKETPLACE, MARKETPLACEAPP).

An app's APPTEMPLATE64 is base64 of the image attributes (IMAGE apps), of the VM template
(VMTEMPLATE apps) or of the service template JSON (SERVICE_TEMPLATE apps); `app_template` holds
it decoded. Service apps list `ROLE=[NAME, APP]` and VM-template apps `DISK=[NAME, APP]`.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes

IMAGE_APP, VMTEMPLATE_APP, SERVICE_TEMPLATE_APP = 1, 2, 3

#: MARKETPLACEAPP TYPE code -> name
APP_TYPES: dict[int, str] = {0: "UNKNOWN", IMAGE_APP: "IMAGE", VMTEMPLATE_APP: "VMTEMPLATE",
                             SERVICE_TEMPLATE_APP: "SERVICE_TEMPLATE"}
#: MARKETPLACEAPP STATE code -> name
APP_STATES: dict[int, str] = {0: "INIT", 1: "READY", 2: "LOCKED", 3: "ERROR", 4: "DISABLED"}
#: MARKETPLACE STATE code -> name
MARKETPLACE_STATES: dict[int, str] = {0: "ENABLED", 1: "DISABLED"}


def decode_apptemplate64(value: str) -> str:
    """APPTEMPLATE64 decoded as UTF-8 text; "" when empty or not valid base64."""
    if not value.strip():
        return ""
    try:
        return base64.b64decode(value.strip(), validate=False).decode("utf-8", errors="replace")
    except (binascii.Error, ValueError):
        return ""


@dataclass(frozen=True)
class Marketplace:
    id: int
    name: str
    uname: str
    state: int
    market_mad: str
    zone_id: int
    app_ids: tuple[int, ...]
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def state_name(self) -> str:
        return MARKETPLACE_STATES.get(self.state, f"STATE_{self.state}")

    @property
    def endpoint(self) -> str:
        """TEMPLATE/ENDPOINT: the HTTP marketplace this one mirrors ("" for local stores)."""
        return self.template.get("ENDPOINT")


@dataclass(frozen=True)
class MarketApp:
    id: int
    name: str
    uname: str
    type: int
    state: int
    version: str
    description: str
    marketplace_id: int
    marketplace: str
    format: str
    size_mb: int
    md5: str
    source: str
    regtime: int
    zone_id: int
    origin_id: int
    #: the raw APPTEMPLATE64 and its decoded text
    apptemplate64: str
    app_template: str
    #: (role name, app name) of a SERVICE_TEMPLATE app's ROLE vectors
    roles: tuple[tuple[str, str], ...]
    #: (disk name, app name) of a VMTEMPLATE app's DISK vectors
    disks: tuple[tuple[str, str], ...]
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def type_name(self) -> str:
        return APP_TYPES.get(self.type, f"TYPE_{self.type}")

    @property
    def state_name(self) -> str:
        return APP_STATES.get(self.state, f"STATE_{self.state}")

    @property
    def vmtemplate64(self) -> str:
        """TEMPLATE/VMTEMPLATE64 of an IMAGE app (the VM template to create beside the image)."""
        return self.template.get("VMTEMPLATE64")
