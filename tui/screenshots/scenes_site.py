"""The site configuration screen's scenes: the editor's states, the fill and submit previews, the component flow."""

from __future__ import annotations

from typing import Any

from tui.screenshots.scene import Scene, SceneContext


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
    await ctx.wait_for(lambda: screen.saved_text is not None and screen.checks.library is not None and screen.checks.facts is not None
                       and screen.checks.facts.identity is not None and screen.checks.checked_text == screen.editor.text and not screen.busy,
                       what="the site configuration")
    # a read of the cloud that failed shows as a note (and changes the side panel): the picture is
    # of a site that answered every read
    assert not screen.checks.facts.notes, f"a read of the cloud failed: {screen.checks.facts.notes}"
    await ctx.pilot.pause()
    return screen


async def site_edited(ctx: SceneContext, screen: Any, edits: Any) -> None:
    """Apply text edits in the editor and wait for the debounced parse and checks."""
    text = screen.editor.text
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    screen.editor.replace(text, (0, 0), screen.editor.document.end)
    await ctx.wait_for(lambda: screen.checks.checked_text == screen.editor.text, what="the parse of the edited text")
    await ctx.pilot.pause()


async def prepare_site_valid(ctx: SceneContext) -> None:
    await site_loaded(ctx)


async def prepare_site_parse_error(ctx: SceneContext) -> None:
    screen = await site_loaded(ctx)
    await site_edited(ctx, screen, (('site_domain: "trial.demo.internal"', 'site_domain: "trial.demo.internal\n  dns: [unclosed'),))
    await ctx.wait_for(lambda: screen.checks.parse_error is not None, what="the parse error")
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
    from tui.screens.site_components import USER_FIELD
    from widgets.validated_field import ValidatedField

    next(f for f in modal.query(ValidatedField) if f.label == USER_FIELD).value = "tkauto"
    await ctx.pilot.pause()
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
    from tui.screens.site_dialogs import SubmitModal

    screen = await site_loaded(ctx)
    await site_edited(ctx, screen, (('site_domain: "trial.demo.internal"', 'site_domain: "trial.lab.internal"'),
                                    ("site_vxlan_guest_mtu: 1450", "site_vxlan_guest_mtu: 1400")))
    await ctx.pilot.press("ctrl+s")
    await ctx.wait_for(lambda: not screen.dirty and not screen.busy, what="the save")
    ctx.app.clear_notifications()
    await ctx.pilot.press("ctrl+t")
    await ctx.wait_for_screen(SubmitModal, what="the submit preview")


SCENES: list[Scene] = [
    Scene("site", "valid", prepare_site_valid, scenario="deployed"),
    Scene("site", "parse-error", prepare_site_parse_error, scenario="deployed"),
    Scene("site", "missing-variables", prepare_site_missing, scenario="deployed"),
    Scene("site", "fill", prepare_site_fill, scenario="deployed"),
    Scene("site", "library", prepare_site_library, scenario="deployed"),
    Scene("site", "components", prepare_site_components, scenario="deployed"),
    Scene("site", "component-done", prepare_site_component_done, scenario="deployed"),
    Scene("site", "submit", prepare_site_submit, scenario="deployed"),
    Scene("site", "read-only", prepare_site_valid, scenario="deployed", read_only=True),
]
