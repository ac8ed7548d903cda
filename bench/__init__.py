"""Benchmarks: each module `bench_*.py` exposes `run() -> list[Row]`; `python -m bench` runs them all."""
