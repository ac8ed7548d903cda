"""`python -m tui.screenshots`: one SVG and one PNG per screen and state, driven against the embedded site.

Each `Scene` names a screen and a state, the demo site it needs and a `prepare` coroutine that
drives the running app into that state (keys, waits on real state, stopping the site...). The same
scenes feed the SVG snapshot tests (tests/ui/test_snapshots.py), so the pictures in the README and
the snapshots never drift apart.

To add a screenshot (and its snapshot test), append one entry to the `SCENES` of the screen's
module (`scenes_vms`, `scenes_market`, `scenes_toolkit`, `scenes_site`, `scenes_hosts`):

    Scene("hosts", "normal", prepare=prepare_hosts_normal, scenario="deployed"),

where `async def prepare_hosts_normal(ctx: SceneContext) -> None` drives `ctx.pilot` (and may use
`ctx.server`, the running `SimServer`, and `ctx.wait_for(...)`).

Scenes are deterministic: the site is named by a fixed loopback address (so endpoints in the
picture do not change), the clock is frozen, the terminal size is fixed and auto-refresh is off.
Each pytest-xdist worker's scene sites listen on a loopback address of their own, reached through
the fixed one (`harness.scene_site`), so the snapshot tests run on every worker at once; a lock
file per listening address serializes the runs that share one.

The package: `scene` (Scene, SceneContext, the shared address, clock and size), `pilot_waits`
(waiting on real state, clicking shown widgets), one `scenes_<screen>` module per screen,
`harness` (running a scene, writing its SVG and PNG) and `__main__` (the command).
"""

from __future__ import annotations

from tui.screenshots import scenes_hosts, scenes_market, scenes_setup, scenes_site, scenes_toolkit, scenes_vms
from tui.screenshots.harness import (
    OUTPUT_DIR,
    scene_app,
    scene_driver,
    scene_settings,
    scene_site,
    with_glyph_fallback,
    write_scene,
)
from tui.screenshots.pilot_waits import click_shown, wait_for, wait_for_screen
from tui.screenshots.scene import (
    DEFAULT_SIZE,
    FROZEN_NOW,
    SCENE_HOST,
    SCENE_PORT,
    Prepare,
    Scene,
    SceneContext,
    frozen_clock,
)
from tui.screenshots.scenes_hosts import (
    hosts_loaded,
    hosts_move_planned,
    prepare_hosts_move_confirm,
    prepare_hosts_move_done,
    prepare_hosts_move_failed,
    prepare_hosts_move_preview,
    prepare_hosts_normal,
    prepare_hosts_why,
)
from tui.screenshots.scenes_market import (
    market_loaded,
    prepare_market_attributes,
    prepare_market_detail,
    prepare_market_download,
    prepare_market_download_failed,
    prepare_market_filtered,
    prepare_market_normal,
    prepare_market_plan,
)
from tui.screenshots.scenes_site import (
    SITE_MISSING_EDIT,
    prepare_site_component_done,
    prepare_site_components,
    prepare_site_fill,
    prepare_site_library,
    prepare_site_missing,
    prepare_site_parse_error,
    prepare_site_submit,
    prepare_site_valid,
    site_edited,
    site_library,
    site_loaded,
)
from tui.screenshots.scenes_toolkit import (
    TOOLKIT_ENDPOINTS,
    deploy_toolkit_scene,
    download_newest_toolkit,
    fill_toolkit,
    key_view,
    only_database_hosts,
    prepare_key_granted,
    prepare_key_normal,
    prepare_toolkit_deployed,
    prepare_toolkit_empty,
    prepare_toolkit_invalid,
    prepare_toolkit_revealed,
    prepare_toolkit_valid,
    toolkit_form,
    toolkit_values,
)
from tui.screenshots.scenes_vms import (
    instantiate_and_wait,
    prepare_connect_error,
    prepare_help,
    prepare_jump,
    prepare_vms_detail,
    prepare_vms_empty,
    prepare_vms_error,
    prepare_vms_filtered,
    prepare_vms_normal,
    prepare_vms_sorted,
    vms_loaded,
)

#: every scene, in the order of the snapshot test ids and of `--list`
SCENES: list[Scene] = [
    *scenes_vms.SCENES,
    *scenes_market.SCENES,
    *scenes_toolkit.SCENES,
    *scenes_site.SCENES,
    *scenes_hosts.SCENES,
    *scenes_setup.SCENES,
]

__all__ = [
    "DEFAULT_SIZE", "FROZEN_NOW", "OUTPUT_DIR", "SCENES", "SCENE_HOST", "SCENE_PORT", "SITE_MISSING_EDIT",
    "TOOLKIT_ENDPOINTS", "Prepare", "Scene", "SceneContext", "click_shown", "deploy_toolkit_scene",
    "download_newest_toolkit", "fill_toolkit", "frozen_clock", "hosts_loaded", "hosts_move_planned",
    "instantiate_and_wait", "key_view", "market_loaded", "only_database_hosts", "prepare_connect_error",
    "prepare_help", "prepare_hosts_move_confirm", "prepare_hosts_move_done", "prepare_hosts_move_failed",
    "prepare_hosts_move_preview", "prepare_hosts_normal", "prepare_hosts_why", "prepare_jump",
    "prepare_key_granted", "prepare_key_normal", "prepare_market_attributes", "prepare_market_detail",
    "prepare_market_download", "prepare_market_download_failed", "prepare_market_filtered",
    "prepare_market_normal", "prepare_market_plan", "prepare_site_component_done", "prepare_site_components",
    "prepare_site_fill", "prepare_site_library", "prepare_site_missing", "prepare_site_parse_error",
    "prepare_site_submit", "prepare_site_valid", "prepare_toolkit_deployed", "prepare_toolkit_empty",
    "prepare_toolkit_invalid", "prepare_toolkit_revealed", "prepare_toolkit_valid", "prepare_vms_detail",
    "prepare_vms_empty", "prepare_vms_error", "prepare_vms_filtered", "prepare_vms_normal", "prepare_vms_sorted",
    "scene_app", "scene_driver", "scene_settings", "scene_site", "site_edited", "site_library", "site_loaded",
    "toolkit_form", "toolkit_values", "vms_loaded", "wait_for", "wait_for_screen", "with_glyph_fallback",
    "write_scene",
]
