"""Messages that say what did not happen (issue 22 item 10): each said something untrue before.

- `setup run` printed "Toolkit instantiated and RUNNING: finished" right after creating the service
  (the step instantiates and returns; the service was DEPLOYING);
- a stopped move said "what this run created is being undone" (a move undoes nothing);
- `setup run`/`setup status` never warned that the input file holding secrets is 0644;
- `/dev/zero` (or any non-file) as the config file was reported as "not present: defaults used";
- a 5,000-digit number in an XML-RPC answer was shown as Python's raw ValueError.
The console's second-deploy warning is tested in tests/faults/test_second_deploy_message.py.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.setup.conftest import point_at, run
from tests.setup.inputs import SITE_SETS, write_inputs
from tui.__main__ import main
from tui.sim.server import SimServer

FAST = ("--poll", "0.05", "--timeout", "120", *SITE_SETS)


def test_setup_run_says_the_toolkit_is_running_only_once_it_is(sim_factory, monkeypatch: pytest.MonkeyPatch,
                                                              capsys, tmp_path: Path) -> None:
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs)
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "download", "--yes", *FAST)
    assert code == 0, err
    # on a fresh site the manager waits for the database host step: the service stays DEPLOYING, and
    # the run says so, never that the step finished
    code, _, err = run(capsys, "setup", "run", "--input", str(inputs), "--only", "instantiate", "--yes", *FAST)
    assert code == 1 and "'Toolkit instantiated and RUNNING' is still not done after running it" in err, err
    lines = err.splitlines()
    created = next(i for i, line in enumerate(lines) if "instantiate" in line and "created" in line)
    assert "is not done yet (to do: service" in lines[created + 1] and "DEPLOYING" in lines[created + 1], err
    assert not any("Toolkit instantiated and RUNNING: " in line for line in lines), err  # no claim it is
    assert "finished in" not in err


def test_a_stopped_move_says_it_undoes_nothing(sim_factory, sitetk) -> None:  # type: ignore[no-untyped-def]
    """A move stops after the call in flight and says where the VM is; it undoes nothing. Before:
    "SIGINT: stopping; what this run created is being undone"."""
    server = sim_factory(scenario="deployed")
    runner = sitetk(server)
    updateconf = threading.Event()  # the move held at its CPU model update, once the VM is undeployed
    with server.site.lock:
        vm_id = next(v.id for v in server.site.vms.values() if v.name.startswith("manager_0"))
        server.site.faults.hold_methods["one.vm.updateconf"] = updateconf
    run = runner.start("hosts", "move", str(vm_id), "--host", "1", "--yes", "--timeout", "60")
    run.wait_for_line("setting CPU model")
    run.signal_while_held(signal.SIGINT, updateconf)
    code = run.finish()
    assert code == 128 + signal.SIGINT, run.stderr
    assert "SIGINT: stopping after the platform call in flight; a move undoes nothing" in run.stderr, run.stderr
    assert "undone" not in run.stderr and "undoing" not in run.stderr
    assert f"sitetk hosts move {vm_id} --host 1" in run.stderr  # how to finish it


def test_setup_warns_that_the_input_file_holding_secrets_is_readable_by_others(
        sim_factory, monkeypatch: pytest.MonkeyPatch, capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server: SimServer = sim_factory()
    point_at(server, monkeypatch, vault_file=False)
    inputs = tmp_path / "inputs.json"
    write_inputs(inputs)
    inputs.chmod(0o644)
    for verb in (("status",), ("status", "--json"), ("run", "--dry-run")):
        code, data, err = run(capsys, "setup", *verb, "--input", str(inputs))
        assert code in (0, 3), err
        assert f"warning: {inputs} holds" in err and "readable by others (mode 0644)" in err, (verb, err)
        assert f"chmod 600 {inputs}" in err
        if "--json" in verb:
            assert any("mode 0644" in w for w in data["warnings"])
    inputs.chmod(0o600)
    code, _, err = run(capsys, "setup", "status", "--input", str(inputs))
    assert "readable by others" not in err


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SITETK_CONFIG", raising=False)
    return tmp_path


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "dangling-link"])
def test_a_config_path_that_is_not_a_file_is_said_not_taken_for_absent(
        kind: str, home: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    path = home / "config.toml"
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(home / "gone.toml")
    monkeypatch.setenv("SITETK_CONFIG", str(path))
    code = main(["info"])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert "not present" not in out + err and "Traceback" not in err
    assert str(path) in err
    monkeypatch.setenv("SITETK_CONFIG", str(home / "absent.toml"))
    assert main(["info"]) == 0 and "(not present: defaults used)" in capsys.readouterr().out


BIG = "9" * 5000


@pytest.fixture
def huge_number_frontend() -> Iterator[str]:
    """An XML-RPC endpoint whose every answer is [true, <5,000-digit i4>, 0]."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            body = ("<?xml version='1.0'?><methodResponse><params><param><value><array><data>"
                    f"<value><boolean>1</boolean></value><value><i4>{BIG}</i4></value><value><i4>0</i4></value>"
                    "</data></array></value></param></params></methodResponse>").encode()
            # The console may stop reading at the oversized number and close: that is the
            # behaviour under test, so the peer's goodbye is not this server's error to print.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.send_response(200)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/RPC2"
    finally:
        server.shutdown()
        server.server_close()


def _python_words(text: str) -> bool:
    return any(words in text for words in ("Exceeds the limit", "set_int_max_str_digits", "ValueError", "Traceback"))


def test_a_huge_number_in_an_xmlrpc_answer_is_said_in_the_operators_words(
        huge_number_frontend: str, home: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import asyncio

    from tui.adapters.cloud import CloudClient
    from tui.errors import SiteError

    (home / "auth").write_text("oneadmin:pw-1234\n")
    (home / "auth").chmod(0o600)
    monkeypatch.setenv("ONE_AUTH", str(home / "auth"))
    monkeypatch.setenv("ONE_XMLRPC", huge_number_frontend)
    for verb in (["hosts", "list"], ["setup", "status"], ["hosts", "list", "--json"]):
        assert main(verb) == 1
        out, err = capsys.readouterr()
        assert not _python_words(out + err), out + err
        assert "Malformed answer from" in out + err and "at most 19" in out + err

    async def both_paths() -> list[str]:
        client = CloudClient(huge_number_frontend, "oneadmin:pw-1234", timeout=5)
        said = []
        try:
            for call in (client.user_info(-1), client.vm_action("hold", 1)):  # a read (lxml), then a write (pyone)
                try:
                    await call
                except SiteError as error:
                    said.append(f"{error.title}\n{error.detail}")
        finally:
            await client.close()
        return said

    said = asyncio.run(both_paths())
    assert len(said) == 2 and all("Malformed answer" in s and not _python_words(s) for s in said), said
