"""Vault encryption of the site configuration: ansible-vault's format, with `cryptography`.

Files written here open with the `ansible-vault` command and files it writes open here: the 1.1
AES256 envelope as ansible-core writes and reads it (ansible/parsing/vault/__init__.py of
ansible-core 2.19: `format_vaulttext_envelope`, `parse_vaulttext_envelope`, `VaultAES256`), and a
vault password file read the way ansible reads it (surrounding whitespace stripped; an executable
file is run and its output used). The envelope is built here with the same `cryptography`
primitives ansible calls, not through ansible's `VaultLib`: importing that takes ~0.45 s of CPU
(ansible's configuration, templating and data tagging), every `sitetk site ...` process paid it,
and the cipher itself is a few lines (issue 23). tests/site/test_vault.py checks both ways against
the `ansible-vault` command and ansible's library.

Plain text only ever lives in memory: decrypting returns a string, editing re-encrypts before
anything is written, and every write is atomic (temp file in the same directory, mode 0600,
fsync, rename). A wrong password raises `SiteError` and leaves the file as it was.
Key derivation (PBKDF2, 10,000 rounds) is slow, so the async wrappers run it in a thread.
"""

from __future__ import annotations

import asyncio
import binascii
import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tui.domain.bounded import BoundedInputError, check_size, decode_text, read_regular_file, read_text_file
from tui.errors import SiteError

VAULT_HEADER = "$ANSIBLE_VAULT;"
_VAULT_ID = "default"
_SCRIPT_TIMEOUT = 30.0

#: a vault password file holds one line
_MAX_PASSWORD_BYTES = 64 * 1024


#: ansible's envelope: `$ANSIBLE_VAULT;<version>;AES256[;<vault id>]`, then hex lines of 80
_HEADER = b"$ANSIBLE_VAULT"
_CIPHER = "AES256"
_LINE = 80
#: VaultAES256: 32-byte keys for AES and the HMAC, a 16-byte counter; PBKDF2-SHA256, 10,000 rounds
_KEY_BYTES = 32
_IV_BYTES = 16
_ROUNDS = 10_000
_SALT_BYTES = 32


class _DecryptionFailed(Exception):
    """The HMAC does not match: another password (ansible: "Decryption failed")."""


class _Damaged(Exception):
    """The envelope cannot be parsed (ansible: AnsibleVaultFormatError)."""


def is_vault_text(text: str | bytes) -> bool:
    """True when `text` is a vault envelope (`$ANSIBLE_VAULT;1.1;AES256` and hex lines), by
    ansible's `is_encrypted`: ASCII throughout and starting with the header."""
    try:
        data = text.encode("ascii") if isinstance(text, str) else bytes(text).decode("ascii").encode("ascii")
    except (UnicodeError, TypeError):
        return False
    return data.startswith(_HEADER)


