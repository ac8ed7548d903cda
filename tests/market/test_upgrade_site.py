"""After `market upgrades --apply`, the site's core.yaml points at the new image and template IDs:
on the deployed scenario, with a Bastion of an older build in the cloud and in core.yaml
(`site_variables.tn_bastion`), the upgrade downloads the new build, removes the old one, then
changes those two keys (previewed per key, the vault kept) and commits them to the site branch with
the upgrade named; a test reads the decrypted core.yaml of the sites repository. The check gate of
every submit applies: with errors the IDs stay edited in the working clone, and `sitetk site submit`
finishes. `id_edits` touches only variables that held a replaced ID of the same kind. New site
variables the library defines are written from `--set` in the same commit, the others listed."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.market.conftest import POLL
from tui.adapters.vault import VaultPassword, decrypt_text
from tui.domain.attribute_file import installed_version_from_image_template
from tui.domain.site_config import SiteConfig
from tui.procedures.connection import SiteConnection
from tui.procedures.market.upgrades import IdChange
from tui.procedures.site.follow_upgrade import id_edits, missing_variables
from tui.screenshots.scenes_market import OLDER_BASTION_BUILD, install_older_bastion
from tui.settings import Settings
from tui.sim.repos import EXISTING_SITE, SIM_VAULT_PASSWORD
from tui.sim.server import SimServer

pytestmark = pytest.mark.timeout(300)
OLD_BUILD = OLDER_BASTION_BUILD
BASTION = "tn_bastion"


@pytest.fixture
def deployed(sim_factory: Any, monkeypatch: pytest.MonkeyPatch) -> SimServer:
    server: SimServer = sim_factory(scenario="deployed")
    site = server.site
    monkeypatch.setenv("ONE_XMLRPC", server.xmlrpc_url)
    monkeypatch.setenv("ONE_AUTH", str(site.state_dir / "one_auth"))
    monkeypatch.setenv("ONEFLOW_URL", server.flow_url)
    monkeypatch.setenv("SITETK_SITES_REPO", str(site.sites_repo))
    monkeypatch.setenv("SITETK_LIBRARY_REPO", str(site.library_repo))
    monkeypatch.setenv("SITETK_VAULT_PASSWORD_FILE", str(site.vault_password_file))
    return server


run = run_cli


def _old_bastion(server: SimServer) -> tuple[int, int]:
    """Bastion downloaded (operation 2), then its image tagged with an older build of the same
    version, as if installed before the marketplace's build: the upgrade plan offers the new one.
    Returns (image id, VM template id). (The `market-upgraded` scene does the same.)"""
    async def go() -> tuple[int, int]:
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))
        await site.connect()
        try:
            return await install_older_bastion(site, POLL)
        finally:
            await site.close()
    return asyncio.run(go())


def _bastion_images(server: SimServer) -> dict[int, str]:
    async def go() -> dict[int, str]:
        site = SiteConnection(Settings.for_site(server.xmlrpc_url, server.session, server.flow_url))
        await site.connect()
        try:
            found = {}
            for image in await site.cloud.list_images():
                tag = installed_version_from_image_template(image.attributes, site.naming)
                if tag is not None and tag.name == "Bastion":
                    found[image.id] = tag.version.raw
            return found
        finally:
            await site.close()
    return asyncio.run(go())


def _git(server: SimServer, *args: str) -> str:
    return subprocess.run(["git", "-C", str(server.site.sites_repo), *args], capture_output=True, text=True,
                          check=True).stdout


def _pushed_config(server: SimServer) -> SiteConfig:
    text = _git(server, "show", f"{EXISTING_SITE}:{EXISTING_SITE}/core.yaml")
    assert text.startswith("$ANSIBLE_VAULT;1.1;AES256")
    return SiteConfig.parse(decrypt_text(text, VaultPassword.from_text(SIM_VAULT_PASSWORD, "test")))


def _into_core_yaml(capsys: pytest.CaptureFixture[str], image_id: int, template_id: int, *extra: str) -> Path:
    code, data, _ = run(capsys, "site", "open", EXISTING_SITE, "--json")
    assert code == 0, data
    path = Path(data["events"][-1]["data"]["path"])
    code, data, err = run(capsys, "site", "edit", str(path), "--set", f"site_variables.{BASTION}.image_id={image_id}",
                          "--set", f"site_variables.{BASTION}.template_id={template_id}", "--yes", "--json")
    assert code == 0, (data, err)
    code, data, err = run(capsys, "site", "submit", "--yes", "--json", *extra)
    assert code == 0, (data, err)
    return path


def test_an_upgrade_leaves_core_yaml_pointing_at_the_new_ids(deployed: SimServer,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    old_image, old_template = _old_bastion(deployed)
    _into_core_yaml(capsys, old_image, old_template, "--override-reason", "the demo site's other values come later")
    commits = int(_git(deployed, "rev-list", "--count", EXISTING_SITE))
    code, data, err = run(capsys, "market", "upgrades", "--only", "Bastion", "--apply", "--datastore", "1", "--yes",
                          "--override-reason", "the demo site's other values come later", "--poll", str(POLL), "--json")
    assert code == 0, (data, err)
    new_images = [i for i, version in _bastion_images(deployed).items() if version.endswith("20250612-1045")]
    assert len(new_images) == 1 and old_image not in _bastion_images(deployed)  # the old one removed
    edits = {e["path"]: e for e in data["site"]["edits"]}
    assert set(edits) == {f"site_variables.{BASTION}.image_id", f"site_variables.{BASTION}.template_id"}
    assert edits[f"site_variables.{BASTION}.image_id"]["old"] == old_image
    new_template = edits[f"site_variables.{BASTION}.template_id"]["new"]
    assert edits[f"site_variables.{BASTION}.image_id"]["new"] == new_images[0] and new_template != old_template
    # previewed per key by the edit operation, then committed with the upgrade named
    [preview] = [e["data"]["preview"] for e in data["site"]["events"] if "preview" in e["data"]]
    assert sorted(c["description"] for c in preview["changes"]) == [
        f"site_variables.{BASTION}.image_id: {old_image} -> {new_images[0]}",
        f"site_variables.{BASTION}.template_id: {old_template} -> {new_template}"]
    assert all(c["cli"].startswith("ansible-vault edit ") for c in preview["changes"])
    config = _pushed_config(deployed)
    assert config.component_variables(BASTION) == {"template_id": new_template, "image_id": new_images[0]}
    assert int(_git(deployed, "rev-list", "--count", EXISTING_SITE)) == commits + 1
    subject = _git(deployed, "log", "-1", "--format=%s", EXISTING_SITE).strip()
    assert subject == (f"Upgrade Bastion v1.3.0-{OLD_BUILD} -> v1.3.0-20250612-1045: core.yaml image and template IDs")

    # again: nothing to upgrade, nothing edited or committed
    code, data, _ = run(capsys, "market", "upgrades", "--only", "Bastion", "--apply", "--datastore", "1", "--yes",
                        "--json")
    assert code == 0 and int(_git(deployed, "rev-list", "--count", EXISTING_SITE)) == commits + 1


def test_a_check_error_keeps_the_new_ids_in_the_working_clone_until_submitted(
        deployed: SimServer, capsys: pytest.CaptureFixture[str]) -> None:
    old_image, old_template = _old_bastion(deployed)
    path = _into_core_yaml(capsys, old_image, old_template, "--override-reason", "set up later")
    code, data, err = run(capsys, "market", "upgrades", "--only", "Bastion", "--apply", "--datastore", "1", "--yes",
                          "--poll", str(POLL), "--json")
    assert code == 1, (data, err)
    assert data["error"]["title"].startswith("core.yaml's new IDs are not submitted")
    assert "sitetk site submit" in data["error"]["detail"] and "--override-reason" in data["error"]["detail"]
    assert _pushed_config(deployed).component_variables(BASTION) == {"template_id": old_template, "image_id": old_image}
    clone = SiteConfig.parse(decrypt_text(path.read_text(), VaultPassword.from_text(SIM_VAULT_PASSWORD, "test")))
    new = clone.component_variables(BASTION)
    assert new["image_id"] != old_image and new["template_id"] != old_template
    assert path.read_text().startswith("$ANSIBLE_VAULT;1.1;AES256")  # the vault kept
    code, data, err = run(capsys, "site", "submit", "--override-reason", "set up later", "--yes", "--json")
    assert code == 0, (data, err)
    assert _pushed_config(deployed).component_variables(BASTION) == new


def test_only_variables_holding_a_replaced_id_of_their_kind_change() -> None:
    text = """site_variables:
  tn_bastion:
    template_id: 7
    image_id: 5
  vm_kvm:
    template_id: 5      # a VM template 5: not the replaced image 5
    image_id: "5"
  switch:
    collector_image_id: 5
    middleware_ip: 5
    flag_image_id: true
  cluster:
    "131":
      template_id: 7
    "129":
      template_id: 8
  ran_sim:
    service_template_id: 7
