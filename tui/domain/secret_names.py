"""Which names hold secrets: one rule shared by the audit log's redaction and masked displays.

A key is secret when one of its words (split at `_`, `-`, `.`, spaces and camelCase) is a secret
word: it ends in password, passwd, passphrase, token, secret or credential(s) (`adminPassword`,
`authtoken`), or it is `pass`, `pwd` or `private`, or the last word is `key` (`tls_key`,
`access_key`). Words that merely contain "pass" (`passthrough`, `bypass`, `compass`) are not
secret words. Public keys (`ssh_public_key`, `site_admin_ssh_public_key`) stay visible, and so
does a `key` that names where other values are kept, not a credential (`values_key`,
`inputs_key`, `sort_key`, `primary_key`: the word before `key` says so; issue 22 item 8, every
`toolkit.instantiate` audit record masked `values_key`, whose value is `user_inputs_values`).
"""

from __future__ import annotations

import re

MASK = "***"

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_ENDINGS = ("password", "passwords", "passwd", "passphrase", "token", "tokens", "secret", "secrets",
                   "credential", "credentials")
_SECRET_WORDS = frozenset({"pass", "pwd", "private", "apikey"})
#: words before a last `key` that make it the name of a place, not a credential
_NAMING_KEY = frozenset({"values", "value", "inputs", "input", "sort", "lookup", "field", "attribute", "column",
                         "primary", "foreign", "partition", "index", "dict", "map", "name", "group"})

#: a YAML line `  name: value` (optionally a list item), for masking a value in displayed text
_YAML_LINE = re.compile(r"^(?P<head>[ \t]*(?:-[ \t]+)?(?P<quote>[\"']?)(?P<key>[\w.\-]+)(?P=quote)[ \t]*:[ \t]+)(?P<value>[^#\s].*?)(?P<tail>[ \t]+#.*)?$")


def is_secret_key(name: str) -> bool:
    """`app_automation_password`, `registry_token`, `tls_key`, `secret_key` -> True; `ssh_public_key` -> False."""
    words = [word.casefold() for word in _WORDS.findall(str(name))]
    if not words or "public" in words:
        return False
    if any(word in _SECRET_WORDS or word.endswith(_SECRET_ENDINGS) for word in words):
        return True
    return words[-1] == "key" and not (len(words) > 1 and words[-2] in _NAMING_KEY)


def mask_yaml_line(line: str) -> str:
    """Replace the value of a `secret_name: value` YAML line with the mask; other lines unchanged."""
    match = _YAML_LINE.match(line)
    if not match or not is_secret_key(match.group("key")):
        return line
    return f"{match.group('head')}{MASK}{match.group('tail') or ''}"
