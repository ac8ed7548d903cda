"""Every CLI printer escapes control characters (a hostile record name never reaches the terminal
raw), and a reader that goes away (`sitetk market list | head`) ends the output quietly."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.records import ESCAPES, HOSTILE_ID, MARKUP, add_hostile_record
from tui.__main__ import main
from tui.cli.common import EXIT_OK, EscapingStream, guarded_output, write_data
from tui.domain.printable import escape_controls, has_controls
from tui.sim.server import SimServer

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    def point_at(server: SimServer) -> dict[str, str]:
        values = {"ONE_AUTH": str(server.site.state_dir / "one_auth"), "ONE_XMLRPC": server.xmlrpc_url,
                  "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
                  "SITETK_AUDIT_LOG": str(tmp_path / "audit.log")}
        for key, value in values.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("SITETK_CONFIG", raising=False)
        return values

    return point_at


def test_escape_controls_keeps_text_and_shows_every_control() -> None:
    assert escape_controls("plain\ttext\nline") == "plain\ttext\nline"
    assert escape_controls("\x1b]0;t\x07") == "\\x1b]0;t\\a"
    assert escape_controls("a\rb\x00\x9b\u202e\u2066") == "a\\rb\\0\\x9b\\u202e\\u2066"
    assert not has_controls(escape_controls(ESCAPES + "\r\x7f\u202e"))


@pytest.mark.parametrize("verb", [["show", HOSTILE_ID], ["list"], ["show", HOSTILE_ID, "--json"]])
def test_a_hostile_record_is_printed_with_its_controls_escaped(sim: SimServer, env, capsys, verb) -> None:  # type: ignore[no-untyped-def]
    env(sim)
    add_hostile_record(sim)
    assert main(["market", *verb]) == EXIT_OK
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert "\x1b" not in stream and "\x07" not in stream and "\r" not in stream and "\u202e" not in stream
    if "--json" in verb:
        assert json.loads(captured.out)["appliance"]["name"].startswith("Evil \x1b]0;pwned")  # JSON keeps the text
    else:
        assert "Evil \\x1b]0;pwned" in captured.out and "\\x1b[2J" in captured.out
        assert MARKUP in captured.out  # shown as text, not interpreted


def test_the_escaping_stream_drops_output_once_the_reader_is_gone() -> None:
    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    stream = EscapingStream(Closed())
    assert stream.write("x\x1b") == 2 and stream.broken
    assert stream.write("more") == 4
    stream.flush()


def test_data_goes_out_unchanged_into_a_pipe(capsys) -> None:  # type: ignore[no-untyped-def]
    with guarded_output():
        write_data("a: 1\r\nb: 2\n")
        print("name \x1b[2J")
    out = capsys.readouterr().out
    assert out == "a: 1\r\nb: 2\nname \\x1b[2J\n"


def test_market_list_into_a_closed_pipe_ends_without_a_traceback(sim: SimServer, env) -> None:  # type: ignore[no-untyped-def]
    values = env(sim)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: `| head -0`
    try:
        proc = subprocess.run([sys.executable, "-m", "tui", "market", "list"], stdout=write_end,
                              stderr=subprocess.PIPE, env={**os.environ, **values}, cwd=ROOT, timeout=120, text=True)
    finally:
        os.close(write_end)
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == EXIT_OK


def test_downloads_under_injected_faults_end_in_an_exit_code_never_a_traceback(sim: SimServer, env, capsys) -> None:  # type: ignore[no-untyped-def]
    """Internal errors and dropped connections at any call of a download (the site's seeded random
    faults): each run ends with exit code 0 or 1 and a message, what it created rolled back."""
    env(sim)
    codes = []
    for run in range(8):
        sim.site.faults.fail_rate = 0.04
        try:
            code = main(["market", "download", "service_bastion", "--datastore", "1", "--name", f"b{run}", "--yes",
                         "--poll", "0.02", "--json"])
        except BaseException as error:  # noqa: BLE001 - the point: nothing may escape
            pytest.fail(f"run {run}: {type(error).__name__}: {error}")
        finally:
            sim.site.faults.fail_rate = 0.0
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err and "never retrieved" not in captured.err, captured.err
        answer = json.loads(captured.out) if captured.out.strip() else None
        assert code in (0, 1) and (answer is None or answer["ok"] == (code == 0))
        codes.append(code)
    assert codes  # every run answered