site_s3_server:
  image_id: 5
"""
    config = SiteConfig.parse(text)
    changes = [IdChange("Bastion", "image", 5, 15), IdChange("Bastion", "VM template", 7, 17),
               IdChange("Bastion", "service template", 9, 19), IdChange("Bastion", "VM template", 8, None)]
    edits = {e.path: (e.old, e.new) for e in id_edits(config, changes)}
    assert edits == {
        "site_variables.tn_bastion.template_id": (7, 17), "site_variables.tn_bastion.image_id": (5, 15),
        "site_variables.vm_kvm.image_id": (5, 15), "site_variables.switch.collector_image_id": (5, 15),
        "site_variables.cluster.131.template_id": (7, 17)}
    edited = config.edit([(p, new) for p, (_, new) in edits.items()])
    assert "# a VM template 5: not the replaced image 5" in edited.text  # comments kept
    assert id_edits(config, [IdChange("Bastion", "image", -1, 15)]) == ()  # a new image with no old one


def test_site_variables_the_library_defines_and_core_yaml_lacks_are_named() -> None:
    from tui.domain.components import parse_public_yaml

    definition = parse_public_yaml("tn_bastion", """metadata:
  appliances: ["{marketplace_url}/appliance/service_bastion"]
site_variables:
  template_id: "the VM template"
  image_id: "the image"
  vpn_port: "the VPN's UDP port (new in this version)"
