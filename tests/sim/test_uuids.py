"""The embedded site's UUIDs (tui.sim.uuids) are the standard library's, bit for bit."""

from __future__ import annotations

import random
import uuid

from tui.sim.uuids import uuid4_text, uuid5_text


def test_random_uuid_text_is_the_standard_librarys() -> None:
    rng = random.Random(7)
    for bits in [0, 2**128 - 1, *(rng.getrandbits(128) for _ in range(200))]:
        assert uuid4_text(bits) == str(uuid.UUID(int=bits, version=4))


def test_name_based_uuid_is_the_standard_librarys() -> None:
    space = "6c1f3f0e-8f4a-4d8e-9a55-3b1c2a7d9e10"
    for name in ("", "Ubuntu 22.04", "service_1 (ñ, ✓)", "x" * 500):
        assert uuid5_text(space, name) == str(uuid.uuid5(uuid.UUID(space), name))
    assert uuid5_text(space, "a") != uuid5_text(space, "b")
