"""The screens the console offers: one `ScreenSpec` line per screen.

To add a screen, append one line to `SCREENS`:

    ScreenSpec("hosts", "Hosts", "tui.screens.hosts:HostsScreen", mutates=True, aliases=("host",)),

`target` is "module:Class" and is imported only when the screen is first opened, so a slow or
broken screen module never delays start-up of the others. `mutates` marks a screen whose purpose
is to change the cloud: `--read-only` hides it from `:`, the palette and the help. Screens that
only *contain* some mutating actions stay listed and hide those actions themselves
(`SiteScreen.MUTATING_ACTIONS`). Only screens listed here exist for the operator.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:  # pragma: no cover
    from textual.screen import Screen


@dataclass(frozen=True)
class ScreenSpec:
    """A screen: its `:` name, its title, where it lives, whether it changes the cloud."""

    name: str
    title: str
    target: str
    mutates: bool = False
    aliases: tuple[str, ...] = ()
    description: str = ""

    def load(self) -> type["Screen[Any]"]:
        module_name, _, class_name = self.target.partition(":")
        module = importlib.import_module(module_name)
        screen: type[Screen[Any]] = getattr(module, class_name)
        return screen

    def create(self) -> "Screen[Any]":
        return self.load()()


SCREENS: tuple[ScreenSpec, ...] = (
    ScreenSpec("setup", "Setup", "tui.screens.setup:SetupScreen", aliases=("checklist", "install", "health"),
               description="first-time setup checklist (every step read from the site), one key a step; then health"),
    ScreenSpec("vms", "Virtual machines", "tui.screens.vms:VmListScreen", aliases=("vm", "virtual-machines"),
               description="every VM of the site: state, host, addresses, service and role"),
    ScreenSpec("hosts", "Hosts", "tui.screens.hosts:HostsScreen", aliases=("host", "cpu"),
               description="host CPUs for the document database; move VMs to a compatible host"),
    ScreenSpec("market", "Marketplace", "tui.screens.marketplace:MarketplaceScreen",
               aliases=("marketplace", "appliances", "apps"),
               description="appliances of the marketplaces, installed versions, download, attributes, upgrades"),
    ScreenSpec("toolkit", "Toolkit", "tui.screens.toolkit:ToolkitScreen", mutates=True,
               aliases=("deploy", "toolkit-form", "inputs"),
               description="the toolkit's 23 inputs, then its deployment followed live (operations 3 and 4)"),
    ScreenSpec("toolkit-key", "Automation key", "tui.screens.toolkit_key:KeyScreen", aliases=("key", "ssh-key"),
               description="the automation VM's public key; give it to the cloud user (operation 5)"),
    ScreenSpec("site", "Site configuration", "tui.screens.site_config:SiteConfigScreen",
               aliases=("core", "core.yaml", "site-config", "components"),
               description="core.yaml of a site branch: editor, checks, fill from the cloud, components, submit"),
)

#: the screen shown after connecting
DEFAULT_SCREEN = "vms"


def available(read_only: bool, screens: Iterable[ScreenSpec] = SCREENS) -> list[ScreenSpec]:
    """Screens the operator may open: mutating ones are hidden in read-only mode."""
    return [s for s in screens if not (read_only and s.mutates)]


def find(name: str, screens: Iterable[ScreenSpec] = SCREENS) -> ScreenSpec | None:
    """A screen by `:` name or alias (case-insensitive)."""
    wanted = name.strip().lower()
    for spec in screens:
        if wanted == spec.name or wanted in spec.aliases:
            return spec
    return None
