"""The benchmarks still run, at tiny sizes: every figure is produced, with its same-run baseline.

No timing is asserted (figures on a shared test machine mean nothing); only that each benchmark
reaches the states it measures and reports sane rows. The site runs in its own process, as in
`make bench`.
"""

from __future__ import annotations

import math
import os
import shutil
import sys

import pytest

from bench import bench_db_search, bench_sim_pool, bench_vm_list
from bench.console_driver import RefreshTiming
from bench.floor import FloorSample, floor_once, parse_vmpool, post_xmlrpc, vmpool_body
from bench.rows import Row
from bench.sim_process import SimProcess, SimProcessError

VMS = 200


def by_name(rows: list[Row]) -> dict[str, Row]:
    return {row.name: row for row in rows}


def assert_sane(rows: list[Row]) -> None:
    for row in rows:
        assert math.isfinite(row.value) and row.value > 0, row
        if row.baseline is not None:
            assert row.baseline > 0 and row.ratio is not None, row


def test_floor_reads_every_vm_of_a_site_in_its_own_process() -> None:
    with SimProcess(vms=VMS) as sim:
        sample, pool = floor_once(sim.xmlrpc, sim.session)
        raw = post_xmlrpc(sim.xmlrpc, vmpool_body(sim.session))
    assert pool.tag == "VM_POOL" and sample.vms == len(pool) >= VMS
    assert sample.post_s > 0 and sample.parse_s > 0 and sample.size_bytes > 0
    assert len(parse_vmpool(raw)) == sample.vms
    assert not sim.state_dir.exists()  # stopped: its state directory is gone


def test_a_failed_call_is_reported_not_parsed() -> None:
    with SimProcess(vms=0) as sim:
        with pytest.raises(RuntimeError, match="vmpool.info failed"):
            floor_once(sim.xmlrpc, "oneadmin:wrong-password")


def test_a_site_that_cannot_start_says_why() -> None:
    with pytest.raises(SimProcessError, match="exited with"):
        SimProcess(vms=0, extra_args=("--port", "99999")).start()


def test_sim_pool_bench_reports_floor_and_adapter() -> None:
    rows = bench_sim_pool.run(sizes=(VMS,), runs=1)
    assert_sane(rows)
    names = by_name(rows)
    adapter = next(row for name, row in names.items() if name.startswith("adapter list_vms"))
    floor = next(row for name, row in names.items() if name.startswith("floor:"))
    assert adapter.baseline == floor.value
    assert any(name.startswith("sim serves vmpool.info") for name in names)


def test_vm_list_bench_reports_refresh_keystroke_stall_and_memory() -> None:
    rows = bench_vm_list.run(sizes=(VMS,), refreshes=1, startup_runs=0, keystroke_size=VMS, stall_size=VMS,
                             memory_size=VMS)
    assert_sane(rows)
    names = " | ".join(by_name(rows))
    for figure in ("floor:", "refresh, every VM parsed:", "data arrival to visible rows", "longest loop stall",
                   "filter keystroke", "first load: first page read to its rows painted", "peak memory, floor process",
                   "peak memory, console", "peak memory, sitetk setup status", "peak memory, sitetk hosts check",
                   "pool answer in one call, one.vmpool.info"):
        assert figure in names
    refresh = next(row for row in rows if row.name.startswith("refresh, every VM parsed:"))
    assert f"({VMS:,} rows)" in refresh.name  # the fresh site has no VM of its own


def test_the_refresh_part_runs_alone() -> None:
    """`python -m bench vm_list --only refresh`: the refreshes against their floor, nothing else."""
    rows = bench_vm_list.PARTS["refresh"](1, sizes=(VMS,))
    assert_sane(rows)
    refresh = next(row for row in rows if row.name.startswith("refresh, every VM parsed:"))
    assert refresh.baseline == next(row for row in rows if row.name.startswith("floor:")).value
    assert not any("keystroke" in row.name or "peak memory" in row.name or "stall" in row.name for row in rows)


def test_start_up_bench_times_both_apps_through_the_first_rows_hook() -> None:
    rows = bench_vm_list.startup_rows(runs=1, demo_vms=5, warm_up=False)
    assert_sane(rows)
    demo = next(row for row in rows if "sitetk --demo" in row.name)
    minimal = next(row for row in rows if "minimal Textual app" in row.name)
    assert demo.baseline == minimal.value


def test_the_start_up_phases_are_marked_in_order_in_both_programs() -> None:
    """`vm_list --only phases`: each program reaches every phase it has, in order (CPU and wall
    time growing), and reports its screen updates; the console's wrappers still find the methods
    they mark (a rename would drop a phase here)."""
    rows = bench_vm_list.phases_rows(runs=1, demo_vms=5)
    assert_sane(rows)
    names = [row.name for row in rows]
    for program, phases in (("console", bench_vm_list.PHASES), ("bare app", ("imported", "mounted", "rows painted"))):
        marked = [row for row in rows if row.name.startswith(f"start-up phase, {program}:")]
        assert [row.name.split(": ", 1)[1].split(" (")[0] for row in marked] == list(phases)
        assert [row.value for row in marked] == sorted(row.value for row in marked)
        assert any(name.startswith(f"start-up, {program}: screen updates") for name in names)


