"""Object permissions: the nine use/manage/admin bits for owner, group and others, one type for the
console and the embedded site."""

from __future__ import annotations

from dataclasses import dataclass

#: the PERMISSIONS element's children, in the platform's order (`PoolObjectSQL::perms_to_xml`,
#: `src/pool/PoolObjectSQL.cc` 382 at release-6.10.0, 385 at 7.0.2 and 7.4.0; OneFlow's documents
#: carry the same names as JSON strings)
PERMISSION_TAGS = ("OWNER_U", "OWNER_M", "OWNER_A", "GROUP_U", "GROUP_M", "GROUP_A", "OTHER_U", "OTHER_M", "OTHER_A")


@dataclass(frozen=True)
class Permissions:
    owner_u: int = 0
    owner_m: int = 0
    owner_a: int = 0
    group_u: int = 0
    group_m: int = 0
    group_a: int = 0
    other_u: int = 0
    other_m: int = 0
    other_a: int = 0

    def as_args(self) -> tuple[int, int, int, int, int, int, int, int, int]:
        """The nine ints of a `chmod` call, in the platform's order."""
        return (self.owner_u, self.owner_m, self.owner_a, self.group_u, self.group_m,
                self.group_a, self.other_u, self.other_m, self.other_a)

    def tagged(self) -> tuple[tuple[str, int], ...]:
        """(PERMISSION_TAGS name, bit) pairs, as the platform writes them."""
        return tuple(zip(PERMISSION_TAGS, self.as_args(), strict=True))

    @property
    def octal(self) -> str:
        """`"640"`-style, as the platform CLI's `chmod` takes it (use=4, manage=2, admin=1)."""
        bits = self.as_args()
        return "".join(str(bits[i] * 4 + bits[i + 1] * 2 + bits[i + 2]) for i in (0, 3, 6))

    @property
    def text(self) -> str:
        """`"um-u-----"`, as the platform CLI lists it."""
        letters = "uma" * 3
        return "".join(letter if bit else "-" for letter, bit in zip(letters, self.as_args(), strict=True))

    @classmethod
    def from_octal(cls, octal: str) -> "Permissions":
        """From `"640"`-style text; raises ValueError on anything else."""
        if len(octal) != 3 or any(ch not in "01234567" for ch in octal):
            raise ValueError(f"permissions must be three octal digits such as 640, not {octal!r}")
        bits: list[int] = []
        for ch in octal:
            n = int(ch)
            bits += [(n >> 2) & 1, (n >> 1) & 1, n & 1]
        return cls(*bits)
