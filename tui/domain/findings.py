"""One finding of a check of the site configuration: how bad, where (a dotted path), and what.

The message says what was checked, what was found and the fix. Shared by the checks of
`tui.domain.site_checks` and `tui.domain.appliance_identity`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.severity import Severity


@dataclass(frozen=True)
class Finding:
    severity: Severity
    path: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {"severity": self.severity.value, "path": self.path, "message": self.message}
