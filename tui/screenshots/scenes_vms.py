"""The VM list's scenes, and the app-wide ones shown over it (help, jump prompt, start-up failure)."""

from __future__ import annotations

import time
from typing import Any

from tui.screenshots.scene import Scene, SceneContext


def _vm_screen(ctx: SceneContext) -> Any:
    from tui.screens.vms import VmListScreen

    screen = ctx.app.screen
    return screen if isinstance(screen, VmListScreen) else None


async def vms_loaded(ctx: SceneContext) -> Any:
    """Wait for the VM list's first load and for the detail panel to show the cursor's VM."""
    screen = await ctx.wait_for(lambda: (s := _vm_screen(ctx)) is not None and s.loaded_once and s, what="the VM list")
    await ctx.wait_for(lambda: screen.detail_vm_id == screen.table.cursor_key or screen.table.cursor_key is None,
                       what="the VM detail")
    await ctx.pilot.pause()
    return screen


async def prepare_vms_normal(ctx: SceneContext) -> None:
    await vms_loaded(ctx)


async def prepare_vms_filtered(ctx: SceneContext) -> None:
    screen = await vms_loaded(ctx)
    await ctx.pilot.press("slash", *"broadwell")
    await ctx.wait_for(lambda: screen.table.filter_text == "broadwell", what="the filter")
    await ctx.pilot.press("enter", "down")
    await ctx.wait_for(lambda: screen.detail_vm_id == screen.table.cursor_key, what="the VM detail")


async def prepare_vms_sorted(ctx: SceneContext) -> None:
    screen = await vms_loaded(ctx)
    await ctx.pilot.press("H")
    await ctx.wait_for(lambda: screen.table.sort_column == "host", what="the sort")
    await ctx.wait_for(lambda: screen.detail_vm_id == screen.table.cursor_key, what="the VM detail")


async def instantiate_and_wait(ctx: SceneContext, name: str, template_id: int = 0) -> int:
    """Instantiate a VM through the real API and refresh the list until it shows it running."""
    from tui.screens.vms import VmListScreen

    vm_id = await ctx.app.site.cloud.template_instantiate(template_id, name=name)
    screen = ctx.app.screen
    assert isinstance(screen, VmListScreen)

    async def running() -> bool:
        if not screen.refreshing:
            screen.refresh_vms()
        await ctx.wait_for(lambda: not screen.refreshing, what="a refresh")
        vm = screen.vms.get(vm_id)
        return vm is not None and vm.state_name == "runn"

    deadline = time.monotonic() + 20
    while not await running():
        if time.monotonic() > deadline:
            raise AssertionError(f"VM {vm_id} ({name}) never reached runn")
        await ctx.pilot.pause(0.05)
    return vm_id


async def prepare_vms_detail(ctx: SceneContext) -> None:
    screen = await vms_loaded(ctx)
    vm_id = await instantiate_and_wait(ctx, "web-frontend")
    screen.table.move_cursor_to_key(vm_id)
    await ctx.wait_for(lambda: screen.detail_vm_id == vm_id, what="the VM detail")


async def prepare_vms_empty(ctx: SceneContext) -> None:
    await vms_loaded(ctx)


async def prepare_vms_error(ctx: SceneContext) -> None:
    screen = await vms_loaded(ctx)
    assert ctx.server is not None
    ctx.server.stop()
    await ctx.pilot.press("r")
    await ctx.wait_for(lambda: screen.last_error is not None and not screen.refreshing, what="the refresh failure")


async def prepare_connect_error(ctx: SceneContext) -> None:
    from tui.screens.connect_error import ConnectErrorScreen

    await ctx.wait_for_screen(ConnectErrorScreen, what="the connection failure screen")


async def prepare_help(ctx: SceneContext) -> None:
    from widgets.help_screen import HelpScreen

    await vms_loaded(ctx)
    await ctx.pilot.press("question_mark")
    await ctx.wait_for_screen(HelpScreen, what="the help")
    await ctx.pilot.pause()


async def prepare_jump(ctx: SceneContext) -> None:
    """`:` with "vm" typed (the full list changes whenever a screen is registered)."""
    from textual.widgets import Input

    from widgets.jump_prompt import JumpPrompt

    await vms_loaded(ctx)
    await ctx.pilot.press("colon")
    prompt = await ctx.wait_for_screen(JumpPrompt, what="the jump prompt")
    # typed once the prompt's input has the focus (keys sent earlier would reach the VM list)
    await ctx.wait_for(lambda: ctx.app.focused is prompt.query_one("#jump-input"), what="the prompt's focus")
    await ctx.pilot.press("v", "m")
    await ctx.wait_for(lambda: prompt.query_one("#jump-input", Input).value == "vm", what="the typed name")
    await ctx.pilot.pause()


SCENES: list[Scene] = [
    Scene("vms", "normal", prepare_vms_normal, extra_vms=60),
    Scene("vms", "filtered", prepare_vms_filtered, extra_vms=60),
    Scene("vms", "sorted", prepare_vms_sorted, extra_vms=60),
    Scene("vms", "detail", prepare_vms_detail, extra_vms=12),
    Scene("vms", "empty", prepare_vms_empty),
    Scene("vms", "error", prepare_vms_error, extra_vms=60),
    Scene("vms", "read-only", prepare_vms_normal, extra_vms=60, read_only=True),
    Scene("app", "help", prepare_help, extra_vms=8),
    Scene("app", "jump", prepare_jump, extra_vms=8),
    Scene("connect", "error", prepare_connect_error, site_up=False, settings_overrides={"xmlrpc_timeout": 5.0}),
]