def _keys(secret: bytes, salt: bytes) -> tuple[bytes, bytes, bytes]:
    """VaultAES256._gen_key_initctr: the AES key, the HMAC key and the counter's start."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

    derived = PBKDF2HMAC(algorithm=hashes.SHA256(), length=2 * _KEY_BYTES + _IV_BYTES, salt=salt,
                         iterations=_ROUNDS).derive(secret)
    return derived[:_KEY_BYTES], derived[_KEY_BYTES:2 * _KEY_BYTES], derived[2 * _KEY_BYTES:]


def _encrypt(plain: bytes, secret: bytes) -> bytes:
    """VaultAES256.encrypt and format_vaulttext_envelope (version 1.1, no vault id)."""
    from cryptography.hazmat.primitives import hashes, hmac, padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    salt = os.urandom(_SALT_BYTES)
    aes_key, hmac_key, iv = _keys(secret, salt)
    padder = padding.PKCS7(algorithms.AES.block_size).padder()
    encryptor = Cipher(algorithms.AES(aes_key), modes.CTR(iv)).encryptor()
    ciphertext = encryptor.update(padder.update(plain) + padder.finalize()) + encryptor.finalize()
    mac = hmac.HMAC(hmac_key, hashes.SHA256())
    mac.update(ciphertext)
    body = binascii.hexlify(b"\n".join([binascii.hexlify(salt), binascii.hexlify(mac.finalize()),
                                        binascii.hexlify(ciphertext)]))
    lines = [b";".join([_HEADER, b"1.1", _CIPHER.encode("ascii")])]
    lines += [body[i:i + _LINE] for i in range(0, len(body), _LINE)]
    return b"\n".join([*lines, b""])


def _decrypt(envelope: bytes, secret: bytes) -> bytes:
    """parse_vaulttext_envelope, parse_vaulttext and VaultAES256.decrypt: any vault id of a 1.2
    header is a label only (ansible tries every password it has)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, hmac, padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    lines = envelope.splitlines()
    header = lines[0].strip().split(b";")
    if len(header) < 3:
        raise _Damaged("Vault envelope format error.")
    if header[2].strip().decode("ascii") != _CIPHER:
        raise _Damaged(f"Cipher {header[2].strip().decode('ascii')!r} could not be found.")
    try:
        salt_hex, mac_hex, ciphertext_hex = binascii.unhexlify(b"".join(lines[1:])).split(b"\n", 2)
        salt, mac_expected, ciphertext = (binascii.unhexlify(salt_hex), binascii.unhexlify(mac_hex),
                                          binascii.unhexlify(ciphertext_hex))
    except (binascii.Error, ValueError):
        raise _Damaged("Vault format unhexlify error.") from None
    aes_key, hmac_key, iv = _keys(secret, salt)
    mac = hmac.HMAC(hmac_key, hashes.SHA256())
    mac.update(ciphertext)
    try:
        mac.verify(mac_expected)
    except InvalidSignature:
        raise _DecryptionFailed("Decryption failed (no vault secrets were found that could decrypt).") from None
    decryptor = Cipher(algorithms.AES(aes_key), modes.CTR(iv)).decryptor()
    unpadder = padding.PKCS7(algorithms.AES.block_size).unpadder()
    try:
        return unpadder.update(decryptor.update(ciphertext) + decryptor.finalize()) + unpadder.finalize()
    except ValueError:
        raise _Damaged("Invalid padding bytes.") from None


@dataclass(frozen=True)
class VaultPassword:
    """A vault password and where it came from; `warnings` (e.g. a readable file) are for the operator."""

    secret: bytes = field(repr=False)
    source: str = "prompt"
    warnings: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.secret:
            raise SiteError("Empty vault password", f"The vault password from {self.source} is empty; put the site's vault password there.")

    @classmethod
    def from_text(cls, password: str, source: str = "prompt") -> "VaultPassword":
        return cls(password.encode("utf-8"), source)

    @property
    def text(self) -> str:
        """The password as text (for registering it with the audit log's redaction)."""
        return self.secret.decode("utf-8", errors="replace")


