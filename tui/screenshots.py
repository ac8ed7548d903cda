"""`python -m tui.screenshots`: one SVG and one PNG per screen and state, driven against the embedded site.

Each `Scene` names a screen and a state, the demo site it needs and a `prepare` coroutine that
drives the running app into that state (keys, waits on real state, stopping the site...). The same
scenes feed the SVG snapshot tests (tests/ui/test_snapshots.py), so the pictures in the README and
the snapshots never drift apart.

To add a screenshot (and its snapshot test), append one entry to `SCENES`:

    Scene("hosts", "normal", prepare=prepare_hosts_normal, scenario="deployed"),

where `async def prepare_hosts_normal(ctx: SceneContext) -> None` drives `ctx.pilot` (and may use
`ctx.server`, the running `SimServer`, and `ctx.wait_for(...)`).

Scenes are deterministic: the site listens on a fixed loopback address (so endpoints in the
picture do not change; a lock file serializes concurrent runs), the clock is frozen, the terminal
size is fixed and auto-refresh is off.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import fcntl
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator, Sequence, TypeVar

from tui.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from textual.pilot import Pilot

    from tui.app import SiteToolkitApp
    from tui.sim.server import SimServer

S = TypeVar("S")

#: where scene sites listen: a loopback address of their own and the platform's usual port
SCENE_HOST = "127.47.47.47"
SCENE_PORT = 2633
#: the frozen clock of every scene
FROZEN_NOW = datetime(2025, 3, 14, 9, 26, 53, tzinfo=timezone.utc)
DEFAULT_SIZE = (140, 40)
OUTPUT_DIR = Path("screenshots")
_LOCK_PATH = Path(tempfile.gettempdir()) / "sitetk-scene-site.lock"


def frozen_clock() -> datetime:
    return FROZEN_NOW


@dataclass
class SceneContext:
    """What a scene's `prepare` gets: the pilot, the site (None when it is down) and helpers."""

    pilot: "Pilot[Any]"
    server: "SimServer | None"

    @property
    def app(self) -> "SiteToolkitApp":
        return self.pilot.app  # type: ignore[return-value]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 15.0, what: str = "the condition") -> Any:
        return await wait_for(self.pilot, predicate, timeout, what)

    async def wait_for_screen(self, screen_type: type[S], timeout: float = 15.0, what: str = "") -> S:
        return await wait_for_screen(self.pilot, screen_type, timeout, what)

    async def click(self, selector: str, timeout: float = 15.0) -> None:
        await click_shown(self.pilot, selector, timeout)


Prepare = Callable[[SceneContext], Awaitable[None]]


@dataclass(frozen=True)
class Scene:
    """One screenshot: `<screen>-<state>.svg` after `prepare` ran against a fresh demo site."""

    screen: str
    state: str
    prepare: Prepare
    scenario: str = "fresh"
    extra_vms: int = 0
    read_only: bool = False
    size: tuple[int, int] = DEFAULT_SIZE
    #: False: nothing listens at the endpoint when the app starts (start-up failure scenes)
    site_up: bool = True
    #: time scale of the demo site (small: state machines settle fast)
    time_scale: float = 0.01
    settings_overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.screen}-{self.state}"