def test_the_database_search_benchmark_measures_every_page_size() -> None:
    rows = by_name(bench_db_search.run(sizes=(VMS,), runs=1, pages=(50, 150)))
    assert_sane(list(rows.values()))
    assert {f"pages of {p}, {VMS} VMs" for p in (50, 150)} <= {name.split(" (")[0] for name in rows}
    assert any(name.startswith(f"one call, {VMS} VMs") and name.endswith("sqlite SELECT") for name in rows)


def test_one_part_of_a_benchmark_runs_alone_and_leaves_the_whole_runs_table(monkeypatch, tmp_path, capsys) -> None:
    """`python -m bench vm_list --only startup --runs N`: that part alone, N repetitions, its table
    printed and a timestamped copy written; latest.json (the last whole run's) is left alone."""
    import bench.__main__ as bench_main
    from bench.rows import ratio_row

    calls: list[int] = []

    def startup(runs: int = 15) -> list[Row]:
        calls.append(runs)
        return [ratio_row("vm list (issue 3)", "start-up: fake", 130.0, 100.0, "ms", 1.3)]

    monkeypatch.setattr(bench_vm_list, "PARTS", {"startup": startup})
    monkeypatch.setattr(bench_main, "RESULTS", tmp_path)
    (tmp_path / "latest.json").write_text("the whole run")
    assert bench_main.main(["vm_list", "--only", "startup", "--runs", "4"]) == 0
    assert calls == [4]
    assert "start-up: fake" in capsys.readouterr().out
    assert (tmp_path / "latest.json").read_text() == "the whole run"
    [written] = tmp_path.glob("bench-*.json")
    assert '"only": "bench_vm_list --only startup"' in written.read_text()
    with pytest.raises(SystemExit, match="no part 'keystroke'"):
        bench_main.main(["vm_list", "--only", "keystroke"])
    for argv in (["--only", "startup"], ["vm_list", "sim_pool", "--only", "startup"], ["vm_list", "--runs", "3"]):
        with pytest.raises(SystemExit):
            bench_main.main(argv)


def test_the_refresh_is_judged_on_the_medians_of_both_sides() -> None:
    """One lucky floor run (or refresh) moves neither side: each is the median of its runs."""
    result = bench_vm_list.SizeResult(10_000, listed=10_000)
    result.floors = [FloorSample(0.1, total - 0.1, 1, 10_000) for total in (0.5, 0.7, 0.72)]
    result.refreshes = [RefreshTiming(total, 0.05, 0.0) for total in (0.97, 1.0, 1.04)]
    result.floor_cpu_s, result.refresh_cpu_s = [0.5, 0.6, 0.7], [1.0, 1.1, 1.2]
    rows = by_name(bench_vm_list.console_rows(result))
    judged = next(row for name, row in rows.items() if name.startswith("refresh, every VM parsed:"))
    assert judged.value == pytest.approx(1000.0) and judged.baseline == pytest.approx(700.0)
    assert "spread 970-1,040 ms" in judged.name
    best = next(row for name, row in rows.items() if name.startswith("best of the same 3"))
    assert best.value == pytest.approx(970.0) and best.baseline == pytest.approx(500.0)
    cpu = next(row for name, row in rows.items() if name.startswith("CPU time of the process"))
    assert cpu.value == pytest.approx(1100.0) and cpu.baseline == pytest.approx(600.0)


def test_the_instruction_count_is_read_from_cachegrinds_summary() -> None:
    from bench.instructions import NoCount, summary_instructions

    assert summary_instructions("desc: I1 cache: 32768 B\ncmd: python\nevents: Ir\nsummary: 987654321\n") == 987654321
    for broken in ("", "events: Ir\n", "summary: lots\n"):
        with pytest.raises(NoCount):
            summary_instructions(broken)


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_a_programs_instructions_to_its_first_rows_are_counted_the_same_twice(tmp_path) -> None:
    """Under valgrind, in a pty, up to the first-rows mark; hash randomisation off, so a program
    that does the same work counts the same (here within 0.5 %), and more work counts more."""
    from bench.instructions import instructions_to_first_rows

    def program(loops: int) -> list[str]:
        return [sys.executable, "-c", f"import time\nfor _ in range({loops}): pass\n"
                "print('sitetk-bench first-rows %f cpu %f' % (time.monotonic(), time.process_time()), flush=True)"]

    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    small = [instructions_to_first_rows(program(1), env) for _ in range(2)]
    large = instructions_to_first_rows(program(200_000), env)
    assert abs(small[0] - small[1]) <= 0.005 * small[0]
    assert large > small[0] + 1_000_000


def test_a_broken_valgrind_leaves_the_instructions_unmeasured_not_the_run_ended(monkeypatch, capsys) -> None:
    """The figure is informative: valgrind installed but writing no count gives no row and a line
    saying why, and the rest of `make bench` goes on."""
    from bench.instructions import NoCount

    def no_count(*_args: object, **_kwargs: object) -> int:
        raise NoCount("no instruction count in cachegrind's output")

    monkeypatch.setattr(bench_vm_list, "valgrind", lambda: "/usr/bin/valgrind")
    monkeypatch.setattr(bench_vm_list, "first_rows", lambda *_args, **_kwargs: None)
    monkeypatch.setattr(bench_vm_list, "instructions_to_first_rows", no_count)
    assert bench_vm_list.instruction_rows(runs=1, demo_vms=5) == []
    assert "start-up instructions not measured: no instruction count" in capsys.readouterr().err
