"""Rules for the toolkit's inputs checked against the site (the facts are read by the procedure).

- The default network (`networks_values`, `Public` in the spec's example) is the site's OAM
  network: a /24 on a preexisting Linux bridge (driver `bridge`), never the VXLAN trial-network
  subnet created over the same bridge. `default_network_finding` says which, with the fix.
- `app_automation_sites_token` is the vault secret of the site's branch (spec, Authentication 3:
  "the key is supplied as app_automation_sites_token, and the vault password file holds
  <VAULT_PASSWORD>"), so it must equal the vault password that encrypts the branch's core.yaml.
  `same_vault_secret` compares them as ansible reads a password file (surrounding line breaks and
  spaces of the file do not count); neither value is ever put in a message.

`SiteCheck` is one check's result: what it looked at, what it found, the fix, and whether it
passed, failed (with a severity) or was skipped (and why).
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

from tui.domain.networks import Vnet
from tui.domain.severity import Severity

#: VN_MAD of a network on a preexisting Linux bridge, as the spec describes the default network
BRIDGE_DRIVER = "bridge"
VXLAN_DRIVER = "vxlan"
DEFAULT_PREFIX = 24


class Outcome(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class SiteCheck:
    """One input checked against the site."""

    #: the input (or `network:<name>`) the check is about
    name: str
    #: what was looked at, e.g. "the cloud's users"
    checked: str
    outcome: Outcome
    #: what was found (for SKIPPED: why it was not checked)
    found: str
    severity: Severity | None = None
    fix: str = ""

    @property
    def message(self) -> str:
        """The line shown next to the field: what was found, then the fix."""
        return self.found + (f"; {self.fix}" if self.fix else "")

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "checked": self.checked, "outcome": self.outcome.value, "found": self.found,
                "severity": self.severity.value if self.severity else None, "fix": self.fix}


def passed(name: str, checked: str, found: str) -> SiteCheck:
    return SiteCheck(name, checked, Outcome.PASSED, found)


def failed(name: str, checked: str, found: str, fix: str, severity: Severity = Severity.ERROR) -> SiteCheck:
    return SiteCheck(name, checked, Outcome.FAILED, found, severity, fix)


def skipped(name: str, checked: str, why: str) -> SiteCheck:
    return SiteCheck(name, checked, Outcome.SKIPPED, why)


def prefix_length(vnet: Vnet) -> int | None:
    """The network's prefix from NETWORK_MASK (dotted or a bare length); None when unset or invalid."""
    mask = vnet.network_mask.strip()
    if not mask:
        return None
    try:
        return ipaddress.IPv4Network(f"0.0.0.0/{mask}").prefixlen
    except ValueError:
        return None


def network_label(vnet: Vnet) -> str:
    where = vnet.network_address
    prefix = prefix_length(vnet)
    if where and prefix is not None:
        where = f"{where}/{prefix}"
    details = ", ".join(part for part in (vnet.vn_mad, f"bridge {vnet.bridge}" if vnet.bridge else "", where) if part)
    return f"network {vnet.id} {vnet.name}" + (f" ({details})" if details else "")


def oam_candidates(vnets: Sequence[Vnet]) -> tuple[Vnet, ...]:
    """Networks that look like the site's default network: bridged /24s."""
    return tuple(v for v in sorted(vnets, key=lambda v: v.id)
                 if v.vn_mad == BRIDGE_DRIVER and prefix_length(v) == DEFAULT_PREFIX)


def default_network_finding(network: str, vnet: Vnet, vnets: Sequence[Vnet]) -> SiteCheck:
    """Is `vnet` (chosen for the template network `network`) the site's default OAM network?"""
    name = f"network:{network}"
    checked = "the chosen network's driver (VN_MAD) and mask against the spec's default network (bridged OAM /24)"
    candidates = [v for v in oam_candidates(vnets) if v.id != vnet.id]
    hint = ("choose " + " or ".join(network_label(v) for v in candidates)) if candidates else \
        "choose the site's bridged OAM /24 network"
    label = network_label(vnet)
    if vnet.vn_mad == VXLAN_DRIVER:
        return failed(name, checked, f"{label} is a VXLAN network, the trial-network subnet, not the site's default "
                      "network (the OAM /24 on the hosts' Linux bridge)", hint)
    if vnet.vn_mad != BRIDGE_DRIVER:
        return failed(name, checked, f"{label} uses the {vnet.vn_mad or 'unknown'} driver; the default network is the "
                      "OAM network on a preexisting Linux bridge (driver bridge)", hint, Severity.WARNING)
    prefix = prefix_length(vnet)
    if prefix != DEFAULT_PREFIX:
        size = f"a /{prefix}" if prefix is not None else "of unknown size (no NETWORK_MASK)"
        return failed(name, checked, f"{label} is {size}; the default network is a /24 (its .211-.240 addresses are "
                      "the ports the site's public IP forwards)", hint, Severity.WARNING)
    return passed(name, checked, f"{label} is a bridged /24, as the default network is")


def same_vault_secret(token: str, password: bytes) -> bool:
    """The input's value and the vault password file's secret are the same secret (constant time)."""
    return hmac.compare_digest(token.strip().encode("utf-8"), password.strip())
