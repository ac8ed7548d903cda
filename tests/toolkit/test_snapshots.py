"""SVG snapshots of the toolkit form (empty, invalid, valid, a secret revealed), the deployment
view and the key view: the screenshot scenes of `tui.screenshots`, so pictures and snapshots agree.
Regenerate with `pytest tests/toolkit/test_snapshots.py --snapshot-update` after a deliberate change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tui.screenshots import SCENES, Scene, scene_app, scene_driver, scene_site

TOOLKIT_SCENES = [scene for scene in SCENES if scene.screen in ("toolkit", "key")]


@pytest.mark.parametrize("scene", TOOLKIT_SCENES, ids=[scene.name for scene in TOOLKIT_SCENES])
def test_snapshot(scene: Scene, snap_compare: Any, tmp_path: Path) -> None:
    with scene_site(scene, tmp_path / "site") as server:
        assert snap_compare(scene_app(scene, server), run_before=scene_driver(scene, server),
                            terminal_size=scene.size)
