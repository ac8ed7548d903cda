"""The hosts screen's scenes: the inventory, why a host is unfit, the move modal's states."""

from __future__ import annotations

from typing import Any

from tui.screenshots.scene import Scene, SceneContext


async def hosts_loaded(ctx: SceneContext) -> Any:
    """Open the hosts screen and wait for its first load."""
    from tui.screens.hosts import HostsScreen

    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    ctx.app.open_screen("hosts")
    screen = await ctx.wait_for(lambda: isinstance(s := ctx.app.screen, HostsScreen) and s.inventory is not None
                                and not s.reloading and s, what="the hosts screen")
    await ctx.pilot.pause()
    return screen


async def prepare_hosts_normal(ctx: SceneContext) -> None:
    await hosts_loaded(ctx)


async def prepare_hosts_why(ctx: SceneContext) -> None:
    screen = await hosts_loaded(ctx)
    screen.hosts_table.focus()
    screen.hosts_table.move_cursor_to_key(2)  # the AVX-less host
    await ctx.pilot.pause()


async def hosts_move_planned(ctx: SceneContext) -> Any:
    from tui.screens.hosts_move import MoveModal

    await hosts_loaded(ctx)
    await ctx.pilot.press("m")
    modal = await ctx.wait_for_screen(MoveModal, what="the move modal")
    await ctx.wait_for(lambda: not modal.query_one("#mv-start").disabled, what="the move preview")
    await ctx.pilot.pause()
    return modal


async def prepare_hosts_move_preview(ctx: SceneContext) -> None:
    await hosts_move_planned(ctx)


async def _hosts_move_confirm(ctx: SceneContext) -> Any:
    from widgets.confirm_modal import ConfirmModal

    modal = await hosts_move_planned(ctx)
    await ctx.click("#mv-start")
    await ctx.wait_for_screen(ConfirmModal, what="the confirmation")
    return modal


async def prepare_hosts_move_confirm(ctx: SceneContext) -> None:
    await _hosts_move_confirm(ctx)


async def prepare_hosts_move_done(ctx: SceneContext) -> None:
    modal = await _hosts_move_confirm(ctx)
    await ctx.click("#confirm")
    await ctx.wait_for(lambda: modal.changed and not modal.running and ctx.app.screen is modal, timeout=30,
                       what="the end of the move")


async def prepare_hosts_move_failed(ctx: SceneContext) -> None:
    assert ctx.server is not None
    ctx.server.site.faults.fail_next_deploys = 1
    await prepare_hosts_move_done(ctx)


SCENES: list[Scene] = [
    Scene("hosts", "normal", prepare_hosts_normal, scenario="deployed", start_screen="hosts"),
    Scene("hosts", "why", prepare_hosts_why, scenario="deployed", start_screen="hosts"),
    Scene("hosts", "read-only", prepare_hosts_normal, scenario="deployed", read_only=True, start_screen="hosts"),
    Scene("hosts", "move-preview", prepare_hosts_move_preview, scenario="deployed", start_screen="hosts"),
    Scene("hosts", "move-confirm", prepare_hosts_move_confirm, scenario="deployed", start_screen="hosts"),
    Scene("hosts", "move-done", prepare_hosts_move_done, scenario="deployed", start_screen="hosts"),
    Scene("hosts", "move-failed", prepare_hosts_move_failed, scenario="deployed", start_screen="hosts"),
]
