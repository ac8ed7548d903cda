"""The real platform in every run: replay the recordings of tests/recordings against the embedded site.

Each `tests/recordings/<version>.json` holds what a site answered to the recorded scenario
(tests/recordings/scenario.py: every XML-RPC method and OneFlow route the console uses, with the
failures it handles). The replay starts the embedded site as the version the recording names
(`embedded_version`: the recorded version itself when its series is emulated), runs the same scenario and compares the normalised answers:
element structure and order, codes, messages and the values that do not vary. A difference fails
unless `tests/recordings/allowed.txt` explains it; an explanation no difference uses fails too.
`make record REAL_ENV=<state dir>/env` records a frontend again (README: "Recordings of the real
platform").
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimFactory, selected_versions
from tests.recordings import scenario as recorded_scenario
from tests.recordings.compare import compare, form_differences, judge, load_allowed, recording_label
from tests.recordings.normalise import element_forms, normalise_run
from tests.recordings.record import closest_embedded
from tests.recordings.wire import Endpoints, Run
from tui.adapters.cloud import CloudClient
from tui.adapters.flow import FlowClient
from tui.sim.platform import disk_resize_answers_vm_id, series

RECORDINGS = sorted(Path(recorded_scenario.__file__).parent.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
async def test_the_embedded_site_answers_as_the_recorded_platform(path: Path, site_factory: SimFactory,
                                                                  request: pytest.FixtureRequest) -> None:
    recording = _load(path)
    version, embedded = recording["version"], recording["embedded_version"]
    assert embedded == closest_embedded(version), f"{path.name}: replays on {embedded}, the closest is {closest_embedded(version)}"
    if not any(series(v) == series(embedded) for v in selected_versions(request.config)):
        pytest.skip(f"the {series(embedded)} series is not among the platform versions of this run")
    backend = recording.get("db_backend", "sqlite")
    server = site_factory(one_version=embedded, time_scale=0.002, db_backend=backend)
    run = Run(Endpoints(server.xmlrpc_url, server.flow_url, server.session), poll=0.01, wait_limit=60)
    try:
        await recorded_scenario.scenario(run)
    finally:
        await run.close()
    allowed = load_allowed()
    label = recording_label(version, backend)
    verdict = judge(label, compare(recording["calls"], normalise_run(run)), allowed)
    lines = [f"{label} (replayed on the embedded site {embedded}, {backend}): {d}" for d in verdict.unexplained]
    used = {allowance.line for _, allowance in verdict.allowed}
    lines += [f"{label}: allowed.txt line {a.line} explains no difference any more ({a.call} | {a.difference}): "
              "remove it" for a in allowed if a.covers(label) and a.line not in used]
    assert not lines, (f"{len(lines)} unexplained difference(s) from the recording {path.name} "
                       "(fix the embedded site, or explain it in tests/recordings/allowed.txt):\n" + "\n".join(lines))


def test_every_allowance_names_a_recorded_version_and_says_why() -> None:
    versions = [recording_label(r["version"], r.get("db_backend", "sqlite")) for r in map(_load, RECORDINGS)]
    for allowance in load_allowed():
        assert any(allowance.covers(v) for v in versions), \
            f"allowed.txt line {allowance.line}: no recording of version {allowance.versions!r}"
        assert len(allowance.reason) >= 10, f"allowed.txt line {allowance.line}: say why ({allowance.reason!r})"


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_each_recording_shows_which_id_a_disk_resize_answers(path: Path) -> None:
    """`one.vm.diskresize` answers the disk's ID before 7.4 and the VM's from 7.4 on
    (`tui.sim.platform.disk_resize_answers_vm_id`). The scenario's VM never has its disk's ID, so
    every recording must show which one its platform answered, and the replay then compares it."""
    recording = _load(path)
    (resize,) = [c for c in recording["calls"] if c["step"] == "vm: disk resize (POWEROFF)"]
    vm_symbol, disk_id = resize["request"][1], resize["request"][2]
    assert vm_symbol == "vm:a" and disk_id == 0, f"{path.name}: {resize['request']}"
    expected = vm_symbol if disk_resize_answers_vm_id(recording["version"]) else f"disk:{disk_id}"
    assert resize["answer"] == {"ok": True, "int": expected}, f"{path.name}: {resize['answer']}"


@pytest.mark.parametrize("path", RECORDINGS, ids=[p.stem for p in RECORDINGS])
def test_each_recording_keeps_how_its_elements_are_written(path: Path) -> None:
    """Every XML answer of a recording says how each of its elements was written (`forms`), so the
    replay compares that too: a recording normalised before forms were kept would check nothing."""
    for call in _load(path)["calls"]:
        answer = call["answer"]
        if "xml" in answer:
            assert len(answer.get("forms", [])) == len(answer["xml"]), f"{path.name} {call['step']!r}: no forms"


def test_the_form_of_an_element_is_compared_as_written() -> None:
    """`<X/>`, `<X></X>`, a CDATA section and plain text parse to the same element; the replay
    tells them apart, and an element holding elements on one side only is no difference of form."""
    text = "<A><B/><C></C><D><![CDATA[1]]></D><E>1</E><F><G>1</G></F><H/></A>"
    assert element_forms(text) == ["children", "<X/>", "<X></X>", "cdata", "text", "children", "text", "<X/>"]
    lines = ["/A", "/A/B", "/A/C", "/A/D = 1", "/A/E = 1", "/A/H"]
    recorded = {"xml": lines, "forms": ["children", "<X/>", "<X></X>", "cdata", "text", "<X></X>"]}
    replayed = {"xml": lines[:4] + ["/A/E = 2", "/A/H"], "forms": ["children", "<X></X>", "<X/>", "text", "cdata", "children"]}
    assert form_differences(recorded, replayed) == [
        "form: /A/B: recorded <X/>, embedded <X></X>", "form: /A/C: recorded <X></X>, embedded <X/>",
        "form: /A/D: recorded cdata, embedded text", "form: /A/E: recorded text, embedded cdata"]


def _public_methods(cls: type) -> set[str]:
    return {f"{cls.__name__}.{name}" for name, member in inspect.getmembers(cls, inspect.iscoroutinefunction)
            if not name.startswith("_") and name not in ("__aenter__", "__aexit__")}


def test_the_scenario_sends_every_method_of_the_adapters() -> None:
    """A method the console's adapters gain must be added to the recorded scenario (or say why not)."""
    methods = _public_methods(CloudClient) | _public_methods(FlowClient)
    covered = set(recorded_scenario.COVERS) | set(recorded_scenario.NOT_SENT)
    assert not methods - covered, f"adapter methods the recorded scenario does not send: {sorted(methods - covered)}"
    assert not covered - methods, f"the scenario lists methods the adapters no longer have: {sorted(covered - methods)}"


