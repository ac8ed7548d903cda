"""No test writes to the home of whoever runs the suite (tests/conftest.py `isolated_home`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import RUNNER_HOME
from tui.settings import Settings


def test_a_test_has_a_home_and_state_dir_of_its_own(tmp_path_factory: pytest.TempPathFactory) -> None:
    home = Path(os.environ["HOME"])
    assert home.is_relative_to(tmp_path_factory.getbasetemp()) and str(home) != RUNNER_HOME
    settings = Settings()
    assert settings.state_dir.is_relative_to(home) and settings.audit_log.is_relative_to(home)
