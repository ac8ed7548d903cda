"""The site-configuration procedures end to end on real vault files and real git repositories."""

from __future__ import annotations

import json
import stat
import subprocess
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Mapping

import pytest

from tests.conftest import VAULT_PASSWORD
from tests.procedure_run import collect as reported
from tests.site.conftest import ansible_vault, offline_gate
from tui.adapters.git_repo import GitRemote, GitRepo
from tui.adapters.vault import VaultPassword, is_vault_text, read_vault_file, write_vault_file
from tui.domain.components import ComponentDefinition
from tui.domain.site_config import SiteConfig
from tui.errors import SiteError
from tui.procedures.audit import AuditLog
from tui.procedures.connection import SiteConnection
from tui.procedures.operation import RunContext, run_operation
from tui.procedures.progress import Progress
from tui.procedures.site.component_library import load_library
from tui.procedures.site.config import (
    check_site_file,
    edit_file,
    enable_component,
    load_site_config,
    preview_edit,
    save_text,
)
from tui.procedures.site.file_operations import EncryptSite
from tui.procedures.site.repo import create_site, current_site, list_sites, open_site, preview_submit, submit_site
from tui.procedures.site.verdict import SubmitGate, submit_gate, verdict_of
from tui.settings import Settings
from tui.sim.repos import SIM_VAULT_PASSWORD, template_core_yaml

SIM_PASSWORD = VaultPassword.from_text(SIM_VAULT_PASSWORD, "test")


@pytest.fixture
def plain_file(tmp_path: Path) -> Path:
    path = tmp_path / "site" / "core.yaml"
    path.parent.mkdir()
    path.write_text(template_core_yaml())
    return path


@pytest.fixture
def vault_file(plain_file: Path, password: VaultPassword) -> Path:
    write_vault_file(plain_file, plain_file.read_text(), password)
    return plain_file


async def _encrypt(path: Path, password: VaultPassword, audit: AuditLog) -> list[Progress]:
    """Encrypt through the `EncryptSite` operation (which writes the audit record)."""
    site, operation = SiteConnection(replace(Settings(), audit_log=audit.path)), EncryptSite(path, password)
    context = RunContext(emit=lambda event: None)
    await run_operation(site, operation, await operation.plan(site), context)
    return context.events


async def test_encrypt_then_rerun(plain_file: Path, password: VaultPassword, password_file: Path, audit: AuditLog) -> None:
    events = await _encrypt(plain_file, password, audit)
    assert events[-1].state == "done" and events[-1].data["changed"]
    assert is_vault_text(plain_file.read_text())
    assert stat.S_IMODE(plain_file.stat().st_mode) == 0o600
    viewed = ansible_vault("view", "--vault-password-file", str(password_file), str(plain_file))
    assert viewed.stdout == template_core_yaml()
    before = plain_file.read_bytes()
    again = await _encrypt(plain_file, password, audit)
    assert again[-1].state == "skipped" and plain_file.read_bytes() == before
    with pytest.raises(SiteError, match="Wrong vault password"):
        await _encrypt(plain_file, VaultPassword.from_text("nope-nope"), audit)
    entries = audit.entries()
    assert [e["action"] for e in entries] == ["site.encrypt"]
    assert "ansible-vault encrypt --vault-password-file" in entries[0]["details"]["cli"]
    assert VAULT_PASSWORD not in audit.path.read_text()


async def test_encrypt_refuses_invalid_yaml_and_leaves_the_file(tmp_path: Path, password: VaultPassword, audit: AuditLog) -> None:
    path = tmp_path / "core.yaml"
    path.write_text("site_domain: x\nsite_variables:\n  tn_vxlan: [\n")
    before = path.read_bytes()
    with pytest.raises(SiteError) as caught:
        await _encrypt(path, password, audit)
    assert caught.value.title == "core.yaml is not valid YAML"
    assert caught.value.detail.startswith("line 4, column 1:") and "Nothing was written" in caught.value.detail
    assert path.read_bytes() == before and audit.entries() == []


async def test_edit_keeps_comments_and_is_idempotent(vault_file: Path, password: VaultPassword, password_file: Path, audit: AuditLog) -> None:
    changes = [("site_s3_server.endpoint", "https://10.0.0.21:9000"), ("site_variables.ran_sim", {"template_id": 5, "image_id": 6})]
    preview = await preview_edit(vault_file, password, changes)
    assert [c.description for c in preview.changes] == [
        "site_s3_server.endpoint: 'https://<objectstore ip>:9000' -> 'https://10.0.0.21:9000'",
        "site_variables.ran_sim: null -> {'template_id': 5, 'image_id': 6}",
    ]
    assert preview.changes[0].cli.startswith(f"ansible-vault edit --vault-password-file {password_file}")
    events = await reported(partial(edit_file, vault_file, password, changes, audit=audit))
    assert events[-1].state == "done"
    assert {f["path"] for f in events[-1].data["findings"]} >= {"site_variables.cluster"}  # still not listed: a warning
    text = read_vault_file(vault_file, password)
    for line in template_core_yaml().splitlines():
        if line.lstrip().startswith("#"):
            assert line in text.splitlines()
    assert '  endpoint: "https://10.0.0.21:9000"' in text
    before = vault_file.read_bytes()
    again = await reported(partial(edit_file, vault_file, password, changes, audit=audit))
    assert again[-1].state == "skipped" and vault_file.read_bytes() == before
    assert [e["action"] for e in audit.entries()] == ["site.edit"]


