"""The README and pyproject.toml name only files that exist: a module moved or renamed (the
procedures' move into feature folders renamed 50) leaves no stale path behind."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: a path from the repository's root to a module (`tui/procedures/operation.py`), not part of a longer
#: path (`app/routers/routes.py` of another project) nor a pattern (`tests/test_*.py`)
_MODULE_PATH = re.compile(r"(?<![\w./*-])((?:tui|widgets|tests|realsite|bench)/[\w/.-]*\.py)(?![\w*])")


def module_paths(text: str) -> list[tuple[int, str]]:
    """(line, path) of every module path in `text`."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _MODULE_PATH.finditer(text)]


def test_the_paths_it_finds() -> None:
    text = "see `tui/procedures/operation.py`, tests/market/test_cli.py and (tui/app.py);\n" \
           "not app/routers/routes.py, tests/test_*.py nor xtui/a.py"
    assert module_paths(text) == [(1, "tui/procedures/operation.py"), (1, "tests/market/test_cli.py"),
                                  (1, "tui/app.py")]


def test_every_module_the_readme_names_exists() -> None:
    found = module_paths((ROOT / "README.md").read_text())
    assert len(found) > 50, "the README names modules by path: the pattern no longer finds them"
    missing = [f"README.md:{line}: {path}" for line, path in found if not (ROOT / path).is_file()]
    assert not missing, "\n".join(missing)


def test_every_module_pyproject_names_exists() -> None:
    """Its comments and its per-file ignores (ruff ignores an entry whose file is gone, silently)."""
    found = module_paths((ROOT / "pyproject.toml").read_text())
    missing = [f"pyproject.toml:{line}: {path}" for line, path in found if not (ROOT / path).is_file()]
    assert not missing, "\n".join(missing)
