"""`sitetk sim`: one JSON line first, a working site behind it, a clean exit on SIGTERM and SIGINT."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pyone
import pytest
import requests


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tui", "sim", "--time-scale", "0.02", "--state-dir", str(tmp_path / "state"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line:
        process.kill()
        raise AssertionError(f"sitetk sim printed nothing: {process.stderr.read() if process.stderr else ''}")
    return process, json.loads(line)


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_sim_prints_its_endpoints_serves_and_stops_cleanly(tmp_path: Path, stop_signal: signal.Signals) -> None:
    process, info = _start(tmp_path, "--one-version", "6.10.0")
    try:
        assert {"xmlrpc", "oneflow", "marketplace", "session", "state_dir"} <= set(info)
        assert info["xmlrpc"].startswith("http://127.0.0.1:") and info["xmlrpc"].endswith("/RPC2")
        assert info["oneflow"] == info["marketplace"] == info["xmlrpc"].removesuffix("/RPC2")
        assert pyone.OneServer(info["xmlrpc"], session=info["session"]).system.version() == "6.10.0"
        auth_file = Path(info["state_dir"]) / "one_auth"
        assert auth_file.read_text().strip() == info["session"]
        assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
        assert requests.get(info["marketplace"] + "/appliance", timeout=10).status_code == 200
    finally:
        process.send_signal(stop_signal)
        assert process.wait(timeout=20) == 0
    with pytest.raises(requests.ConnectionError):
        requests.post(info["xmlrpc"], data=b"", timeout=5)


def test_sim_rejects_bad_options_with_a_reason(tmp_path: Path) -> None:
    for args, reason in ((["--fail-rate", "2"], "probability"), (["--time-scale", "0"], "above 0"),
                         (["--vms", "-1"], "negative"), (["--scenario", "other"], "invalid choice")):
        result = subprocess.run([sys.executable, "-m", "tui", "sim", *args], capture_output=True, text=True, timeout=60)
        assert result.returncode == 2 and reason in result.stderr, (args, result.stderr)