async def test_edit_failures_change_nothing(vault_file: Path, plain_file: Path, password: VaultPassword, audit: AuditLog) -> None:
    before = vault_file.read_bytes()
    with pytest.raises(SiteError, match="Wrong vault password"):
        await reported(partial(edit_file, vault_file, VaultPassword.from_text("wrong-one"), [("site_domain", "x")], audit=audit))
    with pytest.raises(SiteError, match="holds a single value"):
        await reported(partial(edit_file, vault_file, password, [("site_domain.x", 1)], audit=audit))
    assert vault_file.read_bytes() == before
    plain = vault_file.parent / "plain.yaml"
    plain.write_text("a: 1\n")
    with pytest.raises(SiteError, match="Not encrypted"):
        await reported(partial(edit_file, plain, password, [("a", 2)], audit=audit))
    assert plain.read_text() == "a: 1\n" and audit.entries() == []


async def test_preview_masks_secret_values(vault_file: Path, password: VaultPassword) -> None:
    preview = await preview_edit(vault_file, password, [("site_variables.switch.registry_token", "tok-123456")])
    assert "tok-123456" not in preview.as_text() and "***" in preview.as_text()


async def test_save_text_from_the_editor(vault_file: Path, password: VaultPassword, audit: AuditLog) -> None:
    before = vault_file.read_bytes()
    with pytest.raises(SiteError) as caught:
        await reported(partial(save_text, vault_file, password, "a: 1\n b: 2\n"))
    assert "line 2, column 3" in caught.value.detail
    assert vault_file.read_bytes() == before
    events = await reported(partial(save_text, vault_file, password, template_core_yaml().replace("1450", "1400")))
    assert events[-1].state == "done"
    assert (await load_site_config(vault_file, password)).config.get("site_vxlan_guest_mtu") == 1400


async def test_check_on_encrypted_and_plain(vault_file: Path, password: VaultPassword, tmp_path: Path) -> None:
    findings = await check_site_file(vault_file, password, nic_mtu=1500)
    assert ("site_s3_server.endpoint", "error") in {(f.path, f.severity.value) for f in findings}
    plain = tmp_path / "plain.yaml"
    plain.write_text("site_variables:\n  tn_bastion: null\n  tn_vxlan: null\n")
    findings = await check_site_file(plain, None)
    assert "site_s3_server" in [f.path for f in findings]
    with pytest.raises(SiteError, match="Vault password needed"):
        await check_site_file(vault_file, None)


async def _definition(seeded: tuple[Path, Path], tmp_path: Path, name: str) -> ComponentDefinition:
    library = await load_library(GitRepo(GitRemote(str(seeded[1])), tmp_path / "library"))
    definition = library.get(name)
    assert definition is not None
    return definition


async def test_enable_component(seeded: tuple[Path, Path], tmp_path: Path, vault_file: Path, password: VaultPassword, audit: AuditLog) -> None:
    ran_sim = await _definition(seeded, tmp_path, "ran_sim")
    before = vault_file.read_bytes()
    with pytest.raises(SiteError) as caught:
        await reported(partial(enable_component, vault_file, password, ran_sim, values={"template_id": 5}, audit=audit))
    assert "image_id (ID of the image of the UE/RAN simulator appliance)" in caught.value.detail
    assert vault_file.read_bytes() == before
    with pytest.raises(SiteError, match="has no site variable 'flavour'"):
        await reported(partial(enable_component, vault_file, password, ran_sim, values={"flavour": 1}, audit=audit))
    events = await reported(partial(enable_component, vault_file, password, ran_sim, values={"template_id": 5, "image_id": 6}, audit=audit))
    assert events[1].state == "skipped" and "service_ueransim" in events[1].message  # appliance not provisioned here
    assert events[-1].state == "done"
    config = (await load_site_config(vault_file, password)).config
    assert config.component_variables("ran_sim") == {"template_id": 5, "image_id": 6}
    again = await reported(partial(enable_component, vault_file, password, ran_sim, values={}, audit=audit))
    assert again[-1].state == "skipped"
    assert [e["action"] for e in audit.entries()] == ["site.enable_component"]
    assert audit.entries()[0]["details"]["appliances"] == ["service_ueransim"]


