"""Which names hold secrets: one rule shared by the audit log's redaction and masked displays.

A key is secret when its name says password, passwd, token, secret or (private/TLS/access) key.
Public keys (`ssh_public_key`, `site_admin_ssh_public_key`) are not secrets and stay visible.
"""

from __future__ import annotations

import re

MASK = "***"

_SECRET = re.compile(r"(pass(word|wd)?|token|secret|(^|[_\-.])key$|^key$|private|credential)", re.IGNORECASE)
_PUBLIC = re.compile(r"public", re.IGNORECASE)

#: a YAML line `  name: value` (optionally a list item), for masking a value in displayed text
_YAML_LINE = re.compile(r"^(?P<head>[ \t]*(?:-[ \t]+)?(?P<quote>[\"']?)(?P<key>[\w.\-]+)(?P=quote)[ \t]*:[ \t]+)(?P<value>[^#\s].*?)(?P<tail>[ \t]+#.*)?$")


def is_secret_key(name: str) -> bool:
    """`app_automation_password`, `registry_token`, `tls_key`, `secret_key` -> True; `ssh_public_key` -> False."""
    text = str(name)
    return bool(_SECRET.search(text)) and not _PUBLIC.search(text)


def mask_yaml_line(line: str) -> str:
    """Replace the value of a `secret_name: value` YAML line with the mask; other lines unchanged."""
    match = _YAML_LINE.match(line)
    if not match or not is_secret_key(match.group("key")):
        return line
    return f"{match.group('head')}{MASK}{match.group('tail') or ''}"