async def wait_for(pilot: "Pilot[Any]", predicate: Callable[[], Any], timeout: float = 15.0,
                   what: str = "the condition") -> Any:
    """Let the app run until `predicate()` is truthy (polling a real state, with a deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last value: {value!r})")
        await pilot.pause(0.03)


async def wait_for_screen(pilot: "Pilot[Any]", screen_type: "type[S]", timeout: float = 15.0, what: str = "") -> "S":
    """The active screen, once it is a `screen_type` that has composed and mounted.

    A pushed screen is `app.screen` at once, but its widgets (and the focus its AUTO_FOCUS names)
    only exist after its own message loop has composed and mounted it.
    """
    def mounted() -> Any:
        screen = pilot.app.screen
        return screen if isinstance(screen, screen_type) and screen.is_mounted else None

    return await wait_for(pilot, mounted, timeout, what or f"the {screen_type.__name__}")


async def click_shown(pilot: "Pilot[Any]", selector: str, timeout: float = 15.0) -> None:
    """Click the widget `selector` of the active screen once the screen's layout shows it; fail if
    the click lands elsewhere.

    `pilot.click` aims at the widget's region in the last layout: a widget shown again (or on a
    screen just pushed) has no region until the next layout, and a click aimed at it then lands on
    whatever is at the screen's origin and is lost.
    """
    from textual.errors import NoWidget

    def shown() -> Any:
        screen = pilot.app.screen
        if not screen.is_mounted or not (found := screen.query(selector)):
            return None
        widget = found.first()
        region = widget.region
        if not region.area:
            return None
        try:
            at, _ = screen.get_widget_at(region.x, region.y)
        except NoWidget:  # nothing is laid out at that point yet
            return None
        return widget if at is widget else None

    widget = await wait_for(pilot, shown, timeout, f"{selector} to be shown")
    landed = await pilot.click(widget)
    assert landed, f"the click on {selector} did not land on it"


# ---------------------------------------------------------------------------- the VM list scenes

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


# ---------------------------------------------------------------------------- the marketplace scenes

async def market_loaded(ctx: SceneContext, key: str | None = None, version: str = "") -> Any:
    """Open the marketplace screen, wait for its catalog (and put the cursor on `key`, a record id,
    of `version` when given)."""
    from tui.screens.marketplace import MarketplaceScreen

    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    ctx.app.open_screen("market")
    screen = await ctx.wait_for(lambda: isinstance(s := ctx.app.screen, MarketplaceScreen) and s.catalog is not None
                                and not s.loading and s, what="the marketplace catalog")
    if key is not None:
        wanted = next(e.key for e in screen.catalog.entries
                      if e.record.id == key and (not version or e.record.version == version))
        screen.table.move_cursor_to_key(wanted)
        await ctx.wait_for(lambda: screen.shown_key == wanted, what="the appliance detail")
    await ctx.pilot.pause()
    return screen


async def prepare_market_normal(ctx: SceneContext) -> None:
    await market_loaded(ctx)


async def prepare_market_detail(ctx: SceneContext) -> None:
    await market_loaded(ctx, "service_container_cluster")


async def prepare_market_filtered(ctx: SceneContext) -> None:
    screen = await market_loaded(ctx)
    await ctx.pilot.press("slash", *"toolkit image")
    await ctx.wait_for(lambda: screen.table.filter_text == "toolkit image", what="the filter")
    await ctx.pilot.press("enter")


async def _download(ctx: SceneContext, key: str) -> None:
    from tui.screens.market_download import DownloadModal

    await market_loaded(ctx, key)
    await ctx.pilot.press("d")
    modal = await ctx.wait_for_screen(DownloadModal, what="the download form")
    await ctx.wait_for(lambda: modal.market_app is not None, what="the download form's appliance")
    await ctx.wait_for(lambda: not modal.query_one("#dl-review").disabled, what="a complete form")
    modal.review()
    await ctx.wait_for(lambda: modal.plan is not None, what="the download preview")
    modal.start()
    await ctx.wait_for(lambda: modal.has_class("-finished"), timeout=30, what="the end of the download")


async def prepare_market_download(ctx: SceneContext) -> None:
    await _download(ctx, "service_toolkit")


async def prepare_market_download_failed(ctx: SceneContext) -> None:
    await _download(ctx, "service_traffic_generator")


async def prepare_market_plan(ctx: SceneContext) -> None:
    from tui.screens.market_upgrades import UpgradePlanModal

    await market_loaded(ctx)
    await ctx.pilot.press("u")
    modal = await ctx.wait_for_screen(UpgradePlanModal, what="the upgrade plan modal")
    await ctx.wait_for(lambda: modal.plan is not None, what="the upgrade plan")


async def prepare_market_attributes(ctx: SceneContext) -> None:
    from tui.screens.market_attributes import AttributesModal

    await market_loaded(ctx, "service_toolkit", "v0.4.0-20250219-2235")
    await ctx.pilot.press("a")
    modal = await ctx.wait_for_screen(AttributesModal, what="the attributes modal")
    await ctx.wait_for(lambda: modal.plan is not None, what="the attributes preview")


# ---------------------------------------------------------------------------- the site configuration scenes

#: core.yaml of the "missing variables" scene: tn_bastion gone, vm_kvm without its image, the cluster unset
SITE_MISSING_EDIT = (
    ("  tn_bastion:        # mandatory: entry point of every trial network\n    template_id: 0\n    image_id: 0\n", ""),
    ("  vm_kvm:            # highly recommended: checks that the site works\n    template_id: 0\n    image_id: 0\n",
     "  vm_kvm:            # highly recommended: checks that the site works\n    template_id: 0\n  cluster: null\n"),
)


def _site_screen(ctx: SceneContext) -> Any:
    from tui.screens.site_config import SiteConfigScreen

    for screen in ctx.app.screen_stack:
        if isinstance(screen, SiteConfigScreen):
            return screen
    return None


async def site_loaded(ctx: SceneContext) -> Any:
    """Open the site configuration screen, open the demo site from the chooser, wait for the
    library, the cloud facts and the checks."""
    from textual.widgets import OptionList

    from tui.screens.site_dialogs import OpenSiteModal

    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    ctx.app.open_screen("site")
    modal = await ctx.wait_for_screen(OpenSiteModal, what="the site chooser")
    branches = modal.query_one("#open-branches", OptionList)
    branches.focus()
    branches.highlighted = 0
    await ctx.pilot.press("enter")
    screen = await ctx.wait_for(lambda: _site_screen(ctx), what="the site screen")
    await ctx.wait_for(lambda: screen.saved_text is not None and screen.library is not None and screen.facts is not None
                       and screen.checked_text == screen.editor.text and not screen.busy, what="the site configuration")
    await ctx.pilot.pause()
    return screen


async def site_edited(ctx: SceneContext, screen: Any, edits: Any) -> None:
    """Apply text edits in the editor and wait for the debounced parse and checks."""
    text = screen.editor.text
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    screen.editor.replace(text, (0, 0), screen.editor.document.end)
    await ctx.wait_for(lambda: screen.checked_text == screen.editor.text, what="the parse of the edited text")
    await ctx.pilot.pause()


async def prepare_site_valid(ctx: SceneContext) -> None:
    await site_loaded(ctx)


async def prepare_site_parse_error(ctx: SceneContext) -> None:
    screen = await site_loaded(ctx)
    await site_edited(ctx, screen, (('site_domain: "trial.demo.internal"', 'site_domain: "trial.demo.internal\n  dns: [unclosed'),))
    await ctx.wait_for(lambda: screen.parse_error is not None, what="the parse error")
    await ctx.pilot.press("ctrl+g")


async def prepare_site_missing(ctx: SceneContext) -> None:
    screen = await site_loaded(ctx)
    await site_edited(ctx, screen, SITE_MISSING_EDIT)
    line = screen.editor.text.splitlines().index("site_variables:")
    screen.editor.move_cursor((line, 0), center=True)
    await ctx.pilot.pause()


async def site_library(ctx: SceneContext) -> Any:
    """The component flow's library with ran_sim (not listed yet) highlighted."""
    from textual.widgets import OptionList

    from tui.screens.site_components import ComponentFlowModal

    await site_loaded(ctx)
    await ctx.pilot.press("ctrl+n")
    modal = await ctx.wait_for_screen(ComponentFlowModal, what="the component flow")
    components = modal.query_one("#flow-components", OptionList)
    components.focus()
    components.highlighted = next(i for i in range(components.option_count) if components.get_option_at_index(i).id == "ran_sim")
    await ctx.pilot.pause()
    return modal


