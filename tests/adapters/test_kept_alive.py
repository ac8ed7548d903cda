"""A kept-alive connection to the cloud (tui/adapters/cloud_transport.py): the real oned keeps
connections open, the embedded site does not (HTTP/1.0), so these tests talk to a small keep-alive
server of their own on loopback.

What they pin: a connection the server closed while idle is dropped before the next request goes
out (no request is sent twice for it); a connection that fails after a request went out and before
its answer is tried again on a new one only for a read: a write may have been carried out, so it
is reported as failed and never sent a second time.
"""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tui.adapters.cloud_transport import CloudTransport

ANSWER = (b"<?xml version='1.0'?><methodResponse><params><param><value><array><data>"
          b"<value><boolean>1</boolean></value><value><string>done</string></value>"
          b"</data></array></value></param></params></methodResponse>")


@dataclass
class KeptAlive:
    """Answers each request on a connection, keeps it open, and does to the Nth request (counted
    from 1 over all connections) what `fate` says: "close-idle" closes the connection after
    answering it, "lose" reads it and closes the connection without an answer."""

    fate: dict[int, str]
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    threads: list[threading.Thread] = field(default_factory=list)
    open_sockets: list[socket.socket] = field(default_factory=list)

    def serve(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            self.connections += 1
            self.open_sockets.append(conn)
            thread = threading.Thread(target=self._connection, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _connection(self, conn: socket.socket) -> None:
        with conn:
            reader = conn.makefile("rb")
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next(int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length"))
                self.requests.append(reader.read(length))
                fate = self.fate.get(len(self.requests), "")
                if fate == "lose":
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: "
                             + str(len(ANSWER)).encode() + b"\r\n\r\n" + ANSWER)
                if fate == "close-idle":
                    conn.shutdown(socket.SHUT_RDWR)
                    return


@pytest.fixture
def kept_alive() -> Iterator[tuple[KeptAlive, CloudTransport]]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    server = KeptAlive({})
    serving = threading.Thread(target=server.serve, args=(listener,), daemon=True)
    serving.start()
    transport = CloudTransport(f"http://127.0.0.1:{listener.getsockname()[1]}/RPC2", 5.0)
    try:
        yield server, transport
    finally:
        transport.close()
        # Every thread of this server has stopped before its sockets are closed: a thread still
        # about to accept on a closed descriptor would accept on whichever socket reuses its
        # number (a later test's site in this worker) and answer that test's requests.
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        serving.join(5.0)
        for conn in server.open_sockets:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # closed already by its own thread
        for thread in server.threads:
            thread.join(5.0)
        assert not serving.is_alive() and not any(t.is_alive() for t in server.threads), "the server did not stop"
        listener.close()


@pytest.mark.parametrize("idempotent", [True, False], ids=["read", "write"])
def test_a_connection_the_server_closed_while_idle_is_not_used(kept_alive, idempotent: bool) -> None:
    server, transport = kept_alive
    server.fate[1] = "close-idle"
    assert transport.post(b"first", idempotent=idempotent) == ANSWER
    _wait_closed(transport)
    assert transport.post(b"second", idempotent=idempotent) == ANSWER
    assert server.requests == [b"first", b"second"]  # each sent once
    assert server.connections == 2


def test_a_kept_alive_connection_is_used_again(kept_alive) -> None:
    server, transport = kept_alive
    for body in (b"one", b"two", b"three"):
        assert transport.post(body) == ANSWER
    assert server.requests == [b"one", b"two", b"three"] and server.connections == 1


def test_a_read_whose_answer_is_lost_is_sent_once_more(kept_alive) -> None:
    server, transport = kept_alive
    server.fate[2] = "lose"
    transport.post(b"first", idempotent=True)
    assert transport.post(b"read", idempotent=True) == ANSWER
    assert server.requests == [b"first", b"read", b"read"]


def test_a_write_whose_answer_is_lost_is_never_sent_again(kept_alive) -> None:
    server, transport = kept_alive
    server.fate[2] = "lose"
    transport.post(b"first")
    with pytest.raises((ConnectionError, OSError)):
        transport.post(b"allocate")
    assert server.requests == [b"first", b"allocate"]
    assert transport.post(b"read-back", idempotent=True) == ANSWER  # a new connection serves the next


def _wait_closed(transport: CloudTransport) -> None:
    """Until the server's close of the idle connection has reached this side (the test's server
    shuts it down right after its answer)."""
    conn = transport._local.conn
    assert conn is not None and conn.sock is not None
    readable, _, _ = select.select([conn.sock], [], [], 5.0)
    assert readable, "the server never closed the idle connection"
