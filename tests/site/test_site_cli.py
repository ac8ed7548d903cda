"""`sitetk site ...` headless commands with --json, through the real entry point."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.site.conftest import ansible_vault
from tui.__main__ import main
from tui.adapters.vault import VaultPassword, is_vault_text, read_vault_file
from tui.cli.common import EXIT_FAILED, EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from tui.procedures.audit import AuditLog
from tui.settings import Settings
from tui.sim.acl import rule_of
from tui.sim.repos import DEMO_ADMIN_KEY, SIM_VAULT_PASSWORD, template_core_yaml
from tui.sim.server import SimServer


def _remote_head(server: SimServer, branch: str) -> str:
    return subprocess.run(["git", "--git-dir", str(server.site.sites_repo), "rev-parse", branch],
                          capture_output=True, text=True, check=True).stdout.strip()


def _audit(server: SimServer) -> list[dict[str, Any]]:
    return AuditLog(Settings.load().audit_log).entries()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(["site", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out) if "--json" in argv else out


@pytest.fixture
def core(tmp_path: Path) -> Path:
    path = tmp_path / "core.yaml"
    path.write_text(template_core_yaml())
    return path


def test_encrypt_decrypt_edit(capsys: pytest.CaptureFixture[str], core: Path, password_file: Path, password: VaultPassword) -> None:
    pw = ("--vault-password-file", str(password_file))
    code, result = run(capsys, "encrypt", str(core), *pw, "--json")
    assert code == EXIT_OK and result["ok"] and result["events"][-1]["state"] == "done"
    assert ansible_vault("view", *pw, str(core)).stdout == template_core_yaml()
    code, result = run(capsys, "decrypt", str(core), *pw, "--json")
    assert code == EXIT_OK and result["text"] == template_core_yaml() and result["encrypted"]
    assert is_vault_text(core.read_text())  # decrypt never writes
    code, text = run(capsys, "decrypt", str(core), *pw)
    assert text == template_core_yaml()
    code, result = run(capsys, "edit", str(core), *pw, "--set", "site_vxlan_guest_mtu=1400", "--set", "site_dns=9.9.9.9", "--dry-run", "--json")
    assert code == EXIT_OK and result["dry_run"] and len(result["preview"]["changes"]) == 2
    assert read_vault_file(core, password) == template_core_yaml()
    code, result = run(capsys, "edit", str(core), *pw, "--set", "site_vxlan_guest_mtu=1400", "--set", "site_dns=9.9.9.9", "--json")
    assert code == EXIT_OK and result["events"][-1]["data"]["changed"]
    text = read_vault_file(core, password)
    assert "site_vxlan_guest_mtu: 1400\n" in text and 'site_dns: "9.9.9.9"\n' in text


def test_failures_exit_codes(capsys: pytest.CaptureFixture[str], core: Path, password_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pw = ("--vault-password-file", str(password_file))
    run(capsys, "encrypt", str(core), *pw, "--json")
    before = core.read_bytes()
    wrong = tmp_path / "wrong"
    wrong.write_text("wrong-password\n")
    wrong.chmod(0o600)
    code, result = run(capsys, "edit", str(core), "--vault-password-file", str(wrong), "--set", "a=1", "--json")
    assert code == EXIT_FAILED and result["error"]["title"] == "Wrong vault password"
    code, result = run(capsys, "edit", str(core), *pw, "--set", "no-equals-sign", "--json")
    assert code == EXIT_USAGE and "dotted.path=value" in result["error"]["detail"]
    code, result = run(capsys, "edit", str(core), *pw, "--set", "a=[1", "--json")
    assert code == EXIT_USAGE and "not valid YAML" in result["error"]["detail"]
    monkeypatch.setattr("sys.stdin", open("/dev/null"))
    code, result = run(capsys, "edit", str(core), "--set", "a=1", "--json")
    assert code == EXIT_USAGE and "--vault-password-file" in result["error"]["detail"]
    assert core.read_bytes() == before
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [\n")
    code, result = run(capsys, "encrypt", str(broken), *pw, "--json")
    assert code == EXIT_FAILED and result["error"]["detail"].startswith("line 2, column 1")
    assert broken.read_text() == "a: [\n"


def test_readable_password_file_warns(capsys: pytest.CaptureFixture[str], core: Path, password_file: Path) -> None:
    password_file.chmod(0o644)
    code, result = run(capsys, "encrypt", str(core), "--vault-password-file", str(password_file), "--json")
    assert code == EXIT_OK and "chmod 600" in result["warnings"][0]


def test_check_and_components(capsys: pytest.CaptureFixture[str], core: Path, seeded: tuple[Path, Path], tmp_path: Path) -> None:
    library = ("--library", str(seeded[1]), "--library-workdir", str(tmp_path / "lib"))
    code, result = run(capsys, "components", *library, "--json")
    assert code == EXIT_OK and len(result["components"]) == 9
    bastion = next(c for c in result["components"] if c["name"] == "tn_bastion")
    assert bastion["appliance_record_ids"] == ["service_bastion"] and set(bastion["site_variables"]) == {"template_id", "image_id"}
    code, result = run(capsys, "check", str(core), *library, "--nic-mtu", "1500", "--json")
    assert code == EXIT_FINDINGS and not result["ok"]
    assert {"path": "site_s3_server.endpoint", "severity": "error"}.items() <= result["findings"][0].items()
    good = tmp_path / "good.yaml"
    good.write_text(template_core_yaml().replace("<objectstore ip>", "10.0.0.21").replace("12.34.56.78", "192.0.2.10")
                    .replace("10.11.32.103", "10.11.28.1").replace("AAAAC3NzaC1lZDI1NTE5AAAAIFakeTemplateKeyReplaceMe", DEMO_ADMIN_KEY.split()[0]))
    code, result = run(capsys, "check", str(good), "--json")
    assert code == EXIT_OK and result["ok"] and all(f["severity"] == "warning" for f in result["findings"])
    code, text = run(capsys, "check", str(core))
    assert code == EXIT_FINDINGS and "ERROR   site_s3_server.endpoint" in text


def test_site_repository_flow(capsys: pytest.CaptureFixture[str], seeded: tuple[Path, Path], tmp_path: Path, sim_password_file: Path, password_file: Path) -> None:
    sites, library = seeded
    repo = ("--repo", str(sites), "--workdir", str(tmp_path / "work"))
    code, result = run(capsys, "branches", *repo, "--json")
    assert code == EXIT_OK and result == {"ok": True, "default_branch": "main", "sites": ["demo-site"]}
    pw = ("--vault-password-file", str(password_file))
    code, result = run(capsys, "create", "lab-cli", *repo, *pw, "--set", "site_domain=lab.internal", "--json")
    assert code == EXIT_OK and result["site"]["site_dir"] == "lab-cli"
    libopts = ("--library", str(library), "--library-workdir", str(tmp_path / "lib"))
    code, result = run(capsys, "enable", "vm_kvm", *repo, *libopts, *pw, "--set", "template_id=3", "--set", "image_id=4", "--no-cloud", "--json")
    assert code == EXIT_OK and result["events"][-1]["state"] == "done"
    code, result = run(capsys, "enable", "nonexistent", *repo, *libopts, *pw, "--json")
    assert code == EXIT_USAGE and "not in the component library" in result["error"]["detail"]
    code, result = run(capsys, "submit", *repo, *pw, "--dry-run", "--json")
    assert code == EXIT_OK and "+    template_id: 3" in result["preview"]["diff"]
    code, result = run(capsys, "submit", *repo, *pw, "--yes", "--json")
    assert code == EXIT_FINDINGS and "site_onegate" in result["error"]["detail"]  # the template's values
    code, result = run(capsys, "submit", *repo, *pw, "--yes", "--override-reason", "lab site, filled later", "--json")
    assert code == EXIT_OK and result["events"][-1]["data"]["pushed"]
    code, result = run(capsys, "branches", *repo, "--json")
    assert result["sites"] == ["demo-site", "lab-cli"]
    # the existing site, opened by a second clone
    other = ("--repo", str(sites), "--workdir", str(tmp_path / "other"))
    code, result = run(capsys, "open", "demo-site", *other, "--json")
    assert code == EXIT_OK and result["site"]["path"].endswith("demo-site/core.yaml")
    code, result = run(capsys, "submit", *other, "--vault-password-file", str(sim_password_file), "--json")
    assert code == EXIT_OK and not result["preview"]["pending"]
    assert read_vault_file(Path(result["preview"]["path"]), VaultPassword.from_text(SIM_VAULT_PASSWORD)).startswith("# Site configuration")


def test_submit_without_yes_on_a_pipe_refuses(capsys: pytest.CaptureFixture[str], seeded: tuple[Path, Path], tmp_path: Path, password_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = ("--repo", str(seeded[0]), "--workdir", str(tmp_path / "work"))
    pw = ("--vault-password-file", str(password_file))
    run(capsys, "create", "lab-pipe", *repo, *pw, "--json")
    monkeypatch.setattr("sys.stdin", open("/dev/null"))
    code, out = run(capsys, "submit", *repo, *pw)
    assert code == EXIT_FINDINGS and "Diff against" not in out  # the check refuses before anything is shown
    code, out = run(capsys, "submit", *repo, *pw, "--override-reason", "lab")
    assert code == EXIT_USAGE and "Diff against origin/main:.dummy/core.yaml" in out
    assert "check error(s) overridden: lab" in out  # the commit message shown before the prompt
    code, result = run(capsys, "branches", *repo, "--json")
    assert result["sites"] == ["demo-site"]  # nothing pushed


def test_repository_options_are_required(capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run(capsys, "branches", "--json")
    assert code == EXIT_USAGE and "--repo" in result["error"]["detail"]
    code, result = run(capsys, "components", "--json")
    assert code == EXIT_USAGE and "--library" in result["error"]["detail"]


def test_dry_runs_change_nothing(capsys: pytest.CaptureFixture[str], core: Path, seeded: tuple[Path, Path], tmp_path: Path, password_file: Path, password: VaultPassword) -> None:
    pw = ("--vault-password-file", str(password_file))
    before = core.read_bytes()
    code, result = run(capsys, "encrypt", str(core), *pw, "--dry-run", "--json")
    assert code == EXIT_OK and result["dry_run"] and result["preview"]["changes"][0]["cli"].startswith("ansible-vault encrypt --vault-password-file")
    assert core.read_bytes() == before
    sites, library = seeded
    repo = ("--repo", str(sites), "--workdir", str(tmp_path / "work"))
    code, result = run(capsys, "create", "lab-dry", *repo, *pw, "--dry-run", "--json")
    assert [c["cli"].split()[:2] for c in result["preview"]["changes"]] == [["git", "checkout"], ["git", "mv"], ["ansible-vault", "encrypt"]]
    code, result = run(capsys, "branches", *repo, "--json")
    assert result["sites"] == ["demo-site"]
    run(capsys, "create", "lab-dry", *repo, *pw, "--json")
    libopts = ("--library", str(library), "--library-workdir", str(tmp_path / "lib"))
    config = tmp_path / "work" / "lab-dry" / "core.yaml"
    encrypted = config.read_bytes()
    code, result = run(capsys, "enable", "tn_bastion", *repo, *libopts, *pw, "--set", "template_id=9", "--dry-run", "--no-cloud", "--json")
    descriptions = [c["description"] for c in result["preview"]["changes"]]
    assert "site_variables.tn_bastion.template_id: 0 -> 9" in descriptions
    assert any("appliance service_bastion" in d for d in descriptions)
    assert config.read_bytes() == encrypted
    code, result = run(capsys, "submit", *repo, *pw, "--dry-run", "--json")
    assert [c["kind"] for c in result["changes"]["changes"]] == ["update", "create"]
    assert result["changes"]["changes"][1]["cli"] == "git push --set-upstream origin lab-dry"


@pytest.fixture
def cloud_env(deployed: SimServer, monkeypatch: pytest.MonkeyPatch) -> SimServer:
    """The platform's usual variables and the site settings pointed at the embedded deployed site."""
    state = deployed.site.state_dir
    monkeypatch.setenv("ONE_AUTH", str(state / "one_auth"))
    monkeypatch.setenv("ONE_XMLRPC", deployed.xmlrpc_url)
    monkeypatch.setenv("ONEFLOW_URL", deployed.flow_url)
    monkeypatch.setenv("SITETK_SITES_REPO", str(deployed.site.sites_repo))
    monkeypatch.setenv("SITETK_LIBRARY_REPO", str(deployed.site.library_repo))
    monkeypatch.setenv("SITETK_VAULT_PASSWORD_FILE", str(deployed.site.vault_password_file))
    return deployed