async def prepare_site_library(ctx: SceneContext) -> None:
    await site_library(ctx)


async def prepare_site_fill(ctx: SceneContext) -> None:
    from tui.screens.site_dialogs import PreviewModal

    await site_loaded(ctx)
    await ctx.pilot.press("ctrl+f")
    await ctx.wait_for_screen(PreviewModal, what="the fill preview")


async def prepare_site_components(ctx: SceneContext) -> None:
    modal = await site_library(ctx)
    await ctx.pilot.press("enter")
    await ctx.wait_for(lambda: modal.step == "-form", what="the site variables form")
    modal.review()
    await ctx.wait_for(lambda: modal.step == "-review" and not modal.query_one("#flow-enable").disabled, what="the review")


async def prepare_site_component_done(ctx: SceneContext) -> None:
    from tui.screens.site_components import ComponentFlowModal

    await prepare_site_components(ctx)
    modal = ctx.app.screen
    assert isinstance(modal, ComponentFlowModal)
    modal.start()
    await ctx.wait_for(lambda: modal.step == "-finished" and modal.query_one("#flow-close").has_focus, timeout=30,
                       what="the component provisioned")


async def prepare_site_submit(ctx: SceneContext) -> None:
    from tui.screens.site_dialogs import PreviewModal

    screen = await site_loaded(ctx)
    await site_edited(ctx, screen, (('site_domain: "trial.demo.internal"', 'site_domain: "trial.lab.internal"'),
                                    ("site_vxlan_guest_mtu: 1450", "site_vxlan_guest_mtu: 1400")))
    await ctx.pilot.press("ctrl+s")
    await ctx.wait_for(lambda: not screen.dirty and not screen.busy, what="the save")
    ctx.app.clear_notifications()
    await ctx.pilot.press("ctrl+t")
    await ctx.wait_for_screen(PreviewModal, what="the submit preview")



