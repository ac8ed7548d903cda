"""Vault encryption of the site configuration with ansible-core's own library.

Files written here open with the `ansible-vault` command and files it writes open here: the same
`VaultLib`/`VaultSecret` code, the 1.1 AES256 envelope, and a vault password file read the way
ansible reads it (surrounding whitespace stripped; an executable file is run and its output used).
Plain text only ever lives in memory: decrypting returns a string, editing re-encrypts before
anything is written, and every write is atomic (temp file in the same directory, mode 0600,
fsync, rename). A wrong password raises `SiteError` and leaves the file as it was.
Key derivation (PBKDF2, 10,000 rounds) is slow, so the async wrappers run it in a thread.
"""

from __future__ import annotations

import asyncio
import functools
import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from tui.domain.bounded import BoundedInputError, check_size, decode_text, read_regular_file, read_text_file
from tui.errors import SiteError

VAULT_HEADER = "$ANSIBLE_VAULT;"
_VAULT_ID = "default"
_SCRIPT_TIMEOUT = 30.0

#: a vault password file holds one line
_MAX_PASSWORD_BYTES = 64 * 1024


@functools.cache
def _ansible() -> tuple[ModuleType, ModuleType]:
    """ansible's vault and errors modules, imported on first use: they take ~0.3 s to import, which
    the console's start-up must not pay (it reads no vault until a site screen asks).

    Importing the vault imports ansible.utils.color, which calls curses.setupterm() on sys.stdout
    when sys.stdout says it is a terminal. Inside the running console sys.stdout is Textual's
    capture: it says so, but has no file descriptor (-1), and the import fails with ValueError,
    which closed the console when the site screen was first opened. Ansible prints nothing for
    us, so its colours are switched off before it reads its settings."""
    os.environ["ANSIBLE_NOCOLOR"] = "1"
    import ansible.errors
    import ansible.parsing.vault

    return ansible.parsing.vault, ansible.errors


def _ansible_error() -> Any:
    return _ansible()[1].AnsibleError


def is_vault_text(text: str | bytes) -> bool:
    """True when `text` is a vault envelope (`$ANSIBLE_VAULT;1.1;AES256` and hex lines)."""
    try:
        return bool(_ansible()[0].is_encrypted(text))
    except UnicodeError:
        return False


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


def _vault(password: VaultPassword) -> Any:
    vault = _ansible()[0]
    return vault.VaultLib([(_VAULT_ID, vault.VaultSecret(password.secret))])


def encrypt_text(plain: str, password: VaultPassword) -> str:
    """Encrypt text into a vault 1.1 envelope (the format `ansible-vault encrypt` writes)."""
    if is_vault_text(plain):
        raise SiteError("Already encrypted", "The text is vault-encrypted already; decrypt it before encrypting again.")
    try:
        envelope: bytes = _vault(password).encrypt(plain)
        return envelope.decode("ascii")
    except _ansible_error() as exc:
        raise SiteError("Vault encryption failed", str(exc)) from None


def decrypt_text(vault_text: str | bytes, password: VaultPassword, source: str = "the file") -> str:
    """Decrypt a vault envelope; a wrong password raises SiteError saying so."""
    if not is_vault_text(vault_text):
        raise SiteError("Not vault-encrypted", f"{source} does not start with {VAULT_HEADER}1.1;AES256; it is plain text.")
    try:
        plain: bytes = _vault(password).decrypt(vault_text)
    except _ansible_error() as exc:
        if "Decryption failed" in str(exc):
            raise SiteError(
                "Wrong vault password",
                f"The vault password from {password.source} does not decrypt {source}. Nothing was changed; "
                "use the site's vault password (app_automation_sites_token).",
            ) from None
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
