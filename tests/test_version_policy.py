"""The platform-version policy of tests/conftest.py (issue 23 item 6): a test whose behaviour depends
on the version runs at every selected version, any other once, at a version chosen from its own id,
with the version in its id.

Each test collects a small tree of tests in a pytester directory whose conftest takes the hooks and
the `one_version` fixture of tests/conftest.py; no site is started.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import ENV_EVERY_VERSION, ENV_VERSIONS, EVERY_VERSION_FOLDERS, once_at
from tui.sim.platform import EMULATED_VERSIONS

pytest_plugins = ("pytester",)

CONFTEST = """
import pytest

from tests.conftest import (one_version, pytest_addoption, pytest_collection_modifyitems, pytest_configure,
                            pytest_generate_tests)


@pytest.fixture
def site(one_version):
    '''A fixture on the version under test, as `sim_factory` is.'''
    return one_version
"""

ONCE = """
import pytest


def test_reads_the_site(site):
    pass


@pytest.mark.parametrize("n", range(30))
def test_many(site, n):
    pass


def test_no_site():
    pass
"""

MARKED = """
import pytest


@pytest.mark.every_version
def test_marked(site):
    pass


@pytest.mark.since_version("7.0")
def test_since(site):
    pass


def test_asks_for_the_version(one_version):
    pass


@pytest.mark.parametrize("one_version", ["6.10.0"])
def test_names_its_own(site):
    pass
"""

INTERFACE = """
def test_interface(site):
    pass
"""


@pytest.fixture
def tree(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in (ENV_VERSIONS, ENV_EVERY_VERSION):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    for folder, source in (("ui", ONCE), ("setup", MARKED), ("sim", INTERFACE)):  # no packages: not `tests.*`
        (pytester.path / "tests" / folder).mkdir(parents=True)
        (pytester.path / "tests" / folder / f"test_{folder}.py").write_text(source)
    return pytester


def collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    """The node ids a collection keeps."""
    # in this process (a collection of a few tests); without the snapshot plugin, whose session end
    # removes the directory the outer session's own end reads
    result = pytester.runpytest_inprocess("--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:textual-snapshot",
                                          *args)
    assert result.ret == 0, result.stdout.str()
    return [line for line in result.stdout.lines if "::" in line]


def versions(ids: list[str], function: str) -> list[str]:
    return [m.group(1) for node in ids if (m := re.search(rf"::{function}\[one-([\d.]+)", node))]


def test_a_version_independent_test_is_collected_once_at_the_version_its_id_chooses(tree: pytest.Pytester) -> None:
    ids = collected(tree)
    [node] = [n for n in ids if "::test_reads_the_site" in n]
    version = versions([node], "test_reads_the_site")[0]
    assert version in EMULATED_VERSIONS
    assert version == once_at("tests/ui/test_ui.py::test_reads_the_site[one-7.0.0]", "7.0.0", EMULATED_VERSIONS)
    assert "tests/ui/test_ui.py::test_no_site" in ids  # no version: once, as before
    # each item of a parametrised function takes its own version: the 30 spread over the three
    many = versions(ids, "test_many")
    assert len(many) == 30 and set(many) == set(EMULATED_VERSIONS)
    assert collected(tree) == ids  # deterministic


def test_a_version_dependent_test_runs_at_every_version(tree: pytest.Pytester) -> None:
    ids = collected(tree)
    assert sorted(versions(ids, "test_marked")) == sorted(EMULATED_VERSIONS)  # marked every_version
    assert sorted(versions(ids, "test_since")) == ["7.0.0", "7.4.0"]  # since_version: its versions, each
    assert sorted(versions(ids, "test_asks_for_the_version")) == sorted(EMULATED_VERSIONS)
    assert "sim" in EVERY_VERSION_FOLDERS
    assert sorted(versions(ids, "test_interface")) == sorted(EMULATED_VERSIONS)  # a folder of the interface
    assert [n for n in ids if "test_names_its_own" in n] == ["tests/setup/test_setup.py::test_names_its_own[6.10.0]"]


def test_the_selected_versions_narrow_both_kinds(tree: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VERSIONS, "7.0.0,7.4.0")
    ids = collected(tree)
    assert sorted(versions(ids, "test_marked")) == ["7.0.0", "7.4.0"]
    assert set(versions(ids, "test_many")) == {"7.0.0", "7.4.0"} and len(versions(ids, "test_many")) == 30
    assert versions(ids, "test_reads_the_site")[0] in ("7.0.0", "7.4.0")
    only = collected(tree, "--one-versions", "6.10.0")  # the option wins over the environment
    assert versions(only, "test_many") == ["6.10.0"] * 30 and versions(only, "test_marked") == ["6.10.0"]


@pytest.mark.parametrize("switch", ["option", "environment"])
def test_the_every_version_switch_runs_everything_at_every_version(
        tree: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, switch: str) -> None:
    if switch == "environment":
        monkeypatch.setenv(ENV_EVERY_VERSION, "1")
    ids = collected(tree, *(["--every-version"] if switch == "option" else []))
    assert sorted(versions(ids, "test_reads_the_site")) == sorted(EMULATED_VERSIONS)
    assert len(versions(ids, "test_many")) == 90
    monkeypatch.setenv(ENV_EVERY_VERSION, "0")
    assert len(versions(collected(tree), "test_many")) == 30


def test_a_test_named_with_another_version_on_the_command_line_runs(tree: pytest.Pytester) -> None:
    chosen = versions(collected(tree), "test_reads_the_site")[0]
    other = next(v for v in EMULATED_VERSIONS if v != chosen)
    node = f"tests/ui/test_ui.py::test_reads_the_site[one-{other}]"
    assert collected(tree, node) == [node]
    # the function named without its parameters: the version the rule chose
    assert collected(tree, "tests/ui/test_ui.py::test_reads_the_site") == [
        f"tests/ui/test_ui.py::test_reads_the_site[one-{chosen}]"]
