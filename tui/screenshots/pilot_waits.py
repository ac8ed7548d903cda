"""Waiting on a running app's real state with a deadline (never sleeping as synchronisation),
and clicking a widget only once the layout shows it. Shared by the scenes and the UI tests."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from textual.pilot import Pilot

S = TypeVar("S")

#: multiplies every deadline here: the test suite sets 4 (tests/conftest.py), because on a loaded
#: machine (CI, two cores shared with other work) a state can take longer than usual to arrive; a
#: wait still ends as soon as the state is there, so only a failing wait gets slower
WAIT_SCALE_ENV = "SITETK_WAIT_SCALE"


def scaled(timeout: float) -> float:
    """`timeout` times $SITETK_WAIT_SCALE (1 when unset or not a positive number)."""
    try:
        scale = float(os.environ.get(WAIT_SCALE_ENV, "1"))
    except ValueError:
        scale = 1.0
    return timeout * scale if scale > 0 else timeout


#: the pause between two looks at the state: short for the first looks (most states arrive within a
#: few frames), longer once a wait lasts (a step of the guided setup runs for seconds). Each look
#: is a `pilot.pause`, which has every widget of the screen process a message first: about 2 ms of
#: CPU on the setup checklist, so 30 ms apart a long wait cost the tests 7 % of a core on its own
POLL_S = 0.03
LONG_POLL_S = 0.1
#: the looks `POLL_S` apart before they are `LONG_POLL_S` apart (0.3 s)
QUICK_LOOKS = 10


async def wait_for(pilot: "Pilot[Any]", predicate: Callable[[], Any], timeout: float = 15.0,
                   what: str = "the condition") -> Any:
    """Let the app run until `predicate()` is truthy (polling a real state, with a deadline)."""
    timeout = scaled(timeout)
    deadline = time.monotonic() + timeout
    looks = 0
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what} (last value: {value!r})")
        looks += 1
        await pilot.pause(POLL_S if looks <= QUICK_LOOKS else LONG_POLL_S)


async def wait_for_screen(pilot: "Pilot[Any]", screen_type: "type[S]", timeout: float = 15.0, what: str = "") -> "S":
    """The active screen, once it is a `screen_type` that has composed and mounted.

    A pushed screen is `app.screen` at once, but its widgets (and the focus its AUTO_FOCUS names)
    only exist after its own message loop has composed and mounted it.
    """
    def mounted() -> Any:
        screen = pilot.app.screen
        return screen if isinstance(screen, screen_type) and screen.is_mounted else None

    return await wait_for(pilot, mounted, timeout, what or f"the {screen_type.__name__}")


async def click_shown(pilot: "Pilot[Any]", selector: str, timeout: float = 15.0) -> None:
    """Click the widget `selector` of the active screen once the screen's layout shows it; fail if
    the click lands elsewhere.

    `pilot.click` aims at the widget's region in the last layout: a widget shown again (or on a
    screen just pushed) has no region until the next layout, and a click aimed at it then lands on
    whatever is at the screen's origin and is lost.
    """
    from textual.errors import NoWidget

    def shown() -> Any:
        screen = pilot.app.screen
        if not screen.is_mounted or not (found := screen.query(selector)):
            return None
        widget = found.first()
        region = widget.region
        if not region.area:
            return None
        try:
            at, _ = screen.get_widget_at(region.x, region.y)
        except NoWidget:  # nothing is laid out at that point yet
            return None
        return widget if at is widget else None

    last: list[Any] = [None]

    def settled() -> Any:
        """Shown where it was shown at the previous poll: a layout still moving (a preview being
        drawn above the buttons) would send the click to whatever takes the widget's old place."""
        widget = shown()
        where = widget.region if widget is not None else None
        steady = where is not None and where == last[0]
        last[0] = where
        return widget if steady else None

    widget = await wait_for(pilot, settled, timeout, f"{selector} to be shown")
    landed = await pilot.click(widget)
    assert landed, f"the click on {selector} did not land on it"
