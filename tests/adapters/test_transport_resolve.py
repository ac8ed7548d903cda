"""How the cloud transport hands its host to the resolver (tui/adapters/cloud_transport.py,
`_create_connection`): an ASCII name as the bytes the `idna` codec would give, so a call never
imports that codec (~1 ms of every start-up); any other name as it is, for the codec to encode."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

from tui.adapters import cloud_transport


def test_an_ascii_host_reaches_the_resolver_as_bytes_and_another_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []

    def create_connection(address: tuple[object, int], timeout: float | None,
                          source_address: tuple[str, int] | None) -> socket.socket:
        seen.append(address[0])
        raise ConnectionRefusedError(111, "refused")

    monkeypatch.setattr(cloud_transport.socket, "create_connection", create_connection)
    for host in ("frontend.example", "bücher.example"):
        with pytest.raises(ConnectionRefusedError):
            cloud_transport._create_connection((host, 2633), 1.0, None)
    assert seen == [b"frontend.example", "bücher.example"]
    assert "bücher.example".encode("idna") == b"xn--bcher-kva.example"  # what the resolver then gets


def test_a_call_by_host_name_answers_without_the_idna_codec() -> None:
    # in a process of its own: the test session may have imported the codec already
    program = textwrap.dedent("""
        import socket, sys, threading
        from tui.adapters.cloud_transport import CloudTransport, decode_response

        ANSWER = (b"<?xml version='1.0'?><methodResponse><params><param><value><array><data>"
                  b"<value><boolean>1</boolean></value><value><string>7.4.0</string></value>"
                  b"</data></array></value></param></params></methodResponse>")

        def answer_one(listener):
            conn, _ = listener.accept()
            with conn:
                request = b""
                while b"</methodCall>" not in request:
                    request += conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(ANSWER), ANSWER))

        listener = socket.socket()
        listener.bind((b"127.0.0.1", 0))
        listener.listen()
        threading.Thread(target=answer_one, args=(listener,), daemon=True).start()
        before = "encodings.idna" in sys.modules
        transport = CloudTransport(f"http://localhost:{listener.getsockname()[1]}/RPC2", 10.0)
        print(decode_response(transport.post(b"<methodCall></methodCall>"))[1], before, "encodings.idna" in sys.modules)
        transport.close()
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["7.4.0", "False", "False"]
