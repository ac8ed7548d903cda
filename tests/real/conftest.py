"""The real frontend under test and the `sitetk` processes run against it.

The suite runs only when `SITETK_REAL_ENV` names the env file `python -m realsite start` wrote
(`make test-real REAL_ENV=<state dir>/env`), or when `ONE_XMLRPC`, `ONE_AUTH` and `ONEFLOW_URL`
are set (plus `SITETK_CONFIG` for the sites repository); otherwise every test here skips.
`make test` ignores the folder altogether.

The suite deploys the toolkit and runs the guided setup: run it on a freshly started frontend
(`python -m realsite start --fresh ...`); it refuses one that already holds OneFlow services.
`real` is that frontend: its environment, an XML-RPC client (realsite.rpc) for what the tests
check behind the console's back, and a `Runner` (tests/faults/processes.py) whose `sitetk`
processes get a HOME, an audit log and a console config of their own (the frontend's config with
a private `state_dir`), so runs of the suite do not share move journals or records.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from realsite.rpc import OneRpc
from tests.faults.processes import Runner, Sitetk
from tui.procedures.audit import AUDIT_ENV

ENV_FILE = os.environ.get("SITETK_REAL_ENV", "")
NEEDED = ("ONE_XMLRPC", "ONE_AUTH", "ONEFLOW_URL")


def read_env_file(path: Path) -> dict[str, str]:
    """`export NAME=value` lines (shell-quoted) as a mapping."""
    values = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("export "):
            name, _, raw = line[len("export "):].partition("=")
            parts = shlex.split(raw)
            values[name] = parts[0] if parts else ""
    return values


def real_environment() -> dict[str, str] | None:
    if ENV_FILE:
        return read_env_file(Path(ENV_FILE))
    if all(os.environ.get(n) for n in NEEDED):
        return {n: os.environ[n] for n in (*NEEDED, "SITETK_CONFIG", "SITETK_REAL_MARKET_URL",
                                            "SITETK_REAL_ONE_VERSION") if os.environ.get(n)}
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if real_environment() is not None:
        return
    skip = pytest.mark.skip(reason="no real frontend: set SITETK_REAL_ENV=<state dir>/env (make test-real)")
    for item in items:
        if "tests/real/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


class RealRunner(Runner):
    """A Runner whose processes talk to the real frontend (its env file's variables)."""

    real_env: dict[str, str] = {}

    def _base_env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_STATE_HOME": str(self.home / "state"),
            "PYTHONUNBUFFERED": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            AUDIT_ENV: str(self.audit),
            **self.real_env,
        }


@dataclass
class RealSite:
    env: dict[str, str]
    rpc: OneRpc
    runner: RealRunner
    config: dict[str, Any]
    work: Path

    @property
    def version(self) -> tuple[int, ...]:
        text = str(self.rpc.call("one.system.version"))
        return tuple(int(p) for p in text.split(".")[:3])

    def sitetk(self, *argv: str, timeout: float = 300.0) -> tuple[int, Sitetk]:
        return self.runner.run(*argv, timeout=timeout)


def _private_config(env: dict[str, str], work: Path) -> tuple[dict[str, Any], Path | None]:
    """The frontend's console config with a state_dir under `work`."""
    source = env.get("SITETK_CONFIG")
    if not source or not Path(source).exists():
        return {}, None
    data = tomllib.loads(Path(source).read_text(encoding="utf-8"))
    lines = [f"state_dir = {_toml(str(work / 'console'))}"]
    for table in ("marketplace", "site"):
        if isinstance(data.get(table), dict):
            lines.append(f"[{table}]")
            for key, value in data[table].items():
                if isinstance(value, list):
                    lines.append(f"{key} = [{', '.join(_toml(str(v)) for v in value)}]")
                else:
                    lines.append(f"{key} = {_toml(str(value))}")
    path = work / "config.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data, path


def _services(env: dict[str, str], session: str) -> list[str]:
    user, _, password = session.partition(":")
    answer = httpx.get(env["ONEFLOW_URL"].rstrip("/") + "/service", auth=(user, password), timeout=30)
    answer.raise_for_status()
    docs = answer.json().get("DOCUMENT_POOL", {}).get("DOCUMENT", [])
    docs = docs if isinstance(docs, list) else [docs]
    return [f"{d.get('ID')} {d.get('NAME')}" for d in docs]


def _toml(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@pytest.fixture(scope="session")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealSite]:
    env = real_environment()
    if env is None:
        pytest.skip("no real frontend")
    missing = [n for n in NEEDED if not env.get(n)]
    if missing:
        pytest.fail(f"{ENV_FILE or 'the environment'} lacks {', '.join(missing)}")
    work = tmp_path_factory.mktemp("real")
    config, config_path = _private_config(env, work)
    if config_path is not None:
        env = {**env, "SITETK_CONFIG": str(config_path)}
    home = work / "home"
    home.mkdir()
    runner = RealRunner(None, home, work / "audit" / "audit.log")  # type: ignore[arg-type]
    runner.real_env = env
    session = Path(env["ONE_AUTH"]).read_text(encoding="utf-8").strip()
    site = RealSite(env, OneRpc(env["ONE_XMLRPC"], session, timeout=60), runner, config, work)
    services = _services(env, session)
    if services:
        pytest.fail(f"the frontend already holds OneFlow services {services}: the suite deploys the toolkit and "
                    f"runs the guided setup, which change the site for good; run it on a fresh frontend "
                    f"(python -m realsite start --fresh --prefix ... --state ...)")
    yield site
    for run in runner.started:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait(30)