def test_enable_fill_and_check_against_the_cloud(capsys: pytest.CaptureFixture[str], cloud_env: SimServer) -> None:
    code, result = run(capsys, "open", "demo-site", "--json")
    assert code == EXIT_OK
    path = result["site"]["path"]
    code, result = run(capsys, "enable", "vm_kvm", "--cloud-user", "tkauto", "--dry-run", "--json")
    assert code == EXIT_OK and result["plan"]["user"]["name"] == "tkauto"
    assert any(c["cli"].startswith("onemarketapp export") for c in result["preview"]["changes"])
    code, result = run(capsys, "enable", "vm_kvm", "--cloud-user", "tkauto", "--yes", "--poll", "0.02", "--json")
    assert code == EXIT_OK, result
    values = next(e["data"]["values"] for e in result["events"] if "values" in e["data"])
    rules = {acl.to_str() for acl in map(rule_of, cloud_env.site.acls.values())}
    assert f"#2 IMAGE/#{values['image_id']} USE #0" in rules and f"#2 TEMPLATE/#{values['template_id']} USE #0" in rules
    code, result = run(capsys, "fill", path, "--dry-run", "--json")
    assert code == EXIT_OK
    paths = [c["path"] for c in result["plan"]["changes"]]
    assert "site_s3_server.endpoint" in paths and "site_onegate" in paths
    code, result = run(capsys, "fill", path, "--json")
    assert code == EXIT_OK and result["events"][-1]["state"] == "done"
    code, result = run(capsys, "check", path, "--cloud", "--json")
    assert not [f for f in result["findings"] if f["path"].startswith("site_variables.vm_kvm")]
    # tn_bastion still has the template's 0s: they exist (the Ubuntu image and template) but are not the bastion
    errors = {f["path"]: f["message"] for f in result["findings"] if f["severity"] == "error"}
    assert code == EXIT_FINDINGS and set(errors) == {"site_variables.tn_bastion.template_id", "site_variables.tn_bastion.image_id"}
    assert "image 0 'Ubuntu 22.04' (no marketplace attributes)" in errors["site_variables.tn_bastion.image_id"]
    assert result["complete"] is False and result["unchecked"] == []
    head = _remote_head(cloud_env, "demo-site")
    code, result = run(capsys, "submit", "--yes", "--json")
    assert code == EXIT_FINDINGS and result["error"]["title"] == "Submit refused: the check found 2 error(s)"
    assert result["verdict"]["cloud_consulted"] and _remote_head(cloud_env, "demo-site") == head
    code, result = run(capsys, "submit", "--yes", "--override-reason", "bastion appliance arrives next week", "--json")
    assert code == EXIT_OK and result["events"][-1]["data"]["pushed"]
    assert _remote_head(cloud_env, "demo-site") != head
    message = subprocess.run(["git", "--git-dir", str(cloud_env.site.sites_repo), "log", "-1", "--format=%B", "demo-site"],
                             capture_output=True, text=True, check=True).stdout
    assert "2 check error(s) overridden: bastion appliance arrives next week" in message
    submits = [e for e in _audit(cloud_env) if e["action"] == "site.submit"]
    assert submits[-1]["details"]["override_reason"] == "bastion appliance arrives next week"