""")
    config = SiteConfig.parse("site_variables:\n  tn_bastion:\n    template_id: 1\n    image_id: 2\n  vm_kvm: null\n")
    assert missing_variables(config, {"tn_bastion": definition}, ["service_bastion"]) == (
        ("site_variables.tn_bastion.vpn_port", "the VPN's UDP port (new in this version)"),)
    assert missing_variables(config, {"tn_bastion": definition}, ["service_vm_kvm"]) == ()


def test_without_a_vault_password_or_an_id_in_core_yaml_nothing_is_committed(
        deployed: SimServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    old_image, _ = _old_bastion(deployed)
    commits = int(_git(deployed, "rev-list", "--count", EXISTING_SITE))
    monkeypatch.delenv("SITETK_VAULT_PASSWORD_FILE")  # and stdin is not a terminal: nothing to ask it on
    code, data, _ = run(capsys, "market", "upgrades", "--only", "Bastion", "--apply", "--datastore", "1", "--yes",
                        "--poll", str(POLL), "--json")
    assert code == 1 and data["error"]["title"] == "core.yaml not changed: no vault password"
    assert "The upgrade itself is done" in data["error"]["detail"] and f"Bastion image {old_image} -> " in \
        data["error"]["detail"]
    assert old_image not in _bastion_images(deployed)
    # the toolkit's IDs are in no component's variables: the site is read, nothing edited or committed
    monkeypatch.setenv("SITETK_VAULT_PASSWORD_FILE", str(deployed.site.vault_password_file))
    code, data, err = run(capsys, "market", "upgrades", "--only", "Site Toolkit", "--apply", "--datastore", "1",
                          "--yes", "--poll", str(POLL), "--json")
    assert code == 0, (data, err)
    assert data["site"]["edits"] == [] and data["site"]["events"][-1]["state"] == "skipped"
    assert "holds none of the replaced IDs" in data["site"]["events"][-1]["message"]
    assert int(_git(deployed, "rev-list", "--count", EXISTING_SITE)) == commits


def _library_needs(server: SimServer, tmp_path: Path, component: str, variable: str, about: str) -> None:
    """The component library's newer version of `component` defines a site variable the site lacks
    (its public.yaml gains it on the library's default branch)."""
    from tui.domain.naming import DEFAULT_NAMING

    clone = tmp_path / "library-clone"
    subprocess.run(["git", "clone", "-q", str(server.site.library_repo), str(clone)], check=True)
    public = clone / component / DEFAULT_NAMING.component_manager_dir / "public.yaml"
    text = public.read_text()
    assert "site_variables:\n" in text
    public.write_text(text.replace("site_variables:\n", f'site_variables:\n  {variable}: "{about}"\n', 1))
    identity = ["-c", "user.name=Library", "-c", "user.email=library@sim.invalid"]
    subprocess.run(["git", "-C", str(clone), *identity, "commit", "-qam", f"{component}: {variable}"], check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "HEAD"], check=True)


