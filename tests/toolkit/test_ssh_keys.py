"""SSH public key checks and the SSH_PUBLIC_KEY merge (pure)."""

from __future__ import annotations

import base64
import struct

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from tui.domain.ssh_keys import SshKeyError, check_public_key, has_key, parse_public_key, with_key
from tui.domain.template_text import parse_template, render_template


def openssh(public: object, comment: str = "") -> str:
    text = public.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()  # type: ignore[attr-defined]
    return f"{text} {comment}".strip()


def wire(*fields: bytes) -> str:
    return base64.b64encode(b"".join(struct.pack(">I", len(f)) + f for f in fields)).decode()


@pytest.mark.parametrize("public", [
    ed25519.Ed25519PrivateKey.generate().public_key(),
    rsa.generate_private_key(public_exponent=65537, key_size=2048).public_key(),
    ec.generate_private_key(ec.SECP256R1()).public_key(),
    ec.generate_private_key(ec.SECP384R1()).public_key(),
])
def test_real_keys_parse(public: object) -> None:
    line = openssh(public, "automation@one-12 with spaces")
    key = parse_public_key(f"  {line}\n")
    assert key.line == line and key.comment == "automation@one-12 with spaces"
    assert key.fingerprint.startswith("SHA256:") and len(key.fingerprint) == 50
    assert check_public_key(line) is None


def test_an_unknown_type_is_accepted_on_its_type_check() -> None:
    line = f"ssh-future-v2@example.org {wire(b'ssh-future-v2@example.org', b'anything')}"
    assert parse_public_key(line).type == "ssh-future-v2@example.org"


@pytest.mark.parametrize(("text", "reason"), [
    ("", "empty"),
    ("ssh-ed25519", "expected `type base64"),
    ("ssh-ed25519 AAAA!!!!", "not valid base64"),
    (f"ssh-ed25519 {wire(b'ssh-rsa', b'x')}", "says 'ssh-rsa'"),
    (f"ssh-ed25519 {wire(b'ssh-ed25519', b'short')}", "32 bytes"),
    (f"ssh-ed25519 {wire(b'ssh-ed25519', bytes(32), b'extra')}", "unexpected bytes"),
    ("ssh-ed25519 " + base64.b64encode(b"\x00\x00\x00\x40ssh").decode(), "truncated"),
    (f"ecdsa-sha2-nistp256 {wire(b'ecdsa-sha2-nistp256', b'nistp384', b'Q')}", "curve"),
    ("ssh-rsa " + wire(b"ssh-rsa", bytes([1, 0, 1]), bytes([0]) + bytes([0xff]) * 64), "at least 1024"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----", "several"),
    ("-----BEGIN OPENSSH PRIVATE KEY----- abc", "PRIVATE key"),
    ("ssh-ed25519 AAAA\nssh-ed25519 BBBB", "one line"),
    ("SSH-ED25519 AAAA", "not a key type"),
])
def test_bad_keys_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(SshKeyError, match=reason):
        parse_public_key(text)
    assert check_public_key(text)


def test_with_key_keeps_existing_lines_and_never_duplicates() -> None:
    a = parse_public_key(openssh(ed25519.Ed25519PrivateKey.generate().public_key(), "a@x"))
    b = parse_public_key(openssh(ed25519.Ed25519PrivateKey.generate().public_key(), "b@y"))
    value, added = with_key("", a)
    assert (value, added) == (a.line, True)
    value, added = with_key(f"\n{a.line}\n\n", b)
    assert value == f"{a.line}\n{b.line}" and added
    same, added = with_key(value, parse_public_key(f"{b.body} renamed-comment"))
    assert same == value and not added
    options = f'from="10.0.0.1",no-pty {a.body} with-options'
    assert has_key(options, a) and not has_key(options, b)
    assert with_key(options, a) == (options, False)


def test_the_value_survives_template_escaping() -> None:
    a = parse_public_key(openssh(ed25519.Ed25519PrivateKey.generate().public_key(), 'op "laptop" C:\\keys'))
    b = parse_public_key(openssh(ed25519.Ed25519PrivateKey.generate().public_key(), "automation@one-3"))
    value, _ = with_key(a.line, b)
    text = render_template([("SSH_PUBLIC_KEY", value)])
    assert parse_template(text) == [("SSH_PUBLIC_KEY", value)]
