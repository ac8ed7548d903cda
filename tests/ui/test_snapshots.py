"""SVG snapshots of every screen state in `tui.screenshots.SCENES` (the README's pictures).

Plain `def` tests: `snap_compare` runs the app in its own event loop. Each scene starts its own
embedded site named by the fixed scene address (see `tui.screenshots.scene_site`), with a frozen clock
and a fixed terminal size, so the pictures are deterministic. Each pytest-xdist worker's sites listen
on an address of their own (`worker_listen_host`), so the workers run scenes at the same time. After an intended change of a
screen, refresh the snapshots with `pytest tests/ui/test_snapshots.py --snapshot-update` and look
at the report before committing them. Pictures are compared in `canonical_svg` form (one
rectangle per run of same-coloured cells), as the README's screenshots are written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import textual._doc

from tui.screenshots import SCENES, Scene, scene_app, scene_driver, scene_site
from tui.screenshots.harness import canonical_svg, worker_listen_host


@pytest.fixture(autouse=True)
def _canonical_pictures(monkeypatch: pytest.MonkeyPatch) -> None:
    """`snap_compare` takes its picture through `textual._doc.take_svg_screenshot`; compare it canonical."""
    take = textual._doc.take_svg_screenshot
    monkeypatch.setattr(textual._doc, "take_svg_screenshot", lambda *a, **k: canonical_svg(take(*a, **k)))


@pytest.mark.parametrize("scene", SCENES, ids=[scene.name for scene in SCENES])
def test_scene(scene: Scene, snap_compare, tmp_path: Path, worker_id: str) -> None:  # type: ignore[no-untyped-def]
    with scene_site(scene, tmp_path / "site", worker_listen_host(worker_id)) as server:
        app = scene_app(scene, server)
        assert snap_compare(app, terminal_size=scene.size, run_before=scene_driver(scene, server))