def test_enable_in_read_only_mode_is_refused(capsys: pytest.CaptureFixture[str], cloud_env: SimServer) -> None:
    run(capsys, "open", "demo-site", "--json")
    code = main(["--read-only", "site", "enable", "vm_kvm", "--cloud-user", "tkauto", "--yes", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == EXIT_USAGE and "read-only" in result["error"]["detail"]
    assert not [a for a in cloud_env.site.acls.values() if rule_of(a).to_str().startswith("#2 ")]


def test_fill_and_submit_in_read_only_mode_are_refused_by_the_operation(capsys: pytest.CaptureFixture[str], cloud_env: SimServer) -> None:
    """The verbs have no read-only check of their own: the operation type refuses (and audits
    the refusal) after the preview, which a dry run still shows; nothing is written or pushed."""
    code, result = run(capsys, "open", "demo-site", "--json")
    path = Path(result["site"]["path"])
    run(capsys, "enable", "core_net_cluster", "--cloud-user", "tkauto", "--json")  # something to submit
    before, head = path.read_bytes(), _remote_head(cloud_env, "demo-site")
    code = main(["--read-only", "site", "fill", str(path), "--dry-run", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == EXIT_OK and result["dry_run"] and result["plan"]["changes"]
    code = main(["--read-only", "site", "fill", str(path), "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == EXIT_USAGE and result["error"]["detail"] == "read-only mode: fill writes core.yaml"
    code = main(["--read-only", "site", "submit", "--yes", "--override-reason", "lab", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == EXIT_USAGE and "read-only mode" in result["error"]["detail"]
    assert path.read_bytes() == before and _remote_head(cloud_env, "demo-site") == head
    refused = [e["action"] for e in _audit(cloud_env) if e["outcome"] == "refused"]
    assert refused[-2:] == ["site.edit", "site.submit"]


def test_confirm_an_appliance_id_through_the_runner(capsys: pytest.CaptureFixture[str], cloud_env: SimServer) -> None:
    """`site confirm` is an operation: a dry run shows what is recorded, read-only mode refuses
    it (the operation type), `--yes` records it and the cloud check then warns instead of failing."""
    code, result = run(capsys, "open", "demo-site", "--json")
    path = result["site"]["path"]
    variable = "site_variables.tn_bastion.image_id"
    confirm = ("confirm", path, variable, "--reason", "our own bastion build")
    code, result = run(capsys, *confirm, "--dry-run", "--json")
    assert code == EXIT_OK and result["dry_run"] and result["confirmation"]["object_id"] == 0
    code = main(["--read-only", "site", *confirm, "--yes", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == EXIT_USAGE and result["error"]["detail"] == "read-only mode: a confirmation is recorded in the state directory"
    code, result = run(capsys, *confirm, "--yes", "--json")
    assert code == EXIT_OK and Path(result["result"]["file"]).exists()
    assert result["result"]["confirmation"]["reason"] == "our own bastion build"
    code, result = run(capsys, "check", path, "--cloud", "--json")
    assert {f["path"]: f["severity"] for f in result["findings"]}.get(variable) == "warning"


def test_enable_without_appliance_then_submit(capsys: pytest.CaptureFixture[str], cloud_env: SimServer) -> None:
    run(capsys, "open", "demo-site", "--json")
    code, result = run(capsys, "enable", "core_net_cluster", "--cloud-user", "tkauto", "--submit", "--yes", "--json")
    assert code == EXIT_FINDINGS and "Submit refused" in result["error"]["title"]  # written, not pushed
    code, result = run(capsys, "enable", "core_net_cluster", "--cloud-user", "tkauto", "--submit", "--yes", "--override-reason", "demo", "--json")
    assert code == EXIT_OK, result
    assert result["events"][-1]["state"] == "skipped" and result["submit"][-1]["data"]["pushed"]
    code, result = run(capsys, "enable", "core_net_cluster", "--cloud-user", "tkauto", "--submit", "--yes", "--json")
    assert code == EXIT_OK and result["events"][-1]["state"] == "skipped" and result["submit"] == []


def test_enable_fills_versioned_groups_from_what_is_offered(capsys: pytest.CaptureFixture[str], cloud_env: SimServer) -> None:
    """`site enable cluster --yes` used to download the appliance and then stop on the missing
    versioned IDs. The site's marketplaces offer a 1.31 build only (the community's v1.29 is not
    for this platform): 131 is filled from the download, 129 is left out, not asked blind."""
    code, result = run(capsys, "open", "demo-site", "--json")
    path = result["site"]["path"]
    code, result = run(capsys, "enable", "cluster", "--cloud-user", "tkauto", "--dry-run", "--json")
    assert code == EXIT_OK
    descriptions = [c["description"] for c in result["preview"]["changes"]]
    assert "site_variables.cluster.131.template_id: (not there) -> the appliance's ID" in descriptions
    assert not any("129" in d for d in descriptions)
    assert any(w.startswith("version(s) 129: no build is downloaded or offered") for w in result["preview"]["warnings"])
    code, result = run(capsys, "enable", "cluster", "--cloud-user", "tkauto", "--yes", "--poll", "0.02", "--json")
    assert code == EXIT_OK, result
    values = next(e["data"]["values"] for e in result["events"] if "values" in e["data"])
    assert set(values) == {"131.template_id"}
    code, result = run(capsys, "decrypt", path, "--json")
    from tui.domain.site_config import SiteConfig

    assert SiteConfig.parse(result["text"]).component_variables("cluster") == {"131": {"template_id": values["131.template_id"]}}
    code, result = run(capsys, "check", path, "--cloud", "--json")
    assert not [f for f in result["findings"] if f["path"].startswith("site_variables.cluster")]


def test_enable_with_a_missing_variable_leaves_nothing(capsys: pytest.CaptureFixture[str], cloud_env: SimServer) -> None:
    """A site variable blanked on the command line: refused before anything is downloaded, granted or written."""
    code, result = run(capsys, "open", "demo-site", "--json")
    path = Path(result["site"]["path"])
    before = path.read_bytes()
    site = cloud_env.site
    images, templates, acls = set(site.images), set(site.templates), set(site.acls)
    code, result = run(capsys, "enable", "vm_kvm", "--cloud-user", "tkauto", "--set", "template_id=", "--yes", "--poll", "0.02", "--json")
    assert code == EXIT_FAILED and result["error"]["title"] == "vm_kvm: site variables missing"
    assert "Give template_id" in result["error"]["detail"] and "Nothing was downloaded or granted" in result["error"]["detail"]
    assert (set(site.images), set(site.templates), set(site.acls)) == (images, templates, acls) and path.read_bytes() == before


def test_enable_grants_to_the_named_user_never_a_guessed_one(capsys: pytest.CaptureFixture[str], cloud_env: SimServer,
                                                             tmp_path: Path) -> None:
    """Without the input file (or --cloud-user) a component with appliances is refused before anything
    is planned: the site record or a live service may belong to another deployment. The message
    names what the site shows as a hint only. With --input FILE the grants go to the file's
    app_automation_cloud_username, whatever the live service was deployed with."""
    run(capsys, "open", "demo-site", "--json")
    site = cloud_env.site
    acls = set(site.acls)
    code, result = run(capsys, "enable", "vm_kvm", "--yes", "--poll", "0.02", "--json")
    assert code != EXIT_OK and result["error"]["title"] == "Automation cloud user not named"
    detail = result["error"]["detail"]
    assert "--input FILE" in detail and "--cloud-user NAME" in detail
    assert "app_automation_cloud_username 'tkauto'" in detail  # the live service's, as a hint
    assert set(site.acls) == acls
    # another user named by the input file: the grants are its, not the live service's tkauto
    with site.lock:
        from tui.sim.state import SimUser

        uid = max(site.users) + 1
        site.users[uid] = SimUser(uid, "trialbot", "Trialbot-Secret-1", 1, "users", [1])
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps({"name": "Site Toolkit", "custom_attrs_values": {
        "app_automation_cloud_username": "trialbot"}, "networks_values": [{"Public": {"id": "0"}}]}))
    inputs.chmod(0o600)
    code, result = run(capsys, "enable", "vm_kvm", "--input", str(inputs), "--cloud-user", "tkauto", "--json")
    assert code == EXIT_USAGE and "differs from app_automation_cloud_username 'trialbot'" in result["error"]["detail"]
    code, result = run(capsys, "enable", "vm_kvm", "--input", str(inputs), "--yes", "--poll", "0.02", "--json")
    assert code == EXIT_OK, result
    values = next(e["data"]["values"] for e in result["events"] if "values" in e["data"])
    rules = {acl.to_str() for acl in map(rule_of, site.acls.values())}
    assert f"#{uid} TEMPLATE/#{values['template_id']} USE #0" in rules
    assert not any(r.startswith("#2 ") and f"/#{values['template_id']} " in r for r in rules)


def test_submit_of_a_named_branch_without_a_working_clone_says_no_site_is_open(
        capsys: pytest.CaptureFixture[str], seeded: tuple[Path, Path], tmp_path: Path, password_file: Path) -> None:
    """Issue 22 item 6: `site submit --branch B` before any open raised FileNotFoundError (a
    traceback); it says, as without --branch, that no site is open and how to open it."""
    work = tmp_path / "work"
    repo = ("--repo", str(seeded[0]), "--workdir", str(work))
    pw = ("--vault-password-file", str(password_file))
    code = main(["site", "submit", "--branch", "demo-site", *repo, *pw, "--yes"])
    captured = capsys.readouterr()
    assert code == EXIT_FAILED and "Traceback" not in captured.err + captured.out
    assert "error: No site open" in captured.err and "`sitetk site open demo-site`" in captured.err
    code, result = run(capsys, "submit", "--branch", "demo-site", *repo, *pw, "--yes", "--json")
    assert code == EXIT_FAILED and result["error"]["title"] == "No site open"
    assert not work.exists()