# ---------------------------------------------------------------------------- the hosts scenes

async def hosts_loaded(ctx: SceneContext) -> Any:
    """Open the hosts screen and wait for its first load."""
    from tui.screens.hosts import HostsScreen

    await ctx.wait_for(lambda: ctx.app.info is not None, what="the connection")
    ctx.app.open_screen("hosts")
    screen = await ctx.wait_for(lambda: isinstance(s := ctx.app.screen, HostsScreen) and s.inventory is not None
                                and not s.loading and s, what="the hosts screen")
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
    await ctx.wait_for(lambda: ctx.app.screen is modal and modal.changed and not modal.running, timeout=30,
                       what="the end of the move")


async def prepare_hosts_move_failed(ctx: SceneContext) -> None:
    assert ctx.server is not None
    ctx.server.site.faults.fail_next_deploys = 1
    await prepare_hosts_move_done(ctx)


# ---------------------------------------------------------------------------- the toolkit scenes

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
            facts = dict(a for a in host.template if isinstance(a[1], str))
            features = {f.strip() for f in facts.get("KVM_CPU_FEATURES", "").split(",")}
            if host.state == 2 and not {"sse4_2", "avx"} <= features:
                host.state = 4


async def download_newest_toolkit(site: Any) -> int:
    """Operation 2 for the newest toolkit app the cloud lists; returns the service template's ID."""
    from tui.procedures.download_appliance import download_appliance, plan_download

    apps = await site.cloud.list_marketapps()
    name = site.naming.toolkit_appliance_name
    app = max((a for a in apps if a.name == name), key=lambda a: a.version)
    plan = await plan_download(site, app.id, 1, f"{name} {app.version.split('-', 1)[0]}")
    template_id: int | None = None
    async for event in download_appliance(site, plan, poll_interval=0.05, step_timeout=60.0):
        template_id = event.data.get("service_template_id", template_id)
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
    await ctx.wait_for(lambda: ctx.app.screen is screen and not screen.busy and screen.plan is not None
                       and screen.plan.already, timeout=30, what="the grant")
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
    Scene("connect", "error", prepare_connect_error, site_up=False),
    Scene("market", "normal", prepare_market_normal, scenario="deployed"),
    Scene("market", "detail", prepare_market_detail),
    Scene("market", "filtered", prepare_market_filtered),
    Scene("market", "download", prepare_market_download),
    Scene("market", "download-failed", prepare_market_download_failed),
    Scene("market", "plan", prepare_market_plan, scenario="deployed"),
    Scene("market", "attributes", prepare_market_attributes, scenario="deployed"),
    Scene("market", "read-only", prepare_market_normal, scenario="deployed", read_only=True),
    Scene("toolkit", "empty", prepare_toolkit_empty),
    Scene("toolkit", "invalid", prepare_toolkit_invalid),
    Scene("toolkit", "valid", prepare_toolkit_valid),
    Scene("toolkit", "revealed", prepare_toolkit_revealed),
    Scene("toolkit", "deployed", prepare_toolkit_deployed),
    Scene("key", "normal", prepare_key_normal),
    Scene("key", "granted", prepare_key_granted),
    Scene("site", "valid", prepare_site_valid, scenario="deployed"),
    Scene("site", "parse-error", prepare_site_parse_error, scenario="deployed"),
    Scene("site", "missing-variables", prepare_site_missing, scenario="deployed"),
    Scene("site", "fill", prepare_site_fill, scenario="deployed"),
    Scene("site", "library", prepare_site_library, scenario="deployed"),
    Scene("site", "components", prepare_site_components, scenario="deployed"),
    Scene("site", "component-done", prepare_site_component_done, scenario="deployed"),
    Scene("site", "submit", prepare_site_submit, scenario="deployed"),
    Scene("site", "read-only", prepare_site_valid, scenario="deployed", read_only=True),
    Scene("hosts", "normal", prepare_hosts_normal, scenario="deployed"),
    Scene("hosts", "why", prepare_hosts_why, scenario="deployed"),
    Scene("hosts", "read-only", prepare_hosts_normal, scenario="deployed", read_only=True),
    Scene("hosts", "move-preview", prepare_hosts_move_preview, scenario="deployed"),
    Scene("hosts", "move-confirm", prepare_hosts_move_confirm, scenario="deployed"),
    Scene("hosts", "move-done", prepare_hosts_move_done, scenario="deployed"),
    Scene("hosts", "move-failed", prepare_hosts_move_failed, scenario="deployed"),
]


