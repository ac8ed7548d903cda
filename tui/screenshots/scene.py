"""What a scene is: `Scene` (a screen, a state, the demo site it needs and its `prepare`),
`SceneContext` (what `prepare` gets) and the fixed address, clock and size every scene shares."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from tui.screenshots.pilot_waits import S, click_shown, wait_for, wait_for_screen

if TYPE_CHECKING:  # pragma: no cover
    from textual.pilot import Pilot

    from tui.app import SiteToolkitApp
    from tui.sim.server import SimServer


#: where scene sites listen: a loopback address of their own and the platform's usual port
SCENE_HOST = "127.47.47.47"
SCENE_PORT = 2633
#: the frozen clock of every scene
FROZEN_NOW = datetime(2025, 3, 14, 9, 26, 53, tzinfo=timezone.utc)
DEFAULT_SIZE = (140, 40)


def frozen_clock() -> datetime:
    return FROZEN_NOW


@dataclass
class SceneContext:
    """What a scene's `prepare` gets: the pilot, the site (None when it is down) and helpers."""

    pilot: "Pilot[Any]"
    server: "SimServer | None"

    @property
    def app(self) -> "SiteToolkitApp":
        return self.pilot.app  # type: ignore[return-value]

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 15.0, what: str = "the condition") -> Any:
        return await wait_for(self.pilot, predicate, timeout, what)

    async def wait_for_screen(self, screen_type: type[S], timeout: float = 15.0, what: str = "") -> S:
        return await wait_for_screen(self.pilot, screen_type, timeout, what)

    async def click(self, selector: str, timeout: float = 15.0) -> None:
        await click_shown(self.pilot, selector, timeout)


Prepare = Callable[[SceneContext], Awaitable[None]]


@dataclass(frozen=True)
class Scene:
    """One screenshot: `<screen>-<state>.svg` after `prepare` ran against a fresh demo site."""

    screen: str
    state: str
    prepare: Prepare
    scenario: str = "fresh"
    extra_vms: int = 0
    read_only: bool = False
    size: tuple[int, int] = DEFAULT_SIZE
    #: False: nothing listens at the endpoint when the app starts (start-up failure scenes)
    site_up: bool = True
    #: time scale of the demo site (small: state machines settle fast)
    time_scale: float = 0.01
    settings_overrides: dict[str, Any] = field(default_factory=dict)
    #: the registered screen the console starts on (its `initial_screen`): the one the scene shows,
    #: so that no VM list is built, loaded and painted under it first (`prepare` still opens it: a
    #: no-op once it is shown)
    start_screen: str = "vms"

    @property
    def name(self) -> str:
        return f"{self.screen}-{self.state}"
