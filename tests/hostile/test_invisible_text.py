"""Invisible characters (issue 22 item 9): zero-width and bidirectional characters in remote text
are shown as escapes, wherever remote text is printed or painted; C1 controls (NEL U+0085) and
invisible characters are refused in the names the console creates.

Before: `escape_controls` showed C0/C1 controls and the bidirectional overrides but printed
U+200B-U+200D, U+2060 and U+FEFF raw (two names that look the same), and `console_name_problem`
took a NEL (U+0085) in a download's final name, a service name or the automation user's name."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.hostile.records import HOSTILE_ID, add_hostile_record
from tests.ui.conftest import SIZE, console_app, rendered_text, wait_vms_loaded
from tui.__main__ import main
from tui.cli.common import EXIT_OK
from tui.domain.object_names import console_name_problem, control_problem, fit_name
from tui.domain.printable import escape_controls, has_controls
from tui.errors import SiteError
from tui.procedures.connection import SiteConnection
from tui.procedures.market.download_plan import check_name
from tui.procedures.setup.identity import plan_cloud_user
from tui.settings import Settings
from tui.sim import catalog
from tui.sim.server import SimServer

#: zero-width space, non-joiner, joiner, word joiner, BOM; the bidirectional controls
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u200e", "\u200f",
             "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]
#: C1 controls the platform's XML carries: NEL, an 8-bit CSI
C1 = ["\x85", "\x9b"]


@pytest.mark.parametrize("char", INVISIBLE + C1 + ["\u2028", "\u2029"])
def test_every_invisible_character_is_shown_as_an_escape(char: str) -> None:
    shown = escape_controls(f"Site{char}Toolkit")
    assert char not in shown and not has_controls(shown)
    assert shown == f"Site\\{'x' if ord(char) <= 0xFF else 'u'}{ord(char):0{2 if ord(char) <= 0xFF else 4}x}Toolkit"


def test_printable_text_is_kept() -> None:
    for text in ("Site Toolkit v0.5.0 (ünïcode) 日本 ½", "tab\tand\nnewline", "emoji 🙂"):
        assert escape_controls(text) == text and console_name_problem(text.replace("\t", " ").replace("\n", " ")) is None


@pytest.mark.parametrize("char", INVISIBLE + C1 + ["\u2028", "\u2029"])
def test_the_console_refuses_them_in_the_names_it_creates(char: str) -> None:
    name = f"Site Toolkit{char} v0.5.0"
    problem = control_problem(name)
    assert problem is not None and f"U+{ord(char):04X}" in problem and console_name_problem(name) == problem
    with pytest.raises(SiteError) as caught:
        check_name(name)  # the download's final name
    assert f"U+{ord(char):04X}" in caught.value.detail and char not in caught.value.detail
    fitted = fit_name(name)  # a name the console builds from a remote record's
    assert char not in fitted and console_name_problem(fitted) is None


@pytest.mark.parametrize("name", ["tk\x85auto", "tk\u200bauto"])
def test_the_automation_user_with_an_invisible_character_is_refused_before_anything_is_created(
        sim: SimServer, name: str) -> None:
    async def plan() -> None:
        site = SiteConnection(Settings.for_site(sim.xmlrpc_url, sim.session, sim.flow_url))
        try:
            await plan_cloud_user(site, name)
        finally:
            await site.close()

    with pytest.raises(SiteError) as caught:
        asyncio.run(plan())
    assert caught.value.title.startswith("The platform would refuse the group name 'tk\\")
    assert "Nothing was created" in caught.value.detail
    with sim.site.lock:
        assert not any(g.name == name for g in sim.site.groups.values())


def _name_record(sim: SimServer, name: str) -> None:
    add_hostile_record(sim)
    with sim.site.lock:
        record = next(r for r in sim.site.market_records[catalog.MAIN_PREFIX] if r["_id"]["$oid"] == HOSTILE_ID)
        record["name"] = name
        record["publisher"] = "Publisher"


def test_the_cli_prints_zero_width_characters_as_escapes(
        sim: SimServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in {"ONE_AUTH": str(sim.site.state_dir / "one_auth"), "ONE_XMLRPC": sim.xmlrpc_url,
                       "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                       "SITETK_AUDIT_LOG": str(tmp_path / "audit.log")}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("SITETK_CONFIG", raising=False)
    _name_record(sim, "Site\u200bToolkit\ufeff\u2060")
    assert main(["market", "show", HOSTILE_ID]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Site\\u200bToolkit\\ufeff\\u2060" in out and not has_controls(out)


async def test_the_console_paints_zero_width_characters_as_escapes(sim_factory: Any) -> None:
    sim = sim_factory(vms=2)
    vm = next(iter(sim.site.vms.values()))
    with sim.site.lock:
        vm.name = "web\u200b01\u2067x"
    app = console_app(sim)
    async with app.run_test(size=SIZE) as pilot:
        screen: Any = await wait_vms_loaded(pilot, timeout=60)
        await pilot.pause()
        painted = rendered_text(screen.table)
        assert not has_controls(painted), repr(painted[:300])
        assert "web\\u200b01\\u2067x" in painted