async def test_each_covered_method_is_sent_by_the_steps_that_say_so(sim_factory: SimFactory,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`COVERS` is checked against a run: every step it names exists and calls that adapter method
    (directly or through another: `acl_add` sends through `acl_addrule`)."""
    server = sim_factory(time_scale=0.002)
    run = Run(Endpoints(server.xmlrpc_url, server.flow_url, server.session), poll=0.01, wait_limit=60)
    sent: set[tuple[str, str]] = set()
    for cls in (CloudClient, FlowClient):
        for name in _public_methods(cls):
            attribute = name.split(".", 1)[1]
            monkeypatch.setattr(cls, attribute, _spy(name, getattr(cls, attribute), run, sent))
    try:
        await recorded_scenario.scenario(run)
    finally:
        await run.close()
    steps = {step for _, step in sent} | {e.step for e in run.exchanges}
    for method, prefixes in recorded_scenario.COVERS.items():
        for prefix in prefixes:
            matching = {s for s in steps if s.startswith(prefix)}
            assert matching, f"{method}: no step starts with {prefix!r}"
            assert any((method, s) in sent for s in matching), f"{method}: no step {prefix!r}... calls it"


def _spy(name: str, function: Any, run: Run, sent: set[tuple[str, str]]) -> Any:
    async def spy(*args: Any, **kwargs: Any) -> Any:
        if run.current_step:
            sent.add((name, run.current_step))
        return await function(*args, **kwargs)
    return spy
