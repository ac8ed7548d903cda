"""Two operators at once on one core.yaml: real `sitetk` processes, no change lost, the loser told.

Each test runs the real command line in separate processes against one vault-encrypted file (the
site configuration), as two operators on one frontend would. Issue 15 found that two `site edit`
processes lost each other's changes while both exited 0; the lock (tui.procedures.site.lock)
makes the second wait and apply its change to what the first wrote.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.procedure_run import run_procedure
from tests.waiting import wait_until
from tui.adapters.file_lock import hold
from tui.adapters.vault import VaultPassword, read_vault_file
from tui.cli.exit_codes import EXIT_FAILED, EXIT_OK
from tui.errors import SiteError
from tui.procedures.site.config import edit_file, encrypt_file, load_site_config, save_text
from tui.procedures.site.lock import LOCK_TIMEOUT_ENV, config_lock_file
from tui.sim.repos import template_core_yaml


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "HOME": str(home), "XDG_STATE_HOME": str(home / "state"), "XDG_CONFIG_HOME": str(home / "config"),
            "SITETK_AUDIT_LOG": str(tmp_path / "audit.log"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
            "ANSIBLE_HOME": str(tmp_path / "ansible-home"), LOCK_TIMEOUT_ENV: "120"}


@pytest.fixture
def core(tmp_path: Path, password: VaultPassword) -> Path:
    path = tmp_path / "site" / "core.yaml"
    path.parent.mkdir()
    path.write_text(template_core_yaml())

    async def encrypt() -> None:
        await run_procedure(partial(encrypt_file, path, password))

    asyncio.run(encrypt())
    return path


def _edit(core: Path, password_file: Path, cli_env: dict[str, str], *sets: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "tui", "site", "edit", str(core), "--vault-password-file", str(password_file), "--json"]
    for item in sets:
        argv += ["--set", item]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env)


def _finish(process: subprocess.Popen[str]) -> tuple[int, dict[str, object], str]:
    out, err = process.communicate(timeout=240)
    return process.returncode, json.loads(out) if out.strip() else {}, err


def test_simultaneous_edits_all_land(core: Path, password_file: Path, password: VaultPassword, cli_env: dict[str, str]) -> None:
    """Five `site edit` processes started together, each setting its own key: every key is there."""
    processes = [_edit(core, password_file, cli_env, f"operator_{n}={n}") for n in range(5)]
    results = [_finish(p) for p in processes]
    assert [code for code, _, _ in results] == [EXIT_OK] * 5, [err for _, _, err in results]
    assert all("Traceback" not in err for _, _, err in results)
    text = read_vault_file(core, password)
    assert [n for n in range(5) if f"operator_{n}: {n}\n" not in text] == []


def _holds_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open (it is waiting on the lock file)."""
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def test_second_operator_waits_and_applies_its_change_to_the_first_ones(
        core: Path, password_file: Path, password: VaultPassword, cli_env: dict[str, str]) -> None:
    """While one operator holds core.yaml, another's edit waits for it, then re-reads the file:
    both changes are in the file, and neither command pretends the other did not happen."""
    lock_file = config_lock_file(core)
    second: subprocess.Popen[str] | None = None

    async def first_operator() -> None:
        nonlocal second
        async with hold(lock_file, timeout=5):
            second = _edit(core, password_file, cli_env, "site_dns=9.9.9.9")
            await asyncio.to_thread(wait_until, lambda: _holds_open(second.pid, lock_file) or second.poll() is not None,
                                    60, "the second sitetk to wait on the lock")
            assert second.poll() is None, "the second edit finished while the first operator held core.yaml"
            await run_procedure(partial(edit_file, core, password, [("site_vxlan_guest_mtu", 1400)]))

    asyncio.run(first_operator())
    assert second is not None
    code, result, err = _finish(second)
    assert code == EXIT_OK, err
    text = read_vault_file(core, password)
    assert "site_vxlan_guest_mtu: 1400\n" in text and 'site_dns: "9.9.9.9"\n' in text


def test_loser_of_a_race_is_told_who_holds_the_file(core: Path, password_file: Path, cli_env: dict[str, str]) -> None:
    """When the holder does not finish within the wait, the other edit fails (exit 1), names the
    holder (pid, command) and changes nothing: never a silent success."""
    before = core.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from tui.adapters.file_lock import hold\n"
        "async def main():\n"
        f"    async with hold(Path({str(config_lock_file(core))!r}), 5):\n"
        "        print('held', flush=True)\n"
        "        await asyncio.to_thread(sys.stdin.read)\n"
        "asyncio.run(main())\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=cli_env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, result, err = _finish(_edit(core, password_file, {**cli_env, LOCK_TIMEOUT_ENV: "0.5"}, "site_dns=9.9.9.9"))
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert code == EXIT_FAILED and "Traceback" not in err
    error = result["error"]
    assert isinstance(error, dict) and "in use" in error["title"]
    assert f"process {holder.pid}" in error["detail"] and "Nothing was changed" in error["detail"]
    assert core.read_bytes() == before


def test_console_editor_does_not_save_over_another_operators_change(core: Path, password: VaultPassword) -> None:
    """The console's editor loaded core.yaml; another process changed it; saving the editor's text
    is refused (nothing written) instead of silently replacing the other change."""
    async def scenario() -> None:
        loaded = (await load_site_config(core, password)).config.text
        await run_procedure(partial(edit_file, core, password, [("site_dns", "9.9.9.9")]))  # the other operator
        theirs = core.read_bytes()
        mine = loaded.replace("site_vxlan_guest_mtu:", "site_vxlan_guest_mtu: 1400 #", 1)
        with pytest.raises(SiteError, match="changed since it was opened"):
            await run_procedure(partial(save_text, core, password, mine, expected=loaded))
        assert core.read_bytes() == theirs
        await run_procedure(partial(save_text, core, password, read_vault_file(core, password) + "operator_note: 1\n",
                                    expected=read_vault_file(core, password)))
        assert "operator_note: 1\n" in read_vault_file(core, password)

    asyncio.run(scenario())


def test_the_site_locks_wait_is_the_profiles_unless_the_environment_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from tui import timing
    from tui.procedures.site.lock import lock_timeout

    monkeypatch.delenv(LOCK_TIMEOUT_ENV, raising=False)
    monkeypatch.setattr(timing, "PROFILE", replace(timing.PROFILE, site_lock_timeout=7.0))
    assert lock_timeout() == 7.0
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "120")
    assert lock_timeout() == 120.0
    for unusable in ("soon", "-1", "86400"):
        monkeypatch.setenv(LOCK_TIMEOUT_ENV, unusable)
        assert lock_timeout() == 7.0, unusable
