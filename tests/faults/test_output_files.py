"""Output files: never over an existing file, never through a symlink, without --force (issue 15, item 8).

Before: `sitetk market attrs --write-file PATH` overwrote an existing file and wrote through a
symlink at PATH into whatever it pointed at.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.faults.conftest import PointAt, run_json
from tui.adapters.output_file import OutputFileExists, write_output_file
from tui.cli.common import EXIT_FAILED, EXIT_OK
from tui.errors import SiteError
from tui.sim.server import SimServer


def test_attrs_refuses_an_existing_file_and_a_symlink_without_force(
        sim: SimServer, env: PointAt, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env(sim)
    key = f"{sim.market_url}#service_toolkit"
    existing = tmp_path / "toolkit"
    existing.write_text("the operator's own notes\n")
    code, answer = run_json(capsys, "market", "attrs", key, "--file-only", "--write-file", str(existing), "--json")
    assert code == EXIT_FAILED and answer["error"]["title"] == f"{existing} exists"
    assert "--force" in answer["error"]["detail"]
    assert existing.read_text() == "the operator's own notes\n"

    victim = tmp_path / "victim"
    victim.write_text("not yours\n")
    link = tmp_path / "linked"
    link.symlink_to(victim)
    code, answer = run_json(capsys, "market", "attrs", key, "--file-only", "--write-file", str(link), "--json")
    assert code == EXIT_FAILED and answer["error"]["title"] == f"{link} is a symbolic link"
    assert victim.read_text() == "not yours\n"

    code, answer = run_json(capsys, "market", "attrs", key, "--file-only", "--write-file", str(link), "--force",
                            "--json")
    assert code == EXIT_OK and answer["written"] == str(link)
    assert not link.is_symlink() and link.read_text() == answer["file"]  # the link replaced, not followed
    assert victim.read_text() == "not yours\n"
    code, answer = run_json(capsys, "market", "attrs", key, "--file-only", "--write-file", str(existing), "--force",
                            "--json")
    assert code == EXIT_OK and existing.read_text() == answer["file"]


def test_the_writer_makes_secret_files_private_and_refuses_special_files(tmp_path: Path) -> None:
    secret = write_output_file(tmp_path / "inputs.json", "{}\n", secret=True)
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    with pytest.raises(OutputFileExists):
        write_output_file(secret, "{}\n", secret=True)
    write_output_file(secret, '{"a": 1}\n', secret=True, force=True)
    assert secret.read_text() == '{"a": 1}\n' and stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputFileExists):
        write_output_file(dangling, "x")
    assert not (tmp_path / "nowhere").exists()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(SiteError, match="not a regular file"):
        write_output_file(fifo, "x", force=True)
    with pytest.raises(SiteError, match="No directory"):
        write_output_file(tmp_path / "missing" / "file", "x")


async def test_the_console_asks_before_replacing_a_file_and_never_writes_through_a_link(
        sim: SimServer, tmp_path: Path) -> None:
    from textual.widgets import Button, Input

    from tests.ui.conftest import SIZE, console_app, wait_for
    from tui.screens.market_attributes import AttributesModal
    from tui.screens.marketplace import MarketplaceScreen
    from tui.screenshots import click_shown, wait_for_screen
    from widgets.confirm_modal import ConfirmModal

    existing = tmp_path / "toolkit"
    existing.write_text("the operator's own notes\n")
    victim = tmp_path / "victim"
    victim.write_text("not yours\n")
    link = tmp_path / "linked"
    link.symlink_to(victim)
    app = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.info is not None, what="the connection")
        app.open_screen("market")
        screen = await wait_for(pilot, lambda: isinstance(s := app.screen, MarketplaceScreen) and s.catalog is not None
                                and not s.reloading and s.table.size.height > 0 and s, what="the catalog")
        key = f"{sim.market_url}#service_toolkit"
        screen.table.move_cursor_to_key(key)
        await wait_for(pilot, lambda: screen.shown_key == key, what="the detail")
        await pilot.press("a")
        modal = await wait_for_screen(pilot, AttributesModal, what="the attributes modal")
        for path, answer in ((existing, "#cancel"), (link, "#cancel"), (link, "#confirm")):
            modal.query_one("#at-path", Input).value = str(path)
            await click_shown(pilot, "#at-write-file")
            confirm = await wait_for_screen(pilot, ConfirmModal, what=f"the question about {path.name}")
            assert confirm.query_one(answer, Button)
            await click_shown(pilot, answer)
            await wait_for_screen(pilot, AttributesModal, what="the attributes modal again")
        await wait_for(pilot, lambda: not link.is_symlink(), what="the link replaced")
    assert existing.read_text() == "the operator's own notes\n"
    assert victim.read_text() == "not yours\n"
    assert "MARKETPLACE_APPLIANCE_NAME=" in link.read_text()
