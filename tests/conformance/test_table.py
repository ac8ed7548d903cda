"""The conformance table itself: every row names the upstream source file it follows."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import tests.conformance

#: a path in OpenNebula/one (src/..., include/...) or a mention of appmarket-simple
_SOURCE = re.compile(r"\b(?:src|include|share)/[\w./-]+|appmarket-simple")


def test_every_row_names_the_upstream_file_it_follows() -> None:
    rows = 0
    for info in pkgutil.iter_modules(tests.conformance.__path__):
        if not info.name.startswith("test_") or info.name == "test_table":
            continue
        module = importlib.import_module(f"tests.conformance.{info.name}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("test_") and function.__module__ == module.__name__:
                rows += 1
                assert _SOURCE.search(function.__doc__ or ""), f"{info.name}.{name} names no upstream file"
    assert rows