async def test_enable_with_the_appliance_extension_point(seeded: tuple[Path, Path], tmp_path: Path, vault_file: Path, password: VaultPassword, audit: AuditLog) -> None:
    cluster = await _definition(seeded, tmp_path, "cluster")
    calls: list[str] = []

    async def provision(definition: ComponentDefinition) -> Mapping[str, Any]:
        calls.append(definition.name)
        return {"129.template_id": 41, "131.template_id": 42}

    with pytest.raises(SiteError, match="Wrong vault password"):
        await reported(partial(enable_component, vault_file, VaultPassword.from_text("wrong-one"), cluster, provision_appliances=provision, audit=audit))
    assert calls == []  # nothing downloaded before the password is known good
    events = await reported(partial(enable_component, vault_file, password, cluster, values={"131.template_id": 50}, provision_appliances=provision, audit=audit))
    assert calls == ["cluster"] and events[-1].state == "done"
    config = (await load_site_config(vault_file, password)).config
    assert config.component_variables("cluster") == {"129": {"template_id": 41}, "131": {"template_id": 50}}


async def test_enable_component_without_variables_and_incomplete(seeded: tuple[Path, Path], tmp_path: Path, vault_file: Path, password: VaultPassword, audit: AuditLog) -> None:
    core_cluster = await _definition(seeded, tmp_path, "core_net_cluster")
    events = await reported(partial(enable_component, vault_file, password, core_cluster, audit=audit))
    assert events[1].message == "core_net_cluster uses no appliance"
    config = (await load_site_config(vault_file, password)).config
    assert "core_net_cluster" in config.components() and config.component_variables("core_net_cluster") is None
    core_vm = await _definition(seeded, tmp_path, "core_net_vm")
    await reported(partial(enable_component, vault_file, password, core_vm, values={"image_id": 3}, allow_incomplete=True, audit=audit))
    assert (await load_site_config(vault_file, password)).config.component_variables("core_net_vm") == {"template_id": None, "image_id": 3}


async def test_new_site_created_and_submitted(seeded: tuple[Path, Path], tmp_path: Path, password: VaultPassword, audit: AuditLog) -> None:
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    listing = await list_sites(repo)
    assert listing.default_branch == "main" and listing.sites == ("demo-site",)
    events = await reported(partial(create_site, repo, "lab-a", "lab-a", password, initial={"site_domain": "lab-a.internal"}, audit=audit))
    assert events[-1].state == "done"
    site = await current_site(repo)
    assert site.path == repo.workdir / "lab-a" / "core.yaml" and is_vault_text(site.path.read_text())
    preview = await preview_submit(repo, site, password)
    assert preview.new_branch and preview.pending and preview.base == "origin/main:.dummy/core.yaml"
    assert '-site_domain: "trial.mysite.internal"' in preview.diff and '+site_domain: "lab-a.internal"' in preview.diff
    # the template's values are still there: the check refuses, nothing is committed or pushed
    with pytest.raises(SiteError, match=r"Submit refused: the check found \d+ error\(s\)") as refused:
        await offline_gate(site.path, password)
    assert "site_onegate" in refused.value.detail and "--override-reason" in refused.value.detail
    verdict = verdict_of((await load_site_config(site.path, password)).config)
    with pytest.raises(SiteError, match="Submit refused"):
        await reported(partial(submit_site, repo, site, password, gate=SubmitGate(verdict), audit=audit))
    assert "lab-a" not in (await list_sites(repo)).sites
    assert [e["action"] for e in audit.entries()] == ["site.create"]
    # an explicit reason lets it go, into the commit message and the audit entry
    gate = await offline_gate(site.path, password, "lab site: values follow once the toolkit is deployed")
    submitted = await reported(partial(submit_site, repo, site, password, gate=gate, audit=audit))
    assert submitted[-1].state == "done" and submitted[-1].data["pushed"]
    assert "lab-a" in (await list_sites(repo)).sites
    message = subprocess.run(["git", "-C", str(repo.workdir), "log", "-1", "--format=%B"], capture_output=True, text=True, check=True).stdout
    assert "check error(s) overridden: lab site: values follow once the toolkit is deployed" in message
    assert "- site_onegate: still the template's example '10.11.32.103'" in message
    entry = audit.entries()[-1]
    assert entry["details"]["check"] == "overridden" and entry["details"]["override_reason"].startswith("lab site")
    assert {f["path"] for f in entry["details"]["overridden"]} >= {"site_onegate", "site_s3_server.endpoint"}
    again = await reported(partial(submit_site, repo, site, password, gate=gate, audit=audit))
    assert again[-1].state == "skipped"
    assert not (await preview_submit(repo, site, password)).pending
    rerun = await reported(partial(create_site, repo, "lab-a", "lab-a", password, audit=audit))
    assert rerun[-1].state == "skipped" and "opened" in rerun[-1].message
    assert [e["action"] for e in audit.entries()] == ["site.create", "site.submit"]


