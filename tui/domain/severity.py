"""How bad a finding is: an error blocks the operation, a warning is shown and lets it go on.

Shared by the checks of the toolkit's inputs (`tui.domain.toolkit_inputs.Problem`) and of the
site configuration (`tui.domain.site_checks.Finding`).
"""

from __future__ import annotations

from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
