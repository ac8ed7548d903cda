"""Bounded readers (issue 15, item 6): YAML alias bombs, devices and FIFOs fail fast with a message.

Before: a YAML alias bomb made `sitetk site check` use 1.4 GB and not finish; an input path of
/dev/zero or a FIFO hung and ate memory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tui.__main__ import main
from tui.cli.common import EXIT_OK
from tui.domain.bounded import MAX_TREE_VALUES, BoundedInputError, check_tree, read_text_file
from tui.sim.server import SimServer

BOMB = "\n".join(["a: &a [x, x, x, x, x, x, x, x, x]"]
                 + [f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join([f'*{chr(97 + n)}'] * 9)}]" for n in range(9)]) + "\n"


def test_a_yaml_alias_bomb_is_refused_by_site_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bomb = tmp_path / "core.yaml"
    bomb.write_text(BOMB)  # 9**10 values once expanded, 10 lines of text
    code = main(["site", "check", str(bomb), "--json"])
    out = capsys.readouterr().out
    assert code != EXIT_OK and f"more than {MAX_TREE_VALUES:,} values" in out


def test_check_tree_counts_shared_values_as_expanded() -> None:
    leaf = list(range(10))
    shared: list[object] = [leaf] * 10
    for _ in range(6):
        shared = [shared] * 10
    with pytest.raises(BoundedInputError, match="expands to more than"):
        check_tree(shared, "the document")
    check_tree({"a": [1, 2, 3], "b": {"c": "d"}}, "a small document")


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
def test_only_regular_files_are_read(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if kind == "device":
        path = Path("/dev/zero")
    elif kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)  # nobody writes: reading it would block for ever
    else:
        path = tmp_path
    with pytest.raises(BoundedInputError, match="not a regular file"):
        read_text_file(path, "the input file")
    code = main(["site", "check", str(path), "--json"])
    assert code != EXIT_OK and "not a regular file" in capsys.readouterr().out


def test_a_fifo_as_vault_password_file_is_refused_without_blocking(tmp_path: Path) -> None:
    from tui.adapters.vault import read_password_file
    from tui.errors import SiteError

    fifo = tmp_path / "vault-pass"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(SiteError, match="unreadable") as info:
        read_password_file(fifo)
    assert "not a regular file" in info.value.detail


def test_the_audit_log_is_read_from_its_newest_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tui.procedures import audit

    log = tmp_path / "audit.log"
    old = '{"operation": "old", "pad": "' + "x" * 200 + '"}\n'
    log.write_text(old * 50 + '{"operation": "newest"}\n')
    monkeypatch.setattr(audit, "MAX_AUDIT_READ", 1024)
    entries = audit.AuditLog(log).entries()
    assert entries[-1]["operation"] == "newest" and 0 < len(entries) < 10


async def test_http_answers_are_read_streamed_up_to_a_limit(sim: SimServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from tui.adapters import flow as flow_module
    from tui.adapters import marketplace as market_module
    from tui.adapters.flow import FlowClient
    from tui.adapters.marketplace import MarketplaceClient
    from tui.errors import SiteError

    monkeypatch.setattr(market_module, "MAX_RESPONSE_BYTES", 2048)
    monkeypatch.setattr(flow_module, "MAX_RESPONSE_BYTES", 8)
    market = MarketplaceClient(10.0)
    user, _, password = sim.session.partition(":")
    flow = FlowClient(sim.flow_url, user, password, 10.0)
    try:
        with pytest.raises(SiteError) as info:
            await market.list_appliances(sim.market_url)
        assert info.value.title.startswith("Malformed answer") and "more than the 2 KiB accepted" in info.value.detail
        assert not info.value.retryable  # the same answer again would be as large
        with pytest.raises(SiteError, match="Malformed answer"):
            await flow.list_service_templates()
    finally:
        await market.close()
        await flow.close()
