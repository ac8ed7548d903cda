"""The toolkit's inputs checked against the embedded site, not only by shape.

`sitetk toolkit validate` (and `deploy`) against a site with the toolkit downloaded, its sites
repository and its vault password file, reached through the environment as on a frontend: the
object store's host patterns as the real template writes them, the cloud user, the default
network, the sites branch and the vault secret; `--offline` never says "valid"; the skeleton uses
the cloud version's key. Plus the procedure-level API the guided setup calls.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.sim.flow_support import values_key
from tests.toolkit.conftest import compatible_hosts_only, download_toolkit, settings_for
from tui.__main__ import main
from tui.console import demo_settings
from tui.domain.input_file import KEY_VALUES_6, KEY_VALUES_7
from tui.domain.input_site import Outcome
from tui.procedures.connection import SiteConnection
from tui.procedures.toolkit.input_checks import check_inputs_on_site
from tui.procedures.toolkit.service import find_toolkit_template, load_form
from tui.settings import Settings
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

TOKEN = "app_automation_sites_token"
PASSWORD = "app_automation_cloud_password"
VXLAN_NETWORK = "1"
#: the checks read the input file under the key of the site's OneFlow (7.x `user_inputs_values`, 6.x
#: `custom_attrs_values`, `_inputs`): each test on the version under test runs at every version
pytestmark = pytest.mark.every_version


async def _download(server: SimServer) -> None:
    compatible_hosts_only(server)
    site = SiteConnection(settings_for(server))
    try:
        await download_toolkit(site)
    finally:
        await site.close()


def _prepare(server: SimServer) -> None:
    asyncio.run(_download(server))


@pytest.fixture
def frontend(sim_factory: Any, monkeypatch: pytest.MonkeyPatch) -> SimServer:
    """A 7.0 site with the toolkit downloaded; the environment names it, its sites repository and
    its vault password file."""
    server = sim_factory()
    _prepare(server)
    monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
    monkeypatch.setenv("ONE_AUTH", str(server.site.state_dir / "one_auth"))
    monkeypatch.setenv("ONEFLOW_URL", server.flow_url)
    monkeypatch.setenv("SITETK_SITES_REPO", str(server.site.sites_repo))
    monkeypatch.setenv("SITETK_VAULT_PASSWORD_FILE", str(server.site.vault_password_file))
    return server


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, (json.loads(out) if "--json" in argv else out), err


def _inputs(frontend: SimServer, path: Path, capsys: pytest.CaptureFixture[str], network: str = "0",
            **values: str) -> Path:
    code, data, _ = _run(capsys, "toolkit", "inputs", "--json")
    assert code == 0
    file = data["file"]
    filled = file[values_key(frontend)]  # the key of the site's OneFlow
    for name in list(filled):
        if name.endswith(("password", "_token")) and name != TOKEN:
            filled.pop(name)  # asked at deploy time
    filled.update({"app_objectstore_hostname": "localhost,minio-*.example.net", "app_manager_sites_branch": EXISTING_SITE,
                   "app_manager_deployment_site": EXISTING_SITE, "app_automation_cloud_username": "tkauto",
                   TOKEN: SIM_VAULT_PASSWORD, **values})
    file["networks_values"] = [{"Public": {"id": network}}]
    path.write_text(json.dumps(file, indent=2))
    path.chmod(0o600)
    return path


def _errors(data: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["message"] for p in data["problems"] if p["severity"] == "error"}


def test_the_templates_own_host_pattern_passes_and_every_site_check_runs(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = _inputs(frontend, tmp_path / "good.json", capsys)
    code, data, _ = _run(capsys, "toolkit", "validate", str(good), "--json")
    assert code == 0 and data["ok"], data["problems"]
    outcomes = {c["name"]: c["outcome"] for c in data["site_checks"]}
    assert outcomes == {"app_automation_cloud_username": "passed", PASSWORD: "skipped", "network:Public": "passed",
                        "app_manager_sites_branch": "passed", TOKEN: "passed"}
    token = next(c for c in data["site_checks"] if c["name"] == TOKEN)
    assert "decrypts demo-site:demo-site/core.yaml" in token["found"] and "equals the vault password" in token["found"]
    code, text, _ = _run(capsys, "toolkit", "validate", str(good))
    assert code == 0 and ": valid against" in text and "4 passed" in text


def test_a_missing_cloud_user_and_the_vxlan_network_are_errors(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = _inputs(frontend, tmp_path / "bad.json", capsys, network=VXLAN_NETWORK, app_automation_cloud_username="nobody")
    code, data, _ = _run(capsys, "toolkit", "validate", str(bad), "--json")
    assert code == 3 and not data["ok"]
    errors = _errors(data)
    assert "no user 'nobody'" in errors["app_automation_cloud_username"]
    assert "tkauto" in errors["app_automation_cloud_username"]  # the users that exist
    assert "VXLAN" in errors["network:Public"] and "network 0 oam" in errors["network:Public"]

    # deploy refuses before anything is created, dry run or not
    code, data, _ = _run(capsys, "toolkit", "deploy", "--input", str(bad), "--dry-run", "--json")
    assert code == 2 and not data["ok"] and "VXLAN" in data["error"]["detail"]
    code, _, err = _run(capsys, "toolkit", "deploy", "--input", str(bad), "--yes")
    assert code == 2 and "nothing was created" in err
    with frontend.site.lock:
        assert not [doc for doc in frontend.site.documents.values() if doc.type == 100]  # no service


def test_the_cloud_users_password_must_log_in(frontend: SimServer, capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    """A wrong app_automation_cloud_password is an error of validate (and deploy refuses it): the
    platform refuses the login the automation server would make; the right one logs in. Neither
    value is ever shown."""
    from tui.procedures.audit import REDACTOR

    with frontend.site.lock:
        right = next(u for u in frontend.site.users.values() if u.name == "tkauto").password
    wrong = "Not-tkautos-password-7"
    bad = _inputs(frontend, tmp_path / "login.json", capsys, **{PASSWORD: wrong})
    code, data, err = _run(capsys, "toolkit", "validate", str(bad), "--json")
    assert code == 3 and not data["ok"]
    assert "refused the login of tkauto" in _errors(data)[PASSWORD] and "oneuser passwd tkauto" in _errors(data)[PASSWORD]
    code, text, err2 = _run(capsys, "toolkit", "validate", str(bad))
    assert code == 3 and PASSWORD in text
    code, dry, err3 = _run(capsys, "toolkit", "deploy", "--input", str(bad), "--dry-run", "--json")
    assert code == 2 and "refused the login" in dry["error"]["detail"]
    for output in (json.dumps(data), err, text, err2, json.dumps(dry), err3):
        assert wrong not in output and right not in output
    good = _inputs(frontend, tmp_path / "login-ok.json", capsys, **{PASSWORD: right})
    code, data, _ = _run(capsys, "toolkit", "validate", str(good), "--json")
    assert code == 0, data["problems"]
    login = next(c for c in data["site_checks"] if c["name"] == PASSWORD)
    assert login["outcome"] == "passed" and "tkauto logged in" in login["found"]
    assert "one.user.info -1" in login["checked"]
    assert right not in REDACTOR.redact(f"x {right} y")  # registered: no record or log can hold it


def test_a_sites_token_that_is_not_the_vault_password_names_both_and_neither_value(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    wrong = "Not-the-vault-secret-41"
    bad = _inputs(frontend, tmp_path / "token.json", capsys, **{TOKEN: wrong})
    code, data, _ = _run(capsys, "toolkit", "validate", str(bad), "--json")
    assert code == 3
    message = _errors(data)[TOKEN]
    assert TOKEN in message and str(frontend.site.vault_password_file) in message
    code, text, err = _run(capsys, "toolkit", "validate", str(bad))
    for output in (json.dumps(data), text, err):
        assert wrong not in output and SIM_VAULT_PASSWORD not in output


def test_without_a_vault_password_file_the_token_is_tried_on_the_branch(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SITETK_VAULT_PASSWORD_FILE")
    bad = _inputs(frontend, tmp_path / "token.json", capsys, **{TOKEN: "Not-the-vault-secret-41"})
    code, data, _ = _run(capsys, "toolkit", "validate", str(bad), "--json")
    assert code == 3 and "does not decrypt demo-site:demo-site/core.yaml" in _errors(data)[TOKEN]


def test_a_new_branch_is_a_warning_and_offline_never_says_valid(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    new = _inputs(frontend, tmp_path / "new.json", capsys, app_manager_sites_branch="new-site",
                  app_manager_deployment_site="new-site")
    code, data, _ = _run(capsys, "toolkit", "validate", str(new), "--json")
    assert code == 0
    branch = next(p for p in data["problems"] if p["name"] == "app_manager_sites_branch")
    assert branch["severity"] == "warning" and "does not exist" in branch["message"]
    assert "sitetk site create new-site" in branch["message"]

    code, text, _ = _run(capsys, "toolkit", "validate", str(new), "--offline")
    assert code == 0 and "valid" not in text.replace("no errors", "") and "site checks skipped (offline)" in text
    code, data, _ = _run(capsys, "toolkit", "validate", str(new), "--offline", "--json")
    assert data["site_checks"] == "skipped (offline)"


def test_the_skeleton_uses_the_clouds_key(site_factory: Any, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for version, key in (("7.0.0", KEY_VALUES_7), ("6.10.0", KEY_VALUES_6)):
        server = site_factory(one_version=version)
        _prepare(server)
        monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
        monkeypatch.setenv("ONE_AUTH", str(server.site.state_dir / "one_auth"))
        monkeypatch.setenv("ONEFLOW_URL", server.flow_url)
        code, text, _ = _run(capsys, "toolkit", "inputs")
        assert code == 0
        data = json.loads(text)
        assert key in data and len(data) == 3, (version, list(data))


async def test_the_procedure_reports_checked_found_and_skipped(sim_factory: Any, tmp_path: Path) -> None:
    server = sim_factory()
    await _download(server)
    site = SiteConnection(demo_settings(server, Settings(state_dir=tmp_path / "state")))
    try:
        form = await load_form(site, await find_toolkit_template(site))
        values = {**form.values, "app_automation_cloud_username": "tkauto", "app_manager_sites_branch": EXISTING_SITE,
                  "app_manager_deployment_site": EXISTING_SITE}
        report = await check_inputs_on_site(site, form, values, {"Public": "0"})
    finally:
        await site.close()
    by_name = {c.name: c for c in report.checks}
    assert by_name[TOKEN].outcome is Outcome.SKIPPED and "deploy time" in by_name[TOKEN].found
    assert all(c.checked for c in report.checks)
    assert report.errors == () and "3 passed" in report.summary()


async def test_the_form_checks_against_the_site_before_the_preview(toolkit_site: Any) -> None:
    from textual.widgets import Label, Select

    from tests.toolkit.test_screen import SIZE, open_form, reason
    from tests.ui.conftest import console_app
    from tui.screenshots import toolkit_values, wait_for, wait_for_screen
    from widgets.confirm_modal import ConfirmModal

    server, site, _ = await toolkit_site()
    async with console_app(server).run_test(size=SIZE) as pilot:
        screen = await open_form(pilot)
        values = {**toolkit_values(screen), "app_automation_cloud_username": "nobody",
                  "app_objectstore_hostname": "localhost,minio-*.example.net"}
        for name, value in values.items():
            screen.fields[name].value = value
        screen.query_one("#in-network_3a_Public", Select).value = "1"  # the VXLAN trial network
        await pilot.pause()
        await pilot.press("ctrl+g")
        await wait_for(pilot, lambda: "no user 'nobody'" in reason(screen, "app_automation_cloud_username"),
                       what="the site check next to the field")
        assert reason(screen, "app_objectstore_hostname") == ""  # the template's own pattern
        network_reason = screen.query_one("#in-network_3a_Public", Select).parent.query_one(".field-reason", Label)
        assert "VXLAN" in str(network_reason.render())
        assert not isinstance(pilot.app.screen, ConfirmModal)

        screen.fields["app_automation_cloud_username"].value = "tkauto"
        screen.query_one("#in-network_3a_Public", Select).value = "0"
        await pilot.pause()
        await pilot.press("ctrl+g")
        modal = await wait_for_screen(pilot, ConfirmModal, what="the preview after the site checks")
        assert "site checks:" in modal.detail
        assert await site.flow.list_services() == ()


def test_values_the_components_refuse_are_errors_saying_whose_rule(
        frontend: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A 2-character object store user, 5-character passwords, a bucket name with / or starting with
    _: the toolkit would deploy and its roles never become READY. Each is an error naming the
    component's rule and where it comes from; deploy refuses before anything is created."""
    bad = _inputs(frontend, tmp_path / "short.json", capsys, app_objectstore_root_user="s3",
                  app_objectstore_root_password="abcde", app_timeseries_password="abcde",
                  app_timeseries_bucket="trials/2024")
    code, data, _ = _run(capsys, "toolkit", "validate", str(bad), "--json")
    assert code == 3
    errors = _errors(data)
    assert errors["app_objectstore_root_user"].startswith("at least 3 characters (2 given): MinIO")
    assert "accessKeyMinLen = 3" in errors["app_objectstore_root_user"]
    assert "secretKeyMinLen = 8" in errors["app_objectstore_root_password"]
    assert errors["app_timeseries_password"].startswith("at least 8 characters (5 given): InfluxDB 2")
    assert errors["app_timeseries_bucket"].startswith("must not contain '/'") and "Bucket naming" in errors[
        "app_timeseries_bucket"]
    code, data, _ = _run(capsys, "toolkit", "deploy", "--input", str(bad), "--dry-run", "--json")
    assert code == 2 and not data["ok"]
    under = _inputs(frontend, tmp_path / "under.json", capsys, app_timeseries_bucket="_trials")
    code, data, _ = _run(capsys, "toolkit", "validate", str(under), "--json")
    assert code == 3 and _errors(data)["app_timeseries_bucket"].startswith("must not start with '_'")
