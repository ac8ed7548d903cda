"""The setup screen's scenes: a fresh site, half-way (after a deployment), a blocked network, done."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tui import timing
from tui.screenshots.scene import Scene, SceneContext

#: the scenes' input file values (fixed secrets: the scenes are pictures)
SCENE_SECRET = "scene-Secret-42"
#: the site's own values for the template's examples (what the setup asks for)
SCENE_SITE_VALUES = {
    "site_public_ip": "192.0.2.44",
    "site_domain": "trials.lab.example",
    "site_admin_ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJFWDup4R2o+6kIe8hQAzUxI3SDvSF9CiqeWurrxsmg5 admins@lab",
}


def scene_inputs(directory: Path, branch: str = "trial-site", token: str = "") -> Path:
    """A complete toolkit input file for the scene site (mode 0600); the sites token is the scene
    console's vault password (the demo's) unless given: the setup checks that they are the same."""
    from tui.sim.repos import SIM_VAULT_PASSWORD

    token = token or SIM_VAULT_PASSWORD
    from tui.domain.naming import DEFAULT_NAMING
    from tui.domain.toolkit_inputs import form_fields
    from tui.sim.scenarios import AUTOMATION_PASSWORD

    naming = DEFAULT_NAMING
    values = {f.name: (SCENE_SECRET if f.secret else f.default) for f in form_fields(naming)}
    o, a, m, t = naming.roles
    values.update({
        naming.input_name(f"{o}_hostname"): "s3.site.example", naming.input_name(f"{o}_root_user"): "s3admin",
        naming.input_name(f"{o}_tls_cert"): "", naming.input_name(f"{o}_tls_key"): "",
        naming.input_name(f"{a}_username"): "automation",
        naming.input_name(f"{a}_cloud_endpoint"): "http://10.11.28.1:2633/RPC2",
        naming.input_name(f"{a}_cloud_flow_endpoint"): "http://10.11.28.1:2474",
        naming.input_name(f"{a}_cloud_username"): "tkauto", naming.input_name(f"{a}_cloud_insecure"): "YES",
        naming.input_name(f"{m}_admin_user"): "admin", naming.input_name(f"{m}_sites_branch"): branch,
        naming.input_name(f"{m}_deployment_site"): branch, naming.input_name(f"{t}_user"): "tsadmin",
        naming.input_name(f"{t}_org"): "site", naming.input_name(f"{t}_bucket"): "trials",
        naming.input_name(f"{a}_sites_token"): token,
        naming.input_name(f"{a}_cloud_password"): AUTOMATION_PASSWORD,  # the embedded site's tkauto logs in
    })
    path = directory / "toolkit-inputs.json"
    path.write_text(json.dumps({"name": "Site Toolkit", "custom_attrs_values": values,
                                "networks_values": [{"Public": {"id": "0"}}]}, indent=2))
    path.chmod(0o600)
    return path


async def setup_loaded(ctx: SceneContext, input_path: Path | None = None, cursor: str | None = None) -> Any:
    """Open the setup screen (with an input file) and wait for its checklist."""
    from tui.screens.setup import SetupScreen

    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    ctx.app.open_screen("setup")
    screen = await ctx.wait_for(lambda: isinstance(s := ctx.app.screen, SetupScreen) and s, what="the setup screen")
    await ctx.wait_for(lambda: screen.checklist is not None and not screen.reading, timeout=60, what="the checklist")
    if input_path is not None:
        screen.input_path = str(input_path)
        screen.reload()
        await ctx.wait_for(lambda: not screen.reading and screen.checklist is not None, timeout=60,
                           what="the checklist with the input file")
        await ctx.wait_for(lambda: not screen.reading, timeout=60, what="the reload")
    if cursor is not None:
        screen.table.move_cursor_to_key(cursor)
    await ctx.pilot.pause()
    return screen


async def prepare_setup_fresh(ctx: SceneContext) -> None:
    await setup_loaded(ctx)


async def prepare_setup_halfway(ctx: SceneContext) -> None:
    assert ctx.server is not None
    from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD

    await setup_loaded(ctx, scene_inputs(ctx.server.site.state_dir, EXISTING_SITE, SIM_VAULT_PASSWORD),
                       cursor="database-host")


async def prepare_setup_blocked(ctx: SceneContext) -> None:
    assert ctx.server is not None
    site = ctx.server.site
    with site.lock:
        template = site.vnets[1].template
        template[:] = [(k, v) for k, v in template if k != "GUEST_MTU"] + [("GUEST_MTU", "1500")]
    await setup_loaded(ctx, cursor="trial-network")


async def prepare_setup_done(ctx: SceneContext) -> None:
    """The whole setup done headless first (the same procedures), then the health view."""
    from tui.domain.toolkit_inputs import secret_names
    from tui.procedures.operation import RunContext
    from tui.procedures.setup.facts import target_from_file
    from tui.procedures.setup.run import RunOptions, run_setup

    assert ctx.server is not None
    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    site = ctx.app.site
    path = scene_inputs(ctx.server.site.state_dir)
    target = target_from_file(path, secret_names(site.naming), site.naming)

    async def yes(_plan: Any) -> bool:
        return True

    async def no_secrets(names: list[str]) -> dict[str, str]:
        raise AssertionError(f"the scene's input file lacks {names}")

    await run_setup(site, target, RunOptions(poll_interval=0.05, step_timeout=120, deploy_timeout=120, key_timeout=120),
                    RunContext(lambda event: None), confirm=yes, ask_secrets=no_secrets, site_values=SCENE_SITE_VALUES)
    await setup_loaded(ctx, path, cursor="platform")


#: the smallest terminal the console is made for: the checklist and its dialogs are shown at this size too
SMALL = (80, 24)


async def prepare_setup_confirm(ctx: SceneContext) -> None:
    """n on a fresh site: the download's confirmation (its text scrolls, its buttons stay in sight)."""
    from widgets.confirm_modal import ConfirmModal

    screen = await setup_loaded(ctx)
    # the status line counts a step's time from its third second: stopped, the picture is the same
    # however long the preview took (the harness lets the clock run again after the picture)
    timing.CLOCK.stop()
    await ctx.pilot.press("n")
    modal = await ctx.wait_for_screen(ConfirmModal, timeout=30, what="the download's confirmation")
    await ctx.wait_for(lambda: modal.query("#confirm"), what="its buttons")
    assert screen.running


