"""The toolkit screen's scenes (the form, its validation, the deployment) and the key view's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tui.domain.one_states import HostState
from tui.screenshots.scene import Scene, SceneContext
from tui.sim.repos import SIM_VAULT_PASSWORD
from tui.sim.scenarios import AUTOMATION_PASSWORD

if TYPE_CHECKING:  # pragma: no cover
    from tui.sim.server import SimServer


#: what the toolkit scenes type as the automation's cloud endpoints (the frontend on the OAM network)
TOOLKIT_ENDPOINTS = ("http://10.11.28.1:2633/RPC2", "http://10.11.28.1:2474")


def only_database_hosts(server: "SimServer | None") -> None:
    """Disable the demo site's hosts whose CPU cannot run the manager's document database (no AVX
    or no CPU features reported), so a toolkit deployment reaches RUNNING without operation 7."""
    if server is None:
        return
    site = server.site
    with site.lock:
        for host in site.hosts.values():
            facts = {k: v for k, v in host.template if isinstance(v, str)}
            features = {f.strip() for f in facts.get("KVM_CPU_FEATURES", "").split(",")}
            if host.state == HostState.MONITORED and not {"sse4_2", "avx"} <= features:
                host.state = HostState.DISABLED


async def download_newest_toolkit(site: Any) -> int:
    """Operation 2 for the newest toolkit app the cloud lists; returns the service template's ID."""
    from tui.procedures.market.download import download_appliance, plan_download
    from tui.procedures.operation import RunContext

    apps = await site.cloud.list_marketapps()
    name = site.naming.toolkit_appliance_name
    app = max((a for a in apps if a.name == name), key=lambda a: a.version)
    plan = await plan_download(site, app.id, 1, f"{name} {app.version.split('-', 1)[0]}")
    result = await download_appliance(site, plan, RunContext(lambda event: None), poll_interval=0.05, step_timeout=60.0)
    template_id = result.service_template_id
    if template_id is None:
        raise AssertionError("the toolkit download created no service template")
    return int(template_id)


async def toolkit_form(ctx: SceneContext) -> Any:
    """Download the toolkit, open the toolkit screen and wait for its form."""
    from tui.screens.toolkit import ToolkitScreen

    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    only_database_hosts(ctx.server)
    await download_newest_toolkit(ctx.app.site)
    ctx.app.open_screen("toolkit")
    screen = await ctx.wait_for(lambda: isinstance(s := ctx.app.screen, ToolkitScreen) and s.ready and s,
                                timeout=30, what="the toolkit form")
    screen.poll_interval = 0.05
    await ctx.pilot.pause()
    return screen


def toolkit_values(screen: Any) -> dict[str, str]:
    """Valid values for every mandatory input (fixed secrets: the scenes are pictures)."""
    naming = screen.form.naming
    o, a, m, _ = naming.roles
    values = {
        naming.input_name(f"{o}_hostname"): "s3.site.example,console.s3.site.example",
        naming.input_name(f"{a}_cloud_endpoint"): TOOLKIT_ENDPOINTS[0],
        naming.input_name(f"{a}_cloud_flow_endpoint"): TOOLKIT_ENDPOINTS[1],
        naming.input_name(f"{a}_cloud_username"): "tkauto",
        naming.input_name(f"{m}_sites_branch"): "demo-site",
        naming.input_name(f"{m}_deployment_site"): "demo-site",
    }
    for form_field in screen.form.fields:
        if form_field.secret and form_field.mandatory:
            values[form_field.name] = f"scene-{form_field.name.rsplit('_', 1)[-1]}-Secret-42"
    # the vault secret of the demo branch: the site checks compare it with the vault password file
    values[naming.input_name(f"{a}_sites_token")] = SIM_VAULT_PASSWORD
    # the cloud user's password: the site checks log in with it
    values[naming.input_name(f"{a}_cloud_password")] = AUTOMATION_PASSWORD
    return values


