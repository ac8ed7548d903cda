"""Compare a recording with a replay, and the allow-list of differences that are explained.

Exchanges pair up by step (the scenario's label) and their order within the step. A difference
is one line of text, naming what differs:

- `call: recorded X, embedded Y`, `step missing in the replay`, `step only in the replay`;
- `request: ...` (the scenario sent something else: a site-specific parameter);
- `ok`, `code`, `message`, `resp_id`, `fault`, `status`, `text`, `int`, `bool`: `<field>: recorded A, embedded B`;
- in an XML or JSON body: `missing: <line>` (the platform wrote it, the embedded site does not),
  `extra: <line>` (the other way round), `value: <path>: recorded A, embedded B`, `order: <line>`
  (both hold it, in another place);
- how an element both XML answers hold is written (its `forms`, tests.recordings.normalise.element_forms):
  `form: <path>: recorded <X></X>, embedded <X/>` (`<X/>`, `<X></X>`, `text`, `cdata`, `children`...).

`allowed.txt` explains differences, one per line: `versions | call or step | difference | reason`,
each of the first three an fnmatch pattern (`*` spans `/`): versions against the recorded version,
the second against the call (`one.image.info`, `GET /service/<document:service>`) or the step
label, the third against the difference. Entries no difference uses are reported too, so the list
stays what the recordings show.
"""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from tests.recordings.normalise import CHILDREN, NO_FORM

ALLOWED = Path(__file__).with_name("allowed.txt")


@dataclass(frozen=True)
class Difference:
    step: str
    call: str
    what: str

    def __str__(self) -> str:
        return f"{self.step!r} {self.call}: {self.what}"


@dataclass(frozen=True)
class Allowance:
    line: int
    versions: str
    call: str
    difference: str
    reason: str

    def covers(self, version: str) -> bool:
        return any(fnmatch.fnmatchcase(version, v.strip()) for v in self.versions.split(","))

    def allows(self, version: str, difference: Difference) -> bool:
        return (self.covers(version)
                and (fnmatch.fnmatchcase(difference.call, self.call) or fnmatch.fnmatchcase(difference.step, self.call))
                and fnmatch.fnmatchcase(difference.what, self.difference))


def recording_label(version: str, db_backend: str = "sqlite") -> str:
    """How allowed.txt names a recording: its version, with `+mysql` for a frontend on MySQL/MariaDB
    (the two backends answer the VM pool's query differently)."""
    return version if db_backend == "sqlite" else f"{version}+{db_backend}"


def load_allowed(path: Path = ALLOWED) -> list[Allowance]:
    allowed: list[Allowance] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [part.strip() for part in line.split(" | ")]
        if len(parts) != 4 or not all(parts):
            raise ValueError(f"{path.name}:{number}: expected 'versions | call or step | difference | reason'")
        allowed.append(Allowance(number, *parts))
    return allowed


def compare(recorded: list[dict[str, Any]], replayed: list[dict[str, Any]]) -> list[Difference]:
    """Every difference between a recording's calls and a replay's."""
    differences: list[Difference] = []
    rec_steps, rep_steps = _by_step(recorded), _by_step(replayed)
    for step in rec_steps:
        if step not in rep_steps:
            differences.append(Difference(step, rec_steps[step][0]["call"], "step missing in the replay"))
    for step, calls in rep_steps.items():
        if step not in rec_steps:
            differences.append(Difference(step, calls[0]["call"], "step only in the replay"))
            continue
        before = rec_steps[step]
        for index in range(max(len(before), len(calls))):
            if index >= len(before):
                differences.append(Difference(step, calls[index]["call"], "call only in the replay"))
            elif index >= len(calls):
                differences.append(Difference(step, before[index]["call"], "call missing in the replay"))
            else:
                differences += _exchange(step, before[index], calls[index])
    return differences


