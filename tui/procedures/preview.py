"""Previews of mutating operations: what will change and the equivalent platform CLI commands.

Every mutating procedure can build a `Preview` before doing anything; screens show it in a
confirmation (destructive ones name the object and default to Cancel) and the headless CLI prints
it for `--dry-run`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Change:
    """One change to the cloud or to disk, with the platform CLI command that does the same."""

    description: str
    cli: str = ""
    #: "create", "update", "delete", "action" or "none" (already in the wanted state)
    kind: str = "update"


@dataclass(frozen=True)
class Preview:
    title: str
    changes: tuple[Change, ...] = ()
    destructive: bool = False
    #: the object named in a destructive confirmation ("VM 42 manager_0_(service_7)")
    target: str = ""
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_noop(self) -> bool:
        return all(change.kind == "none" for change in self.changes)

    def cli_script(self) -> str:
        return "\n".join(change.cli for change in self.changes if change.cli)

    def as_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "destructive": self.destructive,
            "target": self.target,
            "warnings": list(self.warnings),
            "changes": [{"description": c.description, "cli": c.cli, "kind": c.kind} for c in self.changes],
        }

    def as_text(self) -> str:
        lines = [self.title]
        for warning in self.warnings:
            lines.append(f"  ! {warning}")
        for change in self.changes:
            lines.append(f"  - {change.description}")
            if change.cli:
                lines.append(f"      $ {change.cli}")
        return "\n".join(lines)