# ---------------------------------------------------------------------------- running scenes

@contextlib.contextmanager
def _scene_lock() -> Iterator[None]:
    """Serialize scenes across processes: they share one fixed address."""
    with open(_LOCK_PATH, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def scene_site(scene: Scene, state_dir: Path) -> Iterator["SimServer | None"]:
    """The demo site a scene needs, at the fixed scene address (None when the scene wants it down)."""
    from tui.sim.runner import start_sim
    from tui.sim.state import SimConfig

    with _scene_lock():
        if not scene.site_up:
            yield None
            return
        config = SimConfig(scenario=scene.scenario, extra_vms=scene.extra_vms, time_scale=scene.time_scale)
        server = start_sim(config, state_dir=state_dir, host=SCENE_HOST, port=SCENE_PORT)
        try:
            yield server
        finally:
            server.stop()


def scene_settings(scene: Scene, server: "SimServer | None") -> Settings:
    """Settings pointing at the scene's site; auto-refresh effectively off, default theme."""
    if server is not None:
        from tui.console import demo_settings

        # the site's repositories and vault password file; console state inside the scene's state dir
        settings = demo_settings(server, Settings(state_dir=server.site.state_dir / "console",
                                                  audit_log=server.site.state_dir / "console" / "audit.log"))
    else:
        url = f"http://{SCENE_HOST}:{SCENE_PORT}"
        settings = Settings.for_site(f"{url}/RPC2", "oneadmin:scene", url, (url,))
    values: dict[str, Any] = {"refresh_interval": 3600.0, "theme": "textual-dark", "xmlrpc_timeout": 5.0}
    values.update(scene.settings_overrides)
    return dataclasses.replace(settings, **values)


def scene_app(scene: Scene, server: "SimServer | None") -> "SiteToolkitApp":
    from tui.app import SiteToolkitApp
    from tui.procedures.connection import SiteConnection

    return SiteToolkitApp(SiteConnection(scene_settings(scene, server)), read_only=scene.read_only,
                          clock=frozen_clock, notification_timeout=3600)


def scene_driver(scene: Scene, server: "SimServer | None") -> Callable[["Pilot[Any]"], Awaitable[None]]:
    """The `run_before` for `snap_compare` (and for `write_scene`)."""

    async def drive(pilot: "Pilot[Any]") -> None:
        await scene.prepare(SceneContext(pilot, server))
        _steady_cursors(pilot.app)
        await pilot.pause()

    return drive


def _steady_cursors(app: Any) -> None:
    """Stop text cursors blinking, so a picture does not depend on when it was taken."""
    from textual.widgets import Input, TextArea

    for screen in app.screen_stack:
        for widget in screen.query("Input, TextArea"):
            if isinstance(widget, (Input, TextArea)):
                widget.cursor_blink = False


async def _capture(scene: Scene, server: "SimServer | None") -> str:
    app = scene_app(scene, server)
    async with app.run_test(size=scene.size) as pilot:
        await scene_driver(scene, server)(pilot)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        return app.export_screenshot(title=f"sitetk: {scene.screen} ({scene.state})")


_FALLBACK_FONT = "DejaVu Sans Mono"
_missing_cache: dict[str, bool] = {}


def _missing_from_fira(char: str) -> bool:
    """Whether Fira Code lacks `char` (asked of fontconfig; False when it cannot be asked)."""
    if char not in _missing_cache:
        import shutil
        import subprocess

        if shutil.which("fc-list") is None:
            _missing_cache[char] = False
        else:
            out = subprocess.run(["fc-list", f":charset={ord(char):04x}", "family"], capture_output=True, text=True,
                                 check=False).stdout
            _missing_cache[char] = "fira code" not in out.lower()
    return _missing_cache[char]


def with_glyph_fallback(svg: str) -> str:
    """Wrap glyphs Fira Code lacks (✔ ✘ ...) in a tspan of a font that has them, for cairosvg,
    which does not fall back per glyph as terminals do. Only the PNG uses this."""
    chars = {c for c in set(svg) if ord(c) > 0x2000 and _missing_from_fira(c)}
    for char in chars:
        svg = svg.replace(char, f'<tspan style="font-family:\'{_FALLBACK_FONT}\'">{char}</tspan>')
    return svg


def write_scene(scene: Scene, output: Path, *, png: bool = True) -> list[Path]:
    """Render one scene to `<output>/<screen>-<state>.svg` (and `.png`); returns the paths written."""
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sitetk-scene-") as state_dir:
        with scene_site(scene, Path(state_dir)) as server:
            svg = asyncio.run(_capture(scene, server))
    svg_path = output / f"{scene.name}.svg"
    svg_path.write_text(svg, encoding="utf-8")
    written = [svg_path]
    if png:
        import cairosvg

        png_path = svg_path.with_suffix(".png")
        cairosvg.svg2png(bytestring=with_glyph_fallback(svg).encode("utf-8"), write_to=str(png_path),
                         output_width=scene.size[0] * 12)
        written.append(png_path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tui.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these scenes (<screen>-<state>, or a screen name)")
    parser.add_argument("--output", type=Path, default=OUTPUT_DIR, help="directory (default: screenshots/)")
    parser.add_argument("--no-png", action="store_true", help="write only the SVG files")
    parser.add_argument("--list", action="store_true", help="list the scenes and exit")
    args = parser.parse_args(argv)
    if args.list:
        for scene in SCENES:
            print(scene.name)
        return 0
    chosen = [s for s in SCENES if not args.names or s.name in args.names or s.screen in args.names]
    if not chosen:
        print(f"no scene matches {' '.join(args.names)}; try --list", file=sys.stderr)
        return 2
    failures = 0
    for scene in chosen:
        try:
            paths = write_scene(scene, args.output, png=not args.no_png)
        except Exception as exc:  # noqa: BLE001 - report every scene, then fail
            failures += 1
            print(f"FAILED {scene.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        print(" ".join(str(p) for p in paths))
    return 1 if failures else 0


if __name__ == "__main__":
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    sys.exit(main())