def _by_step(calls: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    steps: dict[str, list[dict[str, Any]]] = {}
    for call in calls:
        steps.setdefault(call["step"], []).append(call)
    return steps


def _exchange(step: str, recorded: dict[str, Any], replayed: dict[str, Any]) -> list[Difference]:
    call = recorded["call"]
    if replayed["call"] != call:
        return [Difference(step, call, f"call: recorded {call}, embedded {replayed['call']}")]
    found: list[str] = []
    if recorded.get("request") != replayed.get("request"):
        if isinstance(recorded.get("request"), list) and all(isinstance(x, str) for x in recorded["request"] or []) \
                and call.startswith(("GET", "POST", "DELETE", "PUT")):
            found += [f"request {d}" for d in diff_lines(recorded["request"], replayed.get("request") or [])]
        else:
            found.append(f"request: recorded {_short(recorded.get('request'))}, embedded {_short(replayed.get('request'))}")
    before, after = recorded["answer"], replayed["answer"]
    for key in ("ok", "fault", "status", "code", "message", "resp_id", "int", "bool", "text"):
        if key in before or key in after:
            if before.get(key) != after.get(key):
                found.append(f"{key}: recorded {_short(before.get(key))}, embedded {_short(after.get(key))}")
    for key in ("xml", "json"):
        if key in before or key in after:
            found += diff_lines(*_without_one_sided_shapes(before.get(key) or [], after.get(key) or []))
    found += form_differences(before, after)
    return [Difference(step, call, what) for what in found]


def form_differences(recorded: dict[str, Any], replayed: dict[str, Any]) -> list[str]:
    """How the elements both XML answers hold are written, where it differs: the same line in
    both (or the same path, its value differing) paired as `diff_lines` pairs them. An element
    that holds elements on one side and none on the other differs in what it holds (the lines say
    so, or it is a site object's list), not in how it is written."""
    if "forms" not in recorded or "forms" not in replayed:
        return []
    before = list(zip(recorded["xml"], recorded["forms"], strict=True))
    after = list(zip(replayed["xml"], replayed["forms"], strict=True))
    pairs: list[tuple[str, str, str]] = []
    matcher = difflib.SequenceMatcher(None, [line for line, _ in before], [line for line, _ in after], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [(_path(line), form, other) for (line, form), (_, other) in zip(before[i1:i2], after[j1:j2], strict=True)]
        else:
            unpaired = list(after[j1:j2])
            for line, form in before[i1:i2]:
                other = next((item for item in unpaired if _path(item[0]) == _path(line)), None)
                if other is not None:
                    unpaired.remove(other)
                    pairs.append((_path(line), form, other[1]))
    found = [f"form: {path}: recorded {form}, embedded {other}" for path, form, other in pairs
             if form != other and NO_FORM not in (form, other) and (CHILDREN in form) == (CHILDREN in other)]
    return list(dict.fromkeys(found))


def _shape_tag(line: str) -> str | None:
    head = line.split(" = ", 1)[0]
    return head if head.endswith(" (order by ID)") else None


def _without_one_sided_shapes(recorded: list[str], replayed: list[str]) -> tuple[list[str], list[str]]:
    """A pool's order is compared when both sites list several items: the other site may hold
    only the run's one (its other objects are the site's)."""
    rec = {_shape_tag(line) for line in recorded} - {None}
    rep = {_shape_tag(line) for line in replayed} - {None}
    return ([line for line in recorded if _shape_tag(line) in rep or _shape_tag(line) is None],
            [line for line in replayed if _shape_tag(line) in rec or _shape_tag(line) is None])


def diff_lines(recorded: list[str], replayed: list[str]) -> list[str]:
    """The differences between two bodies' lines (see the module docstring)."""
    removed: list[str] = []
    added: list[str] = []
    matcher = difflib.SequenceMatcher(None, recorded, replayed, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += recorded[i1:i2]
            added += replayed[j1:j2]
    found: list[str] = []
    for line in list(removed):
        if line in added:
            removed.remove(line)
            added.remove(line)
            found.append(f"order: {line}")
    added_paths: dict[str, list[str]] = {}
    for line in added:
        added_paths.setdefault(_path(line), []).append(line)
    for line in removed:
        others = added_paths.get(_path(line))
        if others:
            other = others.pop(0)
            added.remove(other)
            found.append(f"value: {_path(line)}: recorded {_value(line)}, embedded {_value(other)}")
        else:
            found.append(f"missing: {line}")
    found += [f"extra: {line}" for line in added]
    return list(dict.fromkeys(found))


def _path(line: str) -> str:
    return line.split(" = ", 1)[0]


def _value(line: str) -> str:
    return line.split(" = ", 1)[1] if " = " in line else "(element)"


def _short(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass
class Verdict:
    unexplained: list[Difference]
    allowed: list[tuple[Difference, Allowance]]


def judge(version: str, differences: Iterable[Difference], allowed: list[Allowance]) -> Verdict:
    verdict = Verdict([], [])
    for difference in differences:
        reason = next((a for a in allowed if a.allows(version, difference)), None)
        if reason is None:
            verdict.unexplained.append(difference)
        else:
            verdict.allowed.append((difference, reason))
    return verdict
