"""A second `sitetk toolkit deploy` with another input file does not silently make another toolkit
beside the live one: it is refused, naming the live service and how its inputs differ (cloud
user, branch, endpoints), unless a second toolkit is asked for by its name, and never under the
name a live toolkit already has. The same file again follows the service it made (unchanged)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.toolkit.test_site_inputs import _inputs, _run, frontend  # noqa: F401  (the fixture)
from tui.sim.scenarios import AUTOMATION_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)


def _complete(server: SimServer, path: Path, capsys: pytest.CaptureFixture[str], name: str = "",
              **values: str) -> Path:
    """An input file with every secret in it (no terminal to ask on)."""
    _inputs(server, path, capsys, **values)
    data = json.loads(path.read_text())
    key = next(k for k in data if k.endswith("_values") and k != "networks_values")
    for secret in ("app_objectstore_root_password", "app_automation_password", "app_manager_admin_password",
                   "app_timeseries_password", "app_timeseries_token"):
        data[key][secret] = "S3cret-Value-1234"
    data[key]["app_automation_cloud_password"] = AUTOMATION_PASSWORD
    if name:
        data["name"] = name
    path.write_text(json.dumps(data))
    return path


def _services(server: SimServer) -> list[tuple[int, str]]:
    with server.site.lock:
        return sorted((d.id, d.name) for d in server.site.documents.values() if d.type == 100)


def test_a_second_toolkit_is_refused_unless_asked_for_by_name(frontend: SimServer,  # noqa: F811
                                                                capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    first = _complete(frontend, tmp_path / "first.json", capsys)
    code, data, err = _run(capsys, "toolkit", "deploy", "--input", str(first), "--yes", "--json")
    assert code == 0, (data, err)
    made = _services(frontend)
    assert len(made) == 1
    service_id, name = made[0]

    other = _complete(frontend, tmp_path / "other.json", capsys, app_manager_sites_branch="other-site",
                      app_manager_deployment_site="other-site")
    for extra in ((), ("--dry-run",)):
        code, data, err = _run(capsys, "toolkit", "deploy", "--input", str(other), "--yes", "--json", *extra)
        assert code == 2 and not data["ok"], data
        detail: str = data["error"]["detail"]
        assert data["error"]["title"] == "A toolkit is already deployed"
        assert f"service {service_id} {name!r}" in detail
        assert "app_manager_sites_branch = 'demo-site' (the input file: 'other-site')" in detail
        assert "oneflow delete <id>" in detail and f"--another {name!r}" in detail
    assert _services(frontend) == made  # nothing created

    # asked for by name, but the live toolkit has that name: two services of one name are refused too
    code, data, _ = _run(capsys, "toolkit", "deploy", "--input", str(other), "--yes", "--json", "--another", name)
    assert code == 2 and data["error"]["title"] == "That name is taken by a live toolkit"
    assert _services(frontend) == made

    # the same file as the first: a re-run, which follows the service it made
    code, data, _ = _run(capsys, "toolkit", "deploy", "--input", str(first), "--yes", "--json")
    assert code == 0 and _services(frontend) == made

    # a second toolkit under a name of its own, asked for by that name
    second = _complete(frontend, tmp_path / "second.json", capsys, name="Site Toolkit v0.5.0 second",
                       app_manager_sites_branch="other-site", app_manager_deployment_site="other-site")
    code, data, _ = _run(capsys, "toolkit", "deploy", "--input", str(second), "--yes", "--json")
    assert code == 2 and _services(frontend) == made  # not without asking
    code, data, err = _run(capsys, "toolkit", "deploy", "--input", str(second), "--yes", "--json",
                           "--another", "Site Toolkit v0.5.0 second")
    assert code == 0, (data, err)
    assert [n for _, n in _services(frontend)] == [name, "Site Toolkit v0.5.0 second"]


def test_previews_say_what_the_run_does_with_the_live_toolkit(frontend: SimServer,  # noqa: F811
                                                               capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    """Issue 20 items 7 and 11: the same file again is previewed as followed (before: "create
    service", then the run reused the first); the same inputs under another name, asked for by
    that name, are previewed with the word that the site already has a toolkit RUNNING (before:
    nothing)."""
    first = _complete(frontend, tmp_path / "first.json", capsys)
    code, data, err = _run(capsys, "toolkit", "deploy", "--input", str(first), "--yes", "--json", "--wait")
    assert code == 0, (data, err)
    [(service_id, name)] = _services(frontend)

    code, data, _ = _run(capsys, "toolkit", "deploy", "--input", str(first), "--json", "--dry-run")
    assert code == 0, data
    preview = data["preview"]
    [change] = preview["changes"]
    assert "create service" not in change["description"], preview
    assert f"service {service_id} {name!r}" in change["description"] and "no service is created" in change["description"]
    assert change["kind"] == "none" and change["cli"] == f"oneflow show {service_id}"
    code, text, _ = _run(capsys, "toolkit", "deploy", "--input", str(first), "--dry-run")
    assert "create service" not in text and "it is followed" in text

    second = _complete(frontend, tmp_path / "second.json", capsys, name="Site Toolkit second")
    code, data, _ = _run(capsys, "toolkit", "deploy", "--input", str(second), "--json", "--dry-run",
                         "--another", "Site Toolkit second")
    assert code == 0, data
    preview = data["preview"]
    warned = " ".join(preview["warnings"])
    assert f"the site already has a toolkit RUNNING: service {service_id} {name!r}" in warned, preview
    assert "second toolkit" in preview["title"]
    assert _services(frontend) == [(service_id, name)]  # dry runs create nothing
