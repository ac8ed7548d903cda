"""The dependency rule of DESIGN.md: domain <- adapters <- procedures <- screens.

Only tui/screens, tui/app.py, tui/console.py, tui/screenshots/ and widgets/ may import Textual;
domain imports no other layer; adapters never import procedures or screens; procedures never
import screens; widgets know nothing of the cloud.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def files_under(*parts: str) -> list[Path]:
    return sorted((ROOT.joinpath(*parts)).rglob("*.py"))


FORBIDDEN: dict[str, tuple[str, ...]] = {
    "tui/domain": ("textual", "tui.adapters", "tui.procedures", "tui.screens", "tui.sim", "tui.app", "widgets", "pyone", "httpx"),
    "tui/adapters": ("textual", "tui.procedures", "tui.screens", "tui.app", "widgets", "tui.sim"),
    "tui/procedures": ("textual", "tui.screens", "tui.app", "widgets", "tui.sim"),
    "tui/cli": ("textual", "tui.screens", "widgets"),
    "tui/sim": ("textual", "tui.screens", "tui.app", "widgets", "tui.procedures", "tui.adapters"),
    "widgets": ("tui",),
}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_respect_the_dependency_rule(layer: str) -> None:
    offenders = []
    for path in files_under(*layer.split("/")):
        for name in imported_modules(path):
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[layer]):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not offenders, "\n".join(offenders)
