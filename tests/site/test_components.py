"""The component library: public.yaml parsing and reading the seeded library repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tui.adapters.git_repo import GitRemote, GitRepo
from tui.domain.components import ComponentDefinitionError, appliance_record_id, parse_public_yaml
from tui.domain.naming import NamingProfile
from tui.domain.site_checks import MINIMAL_COMPONENT_SET
from tui.procedures.site.component_library import load_library
from tui.sim.repos import seed_repositories

PUBLIC = """
metadata:
  maintainers: ["Ops <ops@example.org>"]
  short_description: "Load-test agent"
  long_description: |
    Generates load.
  hypervisors: [one]
  appliances:
    - "{marketplace_url}/appliance/service_loadgen"
    - "https://market.example.org/appliance/abc-123/download"
    - "plain_record_id"
site_variables:
  middleware_ip: "Address of the middleware"
  template_id: "VM template"
  versions:
    "1": {image_id: "image of v1"}
input:
  agents:
    description: "How many agents"
    type: int
    default_value: 1
    choices: [1, 2, 4]
"""


def test_parse_public_yaml() -> None:
    definition = parse_public_yaml("loadgen", PUBLIC)
    assert definition.short_description == "Load-test agent"
    assert definition.long_description == "Generates load."
    assert definition.maintainers == ("Ops <ops@example.org>",)
    assert definition.hypervisors == ("one",)
    assert definition.variable_paths() == (
        ("middleware_ip", "Address of the middleware"),
        ("template_id", "VM template"),
        ("versions.1.image_id", "image of v1"),
    )
    assert definition.skeleton() == {"middleware_ip": None, "template_id": None, "versions": {"1": {"image_id": None}}}
    assert definition.appliance_record_ids() == ("service_loadgen", "abc-123", "plain_record_id")
    assert definition.appliance_urls("http://127.0.0.1:8080/") == (
        "http://127.0.0.1:8080/appliance/service_loadgen",
        "https://market.example.org/appliance/abc-123/download",
        "http://127.0.0.1:8080/appliance/plain_record_id",
    )
    assert definition.inputs[0].name == "agents" and definition.inputs[0].choices == (1, 2, 4)


def test_component_without_site_variables() -> None:
    definition = parse_public_yaml("tn_vxlan", "metadata:\n  short_description: x\n")
    assert not definition.has_site_variables and definition.skeleton() is None and definition.appliances == ()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("metadata: [1\n", "not valid YAML"),
        ("", "empty"),
        ("- a\n", "must be a mapping"),
        ("metadata: 3\n", "metadata must be a mapping"),
        ("metadata:\n  appliances: [{a: 1}]\n", "list of text"),
        ("metadata:\n  appliances: ['not a url/']\n", "not a marketplace record"),
        ("site_variables: [a, b]\n", "mapping of variable"),
        ("site_variables:\n  group: {}\n", "empty group"),
        ("site_variables:\n  v: [1]\n", "not a list"),
        ("input: 3\n", "input must be a mapping"),
    ],
)
def test_bad_public_yaml_says_what_is_wrong(text: str, words: str) -> None:
    with pytest.raises(ComponentDefinitionError) as caught:
        parse_public_yaml("broken", text)
    assert words in str(caught.value) and "component 'broken'" in str(caught.value)


def test_yaml_error_position() -> None:
    with pytest.raises(ComponentDefinitionError) as caught:
        parse_public_yaml("broken", "metadata:\n  a: 1\n b: 2\n")
    assert caught.value.line == 3


def test_record_id_forms() -> None:
    assert appliance_record_id("{marketplace_url}/appliance/service_bastion") == "service_bastion"
    assert appliance_record_id("http://m/appliance/x/download/0") == "x"
    with pytest.raises(ValueError):
        appliance_record_id("http://m/other/x")


async def test_library_of_the_embedded_site(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    _, library_url = seeded
    repo = GitRepo(GitRemote(str(library_url)), tmp_path / "library")
    library = await load_library(repo)
    minimal = {item.component for item in MINIMAL_COMPONENT_SET}
    assert set(library.names()) == minimal
    assert library.problems == ()
    bastion = library.get("tn_bastion")
    assert bastion is not None and bastion.appliance_record_ids() == ("service_bastion",)
    assert [leaf for leaf, _ in bastion.variable_paths()] == ["template_id", "image_id"]
    cluster = library.get("cluster")
    assert cluster is not None and [leaf for leaf, _ in cluster.variable_paths()] == ["129.template_id", "131.template_id"]
    for name in ("tn_vxlan", "tn_init", "vnet", "core_net_cluster"):
        definition = library.get(name)
        assert definition is not None and not definition.has_site_variables
    # a second load fetches instead of cloning
    assert (await load_library(repo)).names() == library.names()


def _push_broken_component(library_url: Path, scratch: Path) -> None:
    """Push a component whose public.yaml does not parse, and a directory that is no component."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "clone", "-q", str(library_url), str(scratch)], check=True)
    (scratch / "broken" / ".manager").mkdir(parents=True)
    (scratch / "broken" / ".manager" / "public.yaml").write_text("metadata: [oops\n")
    (scratch / "docs").mkdir()
    (scratch / "docs" / "index.md").write_text("not a component\n")
    subprocess.run([*git, "-C", str(scratch), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(scratch), "commit", "-qm", "broken"], check=True)
    subprocess.run([*git, "-C", str(scratch), "push", "-q"], check=True)


async def test_broken_component_is_reported_and_others_listed(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    _, library_url = seeded
    _push_broken_component(library_url, tmp_path / "scratch")
    library = await load_library(GitRepo(GitRemote(str(library_url)), tmp_path / "library"))
    assert "broken" not in library.names() and "docs" not in library.names()
    assert len(library.names()) == len(MINIMAL_COMPONENT_SET)
    assert len(library.problems) == 1 and "component 'broken'" in library.problems[0]


async def test_a_commit_is_read_once_and_a_pushed_change_read_again(seeded: tuple[Path, Path], tmp_path: Path) -> None:
    _, library_url = seeded
    repo = GitRepo(GitRemote(str(library_url)), tmp_path / "library")
    first = await load_library(repo)
    assert await load_library(repo) is first  # fetched again, the same commit: its files not read nor parsed again
    _push_broken_component(library_url, tmp_path / "scratch")
    after = await load_library(repo)  # the fetch moved the branch: the new commit is read
    assert after.names() == first.names() and len(after.problems) == 1 and first.problems == ()


async def test_manager_directory_is_a_setting(tmp_path: Path) -> None:
    naming = NamingProfile(component_manager_dir=".tnlcm")
    _, library_url = seed_repositories(tmp_path / "state", naming)
    library = await load_library(GitRepo(GitRemote(str(library_url)), tmp_path / "library"), naming)
    assert "tn_bastion" in library.names()
    assert (await load_library(GitRepo(GitRemote(str(library_url)), tmp_path / "other"))).names() == ()
