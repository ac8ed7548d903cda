"""The README's recipe: the embedded site's state directory holds everything the CLI needs, and
`. <state_dir>/env` is all it takes (XML-RPC, OneFlow, the repositories and the vault file)."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

from tui.sim.server import SimServer

ROOT = Path(__file__).resolve().parents[1]


def _cli(server: SimServer, home: Path, *argv: str) -> dict:  # type: ignore[type-arg]
    state = server.site.state_dir
    command = f". {shlex.quote(str(state / 'env'))} && {shlex.quote(sys.executable)} -m tui " + " ".join(
        shlex.quote(a) for a in argv)
    # nothing of the test's environment but PATH and an empty home: only the recipe points the CLI
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)
    assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def test_the_state_directory_holds_the_endpoints_and_the_config(sim_factory, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = sim_factory(scenario="deployed")
    state = server.site.state_dir
    assert (state / "oneflow_endpoint").read_text().strip() == server.flow_url
    assert stat.S_IMODE((state / "one_auth").stat().st_mode) == 0o600
    home = tmp_path / "home"
    home.mkdir()
    info = _cli(server, home, "info", "--json")
    text = json.dumps(info)
    assert server.xmlrpc_url in text and server.flow_url in text and str(server.site.sites_repo) in text
    assert server.session.partition(":")[2] not in text  # the password is never printed
    assert _cli(server, home, "market", "list", "--json")["ok"]
    branches = _cli(server, home, "site", "branches", "--json")
    assert "demo-site" in json.dumps(branches)
    service_id = next(d.id for d in server.site.documents.values() if d.type == 100)
    vms = _cli(server, home, "toolkit", "vms", "--service", str(service_id), "--json")  # a OneFlow call
    assert vms["ok"] and vms["service_id"] == service_id
