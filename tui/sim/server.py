"""One threaded HTTP server on one loopback port serving the whole simulated site.

POST /RPC2 is the cloud's XML-RPC API; paths under /service_template and /service are OneFlow's
REST API (tui.sim.flow_api); any other path containing /appliance is the marketplace
(tui.sim.market_api); paths under /api/v1/ are the trial-network manager's REST API
(tui.sim.manager_api). Before each request the site's clock advances and the fault switches apply:
latency, per-method delay, random failures (an internal error / HTTP 500, or a dropped connection),
answers lost after the call ran (`lost_answers`) and expired credentials (checked by the site's
authentication; `expire_at` turns them on when a named call arrives).

`SimServer.stop()` closes the listening socket and every open connection; `start()` again listens
on the same port, so clients can be tested across an outage.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from tui.sim.state import HOLD_LIMIT_S, SimSite
from tui.sim.xmlrpc_api import handle_xmlrpc, internal_error, method_name, refused_call

_MAX_BODY = 64 * 1024 * 1024
_log = logging.getLogger(__name__)
Response = tuple[int, dict[str, str], bytes]


def _optional_handler(module: str, name: str) -> Callable[..., Response] | None:
    """The flow and marketplace handlers live in their own modules; until they exist, answer 404."""
    if importlib.util.find_spec(module) is None:
        return None
    return getattr(importlib.import_module(module), name, None)


class _Handler(BaseHTTPRequestHandler):
    server: "_SiteHTTPServer"
    protocol_version = "HTTP/1.0"  # one request per connection: stop() leaves no kept-alive client behind
    server_version = "sitetk-sim"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return

    # every verb goes through one route ------------------------------------------------------
    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PUT(self) -> None:
        self._route("PUT")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def do_PATCH(self) -> None:
        self._route("PATCH")

    def do_HEAD(self) -> None:
        self._route("HEAD")

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0 or length > _MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, headers: dict[str, str], body: bytes, method: str = "GET") -> None:
        self.send_response(status)
        for key, value in headers.items():
            if key.lower() != "content-length":
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)

    def _drop(self) -> None:
        """Close the connection without an answer, as a crashed or restarted frontend would."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _route(self, method: str) -> None:
        try:
            self._serve(method)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away
        except Exception:  # a bug in the simulator must not look like a hung frontend
            _log.exception("simulated site failed on %s %s", method, self.path)
            try:
                self._send(500, {"Content-Type": "text/plain"}, b"simulator error, see the log", method)
            except OSError:
                pass

    def _serve(self, method: str) -> None:
        site = self.server.site
        path = self.path.split("?", 1)[0]
        try:
            body = self._body()
        except ValueError:
            self._send(413, {"Content-Type": "text/plain"}, b"request body too large", method)
            return
        faults = site.faults
        if faults.latency_ms > 0:
            time.sleep(faults.latency_ms / 1000)
        is_rpc = method == "POST" and path.rstrip("/") == "/RPC2"
        rpc_method = method_name(body) if is_rpc else ""
        if faults.expire_at and (rpc_method or f"{method} {path}") in faults.expire_at:
            faults.expired_credentials = True
        if rpc_method and faults.method_delay_ms.get(rpc_method, 0) > 0:
            time.sleep(faults.method_delay_ms[rpc_method] / 1000)
        held = faults.hold_methods.get(rpc_method) if rpc_method else None
        if held is not None:
            held.wait(HOLD_LIMIT_S)
        site.advance()
        with site.lock:
            failing = site.should_fail()
            drop = failing and site.rng.random() < 0.5
            refused = bool(rpc_method) and faults.fail_methods.get(rpc_method, 0) > 0
            if refused and faults.fail_methods_after.get(rpc_method, 0) > 0:
                faults.fail_methods_after[rpc_method] -= 1
                refused = False
            elif refused:
                faults.fail_methods[rpc_method] -= 1
        if refused:  # a definite refusal (ACTION), as for an object the platform will not change now
            self._send(200, {"Content-Type": "text/xml"}, refused_call(rpc_method), method)
            return
        if drop:
            self._drop()
            return
        if is_rpc:
            answer = internal_error(rpc_method) if failing else handle_xmlrpc(site, body)
            if self._answer_lost(rpc_method):
                return
            self._send(200, {"Content-Type": "text/xml"}, answer, method)
            return
        if failing:
            self._send(500, {"Content-Type": "text/plain"}, b"Internal Server Error", method)
            return
        status, headers, payload = self._dispatch_http(method, path, body)
        if status == 0:  # nothing listens there (the manager's VM down: tui.sim.manager_api)
            self._drop()
            return
        if self._answer_lost(f"{method} {path}"):
            return
        self._send(status, headers, payload, method)

    def _answer_lost(self, key: str) -> bool:
        """Whether `faults.lost_answers` drops this answer (the call ran; the client never learns)."""
        site = self.server.site
        with site.lock:
            left = site.faults.lost_answers.get(key, 0)
            if left <= 0:
                return False
            site.faults.lost_answers[key] = left - 1
        self._drop()
        return True

    def _dispatch_http(self, method: str, path: str, body: bytes) -> Response:
        site = self.server.site
        full_path = self.path
        if full_path.startswith("http://"):  # absolute form: a client using this port as its HTTP proxy
            return self._guest(method, full_path, body)
        if path.startswith("/service_template") or path.startswith("/service"):
            handle_flow = _optional_handler("tui.sim.flow_api", "handle_flow")
            if handle_flow is not None:
                return handle_flow(site, method, full_path, self.headers, body)
        elif path.startswith("/api/v1/"):
            from tui.sim.manager_api import handle_manager

            return handle_manager(site, method, full_path, self.headers, body)
        elif "/appliance" in path:
            handle_market = _optional_handler("tui.sim.market_api", "handle_market")
            if handle_market is not None:
                return handle_market(site, method, full_path, self.headers)
        return 404, {"Content-Type": "text/plain"}, f"{path} not found\n".encode()


    def _guest(self, method: str, url: str, body: bytes) -> Response:
        """A service inside a VM, reached through this port as through a forward proxy (the route
        manager's API: tui.sim.route_manager); 502 when nothing answers at that address and port,
        as a proxy says a refused connection."""
        from urllib.parse import urlsplit

        from tui.sim import route_manager

        parts = urlsplit(url)
        site = self.server.site
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        with site.lock:
            manager = route_manager.find(site, parts.hostname or "", parts.port or 80)
            if manager is not None:
                return route_manager.handle(site, manager, method, path, self.headers, body)
        from tui.sim.manager_api import DROP, handle_manager, serves

        if serves(site, parts.hostname or "", parts.port or 80):  # the trial-network manager's API
            answer = handle_manager(site, method, path, self.headers, body)
            if answer[0] != DROP:
                return answer
        return 502, {"Content-Type": "text/plain"}, f"connect to {parts.netloc} failed: connection refused\n".encode()


