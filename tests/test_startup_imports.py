"""The console's start-up path imports no heavy library it does not use before its first rows.

ansible (the vault) takes ~0.3 s to import on this project's machines; when the front door's check
(`toolkit_deployed`, now in tui/procedures/toolkit/service.py) pulled it in, `sitetk --demo` went from 1.45x to
2.84x the bare Textual app in `make bench`. This guards the cause rather than timing anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: what the console loads before its first rows, and the screen the front door opens on a fresh site
START_UP_MODULES = (
    "tui.console",
    "tui.app",
    "tui.procedures.setup.facts",
    "tui.procedures.toolkit.service",
    "tui.screens.setup",
    "tui.screens.vms",
)


def loaded_by(modules: tuple[str, ...], watched: str, then: str = "") -> list[str]:
    """Which modules a fresh interpreter has loaded after importing `modules` (and running the
    statement `then`), of those the expression `watched` (over a module name `m`) selects."""
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"{then}\n"
        f"print(json.dumps(sorted(m for m in sys.modules if {watched})))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_start_up_does_not_import_ansible() -> None:
    assert loaded_by(START_UP_MODULES, "m == 'ansible' or m.startswith('ansible.')") == []


#: what the demo site's child process (`sitetk sim`, tui.demo_site) loads before it announces itself:
#: `sitetk --demo` waits for that announcement before it can read its first rows
SIM_START_UP_MODULES = ("tui.__main__", "tui.cli.output", "tui.cli.sim", "tui.sim.runner", "tui.sim.server",
                        "tui.sim.scenarios", "tui.sim.repos")
#: libraries the site does not need to start: uuid pulls in `platform` (tui.sim.uuids writes the
#: site's UUIDs instead), xml.sax.saxutils pulls in urllib.request (~65 ms together at load 20);
#: asyncio (the site runs no event loop; tui.timing, tui.cli.common and tui.procedures.stop_signals
#: import it where a loop runs), lxml (tui.domain.template_text parses XML templates on first use)
#: and the procedures' plumbing of tui.cli.common (the entry point's output wrapper is
#: tui.cli.output): ~50 ms of the site's CPU before it announces itself (issue 24)
SIM_NEEDLESS = ("uuid", "platform", "xml.sax.saxutils", "urllib.request", "asyncio", "lxml", "lxml.etree",
                "tui.cli.common", "tui.procedures.preview", "tui.procedures.progress")


def test_demo_site_start_up_imports_no_needless_library() -> None:
    assert loaded_by(SIM_START_UP_MODULES, f"m in {SIM_NEEDLESS!r}") == []


#: what `sitetk --demo` (and any site with VMs) loads before the VM list's first rows (the client with
#: the first read)
VM_LIST_START_UP_MODULES = ("tui.console", "tui.app", "tui.screens.vms", "tui.demo_site", "widgets.terminal_driver",
                            "tui.adapters.cloud")
#: loaded on first use, after the first rows: the operation modal and its dialogs (a TextArea and
#: the tree-sitter support under it), the change runner and the audit log (~45 ms of CPU when
#: tui.screens.base imported them for every screen, issue 24); the VM detail's models
#: (tui.domain.vm_detail: four frozen dataclasses, ~1.3 ms of CPU each to create), with its first read;
#: the other objects' state enums (tui.domain.one_states; the VM's are tui.domain.vm_states, ~4 ms);
#: the groups' model (start-up reads the user only); the TOML parser (~2 ms of regular expressions),
#: imported by `Settings.load` only when there is a config file to read; the permissions' model (a
#: user is read without them: ~1.2 ms), the filter's field (mounted when `/` is first pressed: ~0.6 ms)
#: and shlex (the demo site's command, in messages only)
VM_LIST_NEEDLESS = ("tui.screens.operation_modal", "tui.screens.operation_run", "tui.procedures.operation",
                    "tui.procedures.audit", "widgets.dialog", "textual.widgets._text_area", "tui.domain.vm_detail",
                    "tui.domain.one_states", "tui.domain.groups", "tomllib", "tui.domain.permissions",
                    "widgets.field_input", "shlex")


def test_vm_list_start_up_imports_no_operation_machinery() -> None:
    assert loaded_by(VM_LIST_START_UP_MODULES, f"m in {VM_LIST_NEEDLESS!r}") == []


#: a light verb's process: `sitetk site --help`, `sitetk info`, `sitetk --help` build the nouns' parsers only;
#: the verbs' modules are imported when the verb runs (tui.cli.common.verb). Before, registering `site`
#: imported every site verb's procedures (component provisioning, market downloads, the git adapter),
#: `setup` and `toolkit` the toolkit deployment, `market` the marketplaces, `trial` the manager's client
#: (httpx): ~0.2-0.5 s of CPU per process (issue 24)
LIGHT_VERB_MODULES = ("tui.__main__", "tui.cli.site", "tui.cli.setup", "tui.cli.toolkit", "tui.cli.info",
                      "tui.cli.market", "tui.cli.hosts", "tui.cli.trial")
LIGHT_VERB_NEEDLESS = ("tui.cli.site_file", "tui.cli.site_enable", "tui.cli.site_branches", "tui.cli.site_options",
                       "tui.cli.setup_verbs", "tui.cli.toolkit_deploy", "tui.cli.toolkit_inputs",
                       "tui.cli.toolkit_key", "tui.cli.toolkit_disk", "tui.cli.market_verbs", "tui.cli.hosts_verbs",
                       "tui.cli.trial_verbs", "tui.cli.runner", "tui.procedures.components.provision",
                       "tui.procedures.market.download", "tui.procedures.setup.facts",
                       "tui.procedures.toolkit.instantiate", "tui.procedures.trial.network", "tui.adapters.manager_api",
                       "httpx", "tui.procedures.connection", "tui.procedures.operation", "tui.adapters.git_repo",
                       "asyncio")


def test_light_verbs_import_no_verb_machinery() -> None:
    assert loaded_by(LIGHT_VERB_MODULES, f"m in {LIGHT_VERB_NEEDLESS!r}") == []


def test_every_nouns_parser_is_built_without_the_verbs() -> None:
    """Building the parser of every noun (what `sitetk --help` and argparse do before any verb runs)
    imports none of the verbs' modules either."""
    built = "importlib.import_module('tui.__main__').build_parser()"
    assert loaded_by(("tui.__main__",), f"m in {LIGHT_VERB_NEEDLESS!r}", then=built) == []


