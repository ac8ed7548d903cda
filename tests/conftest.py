"""Fixtures shared by every test: the embedded simulated site, started in-process on a free loopback port.

`sim_factory(scenario="fresh", time_scale=0.02, vms=0)` starts a seeded site (state directory under
the test's tmp_path) as the platform version under test and stops it at teardown; `sim` is a fresh
site. `site_factory(scenario, one_version=...)` starts a site of the version the test names. Both
return a `tui.sim.server.SimServer` (xmlrpc_url, flow_url, market_url, session, site).

Platform versions, in one pytest run (issue 23 item 6). A test that starts a site as the version
under test (it takes `sim_factory`, `sim`, or any fixture built on them) or takes `one_version` is
generated once per emulated platform version (`tui.sim.platform.EMULATED_VERSIONS`: 6.10.0, 7.0.0,
7.4.0), with the version in its id (`test_x[one-6.10.0]`), so a failure names the version that
failed. Which of those run:

- a test whose behaviour depends on the platform version runs at every selected version: every test
  of a folder whose subject is the platform's interface (`EVERY_VERSION_FOLDERS`: the adapters'
  contract, the embedded site, its conformance rows and the recordings' replays, the marketplace's
  per-series appliance lists), a test marked `@pytest.mark.every_version` (its body or helpers
  branch on or assert the version, or it runs a path that differs by version end to end: the whole
  setup, the toolkit's deploy with the version's values key), a test marked `since_version`, and a
  test that asks for `one_version` itself;
- any other test runs once, at one version chosen from its own id (`zlib.crc32` of the id without
  the version, modulo the versions it may run at), so each version takes a third of them at no
  extra cost, and its id still names the version it ran at. The items of a parametrised function
  spread the same way, each on its own.

A test named with its version on the command line (`pytest 'tests/x.py::test_y[one-6.10.0]'`) runs
whatever the rule chose. `--every-version` or `SITETK_EVERY_VERSION=1` runs every test at every
selected version (a release check). A test whose sites all name their version (`site_factory`, the
toolkit's `toolkit_site`) or that starts none runs once, outside this rule.
`@pytest.mark.since_version("7.0")` keeps a test to the versions from that series on.
`--one-versions 7.0.0,7.4.0` or the environment variable `SITETK_ONE_VERSIONS` narrows the set
(the option wins); a test that runs once then runs at one of those. The screenshot scenes keep
7.0.0 (their pictures name the version).
"""

from __future__ import annotations

import gc
import inspect
import os
import re
import zlib
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest
from hypothesis import HealthCheck, settings

from tui import timing
from tui.adapters.vault import VaultPassword, read_password_file
from tui.sim.platform import DEFAULT_VERSION, EMULATED_VERSIONS, TEST_ONLY_VERSIONS, version_key
from tui.sim.runner import start_sim
from tui.sim.server import SimServer
from tui.sim.state import SimConfig

SimFactory = Callable[..., SimServer]
SiteFactory = Callable[..., SimServer]

