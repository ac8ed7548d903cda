"""Port choice: seven distinct free loopback ports, none a stock frontend port or one another
frontend holds, monitord's free on UDP too; exhaustion is an error, not a reused port."""

from __future__ import annotations

import socket
from contextlib import ExitStack

import pytest

from realsite import ports


def test_seven_distinct_free_ports_away_from_the_stock_ones() -> None:
    chosen = ports.choose_ports().all()
    values = list(chosen.values())
    assert len(set(values)) == 7
    assert not set(values) & ports.STOCK_PORTS
    assert all(ports.port_is_free(p, udp=name == "monitord") for name, p in chosen.items())


def test_taken_and_stock_ports_are_skipped() -> None:
    offered = iter([2633, 50001, 50001, 50002, 4124, 50003, 50004, 50005, 50006, 50007, 50008])

    def binder(stack: ExitStack, _: int) -> int:
        return next(offered)

    chosen = ports.choose_ports(taken=[50002], binder=binder)
    assert list(chosen.all().values()) == [50001, 50003, 50004, 50005, 50006, 50007, 50008]


def test_running_out_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="7 free loopback ports"):
        ports.choose_ports(binder=lambda stack, _: 2633, attempts=20)


def test_a_held_port_is_reported_busy() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        mine = ports.Ports(xmlrpc=port, oneflow=1, hook_publisher=1, hook_replier=1, monitord=1, grpc=1, market=1)
        assert ports.port_is_free(port) is False
        assert f"xmlrpc {port}" in ports.busy_ports(mine)


def test_the_dead_url_is_loopback_port_1() -> None:
    assert ports.DEAD_URL == "http://127.0.0.1:1/"
