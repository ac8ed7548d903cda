"""A smart-HTTP git server on loopback for tests: `git http-backend` behind HTTP basic auth.

It lets the tests run the real askpass path: git gets a 401, asks the askpass helper for the user
name and the token, and retries with them. Every request line and Authorization header is recorded
so tests can check the token never travels in a URL.

`hold` ("before-receive" or "after-receive") holds the next push: its request waits, before or
after `git http-backend` updated the branch, until `release` is set (`reached` is set when it
waits): a push the client stops there landed, or did not, without the client knowing which. A push
held before it is received whose client has gone by the release is dropped, not applied.
"""

from __future__ import annotations

import base64
import os
import select
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HTTP_BACKEND = "/usr/lib/git-core/git-http-backend"


def _client_gone(connection: socket.socket) -> bool:
    """Whether the client has closed its end (readable, and nothing more to read): a push it sent
    whole before it was stopped is buffered here, yet a real remote whose client went away before
    the pack was received never applies it."""
    readable, _, _ = select.select([connection], [], [], 0)
    if not readable:
        return False
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class GitHttpServer:
    def __init__(self, root: Path, username: str, token: str) -> None:
        self.root = root
        self.expected = "Basic " + base64.b64encode(f"{username}:{token}".encode()).decode()
        self.request_lines: list[str] = []
        self.failed_auth = 0
        self.hold = ""
        self.reached = threading.Event()
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                server.request_lines.append(self.requestline)
                if self.headers.get("Authorization") != server.expected:
                    server.failed_auth += 1
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="sites"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                pushing = self.command == "POST" and path.endswith("/git-receive-pack")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if server._wait_if(pushing, "before-receive") and _client_gone(self.connection):
                    return  # the client was stopped while held: its push never reached the remote
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(server.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "REQUEST_METHOD": self.command,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_USER": "tester",
                    "REMOTE_ADDR": "127.0.0.1",
                    "GIT_CONFIG_NOSYSTEM": "1",
                    "HOME": str(server.root),
                }
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                if self.headers.get("Git-Protocol"):
                    env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
                done = subprocess.run([HTTP_BACKEND], input=body, capture_output=True, env=env, check=False)
                server._wait_if(pushing, "after-receive")
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                status = 200
                headers = []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _wait_if(self, pushing: bool, point: str) -> bool:
        """Hold a push at `point` when asked to; whether it was held."""
        if pushing and self.hold == point:
            self.hold = ""
            self.reached.set()
            self.release.wait(120)
            return True
        return False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "GitHttpServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()
