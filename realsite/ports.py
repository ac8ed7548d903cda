"""Free loopback ports for one frontend, so several can run side by side.

`choose_ports` asks the kernel for ports nobody holds (bind to port 0 on 127.0.0.1), keeps every
socket open until all are chosen (so no two come out the same), checks monitord's port on UDP as
well (it listens on both), and avoids the ports other frontends of this harness recorded (a
stopped frontend's ports are not reserved: only running ones are passed in). The `one` market
driver's fallback instead goes to `DEAD_URL`: port 1 (tcpmux), privileged, where nothing listens
on these machines, so a stray request is refused on loopback at once.
"""

from __future__ import annotations

import socket
from contextlib import ExitStack
from typing import Callable, Iterable

from realsite.config import LOOPBACK, Ports

DEAD_PORT = 1
DEAD_URL = f"http://{LOOPBACK}:{DEAD_PORT}/"
#: the stock ports of a frontend (oned 2633, gRPC 2634, hooks 2101/2102, monitord 4124, OneFlow 2474):
#: never chosen, so a frontend installed the ordinary way on this machine keeps them
STOCK_PORTS = frozenset({2101, 2102, 2474, 2633, 2634, 4124, 5030, 9869})

Binder = Callable[[ExitStack, int], int]


def _bind(stack: ExitStack, kind: int, port: int = 0) -> int:
    sock = stack.enter_context(socket.socket(socket.AF_INET, kind))
    if kind == socket.SOCK_STREAM:
        # as the daemons do: a port whose old connections linger in TIME_WAIT is free to listen on
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, port))
    return int(sock.getsockname()[1])


def tcp_binder(stack: ExitStack, _: int) -> int:
    return _bind(stack, socket.SOCK_STREAM)


def port_is_free(port: int, *, udp: bool = False) -> bool:
    """Whether `port` can be bound on loopback now (TCP, and UDP too when asked)."""
    with ExitStack() as stack:
        try:
            _bind(stack, socket.SOCK_STREAM, port)
            if udp:
                _bind(stack, socket.SOCK_DGRAM, port)
        except OSError:
            return False
    return True


def choose_ports(taken: Iterable[int] = (), *, binder: Binder = tcp_binder, attempts: int = 200) -> Ports:
    """Seven distinct free ports, none in `taken` or `STOCK_PORTS`, monitord's free on UDP too."""
    avoid = set(taken) | STOCK_PORTS | {DEAD_PORT}
    chosen: list[int] = []
    with ExitStack() as stack:
        for _ in range(attempts):
            if len(chosen) == 7:
                break
            port = binder(stack, len(chosen))
            if port in avoid or port in chosen:
                continue
            if len(chosen) == 4:  # monitord: UDP as well
                try:
                    _bind(stack, socket.SOCK_DGRAM, port)
                except OSError:
                    avoid.add(port)
                    continue
            chosen.append(port)
    if len(chosen) != 7:
        raise RuntimeError(f"could not find 7 free loopback ports in {attempts} attempts (found {chosen})")
    xmlrpc, oneflow, publisher, replier, monitord, grpc, market = chosen
    return Ports(xmlrpc=xmlrpc, oneflow=oneflow, hook_publisher=publisher, hook_replier=replier,
                 monitord=monitord, grpc=grpc, market=market)


def busy_ports(ports: Ports) -> list[str]:
    """The ports of `ports` that something holds now (`name port`), for a restart's check."""
    busy = []
    for name, port in ports.all().items():
        if not port_is_free(port, udp=name == "monitord"):
            busy.append(f"{name} {port}")
    return busy


def free_port(avoid: Iterable[int] = ()) -> int:
    """One more free loopback port, none of `avoid` nor a stock one (the MariaDB of `--db mysql`)."""
    unwanted = set(avoid) | STOCK_PORTS | {DEAD_PORT, 3306}
    with ExitStack() as stack:
        for _ in range(200):
            port = tcp_binder(stack, 0)
            if port not in unwanted:
                return port
    raise RuntimeError("could not find a free loopback port")
