"""SVG snapshots of every screen state in `tui.screenshots.SCENES` (the README's pictures).

Plain `def` tests: `snap_compare` runs the app in its own event loop. Each scene starts its own
embedded site at the fixed scene address (see `tui.screenshots.scene_site`), with a frozen clock
and a fixed terminal size, so the pictures are deterministic. After an intended change of a
screen, refresh the snapshots with `pytest tests/ui/test_snapshots.py --snapshot-update` and look
at the report before committing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.screenshots import SCENES, Scene, scene_app, scene_driver, scene_site


@pytest.mark.parametrize("scene", SCENES, ids=[scene.name for scene in SCENES])
def test_scene(scene: Scene, snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with scene_site(scene, tmp_path / "site") as server:
        app = scene_app(scene, server)
        assert snap_compare(app, terminal_size=scene.size, run_before=scene_driver(scene, server))
