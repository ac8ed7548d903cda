"""Settings: endpoints and credentials resolved as the platform's CLI does, plus the config file.

Credentials and endpoints (cloud-api.md, "Credentials and endpoints"):
- session: the file `$ONE_AUTH` if it exists, else `~/.one/one_auth`, else
  `/var/lib/one/.one/one_auth`; its first line `user:password` (or `user:token`), trailing
  whitespace stripped, split on the first colon;
- XML-RPC endpoint: `$ONE_XMLRPC`, else `~/.one/one_endpoint`, else `/var/lib/one/.one/one_endpoint`,
  else `http://localhost:2633/RPC2`; `$ONE_XMLRPC_TIMEOUT` (seconds), `$ONE_DISABLE_SSL_VERIFY`,
  `$ONE_CERT_DIR`;
- OneFlow: `$ONEFLOW_URL`, else `~/.one/oneflow_endpoint`, else `http://localhost:2474`; user and
  password from `$ONEFLOW_USER` / `$ONEFLOW_PASSWORD`, else the session's.

The console's own settings come from a TOML file, `$SITETK_CONFIG` or
`$XDG_CONFIG_HOME/sitetk/config.toml` (`~/.config/sitetk/config.toml`); every key is optional:

    refresh_interval = 5.0          # seconds between list refreshes
    theme = "textual-dark"
    xmlrpc_timeout = 30             # used when ONE_XMLRPC_TIMEOUT is not set
    state_dir = "~/.local/state/sitetk"   # default $XDG_STATE_HOME/sitetk
    audit_log = "~/.local/state/sitetk/audit.log"

    [marketplace]
    urls = ["https://marketplace.example.org"]

    [cpu]
    min_free_percent = 10           # a target host needs this much free CPU
    min_free_memory_mib = 1024      # ... and this much free memory
    known_good_models = ["Icelake-Server-noTSX"]   # added to the spec's list
    document_db_roles = ["manager"] # roles whose VMs run the document database
    document_db_attribute = "DOCUMENT_DB"

    [naming]                        # any NamingProfile field
    attribute_prefix = "PLATFORM"

    [site]                          # the site configuration (core.yaml) and its repositories
    sites_repo = "https://git.example.org/org/sites.git"     # or $SITETK_SITES_REPO
    library_repo = "https://git.example.org/org/library.git" # or $SITETK_LIBRARY_REPO
    vault_password_file = "~/.vault-pass"   # or $SITETK_VAULT_PASSWORD_FILE; else a prompt
    sites_token_file = "~/.sites-token"     # or $SITETK_SITES_TOKEN_FILE (token: $SITETK_SITES_TOKEN)
    library_token_file = "~/.library-token" # or $SITETK_LIBRARY_TOKEN_FILE
    repos_dir = "~/.local/state/sitetk/repos"   # working clones (default: <state_dir>/repos)
    guest_proxy = "http://proxy:3128"       # or $SITETK_GUEST_PROXY: reach the VMs' services (route manager)

Repository tokens are never settings values: only the files holding them are named here.

`Settings.sources` tells where each value came from (for `sitetk info`); `redacted()` is the
printable view. Passwords are never in `repr` and never in `redacted()`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from tui import timing
from tui.domain.bounded import BoundedInputError, check_tree, guard, read_text_file
from tui.domain.endpoints import has_credentials, redact_endpoint
from tui.domain.naming import DEFAULT_NAMING, NamingProfile
from tui.errors import SiteError

#: the largest session, endpoint or config file read (they hold a few lines)
_SMALL_FILE = 1024 * 1024

DEFAULT_XMLRPC = "http://localhost:2633/RPC2"
DEFAULT_FLOW = "http://localhost:2474"
DEFAULT_TIMEOUT_S = timing.PROFILE.call_timeout
SYSTEM_ONE_DIR = Path("/var/lib/one/.one")
REDACTED = "***"

_TOP_KEYS = {"refresh_interval", "theme", "xmlrpc_timeout", "state_dir", "audit_log", "marketplace", "cpu", "naming",
             "site", "keys"}
_TABLE_KEYS = {
    "marketplace": {"urls"},
    "cpu": {"min_free_percent", "min_free_memory_mib", "known_good_models", "document_db_roles",
            "document_db_attribute"},
    "site": {"sites_repo", "library_repo", "vault_password_file", "sites_token_file", "library_token_file",
             "repos_dir", "manager_url", "guest_proxy"},
}
#: [site] keys -> the environment variable that overrides each
_SITE_ENV = {
    "sites_repo": "SITETK_SITES_REPO",
    "library_repo": "SITETK_LIBRARY_REPO",
    "vault_password_file": "SITETK_VAULT_PASSWORD_FILE",
    "sites_token_file": "SITETK_SITES_TOKEN_FILE",
    "library_token_file": "SITETK_LIBRARY_TOKEN_FILE",
    "manager_url": "SITETK_MANAGER_URL",
    "guest_proxy": "SITETK_GUEST_PROXY",
}


@dataclass(frozen=True)
class Settings:
    """The console's settings, resolved once from the config file, the platform CLI's variables and
    files, and the defaults (`load`); `sources` says where each came from."""

    xmlrpc_url: str = DEFAULT_XMLRPC
    one_user: str = ""
    one_password: str = field(default="", repr=False)
    #: the file the session was read from (None: none found, or given directly)
    auth_file: Path | None = None
    #: why there is no usable session ("" when there is one): what was tried, what to do
    credentials_problem: str = ""
    xmlrpc_timeout: float = DEFAULT_TIMEOUT_S
    ssl_verify: bool = True
    cert_dir: Path | None = None
    flow_url: str = DEFAULT_FLOW
    flow_user: str = ""
    flow_password: str = field(default="", repr=False)
    marketplace_urls: tuple[str, ...] = ()
    refresh_interval: float = 5.0
    theme: str = "textual-dark"
    naming: NamingProfile = DEFAULT_NAMING
    min_free_cpu_percent: float = 10.0
    min_free_memory_mib: int = 1024
    #: CPU models known to work, added to the spec's list (`known_good_cpu_models` has both)
    extra_cpu_models: tuple[str, ...] = ()
    config_path: Path = field(default_factory=lambda: _xdg("XDG_CONFIG_HOME", ".config") / "config.toml")
    config_found: bool = False
    state_dir: Path = field(default_factory=lambda: _xdg("XDG_STATE_HOME", ".local/state"))
    audit_log: Path = field(default_factory=lambda: _xdg("XDG_STATE_HOME", ".local/state") / "audit.log")
    #: the sites repository and the component library (URL or local path); "" when not configured
    sites_repo: str = ""
    library_repo: str = ""
    #: the vault password file of core.yaml (None: the console asks for the password)
    vault_password_file: Path | None = None
    #: files holding the repositories' access tokens (the tokens themselves are never settings)
    sites_token_file: Path | None = None
    library_token_file: Path | None = None
    #: where the working clones live (None: <state_dir>/repos)
    repos_dir: Path | None = None
    #: the trial-network manager's API (default: http://<the manager VM's address>:5000)
    manager_url: str = ""
    #: an HTTP proxy through which services inside the site's VMs are reached (the route manager's
    #: API); "" reaches them directly, as a frontend on the default network does ([site] guest_proxy
    #: or $SITETK_GUEST_PROXY; the embedded site is its own)
    guest_proxy: str = ""
    #: setting name -> where its value came from ("env ONE_XMLRPC", "file ~/.one/one_auth", ...)
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False)
    #: things worth fixing that do not stop the console (a world-readable auth file, ...)
    warnings: tuple[str, ...] = ()
    #: [keys]: binding id ("market.download", "app.help", ...) -> the keys that trigger it instead
    keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False)

    # derived -----------------------------------------------------------------------------------
    @property
    def session(self) -> str:
        """`user:password` for XML-RPC; "" when there are no credentials."""
        return f"{self.one_user}:{self.one_password}" if self.one_user else ""

    @property
    def has_credentials(self) -> bool:
        return bool(self.one_user) and not self.credentials_problem

    @property
    def known_good_cpu_models(self) -> tuple[str, ...]:
        # imported here: tui.domain.cpu and the models under it are ~25 ms of the console's start-up
        from tui.domain.cpu import DEFAULT_KNOWN_GOOD_MODELS

        return tuple(dict.fromkeys(DEFAULT_KNOWN_GOOD_MODELS + self.extra_cpu_models))

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values that must never be printed (for redacting messages)."""
        return tuple(s for s in (self.one_password, self.flow_password, self.session) if s)

    def endpoint_credential_warnings(self) -> list[str]:
        """One warning per endpoint setting that carries credentials (`user:password@host`)."""
        named = (("ONE_XMLRPC", self.sources.get("xmlrpc_url", ""), self.xmlrpc_url, "ONE_AUTH (~/.one/one_auth)"),
                 ("ONEFLOW_URL", self.sources.get("flow_url", ""), self.flow_url,
                  "ONEFLOW_USER/ONEFLOW_PASSWORD or ONE_AUTH (~/.one/one_auth)"))
        out = [f"{name} ({source or 'settings'}) carries credentials in the URL (shown as ***): move them to "
               f"the credential file, {where}, and remove them from the URL"
               for name, source, url, where in named if has_credentials(url)]
        out += [f"marketplace URL {redact_endpoint(url)} carries credentials: remove them from the URL"
                for url in self.marketplace_urls if has_credentials(url)]
        return out

    def redacted(self) -> dict[str, Any]:
        """Every setting with its source, passwords replaced by `***` (for `sitetk info`)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("sources", "one_password", "flow_password", "naming"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        out["one_password"] = REDACTED if self.one_password else ""
        out["flow_password"] = REDACTED if self.flow_password else ""
        out["session"] = f"{self.one_user}:{REDACTED}" if self.one_user else ""
        out["xmlrpc_url"] = redact_endpoint(self.xmlrpc_url)
        out["flow_url"] = redact_endpoint(self.flow_url)
        out["marketplace_urls"] = [redact_endpoint(url) for url in self.marketplace_urls]
        out["warnings"] = list(self.warnings) + self.endpoint_credential_warnings()
        out["known_good_cpu_models"] = list(self.known_good_cpu_models)
        out["naming"] = {f.name: (list(v) if isinstance(v := getattr(self.naming, f.name), tuple) else v)
                         for f in fields(self.naming)}
        out["sources"] = dict(self.sources)
        return out

    # construction ------------------------------------------------------------------------------
    @classmethod
    def load(cls, env: Mapping[str, str] | None = None, home: Path | None = None,
             system_dir: Path = SYSTEM_ONE_DIR) -> "Settings":
        """Resolve everything from the environment, the platform's files and the config file.

        Missing credentials are not an error here (`credentials_problem` says what was tried);
        a malformed config file or environment value raises `SiteError` naming it.
        """
        return _Resolver(os.environ if env is None else env, home or Path.home(), system_dir).resolve()

    @classmethod
    def for_site(cls, endpoint: str, session: str, flow_url: str, marketplace_urls: tuple[str, ...] = (),
                 base: "Settings | None" = None, source: str = "embedded site") -> "Settings":
        """`base` (or defaults) pointed at a given site, such as the embedded demo site."""
        base = base if base is not None else cls()
        user, _, password = session.partition(":")
        sources = dict(base.sources)
        for name in ("xmlrpc_url", "session", "flow_url", "flow_user", "marketplace_urls"):
            sources[name] = source
        return replace(
            base, xmlrpc_url=endpoint, one_user=user, one_password=password, auth_file=None,
            credentials_problem="" if user and password else "the site gave no user:password session",
            flow_url=flow_url, flow_user=user, flow_password=password,
            marketplace_urls=tuple(marketplace_urls), sources=MappingProxyType(sources),
        )


def _xdg(variable: str, fallback: str) -> Path:
    """`$variable/sitetk`, or `~/<fallback>/sitetk` when the variable is unset."""
    base = os.environ.get(variable, "")
    return (Path(base) if base else Path.home() / fallback) / "sitetk"


class _Resolver:
    def __init__(self, env: Mapping[str, str], home: Path, system_dir: Path) -> None:
        self.env = env
        self.home = home
        self.system_dir = system_dir
        self.sources: dict[str, str] = {}
        self.warnings: list[str] = []

    def _path_text(self, path: Path) -> str:
        try:
            return "~/" + str(path.relative_to(self.home))
        except ValueError:
            return str(path)

    # platform conventions ---------------------------------------------------------------------
    def _auth(self) -> tuple[str, str, Path | None, str]:
        candidates: list[Path] = []
        env_auth = self.env.get("ONE_AUTH", "")
        if env_auth:
            candidates.append(Path(env_auth).expanduser())
        candidates += [self.home / ".one" / "one_auth", self.system_dir / "one_auth"]
        for path in candidates:
            if not path.is_file():
                continue
            label = ("env ONE_AUTH -> " if env_auth and path == candidates[0] else "file ") + self._path_text(path)
            self.sources["session"] = label
            try:
                text = read_text_file(path, str(path), max_bytes=_SMALL_FILE)
            except BoundedInputError as exc:
                return "", "", path, f"{exc.message}; it must hold one line user:password"
            except OSError as exc:
                return "", "", path, f"cannot read {path}: {exc.strerror}; check its permissions"
            self._check_mode(path)
            line = text.strip().splitlines()[0].strip() if text.strip() else ""
            user, sep, password = line.partition(":")
            if not sep or not user or not password:
                return "", "", path, f"{path} does not hold one line user:password (or user:token)"
            return user, password, path, ""
        tried = ", ".join(str(p) for p in candidates)
        self.sources["session"] = "none found"
        return "", "", None, (f"no credentials found (tried {tried}); put one line user:password in "
                              f"~/.one/one_auth (mode 600) or point ONE_AUTH at such a file")

    def _check_mode(self, path: Path) -> None:
        try:
            mode = path.stat().st_mode
        except OSError:
            return
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            self.warnings.append(f"{path} is readable by other users: chmod 600 {path}")

    def _first_file(self, env_name: str, files: list[Path], default: str, key: str) -> str:
        value = self.env.get(env_name, "").strip()
        if value:
            self.sources[key] = f"env {env_name}"
            return value
        for path in files:
            if path.is_file():
                try:
                    text = read_text_file(path, str(path), max_bytes=_SMALL_FILE).strip()
                except BoundedInputError as exc:
                    raise SiteError(f"Unreadable {path}", f"{exc.message}; it must hold one line, the address.") from None
                except OSError:
                    continue
                if text:
                    self.sources[key] = f"file {self._path_text(path)}"
                    return text.splitlines()[0].strip()
        self.sources[key] = "default"
        return default

    def _timeout(self, config_value: Any) -> float:
        raw = self.env.get("ONE_XMLRPC_TIMEOUT", "").strip()
        if raw:
            try:
                value = float(raw)
            except ValueError:
                value = -1.0
            if value <= 0:
                raise SiteError("Bad ONE_XMLRPC_TIMEOUT",
                                f"ONE_XMLRPC_TIMEOUT must be a positive number of seconds, not {raw!r}.")
            self.sources["xmlrpc_timeout"] = "env ONE_XMLRPC_TIMEOUT"
            return value
        if config_value is not None:
            self.sources["xmlrpc_timeout"] = "config"
            return float(config_value)
        self.sources["xmlrpc_timeout"] = "default"
        return DEFAULT_TIMEOUT_S

    def _site(self, conf: "_Config") -> dict[str, str]:
        """The [site] values, each overridden by its environment variable."""
        table = conf.table("site")
        values: dict[str, str] = {}
        for key in _TABLE_KEYS["site"]:
            env_name = _SITE_ENV.get(key, "")
            from_env = self.env.get(env_name, "").strip() if env_name else ""
            raw = table.get(key)
            if from_env:
                values[key], self.sources[key] = from_env, f"env {env_name}"
            elif raw is not None:
                if not isinstance(raw, str) or not raw.strip():
                    raise conf._bad(f"site.{key}", "a non-empty string", raw)
                values[key], self.sources[key] = raw.strip(), "config"
            else:
                values[key], self.sources[key] = "", "default"
        return values

    # config file ------------------------------------------------------------------------------
    def _config_path(self) -> Path:
        explicit = self.env.get("SITETK_CONFIG", "")
        if explicit:
            self.sources["config_path"] = "env SITETK_CONFIG"
            return Path(explicit).expanduser()
        base = self.env.get("XDG_CONFIG_HOME", "")
        self.sources["config_path"] = "env XDG_CONFIG_HOME" if base else "default"
        return (Path(base) if base else self.home / ".config") / "sitetk" / "config.toml"

    def _read_config(self, path: Path) -> dict[str, Any] | None:
        if not path.exists() and not path.is_symlink():
            return None  # absent: the defaults. Anything else there (/dev/zero, a FIFO, a directory, a
            # dangling link) is said, never taken for "not present" (issue 22 item 10)
        import tomllib  # only with a config file: its regular expressions are ~2 ms of every start-up

        try:
            text = read_text_file(path, f"config file {path}", max_bytes=_SMALL_FILE)
            with guard(f"config file {path}"):
                data = tomllib.loads(text)
            check_tree(data, f"config file {path}")
        except BoundedInputError as exc:
            raise SiteError(f"Unreadable config file {path}", f"{exc.message}. Fix it or move the file away.") from None
        except tomllib.TOMLDecodeError as exc:
            raise SiteError(f"Malformed config file {path}", f"{exc}. Fix the TOML syntax or move the file away.") from None
        except OSError as exc:
            raise SiteError(f"Cannot read config file {path}", str(exc.strerror or exc)) from None
        unknown = sorted(set(data) - _TOP_KEYS)
        for table, keys in _TABLE_KEYS.items():
            if table in data:
                if not isinstance(data[table], dict):
                    raise SiteError(f"Bad config file {path}", f"[{table}] must be a table.")
                unknown += [f"{table}.{k}" for k in sorted(set(data[table]) - keys)]
        if "naming" in data and not isinstance(data["naming"], dict):
            raise SiteError(f"Bad config file {path}", "[naming] must be a table.")
        keys = data.get("keys", {})
        if not isinstance(keys, dict) or not all(isinstance(k, str) and isinstance(v, str) and v.strip()
                                                  for k, v in keys.items()):
            raise SiteError(f"Bad config file {path}", '[keys] maps binding ids to keys: "market.download" = "D".')
        if unknown:
            raise SiteError(f"Unknown keys in config file {path}", f"{', '.join(unknown)}: check the spelling "
                            "(see `sitetk info` for the keys in use).")
        return data

    def resolve(self) -> Settings:
        config_path = self._config_path()
        config = self._read_config(config_path)
        conf = _Config(config or {}, config_path, self.sources)

        user, password, auth_file, problem = self._auth()
        one_dir = self.home / ".one"
        xmlrpc = self._first_file("ONE_XMLRPC", [one_dir / "one_endpoint", self.system_dir / "one_endpoint"],
                                  DEFAULT_XMLRPC, "xmlrpc_url")
        flow = self._first_file("ONEFLOW_URL", [one_dir / "oneflow_endpoint"], DEFAULT_FLOW, "flow_url")
        flow_user = self.env.get("ONEFLOW_USER", "")
        self.sources["flow_user"] = "env ONEFLOW_USER" if flow_user else self.sources["session"]
        flow_password = self.env.get("ONEFLOW_PASSWORD", "")
        self.sources["flow_password"] = "env ONEFLOW_PASSWORD" if flow_password else self.sources["session"]
        disable_ssl = self.env.get("ONE_DISABLE_SSL_VERIFY", "").strip().lower()
        ssl_verify = disable_ssl in ("", "0", "no", "false")
        self.sources["ssl_verify"] = "default" if not disable_ssl else "env ONE_DISABLE_SSL_VERIFY"
        cert_dir = self.env.get("ONE_CERT_DIR", "")
        self.sources["cert_dir"] = "env ONE_CERT_DIR" if cert_dir else "default"

        state_home = self.env.get("XDG_STATE_HOME", "")
        default_state = (Path(state_home) if state_home else self.home / ".local" / "state") / "sitetk"
        state_dir = conf.path("state_dir", default_state, "env XDG_STATE_HOME" if state_home else "default")
        audit_log = conf.path("audit_log", state_dir / "audit.log", "under state_dir")
        site_values = self._site(conf)

        naming_values: dict[str, Any] = dict(conf.table("naming"))
        cpu = conf.table("cpu")
        for key in ("document_db_roles", "document_db_attribute"):
            if key in cpu:
                naming_values[key] = cpu[key]
        try:
            naming = NamingProfile.from_mapping(naming_values) if naming_values else DEFAULT_NAMING
        except (TypeError, ValueError) as exc:
            raise SiteError(f"Bad [naming] in config file {config_path}", str(exc)) from None
        self.sources["naming"] = "config" if naming_values else "default"

        settings = Settings(
            xmlrpc_url=xmlrpc,
            one_user=user,
            one_password=password,
            auth_file=auth_file,
            credentials_problem=problem,
            xmlrpc_timeout=self._timeout(conf.number("xmlrpc_timeout", None, positive=True)),
            ssl_verify=ssl_verify,
            cert_dir=Path(cert_dir) if cert_dir else None,
            flow_url=flow,
            flow_user=flow_user or user,
            flow_password=flow_password or password,
            marketplace_urls=conf.strings("marketplace", "urls"),
            refresh_interval=float(conf.number("refresh_interval", 5.0, positive=True)),
            theme=conf.string("theme", "textual-dark"),
            naming=naming,
            min_free_cpu_percent=float(conf.number("min_free_percent", 10.0, table="cpu", low=0, high=100)),
            min_free_memory_mib=int(conf.number("min_free_memory_mib", 1024, table="cpu", low=0)),
            extra_cpu_models=conf.strings("cpu", "known_good_models"),
            config_path=config_path,
            config_found=config is not None,
            state_dir=state_dir,
            audit_log=audit_log,
            sites_repo=site_values["sites_repo"],
            library_repo=site_values["library_repo"],
            vault_password_file=_optional_path(site_values["vault_password_file"]),
            sites_token_file=_optional_path(site_values["sites_token_file"]),
            library_token_file=_optional_path(site_values["library_token_file"]),
            repos_dir=_optional_path(site_values["repos_dir"]),
            manager_url=site_values["manager_url"],
            guest_proxy=site_values["guest_proxy"],
            warnings=tuple(self.warnings),
            keys=MappingProxyType(dict((config or {}).get("keys", {}))),
        )
        return replace(settings, sources=MappingProxyType(dict(self.sources)))


def _optional_path(value: str) -> Path | None:
    return Path(value).expanduser() if value else None


class _Config:
    """Typed reads of the config file, each recording its source and naming bad values."""

    def __init__(self, data: Mapping[str, Any], path: Path, sources: dict[str, str]) -> None:
        self.data = data
        self.file = path
        self.sources = sources

    def _bad(self, key: str, expected: str, value: Any) -> SiteError:
        return SiteError(f"Bad value in config file {self.file}", f"{key} must be {expected}, not {value!r}.")

    def table(self, name: str) -> Mapping[str, Any]:
        value = self.data.get(name, {})
        return value if isinstance(value, Mapping) else {}

    def _get(self, key: str, table: str | None) -> tuple[bool, Any]:
        source = self.table(table) if table else self.data
        return (key in source, source.get(key))

    def number(self, key: str, default: Any, *, table: str | None = None, positive: bool = False,
               low: float | None = None, high: float | None = None) -> Any:
        name = f"{table}.{key}" if table else key
        present, value = self._get(key, table)
        settings_key = {"min_free_percent": "min_free_cpu_percent"}.get(key, key)
        if not present:
            self.sources.setdefault(settings_key, "default")
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._bad(name, "a number", value)
        if (positive and value <= 0) or (low is not None and value < low) or (high is not None and value > high):
            bounds = "greater than 0" if positive else f"between {low} and {high}" if high is not None else f"at least {low}"
            raise self._bad(name, f"a number {bounds}", value)
        self.sources[settings_key] = "config"
        return value

    def string(self, key: str, default: str) -> str:
        present, value = self._get(key, None)
        if not present:
            self.sources[key] = "default"
            return default
        if not isinstance(value, str) or not value.strip():
            raise self._bad(key, "a non-empty string", value)
        self.sources[key] = "config"
        return value

    def strings(self, table: str, key: str) -> tuple[str, ...]:
        present, value = self._get(key, table)
        settings_key = {"urls": "marketplace_urls", "known_good_models": "extra_cpu_models"}.get(key, key)
        if not present:
            self.sources[settings_key] = "default"
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self._bad(f"{table}.{key}", "a list of non-empty strings", value)
        self.sources[settings_key] = "config"
        return tuple(v.strip() for v in value)

    def path(self, key: str, default: Path, default_source: str) -> Path:
        present, value = self._get(key, None)
        if not present:
            self.sources[key] = default_source
            return default
        if not isinstance(value, str) or not value.strip():
            raise self._bad(key, "a path", value)
        self.sources[key] = "config"
        return Path(value).expanduser()
