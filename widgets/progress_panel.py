"""Steps of a long operation with a state glyph each and an overall progress bar.

The panel is fed plain values (step name, state, message, done, total); it does not know what
produced them. States: "pending", "running", "done", "failed", "skipped".
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import ProgressBar, Static

from widgets.state_cell import StateLook, StatePalette

STEP_PALETTE = StatePalette(
    {
        "pending": StateLook("dim", "·"),
        "running": StateLook("bold yellow", "▶"),
        "done": StateLook("green", "✔"),
        "failed": StateLook("bold red", "✘"),
        "skipped": StateLook("cyan", "↷"),
    },
    default=StateLook("", "?"),
)


class ProgressPanel(Vertical):
    """A list of named steps and a bar for the whole operation."""

    DEFAULT_CSS = """
    ProgressPanel { height: auto; width: 1fr; }
    ProgressPanel > #progress-steps { height: auto; width: 1fr; }
    ProgressPanel > ProgressBar { margin: 1 0 0 0; }
    """

    def __init__(self, steps: Sequence[str] = (), *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._order: list[str] = list(steps)
        self._state: dict[str, tuple[str, str]] = {s: ("pending", "") for s in steps}

    def compose(self) -> ComposeResult:
        yield Static(self._render_steps(), id="progress-steps")
        yield ProgressBar(total=max(1, len(self._order)), show_eta=False, id="progress-bar")

    def _render_steps(self) -> Text:
        lines = Text()
        for n, step in enumerate(self._order):
            state, message = self._state[step]
            look = STEP_PALETTE.look(state)
            if n:
                lines.append("\n")
            lines.append(look.glyph, look.style)
            lines.append(" ")
            lines.append(step, "bold" if state == "running" else "")
            lines.append(f"  {state}", look.style)
            if message:
                lines.append(f"  {message}", "dim")
        return lines

    def set_steps(self, steps: Sequence[str]) -> None:
        self._order = list(steps)
        self._state = {s: ("pending", "") for s in steps}
        self._repaint(0, len(self._order))

    def step_state(self, step: str) -> str:
        return self._state.get(step, ("pending", ""))[0]

    def update_step(self, step: str, state: str, message: str = "", *, done: int | None = None,
                    total: int | None = None) -> None:
        """Record a step's state; `done`/`total` move the bar (default: finished steps / steps)."""
        if step not in self._state:
            self._order.append(step)
        self._state[step] = (state, message)
        if done is None or total is None:
            total = len(self._order)
            done = sum(1 for s, _ in self._state.values() if s in ("done", "skipped", "failed"))
        self._repaint(done, total)

    def _repaint(self, done: int, total: int) -> None:
        if not self.is_mounted:
            return
        self.query_one("#progress-steps", Static).update(self._render_steps())
        bar = self.query_one("#progress-bar", ProgressBar)
        bar.update(total=max(1, total), progress=done)
