"""The procedures' clock (tui.timing): a stopped clock moves only when advanced (a screenshot's
elapsed seconds), resumes from where it stands, and never goes back; a pause or a time limit on it
ends when the clock is advanced past it (a test never waits a back-off or a timeout out)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from tui import timing
from tui.timing import Clock


def test_a_stopped_clock_moves_only_when_advanced_and_resumes_without_going_back() -> None:
    clock = Clock()
    clock.stop()
    stopped = clock.monotonic()
    time.sleep(0.02)
    assert clock.monotonic() == stopped
    clock.advance(42)
    assert clock.monotonic() == stopped + 42
    clock.resume()
    resumed = clock.monotonic()
    assert resumed >= stopped + 42 and resumed - (stopped + 42) < 1  # from where it stood, not later, not back
    time.sleep(0.02)
    assert clock.monotonic() > resumed
    with pytest.raises(ValueError):
        clock.advance(-1)


async def test_a_pause_ends_when_the_clock_is_advanced_past_it_not_before() -> None:
    clock = Clock()
    pause = asyncio.ensure_future(clock.sleep(3600))
    await asyncio.sleep(0.01)
    clock.advance(1000)  # not far enough: the pause goes on
    await asyncio.sleep(0.01)
    assert not pause.done()
    clock.advance(2600)
    await asyncio.wait_for(pause, 5)  # an hour's pause, over at once


async def test_a_pause_ends_in_real_time_even_on_a_stopped_clock() -> None:
    clock = Clock()
    clock.stop()  # a screenshot's clock: the procedures still poll
    started = time.monotonic()
    await asyncio.wait_for(clock.sleep(0.05), 5)
    assert time.monotonic() - started >= 0.05


async def test_a_pause_ends_at_once_on_cancel_or_when_its_until_completes() -> None:
    clock = Clock()
    cancel = asyncio.Event()
    pause = asyncio.ensure_future(clock.sleep(3600, cancel=cancel))
    await asyncio.sleep(0.01)
    assert not pause.done()
    cancel.set()
    await asyncio.wait_for(pause, 5)
    answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    pause = asyncio.ensure_future(clock.sleep(3600, until=answer))
    await asyncio.sleep(0.01)
    answer.set_result(1)
    await asyncio.wait_for(pause, 5)


async def test_a_time_limit_on_the_clock_stops_the_body_when_advanced_past(driven_clock: Clock) -> None:
    with pytest.raises(TimeoutError):
        async with timing.limit(3600):
            await asyncio.sleep(0.01)
            driven_clock.advance(3601)
            await asyncio.sleep(5)  # stopped here, not waited out
    async with timing.limit(3600):  # a body that ends in time is left alone
        driven_clock.advance(10)
        await asyncio.sleep(0)


def test_a_pause_advanced_from_another_thread_ends() -> None:
    clock = Clock()

    async def pause_then_advance_elsewhere() -> None:
        pause = asyncio.ensure_future(clock.sleep(3600))
        await asyncio.sleep(0)  # the pause has begun: its sleeper is registered on the clock
        mover = threading.Thread(target=clock.advance, args=(3600,))
        mover.start()
        try:
            await asyncio.wait_for(pause, 10)
        finally:
            mover.join()

    # before, a timer thread advanced the clock after 0.05 s: at load 19 that came before the pause
    # had begun, which then waited its whole hour from the advanced clock
    asyncio.run(pause_then_advance_elsewhere())
