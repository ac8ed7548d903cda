"""Vault files: interoperability with the `ansible-vault` command both ways, passwords, atomic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.conftest import VAULT_PASSWORD
from tests.site.conftest import ansible_vault
from tui.adapters.vault import (
    VaultPassword,
    decrypt_text,
    decrypt_text_async,
    encrypt_text,
    encrypt_text_async,
    is_vault_text,
    read_password_file,
    read_vault_file,
    write_atomic,
    write_vault_file,
)
from tui.errors import SiteError

PLAIN = "# comment survives\nsite_domain: \"trial.example\"  # eol\nsite_variables:\n  tn_vxlan: null\n"


def test_ours_opens_with_ansible_vault(tmp_path: Path, password: VaultPassword, password_file: Path) -> None:
    path = tmp_path / "core.yaml"
    write_vault_file(path, PLAIN, password)
    assert path.read_text().startswith("$ANSIBLE_VAULT;1.1;AES256\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    viewed = ansible_vault("view", "--vault-password-file", str(password_file), str(path))
    assert viewed.returncode == 0, viewed.stderr
    assert viewed.stdout == PLAIN
    decrypted = ansible_vault("decrypt", "--vault-password-file", str(password_file), str(path))
    assert decrypted.returncode == 0, decrypted.stderr
    assert path.read_text() == PLAIN


def test_ansible_vault_files_open_here(tmp_path: Path, password: VaultPassword, password_file: Path) -> None:
    path = tmp_path / "core.yaml"
    path.write_text(PLAIN)
    done = ansible_vault("encrypt", "--vault-password-file", str(password_file), str(path))
    assert done.returncode == 0, done.stderr
    assert is_vault_text(path.read_text())
    assert read_vault_file(path, password) == PLAIN


#: texts whose envelopes must open the same here and in ansible's library: empty, one padding block
#: exactly, non-ASCII, CRLF, long (many 80-column lines)
TEXTS = ("", "x" * 16, "site_domain: \"é.example\"  # ünïcode\n", "a: 1\r\nb: 2\r\n", PLAIN * 200)


@pytest.mark.parametrize("plain", TEXTS, ids=["empty", "one-block", "non-ascii", "crlf", "long"])
def test_envelopes_are_ansibles_both_ways(plain: str, password: VaultPassword) -> None:
    """The envelope is built here (tui.adapters.vault, `cryptography`), not by ansible's VaultLib:
    ansible's own library opens what is written here, and what it writes (1.1, and 1.2 with a vault
    id, CRLF line ends) opens here; a wrong password and a damaged envelope are told apart as ansible does."""
    from ansible.parsing.vault import VaultLib, VaultSecret

    theirs = VaultLib([("default", VaultSecret(password.secret))])
    ours = encrypt_text(plain, password)
    lines = ours.split("\n")
    assert lines[0] == "$ANSIBLE_VAULT;1.1;AES256" and ours.endswith("\n")
    assert all(len(line) <= 80 for line in lines) and all(len(line) == 80 for line in lines[1:-2])
    assert theirs.decrypt(ours) == plain.encode()
    assert decrypt_text(theirs.encrypt(plain), password) == plain
    labelled = theirs.encrypt(plain, vault_id="site").decode()
    assert labelled.startswith("$ANSIBLE_VAULT;1.2;AES256;site\n")
    assert decrypt_text(labelled.replace("\n", "\r\n"), password) == plain
    other = VaultPassword.from_text("another password")
    with pytest.raises(SiteError, match="Wrong vault password"):
        decrypt_text(ours, other)
    with pytest.raises(SiteError, match="Wrong vault password"):
        decrypt_text(VaultLib([("default", VaultSecret(other.secret))]).encrypt(plain), password)


def test_damaged_envelopes_are_said_to_be_damaged(password: VaultPassword) -> None:
    ours = encrypt_text(PLAIN, password)
    header, body = ours.split("\n", 1)
    for damaged in (header + "\nzz" + body[2:],  # not hex
                    header + "\n" + body[:40] + "\n",  # cut short
                    "$ANSIBLE_VAULT;1.1;DES\n" + body,  # a cipher ansible does not have
                    "$ANSIBLE_VAULT\n" + body):  # no version or cipher
        with pytest.raises(SiteError, match="Vault file damaged"):
            decrypt_text(damaged, password)
    salt, mac, ciphertext = bytes.fromhex(body.replace("\n", "")).split(b"\n", 2)
    changed = ciphertext[:-1] + (b"0" if ciphertext[-1:] != b"0" else b"1")  # its HMAC no longer matches
    with pytest.raises(SiteError, match="Wrong vault password"):  # as ansible says ("Decryption failed")
        decrypt_text(header + "\n" + b"\n".join([salt, mac, changed]).hex() + "\n", password)


def test_string_level_round_trip_and_salt(password: VaultPassword) -> None:
    first = encrypt_text(PLAIN, password)
    second = encrypt_text(PLAIN, password)
    assert first != second  # a fresh salt each time
    assert decrypt_text(first, password) == decrypt_text(second, password) == PLAIN


async def test_async_wrappers(password: VaultPassword) -> None:
    text = await encrypt_text_async(PLAIN, password)
    assert await decrypt_text_async(text, password) == PLAIN


def test_wrong_password_says_so_and_changes_nothing(tmp_path: Path, password: VaultPassword) -> None:
    path = tmp_path / "core.yaml"
    write_vault_file(path, PLAIN, password)
    before = path.read_bytes()
    with pytest.raises(SiteError) as caught:
        read_vault_file(path, VaultPassword.from_text("not the password"))
    assert caught.value.title == "Wrong vault password"
    assert "Nothing was changed" in caught.value.detail
    assert "not the password" not in str(caught.value)
    assert path.read_bytes() == before


def test_plain_text_is_not_decrypted(password: VaultPassword) -> None:
    with pytest.raises(SiteError, match="Not vault-encrypted"):
        decrypt_text(PLAIN, password)


def test_encrypting_twice_is_refused(password: VaultPassword) -> None:
    with pytest.raises(SiteError, match="Already encrypted"):
        encrypt_text(encrypt_text(PLAIN, password), password)


def test_is_vault_text() -> None:
    assert is_vault_text("$ANSIBLE_VAULT;1.1;AES256\n6162\n")
    assert is_vault_text(b"$ANSIBLE_VAULT;1.2;AES256;dev\n6162\n")
    assert not is_vault_text(PLAIN)
    assert not is_vault_text("")
    assert not is_vault_text(" $ANSIBLE_VAULT;1.1;AES256\n")  # ansible itself would not accept it


def test_password_file_is_read_as_ansible_reads_it(tmp_path: Path, password_file: Path) -> None:
    windows = tmp_path / "crlf"
    windows.write_bytes(f"  {VAULT_PASSWORD}\r\n\n".encode())
    windows.chmod(0o600)
    encrypted = encrypt_text(PLAIN, read_password_file(windows))
    assert decrypt_text(encrypted, read_password_file(password_file)) == PLAIN
    target = tmp_path / "core.yaml"
    target.write_text(encrypted)
    viewed = ansible_vault("view", "--vault-password-file", str(windows), str(target))
    assert viewed.stdout == PLAIN


def test_readable_password_file_warns(tmp_path: Path) -> None:
    path = tmp_path / "open-pass"
    path.write_text("pw-pw-pw\n")
    path.chmod(0o644)
    password = read_password_file(path)
    assert password.warnings and "chmod 600" in password.warnings[0]
    path.chmod(0o600)
    assert read_password_file(path).warnings == ()


def test_password_repr_hides_the_secret(password: VaultPassword) -> None:
    assert VAULT_PASSWORD not in repr(password)


def test_password_file_problems(tmp_path: Path) -> None:
    with pytest.raises(SiteError, match="not found"):
        read_password_file(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.write_text("\n")
    empty.chmod(0o600)
    with pytest.raises(SiteError, match="Empty vault password"):
        read_password_file(empty)
    with pytest.raises(SiteError, match="directory"):
        read_password_file(tmp_path)


def test_executable_password_file_is_run_like_ansible(tmp_path: Path) -> None:
    script = tmp_path / "pass-script"
    script.write_text(f"#!/bin/sh\necho '{VAULT_PASSWORD}'\n")
    script.chmod(0o700)
    password = read_password_file(script)
    assert password.secret == VAULT_PASSWORD.encode()
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\nexit 3\n")
    failing.chmod(0o700)
    with pytest.raises(SiteError, match="script failed"):
        read_password_file(failing)


def test_atomic_write_replaces_in_one_step(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "file"
    path.parent.mkdir()
    path.write_text("old")
    path.chmod(0o644)
    write_atomic(path, "new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(os.listdir(path.parent)) == ["file"]  # no temp file left behind


def test_atomic_write_failure_leaves_no_trace(tmp_path: Path) -> None:
    target = tmp_path / "dir" / "core.yaml"
    target.mkdir(parents=True)  # a directory in the way: the final rename fails
    (target / "keep").write_text("kept")
    with pytest.raises(SiteError, match="Cannot write"):
        write_atomic(target, "new")
    assert sorted(os.listdir(target.parent)) == ["core.yaml"]
    assert (target / "keep").read_text() == "kept"
    with pytest.raises(SiteError, match="Cannot write"):
        write_atomic(tmp_path / "missing-dir" / "file", "new")


def test_the_vault_imports_inside_the_console_where_stdout_is_a_terminal_without_a_descriptor() -> None:
    """Textual replaces sys.stdout by a capture that says it is a terminal and has no descriptor;
    ansible's colour setup used to fail on it (curses.setupterm: ValueError), which closed the
    console when the site screen was first opened."""
    import subprocess
    import sys
    script = (
        "import io, sys\n"
        "class Capture(io.TextIOBase):\n"
        "    def isatty(self): return True\n"
        "    def fileno(self): return -1\n"
        "sys.stdout = Capture()\n"
        "import tui.adapters.vault as v\n"
        "assert v.is_vault_text(v.encrypt_text('a: 1', v.VaultPassword.from_text('pw')))\n"
        "sys.stdout = sys.__stdout__\n"
        "print('imported')\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("ANSIBLE_")}
    env["TERM"] = "xterm-256color"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "imported"
