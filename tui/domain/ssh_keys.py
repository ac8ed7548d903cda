"""SSH public keys: parse and check one `type base64-blob [comment]` line, and add a key to a
user's SSH_PUBLIC_KEY value without duplicates.

A public key line is valid when its blob is base64 whose first field (an SSH wire string: a
4-byte big-endian length, then the bytes) repeats the type word, e.g. `ssh-ed25519`. For the
common types the rest of the blob is checked too (an ed25519 key is 32 bytes, an RSA key has an
exponent and a modulus, an ECDSA key names its own curve) and nothing may follow it; other types
(future ones, certificates) are accepted on the type check alone.

A user's SSH_PUBLIC_KEY holds one or more keys, one a line. Two keys are the same key when their
type and blob are equal, whatever their comments; a line may carry authorized_keys options
before the key (`from="10.0.0.1" ssh-ed25519 AAAA...`), which do not hide the key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

from tui.domain.users import split_keys


class SshKeyError(ValueError):
    """Text that is not one SSH public key line; the message says what is wrong."""


_TYPE = re.compile(r"[a-z0-9][a-z0-9@.+\-]*\Z")
#: the fields after the type string in a key blob: "s" an SSH string, "m" an mpint
_LAYOUT: dict[str, str] = {
    "ssh-ed25519": "s",
    "ssh-ed448": "s",
    "ssh-rsa": "mm",
    "ssh-dss": "mmmm",
    "ecdsa-sha2-nistp256": "ss",
    "ecdsa-sha2-nistp384": "ss",
    "ecdsa-sha2-nistp521": "ss",
    "sk-ssh-ed25519@openssh.com": "ss",
    "sk-ecdsa-sha2-nistp256@openssh.com": "sss",
}
_KEY_BYTES = {"ssh-ed25519": 32, "ssh-ed448": 57, "sk-ssh-ed25519@openssh.com": 32}
_MIN_RSA_BITS = 1024


@dataclass(frozen=True)
class SshPublicKey:
    type: str
    #: the base64 text of the blob, exactly as given
    blob: str
    comment: str = ""

    @property
    def body(self) -> str:
        """`type blob`: what identifies the key (comments do not)."""
        return f"{self.type} {self.blob}"

    @property
    def line(self) -> str:
        return f"{self.body} {self.comment}" if self.comment else self.body

    @property
    def fingerprint(self) -> str:
        """`SHA256:...` as `ssh-keygen -l` prints it."""
        digest = hashlib.sha256(base64.b64decode(self.blob)).digest()
        return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")

    def short(self) -> str:
        """A one-line label: type, fingerprint and comment."""
        return " ".join(part for part in (self.type, self.fingerprint, self.comment) if part)


def _read_string(blob: bytes, offset: int) -> tuple[bytes, int]:
    if offset + 4 > len(blob):
        raise SshKeyError("the key data is truncated (a length field is missing)")
    size = int.from_bytes(blob[offset:offset + 4], "big")
    end = offset + 4 + size
    if end > len(blob):
        raise SshKeyError("the key data is truncated (a field is shorter than its length says)")
    return blob[offset + 4:end], end


def _check_layout(key_type: str, blob: bytes, offset: int) -> None:
    layout = _LAYOUT.get(key_type)
    if layout is None:
        return
    fields: list[bytes] = []
    for _ in layout:
        value, offset = _read_string(blob, offset)
        fields.append(value)
    if offset != len(blob):
        raise SshKeyError(f"the key data has {len(blob) - offset} unexpected bytes after the {key_type} key")
    expected = _KEY_BYTES.get(key_type)
    if expected is not None and len(fields[0]) != expected:
        raise SshKeyError(f"a {key_type} key is {expected} bytes, this one is {len(fields[0])}")
    if key_type.startswith("ecdsa-sha2-") or key_type.startswith("sk-ecdsa-sha2-"):
        curve = key_type.split("@", 1)[0].rsplit("-", 1)[1]
        if fields[0].decode("ascii", "replace") != curve:
            raise SshKeyError(f"the key names curve {fields[0].decode('ascii', 'replace')!r}, its type says {curve}")
    if key_type == "ssh-rsa":
        bits = int.from_bytes(fields[1], "big").bit_length()
        if bits < _MIN_RSA_BITS:
            raise SshKeyError(f"the RSA modulus has {bits} bits; at least {_MIN_RSA_BITS} are needed")


def parse_public_key(text: str) -> SshPublicKey:
    """Parse and check one public key line (`ssh-ed25519 AAAA... comment`); raises SshKeyError."""
    value = text.strip()
    if not value:
        raise SshKeyError("no key: the text is empty")
    if "\n" in value or "\r" in value:
        raise SshKeyError("a public key is one line; this text has several")
    if value.startswith("-----BEGIN"):
        if "PRIVATE" in value:
            raise SshKeyError("this is a PRIVATE key: never publish it; give the public key (the .pub file)")
        raise SshKeyError("this is a PEM block; give the OpenSSH one-line form `type base64 [comment]`")
    parts = value.split(maxsplit=2)
    if len(parts) < 2:
        raise SshKeyError("expected `type base64 [comment]`, e.g. `ssh-ed25519 AAAAC3Nza... user@host`")
    key_type, blob_text = parts[0], parts[1]
    comment = parts[2].strip() if len(parts) == 3 else ""
    if not _TYPE.match(key_type):
        raise SshKeyError(f"{key_type[:40]!r} is not a key type such as ssh-ed25519 or ssh-rsa")
    try:
        blob = base64.b64decode(blob_text, validate=True)
    except (binascii.Error, ValueError):
        raise SshKeyError("the key data (second field) is not valid base64") from None
    embedded, offset = _read_string(blob, 0)
    if embedded != key_type.encode("ascii"):
        shown = embedded.decode("ascii", "replace")[:40]
        raise SshKeyError(f"the key data says {shown!r} but the line says {key_type}: the line is damaged")
    _check_layout(key_type, blob, offset)
    return SshPublicKey(key_type, blob_text, comment)


def check_public_key(text: str) -> str | None:
    """A message when `text` is not one valid public key line, else None."""
    try:
        parse_public_key(text)
    except SshKeyError as exc:
        return str(exc)
    return None


def line_has_key(line: str, key: SshPublicKey) -> bool:
    """Whether an SSH_PUBLIC_KEY line holds `key` (same type and blob; options and comments ignored)."""
    tokens = line.split()
    return any(tokens[i] == key.type and tokens[i + 1] == key.blob for i in range(len(tokens) - 1))


def has_key(value: str, key: SshPublicKey) -> bool:
    """Whether an SSH_PUBLIC_KEY value (one key a line) already holds `key`."""
    return any(line_has_key(line, key) for line in split_keys(value))


def with_key(value: str, key: SshPublicKey) -> tuple[str, bool]:
    """`(new value, added)`: the existing keys kept in order, `key` appended on its own line
    unless it is already there (then the value is returned unchanged and `added` is False)."""
    if has_key(value, key):
        return value, False
    return "\n".join((*split_keys(value), key.line)), True