# Hypothesis's per-example deadline (200 ms) and its too-slow health check are timing assertions:
# a loaded machine failed a round-trip property that passes alone (no test asserts a time)
settings.register_profile("sitetk", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sitetk")

# every wait on a state (tests/waiting.py, tui/screenshots/pilot_waits.py) gets 4x its deadline: a
# loaded machine must not turn a slow state into a failure; pytest-timeout (300 s) still bounds a test
os.environ.setdefault("SITETK_WAIT_SCALE", "4")
# every git repository the tests make (about 4,000 a run: the sites' bare repositories, sitetk's
# working clones) without the 16 sample hooks and files git copies from its template directory:
# a fifth of the files a run writes and then deletes; no test reads them
os.environ.setdefault("GIT_TEMPLATE_DIR", "")
ENV_VERSIONS = "SITETK_ONE_VERSIONS"
ENV_EVERY_VERSION = "SITETK_EVERY_VERSION"
#: the folders of tests/ whose subject is the platform's interface: each of their tests runs at every
#: selected version (the adapters' contract tests, the conformance rows, the embedded site, the
#: recordings' replays, the marketplace whose appliance lists and driver differ by series)
EVERY_VERSION_FOLDERS = ("adapters", "conformance", "market", "recordings", "sim")
#: what the environment of the machine running the tests must not decide for a test
SITE_ENVIRONMENT = ("SITETK_AUDIT_LOG", "SITETK_CONFIG", "ONE_AUTH", "ONE_XMLRPC", "ONEFLOW_URL", "ONEFLOW_USER",
                    "ONEFLOW_PASSWORD", "ONE_XMLRPC_TIMEOUT", "SITETK_VAULT_PASSWORD_FILE", "SITETK_SITES_REPO",
                    "SITETK_SITES_TOKEN", "SITETK_SITES_TOKEN_FILE", "SITETK_LIBRARY_REPO", "SITETK_LIBRARY_TOKEN")


def isolate_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME and XDG directories (state dir, site records, audit log), no system git config,
    ansible's temporary files under tmp_path, and none of the site's environment: the body of the
    autouse `isolated_home` fixture of the test directories that need it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("ANSIBLE_LOCAL_TEMP", str(tmp_path / "ansible-tmp"))
    monkeypatch.setenv("ANSIBLE_HOME", str(tmp_path / "ansible-home"))
    for name in SITE_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    return home


#: the home of whoever runs the suite: no test may write below it (tests/test_home_isolation.py)
RUNNER_HOME = os.environ.get("HOME", "")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets a HOME and XDG directories of its own, so nothing it runs (the console's
    state dir, site records, audit log, sites-repository clones; a `sitetk` it starts) writes to
    the home of whoever runs the suite; the whole suite at 2e1d8b1 left three audit records and
    clones there. The folders that need more (none of the site's environment, no system git config)
    override this fixture with `isolate_home`; this one keeps the environment a real frontend's
    contract tests read (ONE_XMLRPC, ONE_AUTH)."""
    home = tmp_path_factory.mktemp("home")  # beside the test's tmp_path: some tests want theirs empty
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    return home


@pytest.fixture(autouse=True)
def collector_untouched() -> Iterator[None]:
    """No test leaves the garbage collector of its process other than it found it (thresholds, on or
    off, frozen objects): its pytest worker runs hundreds of tests after it. The console's app kept
    its thresholds (tui.app.GC_THRESHOLDS: full collections a hundred times rarer) after it exited,
    so each worker piled up the cyclic garbage of every later test, and pytest's collections at the
    session's end took 9-21 s (the first freed 290,000-660,000 objects): execnet interrupted the
    last worker in them after its 5 s (a KeyboardInterrupt inside hypothesis's gc callback)."""
    found = _collector_settings()
    yield
    left = _collector_settings()
    if left != found:
        pytest.fail(f"the test left the garbage collector changed: {left} (threshold, enabled, frozen objects), "
                    f"found {found}", pytrace=False)


def _collector_settings() -> tuple[tuple[int, ...], bool, int]:
    return gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--one-versions", default=None,
                     help="comma-separated platform versions the version-dependent tests run on "
                          f"(default: ${ENV_VERSIONS} or {','.join(EMULATED_VERSIONS)})")
    parser.addoption("--every-version", action="store_true", default=False,
                     help="run every version-dependent test at every selected version, also those whose behaviour "
                          f"does not depend on it (default: once each; ${ENV_EVERY_VERSION}=1 does the same)")


def selected_versions(config: pytest.Config) -> list[str]:
    """The platform versions chosen for this run (option, then environment, then all emulated)."""
    text = config.getoption("--one-versions") or os.environ.get(ENV_VERSIONS, "")
    chosen = [v.strip() for v in text.split(",") if v.strip()] or list(EMULATED_VERSIONS)
    unknown = [v for v in chosen if v not in EMULATED_VERSIONS + TEST_ONLY_VERSIONS]
    if unknown:
        raise pytest.UsageError(f"unknown platform version(s) {', '.join(unknown)}: choose from "
                                f"{', '.join(EMULATED_VERSIONS)}")
    return chosen


_PEM_BODY = re.compile(r"(-----BEGIN [A-Z ]+-----\n).*?(-----END)", re.DOTALL)


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Test ids without the bodies of PEM blocks: some tests make their keys and certificates at
    import, so each pytest-xdist worker would name the same test differently."""
    if isinstance(val, str) and "-----BEGIN " in val:
        return _PEM_BODY.sub(r"\1...\2", val).replace("\n", " ")
    return None


def _parametrized_by_the_test(metafunc: pytest.Metafunc) -> bool:
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        listed = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        if "one_version" in listed:
            return True
    return False


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "since_version(series): run only on the platform versions from this "
                                       "series on (e.g. \"7.0\"): behaviour the older versions do not have")
    config.addinivalue_line("markers", "every_version: the test's behaviour depends on the platform version: it "
                                       "runs at every selected version, not once (tests/conftest.py)")
    config.addinivalue_line("markers", "slow: a test of a minute or more on a loaded 2-core machine; it starts "
                                       "before the others (pytest_collection_modifyitems)")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The session's garbage collected once, and what is left alive frozen, before a pytest-xdist
    worker reports that it finished: pytest's own end (unraisableexception) collects five more
    times after that report, within the 5 s execnet gives a worker before it interrupts it, and
    each of those scanned the whole live heap (0.56-1.15 M objects, 0.4-2.3 s each with 8 workers
    on 2 cores: 3.5-8 s together). The collection here runs finalizers under pytest's
    unraisable-exception hook as those did; the objects frozen after it are alive, and the process
    ends right after."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A version-independent test keeps only the version chosen for it (`once_at`); then the tests
    marked `slow` run first, each in its place among them; then the others, in theirs.

    make test hands the workers one test at a time (pytest-xdist `--maxschedchunk 1`), so each
    worker starts on a long test and the short ones fill the gaps: a run no longer ends with one
    worker on the long tests that happened to be collected last, together, while the others idle."""
    if not every_version_run(config):
        named = named_on_the_command_line(config)
        kept: list[pytest.Item] = []
        deselected: list[pytest.Item] = []
        for item in items:
            version = version_under_test(item)
            runs = (version is None or depends_on_version(item) or item.nodeid in named
                    or once_at(item.nodeid, version, versions_of(config, item)) == version)
            (kept if runs else deselected).append(item)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept
    slow = [item for item in items if item.get_closest_marker("slow")]
    if slow:
        items[:] = slow + [item for item in items if not item.get_closest_marker("slow")]


def every_version_run(config: pytest.Config) -> bool:
    """Whether this run takes every test at every selected version (`--every-version`, $SITETK_EVERY_VERSION)."""
    return bool(config.getoption("--every-version")) or os.environ.get(ENV_EVERY_VERSION, "") not in ("", "0")


def version_under_test(item: pytest.Item) -> str | None:
    """The version this conftest parametrised the item with (None: a test it does not parametrise,
    or one that names its own versions)."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    version = callspec.params.get("one_version")
    return version if isinstance(version, str) and f"one-{version}" in callspec.id else None


def depends_on_version(item: pytest.Item) -> bool:
    """Whether the test's behaviour depends on the platform version (the rule of the module docstring)."""
    path = item.nodeid.split("::")[0].split("/")
    folder = path[path.index("tests") + 1] if "tests" in path[:-1] else ""
    if folder in EVERY_VERSION_FOLDERS:
        return True
    if item.get_closest_marker("every_version") or item.get_closest_marker("since_version"):
        return True
    function = getattr(item, "function", None)
    return function is not None and "one_version" in inspect.signature(function).parameters


def once_at(nodeid: str, version: str, versions: Sequence[str]) -> str:
    """The one version a version-independent test runs at: chosen from its id without the version,
    so that each item keeps its version from run to run and the versions share the tests evenly."""
    key = nodeid.replace(f"one-{version}", "one", 1)
    return versions[zlib.crc32(key.encode()) % len(versions)] if versions else version


def named_on_the_command_line(config: pytest.Config) -> set[str]:
    """The node ids with a parameter part the command line names (`tests/x.py::test_y[one-6.10.0]`)."""
    named = set()
    for arg in config.args:
        path, sep, rest = arg.partition("::")
        if not sep or "[" not in rest:
            continue
        try:
            relative = (config.invocation_params.dir / path).resolve().relative_to(config.rootpath)
        except ValueError:
            continue
        named.add(f"{relative.as_posix()}::{rest}")
    return named


def versions_of(config: pytest.Config, node: pytest.Item) -> list[str]:
    """The platform versions a version-dependent test runs on: the chosen ones, from the series
    of its `since_version` marker on."""
    versions = selected_versions(config)
    for marker in node.iter_markers("since_version"):
        since = version_key(str(marker.args[0]))
        versions = [v for v in versions if version_key(v)[:len(since)] >= since]
    return versions


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # a test that names its own versions (@pytest.mark.parametrize("one_version", ...)) keeps them
    if "one_version" in metafunc.fixturenames and not _real_frontend() and not _parametrized_by_the_test(metafunc):
        versions = versions_of(metafunc.config, metafunc.definition)
        metafunc.parametrize("one_version", versions, indirect=True, ids=[f"one-{v}" for v in versions])


def _real_frontend() -> bool:
    # the adapter contract tests run once against a real frontend (tests/adapters/conftest.py)
    return bool(os.environ.get("ONE_XMLRPC") and os.environ.get("ONE_AUTH"))


@pytest.fixture
def one_version(request: pytest.FixtureRequest) -> str:
    """The platform version the embedded site of this test runs as (parametrised, see above; against
    a real frontend, where nothing is parametrised, the chosen version when exactly one is chosen)."""
    if hasattr(request, "param"):
        return str(request.param)
    chosen = selected_versions(request.config)
    return chosen[0] if len(chosen) == 1 else DEFAULT_VERSION


@pytest.fixture
def site_factory(tmp_path: Path) -> Iterator[SiteFactory]:
    """Sites of the version the test names: a test that starts only these runs once."""
    started: list[SimServer] = []

    def factory(scenario: str = "fresh", *, one_version: str, time_scale: float = 0.02, vms: int = 0,
                db_backend: str = "sqlite") -> SimServer:
        config = SimConfig(one_version=one_version, time_scale=time_scale, scenario=scenario, extra_vms=vms,
                           db_backend=db_backend)
        server = start_sim(config, tmp_path / f"sim-{len(started)}")
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture
def sim_factory(site_factory: SiteFactory, one_version: str) -> Iterator[SimFactory]:
    """Sites as the platform version under test (the test runs once per version). A test whose sites
    all name another version belongs on `site_factory`, which runs it once: it fails here so that
    it does not run three times for nothing."""
    versions: list[str] = []

    def factory(scenario: str = "fresh", one_version: str | None = None, time_scale: float = 0.02,
                vms: int = 0, db_backend: str = "sqlite") -> SimServer:
        versions.append(one_version or version)
        return site_factory(scenario, one_version=one_version or version, time_scale=time_scale, vms=vms,
                            db_backend=db_backend)

    version = one_version
    yield factory
    if versions and version not in versions:
        pytest.fail(f"every site of this test names its version ({', '.join(sorted(set(versions)))}), none runs "
                    f"as the version under test ({version}): take `site_factory` instead of `sim_factory`, "
                    "so the test runs once instead of once per platform version", pytrace=False)


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimServer:
    return sim_factory()


@pytest.fixture
def driven_clock(monkeypatch: pytest.MonkeyPatch) -> timing.Clock:
    """The clock of the procedures' deadlines and heartbeats (`tui.timing`), this test's own: a test
    of a timeout lets the site reach the situation, then advances it past the deadline."""
    clock = timing.Clock()
    monkeypatch.setattr(timing, "CLOCK", clock)
    return clock


# --- vault password files (one password for every test that encrypts a site file) ---------------

VAULT_PASSWORD = "correct horse battery staple"


def write_password_file(path: Path, secret: str) -> Path:
    """A vault password file at `path`, mode 0600, holding `secret`."""
    path.write_text(secret + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def password_file(tmp_path: Path) -> Path:
    """A vault password file holding `VAULT_PASSWORD`."""
    return write_password_file(tmp_path / "vault-pass", VAULT_PASSWORD)


@pytest.fixture
def password(password_file: Path) -> VaultPassword:
    """The password of `password_file`, read as the console reads it."""
    return read_password_file(password_file)
