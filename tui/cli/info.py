"""`sitetk info [--json]`: every path and endpoint the console would use, and where each came from.

Passwords and tokens are never printed (the session shows as `user:***`; credentials written into
an endpoint URL show as `***@` and a warning says to move them to the credential file). Exit code 0 when the
settings resolve (even without credentials: that is reported), 2 when the config file or an
environment value is malformed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tui.cli.common import EXIT_OK, EXIT_USAGE, emit_json, print_error
from tui.errors import SiteError
from tui.settings import Settings

#: (label, setting) in the order the text view shows them
_ROWS: tuple[tuple[str, str], ...] = (
    ("XML-RPC endpoint", "xmlrpc_url"),
    ("session", "session"),
    ("credentials file", "auth_file"),
    ("XML-RPC timeout (s)", "xmlrpc_timeout"),
    ("verify TLS", "ssl_verify"),
    ("CA directory", "cert_dir"),
    ("OneFlow endpoint", "flow_url"),
    ("OneFlow user", "flow_user"),
    ("OneFlow password", "flow_password"),
    ("marketplaces", "marketplace_urls"),
    ("config file", "config_path"),
    ("state directory", "state_dir"),
    ("audit log", "audit_log"),
    ("refresh interval (s)", "refresh_interval"),
    ("theme", "theme"),
    ("min free CPU (%)", "min_free_cpu_percent"),
    ("min free memory (MiB)", "min_free_memory_mib"),
    ("known-good CPU models", "known_good_cpu_models"),
    ("naming profile", "naming"),
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("info", help="show the endpoints, credentials source and paths in use")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def _show(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def render_text(view: dict[str, Any]) -> str:
    sources = view["sources"]
    width = max(len(label) for label, _ in _ROWS)
    lines: list[str] = []
    for label, key in _ROWS:
        if key == "naming":
            source = sources.get("naming", "default")
            changed = {k: v for k, v in view["naming"].items() if k != "extra"}
            lines.append(f"{label:<{width}}  {'from config' if source == 'config' else 'defaults'}")
            for name, value in changed.items():
                lines.append(f"{'':<{width}}    {name} = {_show(value)}")
            continue
        value = _show(view.get(key))
        if key == "config_path":
            value += "" if view["config_found"] else " (not present: defaults used)"
        source = sources.get(key) or sources.get({"auth_file": "session", "known_good_cpu_models": "extra_cpu_models"}.get(key, ""), "")
        lines.append(f"{label:<{width}}  {value}" + (f"   [{source}]" if source else ""))
    if view["credentials_problem"]:
        lines.append("")
        lines.append(f"credentials: {view['credentials_problem']}")
    for warning in view["warnings"]:
        lines.append(f"warning: {warning}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    try:
        settings = Settings.load()
    except SiteError as error:
        print_error(error, bool(args.json))
        return EXIT_USAGE
    view = settings.redacted()
    if args.json:
        emit_json(view)
    else:
        sys.stdout.write(render_text(view) + "\n")
    return EXIT_OK