async def fill_toolkit(ctx: SceneContext, screen: Any, values: dict[str, str]) -> None:
    for name, value in values.items():
        screen.fields[name].value = value
    await ctx.pilot.pause()


async def prepare_toolkit_empty(ctx: SceneContext) -> None:
    await toolkit_form(ctx)


async def prepare_toolkit_invalid(ctx: SceneContext) -> None:
    screen = await toolkit_form(ctx)
    naming = screen.form.naming
    await fill_toolkit(ctx, screen, {
        naming.input_name(f"{naming.role_objectstore}_hostname"): "s3.site.example,,minio:9000",
        naming.input_name(f"{naming.role_automation}_cloud_endpoint"): "http://10.11.28.1:2633",
    })
    await ctx.pilot.press("ctrl+g")
    await ctx.wait_for(lambda: screen.submitted, what="the validation")
    await ctx.pilot.pause()


async def prepare_toolkit_valid(ctx: SceneContext) -> None:
    screen = await toolkit_form(ctx)
    await fill_toolkit(ctx, screen, toolkit_values(screen))
    screen.first_invalid()
    screen.query_one("#tk-form").scroll_home(animate=False)
    await ctx.pilot.pause()


async def prepare_toolkit_revealed(ctx: SceneContext) -> None:
    from widgets.secret_input import SecretInput

    screen = await toolkit_form(ctx)
    await fill_toolkit(ctx, screen, toolkit_values(screen))
    secret = next(f.name for f in screen.form.fields if f.secret and not f.multiline)
    widget = screen.fields[secret]
    widget.focus()
    await ctx.pilot.press("ctrl+r")
    await ctx.wait_for(lambda: widget.query_one(SecretInput).revealed, what="the revealed secret")
    screen.query_one("#tk-form").scroll_to_widget(widget, animate=False, top=True)
    await ctx.pilot.pause()


async def deploy_toolkit_scene(ctx: SceneContext) -> Any:
    from widgets.confirm_modal import ConfirmModal

    screen = await toolkit_form(ctx)
    await fill_toolkit(ctx, screen, toolkit_values(screen))
    await ctx.pilot.press("ctrl+g")
    await ctx.wait_for_screen(ConfirmModal, what="the deployment preview")
    await ctx.click("#confirm")
    await ctx.wait_for(lambda: screen.deploy_view.phase not in ("idle", "running"), timeout=60,
                       what="the end of the deployment")
    await ctx.pilot.pause()
    return screen


async def prepare_toolkit_deployed(ctx: SceneContext) -> None:
    await deploy_toolkit_scene(ctx)


async def key_view(ctx: SceneContext) -> Any:
    from tui.screens.toolkit_key import KeyScreen

    await deploy_toolkit_scene(ctx)
    await ctx.pilot.press("k")
    screen = await ctx.wait_for_screen(KeyScreen, what="the key view")
    await ctx.wait_for(lambda: not screen.load_pending, timeout=30, what="the key view's load")
    return screen


async def prepare_key_normal(ctx: SceneContext) -> None:
    await key_view(ctx)


async def prepare_key_granted(ctx: SceneContext) -> None:
    from widgets.confirm_modal import ConfirmModal

    screen = await key_view(ctx)
    await ctx.pilot.press("g")
    await ctx.wait_for_screen(ConfirmModal, what="the grant preview")
    await ctx.click("#confirm")
    await ctx.wait_for(lambda: not screen.busy and screen.plan is not None and screen.plan.already
                       and ctx.app.screen is screen, timeout=30, what="the grant")
    await ctx.pilot.pause()


SCENES: list[Scene] = [
    Scene("toolkit", "empty", prepare_toolkit_empty),
    Scene("toolkit", "invalid", prepare_toolkit_invalid),
    Scene("toolkit", "valid", prepare_toolkit_valid),
    Scene("toolkit", "revealed", prepare_toolkit_revealed),
    Scene("toolkit", "deployed", prepare_toolkit_deployed),
    Scene("key", "normal", prepare_key_normal),
    Scene("key", "granted", prepare_key_granted),
]