def read_password_file(path: str | os.PathLike[str]) -> VaultPassword:
    """Read a vault password file as ansible-vault does; warn when others can read it."""
    file = Path(path).expanduser()
    try:
        info = file.stat()
    except FileNotFoundError:
        raise SiteError("Vault password file not found", f"{file} does not exist; create it (mode 0600) holding the vault password.") from None
    except OSError as exc:
        raise SiteError("Vault password file unreadable", f"{file}: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise SiteError("Vault password file is a directory", f"{file} is a directory; give the file holding the vault password.")
    warnings: list[str] = []
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        warnings.append(f"{file} can be read by its group or by others (mode {stat.S_IMODE(info.st_mode):04o}); run: chmod 600 {file}")
    if os.access(file, os.X_OK):
        secret = _run_password_script(file)
    else:
        try:
            secret = read_regular_file(file, str(file), _MAX_PASSWORD_BYTES)
        except BoundedInputError as exc:
            raise SiteError("Vault password file unreadable", f"{exc.message}.") from None
        except OSError as exc:
            raise SiteError("Vault password file unreadable", f"{file}: {exc.strerror}") from None
        if len(secret) > _MAX_PASSWORD_BYTES:
            raise SiteError("Vault password file too large", f"{file} holds more than {_MAX_PASSWORD_BYTES // 1024} KiB: "
                            "it cannot be a vault password file.")
        secret = secret.strip()
    return VaultPassword(secret, str(file), tuple(warnings))


def _run_password_script(file: Path) -> bytes:
    """ansible runs an executable password file and uses its standard output."""
    try:
        done = subprocess.run([str(file)], stdin=subprocess.DEVNULL, capture_output=True, timeout=_SCRIPT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SiteError(
            "Vault password script failed",
            f"{file} is executable, so it is run as a password script (as ansible does), and that failed: {exc}. "
            "If it is a plain password file, remove its executable bit (chmod 600).",
        ) from None
    if done.returncode != 0:
        raise SiteError("Vault password script failed", f"{file} exited with status {done.returncode}.")
    return done.stdout.strip(b"\r\n")


def encrypt_text(plain: str, password: VaultPassword) -> str:
    """Encrypt text into a vault 1.1 envelope (the format `ansible-vault encrypt` writes)."""
    if is_vault_text(plain):
        raise SiteError("Already encrypted", "The text is vault-encrypted already; decrypt it before encrypting again.")
    # ansible's to_bytes(errors="surrogate_or_strict"): bytes as they are (a test encrypts non-UTF-8 text)
    data = plain if isinstance(plain, bytes) else plain.encode("utf-8", errors="surrogateescape")
    return _encrypt(data, password.secret).decode("ascii")


def decrypt_text(vault_text: str | bytes, password: VaultPassword, source: str = "the file") -> str:
    """Decrypt a vault envelope; a wrong password raises SiteError saying so."""
    if not is_vault_text(vault_text):
        raise SiteError("Not vault-encrypted", f"{source} does not start with {VAULT_HEADER}1.1;AES256; it is plain text.")
    envelope = vault_text.encode("ascii") if isinstance(vault_text, str) else bytes(vault_text)
    try:
        plain = _decrypt(envelope, password.secret)
    except _DecryptionFailed:
        raise SiteError(
            "Wrong vault password",
            f"The vault password from {password.source} does not decrypt {source}. Nothing was changed; "
            "use the site's vault password (app_automation_sites_token).",
        ) from None
    except _Damaged as exc:
        raise SiteError("Vault file damaged", f"{source} could not be decrypted: {exc}") from None
    try:
        check_size(plain, f"{source}, decrypted")
        return decode_text(plain, f"{source}, decrypted,")
    except BoundedInputError as exc:
        raise SiteError("Not a text file", f"{exc.message}.") from None


async def encrypt_text_async(plain: str, password: VaultPassword) -> str:
    return await asyncio.to_thread(encrypt_text, plain, password)


async def decrypt_text_async(vault_text: str | bytes, password: VaultPassword, source: str = "the file") -> str:
    return await asyncio.to_thread(decrypt_text, vault_text, password, source)


def read_text(path: str | os.PathLike[str]) -> str:
    """A text file (core.yaml, a vault envelope), bounded in size and UTF-8 (`domain.bounded`)."""
    file = Path(path)
    try:
        return read_text_file(file)
    except FileNotFoundError:
        raise SiteError("File not found", f"{file} does not exist.") from None
    except IsADirectoryError:
        raise SiteError("File unreadable", f"{file} is a directory; give the file.") from None
    except BoundedInputError as exc:
        raise SiteError("Not a text file", f"{exc.message}.") from None
    except OSError as exc:
        raise SiteError("File unreadable", f"{file}: {exc.strerror}") from None


def write_atomic(path: str | os.PathLike[str], text: str, mode: int = 0o600) -> None:
    """Replace `path` with `text` in one step: temp file beside it, fsync, rename, fsync the directory."""
    file = Path(path)
    directory = file.parent if str(file.parent) else Path(".")
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise SiteError("Cannot write", f"{directory}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, file)
    except BaseException as exc:
        Path(temp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise SiteError("Cannot write", f"{file}: {exc.strerror}") from None
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def read_vault_file(path: str | os.PathLike[str], password: VaultPassword) -> str:
    """The decrypted text of a vault file (in memory only)."""
    return decrypt_text(read_text(path), password, str(path))


def write_vault_file(path: str | os.PathLike[str], plain: str, password: VaultPassword) -> None:
    """Encrypt `plain` and write it atomically at mode 0600; the plain text never reaches the disk."""
    write_atomic(path, encrypt_text(plain, password))


async def read_vault_file_async(path: str | os.PathLike[str], password: VaultPassword) -> str:
    return await asyncio.to_thread(read_vault_file, path, password)


async def write_vault_file_async(path: str | os.PathLike[str], plain: str, password: VaultPassword) -> None:
    await asyncio.to_thread(write_vault_file, path, plain, password)
