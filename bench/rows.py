"""The row every benchmark reports: a figure, its same-run baseline, the ratio and the target."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    group: str
    name: str
    value: float
    unit: str
    #: the same-run baseline the value is compared with (None when the target is absolute)
    baseline: float | None = None
    #: "ratio <= 2.0" or "value <= 50 ms" style target description
    target: str = ""
    #: whether the target is met (None when the figure is informative only)
    met: bool | None = None

    @property
    def ratio(self) -> float | None:
        if self.baseline in (None, 0):
            return None
        return self.value / self.baseline  # type: ignore[operator]

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


def ratio_row(group: str, name: str, value: float, baseline: float, unit: str, max_ratio: float | None) -> Row:
    """A figure judged as a ratio against a baseline measured in the same run."""
    met = None if max_ratio is None else (value / baseline if baseline else float("inf")) <= max_ratio
    target = "" if max_ratio is None else f"ratio <= {max_ratio:g}"
    return Row(group, name, value, unit, baseline, target, met)


def limit_row(group: str, name: str, value: float, unit: str, limit: float | None) -> Row:
    """A figure judged against an absolute limit (e.g. a keystroke under 50 ms)."""
    met = None if limit is None else value <= limit
    target = "" if limit is None else f"<= {limit:g} {unit}"
    return Row(group, name, value, unit, None, target, met)
