"""`python -m tui.screenshots` refuses to write PNGs it would render with the wrong font."""

from __future__ import annotations

import shutil

import pytest

from tui.screenshots.__main__ import main
from tui.screenshots.harness import png_font_problem


def test_pngs_are_refused_without_fira_code(monkeypatch: pytest.MonkeyPatch, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(shutil, "which", lambda name: None)  # no fontconfig: the font cannot be found
    assert "fc-list" in png_font_problem()
    assert main(["vms-normal", "--output", str(tmp_path)]) == 2
    assert "cannot render PNGs faithfully" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written
