"""Changes to the install's driver scripts (`var/remotes`), made on the frontend's own copy.

Each function takes a stock script's text and returns the changed text, refusing (`PatchError`)
a script that does not hold what it expects, so a new release that moved things fails loudly
instead of running unpatched:

- `market_fallback`: the `one` market driver (`market/one/monitor`, `ONE_MARKET_URL`) and the
  `linuxcontainers` one (`:url =>`) fall back to public internet addresses for a marketplace
  without ENDPOINT, such as the bootstrap marketplace 0 "OpenNebula Public" (7.0 creates it
  enabled: `src/market/MarketPlacePool.cc` 38-41 at release-7.0.2). They point at a loopback port
  nothing listens on, before oned first starts.
- `monitord_pid_files`, `shepherd_match`, `client_db_path`: the dummy monitoring scripts of every
  install share `/tmp/one-monitord-<host id>.pid` and the shepherd kills any
  `monitord-client.rb` of the same host ID and name (`im/common.d/monitord-client-shepherd_local.sh`
  24-35), so frontends side by side killed each other's monitoring; each install gets its own
  pid files, the shepherd matches its own client path, and the client its own `one_db` folder.
- `system_probe`: the dummy host's system probe (`dummy-probes.d/host/system/system.rb`) reports
  what a KVM host's probes would, read from a file per host name (`realsite.facts`), and the stock
  figures for a host without one.
- `datastore_monitor`: the dummy datastore monitor reports room for the toolkit (stock: 20 GiB free).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

#: the stock fallbacks the market drivers would contact
ONE_MARKET_PUBLIC = "https://marketplace.opennebula.io/"
LXC_MARKET_PUBLIC = "https://images.linuxcontainers.org/"
#: the harness's marker in every script it changed
MARKER = "sitetk realsite"


class PatchError(ValueError):
    """A script does not hold what the harness changes (a release it does not know)."""


def _replace_once(text: str, pattern: str, replacement: str, what: str, flags: int = re.MULTILINE) -> str:
    new, count = re.subn(pattern, lambda _: replacement, text, flags=flags)
    if count != 1:
        raise PatchError(f"{what}: expected one match of {pattern!r}, found {count}")
    return new


def market_fallback(text: str, dead_url: str, kind: str = "one") -> str:
    """The `one` (or `linuxcontainers`) market driver's built-in URL replaced by `dead_url`."""
    if kind == "one":
        return _replace_once(text, r"^(\s*)ONE_MARKET_URL\s*=\s*'[^']*'",
                             f"    ONE_MARKET_URL = '{dead_url}' # {MARKER}: stock {ONE_MARKET_PUBLIC}",
                             "market/one/monitor")
    if kind == "linuxcontainers":
        return _replace_once(text, r"^(\s*):url(\s*)=>\s*'[^']*',",
                             f"        :url           => '{dead_url}', # {MARKER}: stock {LXC_MARKET_PUBLIC}",
                             "market/linuxcontainers/monitor")
    raise PatchError(f"unknown market driver {kind!r}")


_URL = re.compile(r"https?://[^\s'\"<>)]+")


def public_urls(text: str) -> list[str]:
    """The http(s) URLs outside comments whose host is not loopback (what a script could contact)."""
    found: list[str] = []
    for line in text.splitlines():
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        for url in _URL.findall(code):
            host = urlsplit(url).hostname or ""
            if host and host not in ("127.0.0.1", "localhost", "::1") and "#{" not in url:
                found.append(url)
    return found


def monitord_pid_files(text: str, run_dir: str) -> str:
    """`/tmp/one-monitord-*` (pid and error files) moved into this install's `run_dir`."""
    if "/tmp/one-monitord-" not in text:
        return text
    return text.replace("/tmp/one-monitord-", f"{run_dir}/one-monitord-")


def shepherd_match(text: str, client_dir: str) -> str:
    """The local shepherd kills only the monitoring clients of this install (their path)."""
    return _replace_once(text, r'grep "/monitord-client\.rb ', f'grep "{client_dir}/monitord-client.rb ',
                         "monitord-client-shepherd_local.sh")


def client_db_path(text: str, db_dir: str) -> str:
    """monitord-client.rb's `DB_PATH` (`/var/tmp/one_db` from 7.0, absent in 6.10) per install."""
    if "'/var/tmp/one_db'" not in text:
        return text
    return _replace_once(text, r"^DB_PATH(\s*)=\s*'/var/tmp/one_db'", f"DB_PATH = '{db_dir}' # {MARKER}",
                         "monitord-client.rb")


def system_probe(text: str, facts_dir: str) -> str:
    """The dummy system probe prints the file `<facts_dir>/<host name>` instead of its stock
    `system` figures when that file exists (the host name is the probe's third argument)."""
    if "result << system" not in text:
        raise PatchError("dummy system.rb: no `result << system` line")
    override = (
        f"# {MARKER}: a KVM host's facts, from the harness's file for this host name\n"
        "alias realsite_stock_system system\n"
        "def system\n"
        f"    facts = File.join('{facts_dir}', ARGV[2].to_s)\n"
        "    File.file?(facts) ? File.read(facts) : realsite_stock_system\n"
        "end\n\n"
    )
    return _replace_once(text, r"^result = ''$", override + "result = ''", "dummy system.rb")


def datastore_monitor(text: str, *, total_mb: int, free_mb: int) -> str:
    """The dummy datastore monitor's three figures."""
    used_mb = total_mb - free_mb
    for key, value in (("USED_MB", used_mb), ("TOTAL_MB", total_mb), ("FREE_MB", free_mb)):
        text = _replace_once(text, rf'^echo "{key}=\d+"$', f'echo "{key}={value}"', f"datastore dummy monitor {key}")
    return text
