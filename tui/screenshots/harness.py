"""Running a scene: its demo site named by the fixed scene address, the app pointed at it, the driver
that prepares it, and the SVG (and PNG) written from the result."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import re
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterator

from tui import timing
from tui.screenshots.scene import SCENE_HOST, SCENE_PORT, Scene, SceneContext, frozen_clock
from tui.settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from textual.pilot import Pilot

    from tui.app import SiteToolkitApp
    from tui.sim.server import SimServer


OUTPUT_DIR = Path("screenshots")


def worker_listen_host(worker: str) -> str:
    """The loopback address the scene sites of pytest-xdist worker `worker` (`gw3`) listen on:
    127.47.48.1 for gw0, 127.47.48.2 for gw1...; SCENE_HOST for any other process (`master`)."""
    if worker.startswith("gw") and worker[2:].isdigit():
        number = int(worker[2:])
        return f"127.47.{48 + number // 254}.{number % 254 + 1}"
    return SCENE_HOST


@contextlib.contextmanager
def _scene_lock(listen_host: str) -> Iterator[None]:
    """Serialize the scenes that listen on one address, across processes (two test runs, or the
    screenshot command beside a test run)."""
    with open(Path(tempfile.gettempdir()) / f"sitetk-scene-site-{listen_host}.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def _routed(listen_host: str) -> Iterator[None]:
    """Connections of this process to the scene address go to `listen_host` (same port): the app,
    its pictures and the site's own URLs keep naming SCENE_HOST:SCENE_PORT. The route is taken
    where every client connects, `socket.socket.connect` (http.client's create_connection, and
    asyncio's sock_connect under httpx, which resolves no IP literal)."""
    if listen_host == SCENE_HOST:
        yield
        return
    connect = socket.socket.connect

    def routed(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and address[:2] == (SCENE_HOST, SCENE_PORT):
            address = (listen_host, SCENE_PORT, *address[2:])
        connect(self, address)

    setattr(socket.socket, "connect", routed)
    try:
        yield
    finally:
        setattr(socket.socket, "connect", connect)


@contextlib.contextmanager
def scene_site(scene: Scene, state_dir: Path, listen_host: str = SCENE_HOST) -> Iterator["SimServer | None"]:
    """The demo site a scene needs, at the fixed scene address (None when the scene wants it down).

    Its URLs always name SCENE_HOST:SCENE_PORT (the pictures show them). It listens on `listen_host`
    (`worker_listen_host`: each test worker its own), and this process's connections to the scene
    address are routed there while the scene runs, so the scenes of several workers run at once."""
    from tui.sim.runner import start_sim
    from tui.sim.state import SimConfig

    with _scene_lock(listen_host), _routed(listen_host):
        if not scene.site_up:
            yield None
            return
        config = SimConfig(scenario=scene.scenario, extra_vms=scene.extra_vms, time_scale=scene.time_scale)
        server = start_sim(config, state_dir=state_dir, host=SCENE_HOST, port=SCENE_PORT, listen_host=listen_host)
        try:
            yield server
        finally:
            server.stop()
            timing.CLOCK.resume()  # a scene may stop the procedures' clock for its picture


def scene_settings(scene: Scene, server: "SimServer | None") -> Settings:
    """Settings pointing at the scene's site; auto-refresh effectively off, default theme."""
    if server is not None:
        from tui.console import demo_settings

        # the site's repositories and vault password file; console state inside the scene's state dir
        settings = demo_settings(server, Settings(state_dir=server.site.state_dir / "console",
                                                  audit_log=server.site.state_dir / "console" / "audit.log"))
    else:
        url = f"http://{SCENE_HOST}:{SCENE_PORT}"
        settings = Settings.for_site(f"{url}/RPC2", "oneadmin:scene", url, (url,))
    # the product's call timeout: a scene's reads are never cut short by a loaded machine (a scene
    # whose toolkit-deployment read took over 5 s under the whole suite's load pictured its failure
    # note, a taller site panel behind the component flow); the connect-error scene, where nothing
    # listens, sets the 5 s it shows
    values: dict[str, Any] = {"refresh_interval": 3600.0, "theme": "textual-dark", "xmlrpc_timeout": timing.PROFILE.call_timeout}
    values.update(scene.settings_overrides)
    return dataclasses.replace(settings, **values)


def scene_app(scene: Scene, server: "SimServer | None") -> "SiteToolkitApp":
    from tui.app import SiteToolkitApp
    from tui.procedures.connection import SiteConnection

    return SiteToolkitApp(SiteConnection(scene_settings(scene, server)), read_only=scene.read_only,
                          clock=frozen_clock, notification_timeout=3600, initial_screen=scene.start_screen)


def scene_driver(scene: Scene, server: "SimServer | None") -> Callable[["Pilot[Any]"], Awaitable[None]]:
    """The `run_before` for `snap_compare` (and for `write_scene`)."""

    async def drive(pilot: "Pilot[Any]") -> None:
        await scene.prepare(SceneContext(pilot, server))
        _steady_cursors(pilot.app)
        await pilot.pause()

    return drive


def _steady_cursors(app: Any) -> None:
    """Stop text cursors blinking, so a picture does not depend on when it was taken."""
    from textual.widgets import Input, TextArea

    for screen in app.screen_stack:
        for widget in screen.query("Input, TextArea"):
            if isinstance(widget, (Input, TextArea)):
                widget.cursor_blink = False


_RECT = re.compile(r'<rect fill="(?P<fill>[^"]+)" x="(?P<x>[\d.]+)" y="(?P<y>[\d.]+)" width="(?P<width>[\d.]+)" '
                   r'height="(?P<height>[\d.]+)" shape-rendering="crispEdges"/>')
_RECT_RUN = re.compile(f"(?:{_RECT.pattern})+")


def canonical_svg(svg: str) -> str:
    """`svg` with each run of same-coloured background cells drawn as one rectangle.

    How a row's background is cut into rectangles follows how its text was cut into segments, which
    can differ between two renders of the same picture (an empty label's zero-width segment, a
    container's padding drawn before or after a child's first paint): CI saw both cuts of the same
    hosts-move scene. The picture is the same, so the snapshot must be too.
    """

    def merge(run: re.Match[str]) -> str:
        merged: list[list[str]] = []
        for rect in _RECT.finditer(run.group(0)):
            fill, x, y, width, height = rect.group("fill", "x", "y", "width", "height")
            if float(width) == 0:
                continue
            last = merged[-1] if merged else None
            if (last is not None and last[0] == fill and last[2] == y and last[4] == height
                    and abs(float(last[1]) + float(last[3]) - float(x)) < 0.05):
                last[3] = f"{float(last[3]) + float(width):.1f}".rstrip("0").rstrip(".")
            else:
                merged.append([fill, x, y, width, height])
        return "".join(f'<rect fill="{fill}" x="{x}" y="{y}" width="{width}" height="{height}" '
                       f'shape-rendering="crispEdges"/>' for fill, x, y, width, height in merged)

    return _RECT_RUN.sub(merge, svg)


async def _capture(scene: Scene, server: "SimServer | None") -> str:
    app = scene_app(scene, server)
    async with app.run_test(size=scene.size) as pilot:
        await scene_driver(scene, server)(pilot)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        return canonical_svg(app.export_screenshot(title=f"sitetk: {scene.screen} ({scene.state})"))


_FALLBACK_FONT = "DejaVu Sans Mono"
_missing_cache: dict[str, bool] = {}


def _missing_from_fira(char: str) -> bool:
    """Whether Fira Code lacks `char` (asked of fontconfig; False when it cannot be asked)."""
    if char not in _missing_cache:
        import shutil
        import subprocess

        if shutil.which("fc-list") is None:
            _missing_cache[char] = False
        else:
            out = subprocess.run(["fc-list", f":charset={ord(char):04x}", "family"], capture_output=True, text=True,
                                 check=False).stdout
            _missing_cache[char] = "fira code" not in out.lower()
    return _missing_cache[char]


def png_font_problem() -> str:
    """Why PNGs cannot be rendered faithfully here ("" when they can): the SVGs name Fira Code, and
    without it cairosvg silently takes a proportional font, so every PNG would change for nothing."""
    import shutil
    import subprocess

    if shutil.which("fc-list") is None:
        return "fontconfig's fc-list is not installed (apt install fontconfig fonts-firacode)"
    families = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True, check=False).stdout
    if "fira code" not in families.lower():
        return "the Fira Code font is not installed (apt install fonts-firacode), or write SVGs only with --no-png"
    return ""


def with_glyph_fallback(svg: str) -> str:
    """Wrap glyphs Fira Code lacks (✔ ✘ ...) in a tspan of a font that has them, for cairosvg,
    which does not fall back per glyph as terminals do. Only the PNG uses this."""
    chars = {c for c in set(svg) if ord(c) > 0x2000 and _missing_from_fira(c)}
    for char in chars:
        svg = svg.replace(char, f'<tspan style="font-family:\'{_FALLBACK_FONT}\'">{char}</tspan>')
    return svg


def write_scene(scene: Scene, output: Path, *, png: bool = True) -> list[Path]:
    """Render one scene to `<output>/<screen>-<state>.svg` (and `.png`); returns the paths written."""
    output.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sitetk-scene-") as state_dir:
        with scene_site(scene, Path(state_dir)) as server:
            svg = asyncio.run(_capture(scene, server))
    svg_path = output / f"{scene.name}.svg"
    svg_path.write_text(svg, encoding="utf-8")
    written = [svg_path]
    if png:
        import cairosvg

        png_path = svg_path.with_suffix(".png")
        cairosvg.svg2png(bytestring=with_glyph_fallback(svg).encode("utf-8"), write_to=str(png_path),
                         output_width=scene.size[0] * 12)
        written.append(png_path)
    return written