async def test_existing_site_opened_edited_submitted(seeded: tuple[Path, Path], tmp_path: Path, audit: AuditLog) -> None:
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    events = await reported(partial(open_site, repo, "demo-site", None))
    site_data = events[-1].data
    assert site_data["site_dir"] == "demo-site"
    site = await current_site(repo)
    await reported(partial(edit_file, site.path, SIM_PASSWORD, [("site_vxlan_guest_mtu", 1400), ("site_variables.switch.registry_token", "reg-secret-1")], audit=audit))
    preview = await preview_submit(repo, site, SIM_PASSWORD)
    assert not preview.new_branch and preview.base == "origin/demo-site:demo-site/core.yaml"
    assert "-site_vxlan_guest_mtu: 1450" in preview.diff and "+site_vxlan_guest_mtu: 1400" in preview.diff
    assert "reg-secret-1" not in preview.diff and "registry_token: ***" in preview.diff
    assert "reg-secret-1" in (await preview_submit(repo, site, SIM_PASSWORD, reveal=True)).diff
    # the demo site's gate address is still the template's: the check has an error, so a stale or
    # missing override is refused, and a verdict on other text does not carry over
    stale = submit_gate(verdict_of(SiteConfig.parse(template_core_yaml())), "stale")
    with pytest.raises(SiteError, match="The check is out of date"):
        await reported(partial(submit_site, repo, site, SIM_PASSWORD, gate=stale, audit=audit))
    gate = await offline_gate(site.path, SIM_PASSWORD, "gate address filled on the frontend")
    await reported(partial(submit_site, repo, site, SIM_PASSWORD, gate=gate, message="demo-site: MTU", audit=audit))
    other = GitRepo(GitRemote(str(sites)), tmp_path / "other")
    await reported(partial(open_site, other, "demo-site", None))
    assert (await load_site_config(other.workdir / "demo-site" / "core.yaml", SIM_PASSWORD)).config.get("site_vxlan_guest_mtu") == 1400
    log = audit.path.read_text()
    assert "reg-secret-1" not in log and SIM_VAULT_PASSWORD not in log
    assert json.loads(log.splitlines()[-1])["details"]["commit"]


async def test_submit_refuses_plain_text(seeded: tuple[Path, Path], tmp_path: Path, audit: AuditLog) -> None:
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    await reported(partial(open_site, repo, "demo-site", None))
    site = await current_site(repo)
    site.path.write_text("site_domain: plain\n")
    with pytest.raises(SiteError, match="Refusing to submit plain text"):
        await preview_submit(repo, site, SIM_PASSWORD)
    with pytest.raises(SiteError, match="Refusing to submit plain text"):
        await reported(partial(submit_site, repo, site, SIM_PASSWORD, gate=SubmitGate(verdict_of(SiteConfig.parse("a: 1\n"))), audit=audit))
    assert await repo.unpushed("demo-site") is False and audit.entries() == []


async def test_no_site_open(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    repo = GitRepo(GitRemote(str(seeded[0])), tmp_path / "work")
    with pytest.raises(SiteError, match="not a clone yet"):
        await current_site(repo)
    await list_sites(repo)
    with pytest.raises(SiteError, match="open or create a site first"):
        await current_site(repo)


async def test_a_value_the_template_cannot_take_changes_nothing(seeded: tuple[Path, Path], tmp_path: Path,
                                                                password: VaultPassword, audit: AuditLog) -> None:
    """`site create --set` with a path through a single value fails before the clone changes: no
    new branch, no renamed template, no plain-text core.yaml in a site directory."""
    sites, _ = seeded
    repo = GitRepo(GitRemote(str(sites)), tmp_path / "work")
    await list_sites(repo)
    branch_before = await repo.current_branch()
    with pytest.raises(SiteError) as refused:
        await reported(partial(create_site, repo, "lab-b", "lab-b", password, initial={"site_domain.sub": "x"}, audit=audit))
    assert "site_domain" in f"{refused.value.title} {refused.value.detail}"
    assert not (repo.workdir / "lab-b").exists()
    assert "lab-b" not in await repo.branches() and await repo.current_branch() == branch_before
    assert not await repo.changed_paths()
    # a good value afterwards makes the site
    events = await reported(partial(create_site, repo, "lab-b", "lab-b", password, initial={"site_domain": "lab-b.internal"}, audit=audit))
    assert events[-1].state == "done" and is_vault_text((repo.workdir / "lab-b" / "core.yaml").read_text())