async def prepare_setup_values(ctx: SceneContext) -> None:
    """The dialog that asks the site's own values for the template's examples core.yaml holds."""
    from textual.widgets import Input

    from tui.screens.setup import ValuesModal

    await setup_loaded(ctx)
    helps = {"site_public_ip": "the template's example 12.34.56.78: the site's public address",
             "site_domain": "the template's example domain: the site's own",
             "site_admin_ssh_public_key": "the template's example key: the administrators' public key"}
    ctx.app.push_screen(ValuesModal(list(helps), helps))
    modal = await ctx.wait_for_screen(ValuesModal, what="the values dialog")
    await ctx.pilot.press(*SCENE_SITE_VALUES["site_public_ip"])
    await ctx.wait_for(lambda: modal.query_one("#secret-site_public_ip", Input).value, what="the value typed")


async def prepare_setup_save(ctx: SceneContext) -> None:
    """n when the inputs are next and no input file exists: the toolkit form, prefilled, then ctrl+s."""
    from tui.screens.setup import SetupScreen
    from tui.screens.toolkit import ToolkitScreen
    from tui.screens.toolkit_files import InputFileModal
    from tui.screenshots.scenes_toolkit import download_newest_toolkit

    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    await download_newest_toolkit(ctx.app.site)
    screen = await setup_loaded(ctx)
    assert isinstance(screen, SetupScreen)
    await ctx.pilot.press("n")
    form = await ctx.wait_for_screen(ToolkitScreen, what="the toolkit form")
    await ctx.wait_for(lambda: form.ready, timeout=30, what="the form")
    await ctx.pilot.press("ctrl+s")
    modal = await ctx.wait_for_screen(InputFileModal, what="the save dialog")
    await ctx.wait_for(lambda: modal.query("#file-ok"), what="its buttons")


async def prepare_setup_trial(ctx: SceneContext) -> None:
    """d on the optional trial-run step of the deployed site, its manager up: the activation held
    (the manager's deploy pipeline waits), the procedures' clock stopped then moved 42 s, so the step
    log says what it waits for with the same elapsed seconds every time (tui.timing)."""
    import threading

    from tui.sim.manager_api import _admin, manager_vm, ready_manager_step
    from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
    from widgets.confirm_modal import ConfirmModal

    assert ctx.server is not None
    site = ctx.server.site

    def ready() -> bool:
        site.advance()
        return ready_manager_step(site)

    await ctx.wait_for(ready, timeout=60, what="the manager VM READY on a host that runs its database")
    site.faults.manager_hold = threading.Event()  # activating until the scene's site stops
    path = scene_inputs(site.state_dir, EXISTING_SITE, SIM_VAULT_PASSWORD)
    data = json.loads(path.read_text())
    with site.lock:
        manager = manager_vm(site)
        assert manager is not None
        data["custom_attrs_values"]["app_manager_admin_password"] = _admin(site, manager)[1]
    path.write_text(json.dumps(data))
    screen = await setup_loaded(ctx, path, cursor="trial-run")
    timing.CLOCK.stop()  # the harness lets it run again after the picture (scene_site)
    await ctx.pilot.press("d")
    await ctx.wait_for_screen(ConfirmModal, timeout=60, what="the trial network's preview")
    await ctx.pilot.press("tab", "enter")
    await ctx.wait_for(lambda: any("(0 s of at most" in line for line in screen.step_log), timeout=60,
                       what="the wait for the manager's pipeline")
    timing.CLOCK.advance(42)
    await ctx.wait_for(lambda: "activating: waiting" in screen.step_log[-1]
                       and "(42 s of at most 1800 s)" in screen.step_log[-1], timeout=30,
                       what="the wait's heartbeat after 42 s, the trial network activating")


SCENES: list[Scene] = [
    Scene("setup", "fresh", prepare_setup_fresh, start_screen="setup"),
    Scene("setup", "halfway", prepare_setup_halfway, scenario="deployed", start_screen="setup"),
    Scene("setup", "blocked", prepare_setup_blocked),
    Scene("setup", "done", prepare_setup_done),
    Scene("setup", "fresh-80x24", prepare_setup_fresh, size=SMALL, start_screen="setup"),
    Scene("setup", "confirm-80x24", prepare_setup_confirm, size=SMALL, start_screen="setup"),
    Scene("setup", "values-80x24", prepare_setup_values, size=SMALL, start_screen="setup"),
    Scene("setup", "save-80x24", prepare_setup_save, size=SMALL),
    Scene("setup", "trial", prepare_setup_trial, scenario="deployed"),
]
