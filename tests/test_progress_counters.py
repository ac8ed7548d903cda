"""Progress counters never read like `(1/0)` (issue 20 item 11): the CLI's event lines, and the
setup run's total, which counts the step it does even when that step is optional (`--only dns`)."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

import pytest

from tui.cli.common import counter, follow
from tui.procedures.progress import Progress


def test_a_counter_whose_total_is_unknown_or_smaller_says_only_what_is_done() -> None:
    assert counter(1, 3) == "(1/3)"
    assert counter(1, 0) == "(1)"
    assert counter(2, 1) == "(2)"


def test_the_event_lines_print_no_1_of_0(capsys: pytest.CaptureFixture[str]) -> None:
    async def events() -> AsyncIterator[Progress]:
        yield Progress("dns", 1, 0, "written", "done")

    asyncio.run(follow(events(), as_json=False))
    err = capsys.readouterr().err
    assert "(1/0)" not in err and "dns (1) written" in err
