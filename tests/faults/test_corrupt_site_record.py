"""A corrupt site record (issue 22 item 7): `setup status` said the VMs and key were recorded
while `toolkit vms` and `toolkit key` failed on the record. The checklist now says the record is
unreadable and how to rebuild it from the cloud, and `toolkit vms --rebuild-record` does: the
unreadable file is set aside (kept, not deleted) and the live toolkit service is recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import isolate_home
from tests.setup.conftest import point_at, run, steps
from tui.cli.exit_codes import EXIT_FAILED, EXIT_OK
from tui.procedures.site_record import REBUILD_COMMAND, load_site_record, site_record_path
from tui.settings import Settings
from tui.sim.server import SimServer


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return isolate_home(tmp_path, monkeypatch)


def test_a_corrupt_site_record_is_said_with_its_rebuild_and_rebuilt_from_the_cloud(
        sim_factory: Callable[..., SimServer], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    server = sim_factory(scenario="deployed")
    point_at(server, monkeypatch)
    # no record yet: --rebuild-record records the live toolkit service
    code, data, err = run(capsys, "toolkit", "vms", "--rebuild-record", "--json")
    assert code == EXIT_OK, data
    service_id = data["service_id"]
    path = site_record_path(Settings.load())
    path.write_text('{"version": 1, "records": [{"service_id": ')  # cut short: not JSON

    code, data, err = run(capsys, "setup", "status", "--json")
    record = steps(data)["record"]
    assert record["state"] == "failed" and any("The site record cannot be read" in e for e in record["evidence"])
    assert record["command"] == f"{REBUILD_COMMAND} --service {service_id}"
    for verb in ("vms", "key"):
        code, data, err = run(capsys, "toolkit", verb, "--json")
        assert code == EXIT_FAILED and data["error"]["title"] == "The site record cannot be read"
        assert f"`{REBUILD_COMMAND}`" in data["error"]["detail"]

    code, data, err = run(capsys, "toolkit", "vms", "--rebuild-record", "--json")
    assert code == EXIT_OK and data["service_id"] == service_id, data
    aside = [p for p in path.parent.iterdir() if p.name.startswith(f"{path.name}.unreadable-")]
    assert len(aside) == 1 and aside[0].read_text().startswith('{"version": 1')  # kept, not deleted
    assert f"set aside as {aside[0]}" in err
    rebuilt = load_site_record(Settings.load())
    assert rebuilt is not None and rebuilt.service_id == service_id
    code, data, err = run(capsys, "toolkit", "key", "--json")
    assert code == EXIT_OK and data["public_key"].startswith("ssh-ed25519 ")
    code, data, err = run(capsys, "setup", "status", "--json")
    assert steps(data)["record"]["state"] == "done"
