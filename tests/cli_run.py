"""Running `sitetk` in-process in a test: the exit code, the output (parsed when `--json` was
given) and standard error, as the CLI tests of several features read them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tui.__main__ import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    try:
        data = json.loads(out) if "--json" in argv else out
    except json.JSONDecodeError:
        data = out
    return code, data, err