class _SiteHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], site: SimSite) -> None:
        self.site = site
        self.open_connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self.open_connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self.open_connections)
            self.open_connections.clear()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class SimServer:
    """The simulated site on `host:port` (port 0 picks a free one, kept across stop/start).

    `host` is the address its URLs name; it listens there, or on `listen_host` when given (the
    screenshot scenes of several test workers all name one address, each listening on its own:
    tui.screenshots.harness.scene_site)."""

    def __init__(self, site: SimSite, host: str = "127.0.0.1", port: int = 0, *, listen_host: str | None = None) -> None:
        self.site = site
        self.host = host
        self.port = port
        self.listen_host = listen_host or host
        self._httpd: _SiteHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> "SimServer":
        if self._httpd is not None:
            return self
        httpd = _SiteHTTPServer((self.listen_host, self.port), self.site)
        self.port = httpd.server_address[1]
        self.site.base_url = self.market_url
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1},
                                        name=f"sitetk-sim:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd = self._thread = None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if thread is not None:
            thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def xmlrpc_url(self) -> str:
        return f"http://{self.host}:{self.port}/RPC2"

    @property
    def flow_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def market_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def session(self) -> str:
        admin = self.site.users[0]
        return f"{admin.name}:{admin.password}"

    def __enter__(self) -> "SimServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