def test_an_upgrade_writes_the_new_site_variables_given_and_lists_the_others(
        deployed: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old_image, old_template = _old_bastion(deployed)
    _into_core_yaml(capsys, old_image, old_template, "--override-reason", "the demo site's other values come later")
    _library_needs(deployed, tmp_path, BASTION, "vpn_port", "UDP port of the bastion's VPN")
    _library_needs(deployed, tmp_path / "again", BASTION, "vpn_subnet", "Subnet of the VPN's clients")
    commits = int(_git(deployed, "rev-list", "--count", EXISTING_SITE))
    code, data, err = run(capsys, "market", "upgrades", "--only", "Bastion", "--apply", "--datastore", "1", "--yes",
                          "--override-reason", "the demo site's other values come later", "--poll", str(POLL),
                          "--set", f"site_variables.{BASTION}.vpn_port=51820", "--set", "site_variables.nope=1", "--json")
    assert code == 0, (data, err)
    assert data["site"]["set"] == [f"site_variables.{BASTION}.vpn_port"]
    assert data["site"]["missing"] == [{"path": f"site_variables.{BASTION}.vpn_subnet",
                                        "about": "Subnet of the VPN's clients"}]
    assert data["site"]["ignored"] == ["site_variables.nope"]
    # previewed with the IDs, in the same commit, the value typed as YAML (an int)
    [preview] = [e["data"]["preview"] for e in data["site"]["events"] if "preview" in e["data"]]
    assert any(c["description"].startswith(f"site_variables.{BASTION}.vpn_port: ") for c in preview["changes"])
    config = _pushed_config(deployed)
    variables = config.component_variables(BASTION)
    assert variables["vpn_port"] == 51820 and "vpn_subnet" not in variables and variables["image_id"] != old_image
    assert int(_git(deployed, "rev-list", "--count", EXISTING_SITE)) == commits + 1
    assert _git(deployed, "log", "-1", "--format=%s", EXISTING_SITE).strip().endswith(
        "core.yaml image and template IDs; new site variables vpn_port")


def test_the_console_dialog_previews_core_yaml_per_key_and_the_new_site_variables(
        deployed: SimServer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The console's upgrade dialog, once the plan is applied, reads the site branch's core.yaml
    decrypted and shows each key the upgrade changes (old -> new) as the CLI previews it, the new site
    variable the library defines for the upgraded component, and the commands that write them."""
    import dataclasses

    from tests.market.conftest import free_old_images
    from tests.market.test_screen import _market
    from tests.ui.conftest import SIZE, rendered_text
    from tui.app import SiteToolkitApp
    from tui.console import demo_settings
    from tui.screens.market_upgrades import UpgradePlanModal
    from tui.screenshots import click_shown, frozen_clock, wait_for, wait_for_screen
    from widgets.confirm_modal import ConfirmModal

    old_image, old_template = _old_bastion(deployed)
    _into_core_yaml(capsys, old_image, old_template, "--override-reason", "the demo site's other values come later")
    _library_needs(deployed, tmp_path, BASTION, "vpn_port", "UDP port of the bastion's VPN")
    free_old_images(deployed)
    commits = int(_git(deployed, "rev-list", "--count", EXISTING_SITE))
    settings = demo_settings(deployed, Settings(state_dir=tmp_path / "console", audit_log=tmp_path / "audit.log"))
    app = SiteToolkitApp(SiteConnection(dataclasses.replace(settings, refresh_interval=3600.0, theme="textual-dark")),
                         clock=frozen_clock, initial_screen="market")
    async def drive() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await _market(pilot, app)
            await pilot.press("u")
            modal = await wait_for_screen(pilot, UpgradePlanModal, what="the upgrade plan modal")
            await wait_for(pilot, lambda: not modal.query_one("#up-apply").disabled, timeout=30, what="the datastore")
            await click_shown(pilot, "#up-apply")
            while not modal.has_class("-finished"):  # each removal asks on its own
                await wait_for(pilot, lambda: modal.has_class("-finished") or isinstance(app.screen, ConfirmModal),
                               timeout=60, what="a removal confirmation or the end of the upgrade")
                dialog = app.screen
                if isinstance(dialog, ConfirmModal):  # the next removal's may follow at once: this one gone
                    await click_shown(pilot, "#confirm")
                    await wait_for(pilot, lambda dialog=dialog: app.screen is not dialog, what="the confirmation closed")
            preview = await wait_for(pilot, lambda: modal.site_ids, timeout=60, what="core.yaml read")
            assert preview.reason == "", preview.reason
            new = {e.path: e.new for e in preview.edits}
            assert {e.path: e.old for e in preview.edits} == {f"site_variables.{BASTION}.image_id": old_image,
                                                              f"site_variables.{BASTION}.template_id": old_template}
            shown = await wait_for(pilot, lambda: (text := rendered_text(modal.query_one("#up-result")))
                                   and "key(s) to change" in text and text, what="the preview drawn")
            flat = " ".join(shown.split())
            assert f"{EXISTING_SITE}/core.yaml on {EXISTING_SITE} (read decrypted): 2 key(s) to change" in flat
            for path, old in ((f"site_variables.{BASTION}.image_id", old_image),
                              (f"site_variables.{BASTION}.template_id", old_template)):
                assert f"{path} {old} -> {new[path]}" in flat, flat
            assert f"site_variables.{BASTION}.vpn_port UDP port of the bastion's VPN" in flat
            assert f"--set site_variables.{BASTION}.image_id={new[f'site_variables.{BASTION}.image_id']}" in flat
            assert "sitetk site submit" in flat

    asyncio.run(drive())
    # a preview: nothing committed
    assert int(_git(deployed, "rev-list", "--count", EXISTING_SITE)) == commits