#: the verbs that read or write the vault-encrypted core.yaml, and the console's site screen
VAULT_USERS = ("tui.__main__", "tui.cli.site_file", "tui.cli.site_branches", "tui.cli.site_enable", "tui.cli.setup_verbs",
               "tui.cli.toolkit_deploy", "tui.cli.toolkit_inputs", "tui.screens.site_config", "tui.adapters.vault")


def test_the_vault_is_read_and_written_without_ansible() -> None:
    """tui.adapters.vault builds ansible's envelope with `cryptography`: importing ansible's VaultLib
    cost every `sitetk site ...` process ~0.45 s of CPU (issue 23). A round trip loads no ansible."""
    round_trip = ("from tui.adapters.vault import VaultPassword, decrypt_text, encrypt_text\n"
                  "password = VaultPassword.from_text('pw')\n"
                  "assert decrypt_text(encrypt_text('a: 1', password), password) == 'a: 1'")
    assert loaded_by(VAULT_USERS, "m == 'ansible' or m.startswith('ansible.')", then=round_trip) == []


#: the verbs the soak and the fault tests start as processes
CHANGING_VERBS = ("tui.__main__", "tui.cli.market", "tui.cli.market_verbs", "tui.cli.hosts", "tui.cli.hosts_verbs",
                  "tui.cli.toolkit_key", "tui.cli.toolkit_deploy", "tui.cli.site_file", "tui.cli.site_branches",
                  "tui.cli.site_enable")


def test_changing_verbs_import_no_table_library() -> None:
    """rich (~50 ms of CPU) is imported when a table is printed (`market list`, `hosts list`), not
    by every `market download` or `hosts move` process (issue 23)."""
    assert loaded_by(CHANGING_VERBS, "m == 'rich' or m.startswith('rich.')") == []


#: every adapter that talks HTTP through httpx
HTTP_ADAPTERS = ("tui.adapters.marketplace", "tui.adapters.flow", "tui.adapters.manager_api",
                 "tui.adapters.route_manager", "tui.adapters.tls", "tui.adapters.http_errors")


def test_http_adapters_import_no_command_line_client() -> None:
    """httpx imports its own command-line client (click, pygments, rich: ~0.12 s of CPU) unless it
    is marked absent (tui/adapters/__init__.py): every `market ...`, `toolkit ...` and `site submit`
    process paid it (issue 23). A client still works without it."""
    client = "import httpx\nassert httpx.Client().timeout is not None\nassert 'httpx._main' not in sys.modules or sys.modules['httpx._main'] is None"
    assert loaded_by(HTTP_ADAPTERS, "m.split('.')[0] in ('rich', 'click', 'pygments')", then=client) == []


def test_a_write_to_the_cloud_imports_no_pyone(tmp_path: Path) -> None:
    """Writes (`CloudClient._scalar`) are posted and read as reads are: through pyone they cost every
    `market download`, `hosts move`, `toolkit key` process ~0.15-0.3 s of CPU to import pyone and the
    requests stack under it (issue 23). A write that succeeds, and one the site refuses, load neither."""
    write = (
        "import asyncio, pathlib\n"
        "from tui.sim.runner import start_sim\n"
        "from tui.sim.state import SimConfig\n"
        "from tui.errors import SiteError\n"
        f"server = start_sim(SimConfig(scenario='deployed'), pathlib.Path({str(tmp_path / 'site')!r}))\n"
        "async def writes():\n"
        "    async with CloudClient(server.xmlrpc_url, (server.site.state_dir / 'one_auth').read_text().strip()) as c:\n"
        "        assert await c.vm_update(0, 'SOAK_MARK=1', append=True) == 0\n"
        "        try:\n"
        "            await c.vm_action('resume', 424242)\n"
        "        except SiteError:\n"
        "            pass\n"
        "        else:\n"
        "            raise AssertionError('a missing VM was resumed')\n"
        "try:\n"
        "    asyncio.run(writes())\n"
        "finally:\n"
        "    server.stop()"
    )
    loaded = loaded_by(("tui.adapters.cloud",), "m.split('.')[0] in ('pyone', 'requests', 'xmltodict')",
                       then="from tui.adapters.cloud import CloudClient\n" + write)
    assert loaded == []
