"""The setup's values and secrets dialogs at 80x24 (issue 20 item 9, "dialogs fit at 80x24"): every
label (the intro and each value's question, as long as the real ones) wraps inside the dialog and
is seen whole, none cut at the frame."""

from __future__ import annotations

import yaml
from textual.app import App
from textual.widgets import Label

from tests.ui.conftest import rendered_text
from tui.domain.site_checks import TEMPLATE_PLACEHOLDERS, example_values
from tui.domain.site_config import SiteConfig
from tui.screens.setup import SecretsModal, ValuesModal
from tui.screenshots import wait_for, wait_for_screen


def _asked() -> dict[str, str]:
    """What the setup asks for a core.yaml with every template example left (site_run's questions)."""
    values = {item.path: item.value for item in TEMPLATE_PLACEHOLDERS if "." not in item.path}
    values["site_admin_ssh_public_key"] = "ssh-ed25519 AAAAFakeTemplateKeyReplaceMe admin@example"
    return {e.path: e.ask for e in example_values(SiteConfig.parse(yaml.safe_dump(values)))}


def _words(text: str) -> str:
    return " ".join(text.split())


async def test_every_label_of_the_values_dialog_is_seen_whole_at_80x24() -> None:
    asked = _asked()
    assert any(len(f"{path}: {ask}") > 80 for path, ask in asked.items()), "a question longer than the screen"
    for dialog in (ValuesModal(list(asked), asked), SecretsModal(["app_automation_sites_token"])):
        app: App[None] = App()
        async with app.run_test(size=(80, 24)) as pilot:
            app.push_screen(dialog)
            modal = await wait_for_screen(pilot, type(dialog), what="the dialog")
            body = modal.query_one(".dialog-body")
            labels = await wait_for(pilot, lambda modal=modal: [label for label in modal.query(Label) if label.region.area] or None,
                                    what="the labels laid out")
            for label in labels:
                full = _words(str(label.render()))
                assert label.region.right <= body.content_region.right, f"cut at the frame: {full}"
                assert _words(rendered_text(label)) == full, rendered_text(label)
                body.scroll_to_widget(label, animate=False)  # the text scrolls; each label comes into sight whole
                await wait_for(pilot, lambda label=label, body=body: body.region.contains_region(label.region),
                               what=f"{full[:30]}... in sight")
