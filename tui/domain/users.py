"""Cloud users (groups: tui.domain.groups). A user's TEMPLATE/SSH_PUBLIC_KEY holds one or more public keys, one a line."""

from __future__ import annotations

from dataclasses import dataclass

from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes

SSH_PUBLIC_KEY = "SSH_PUBLIC_KEY"


def split_keys(text: str) -> tuple[str, ...]:
    """The non-empty lines of an SSH_PUBLIC_KEY value, stripped."""
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def key_body(key: str) -> str:
    """`type base64` of a public key line, without its comment: what identifies the key."""
    return " ".join(key.split()[:2])


@dataclass(frozen=True)
class User:
    """A user of the cloud as `one.user.info` answers it."""

    id: int
    name: str
    gid: int
    gname: str
    group_ids: tuple[int, ...]
    auth_driver: str
    enabled: bool
    template: Attributes = EMPTY_ATTRIBUTES

    @property
    def ssh_public_keys(self) -> tuple[str, ...]:
        return split_keys(self.template.get(SSH_PUBLIC_KEY))

    def has_key(self, key: str) -> bool:
        """Whether `key` (compared without its comment) is among the user's keys."""
        wanted = key_body(key)
        return any(key_body(existing) == wanted for existing in self.ssh_public_keys)
