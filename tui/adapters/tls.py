"""One TLS client context per verification setting, shared by the process's HTTP clients.

httpx builds a new SSL context for every client it makes, loading the CA bundle each time (about
55 ms of CPU), even for a client that only ever speaks plain HTTP; the console makes a client per
command, per marketplace, per component and per wait. The context is built as httpx builds its own
(`httpx.create_ssl_context`: certifi's bundle, or SSL_CERT_FILE / SSL_CERT_DIR when the environment
is trusted), once per process and setting. An `ssl.SSLContext` may serve many connections at once.
"""

from __future__ import annotations

import functools
import ssl

import httpx


def client_context(verify: bool = True, trust_env: bool = True) -> ssl.SSLContext:
    """The context for clients with this `verify` and `trust_env` (module docstring)."""
    return _built(bool(verify), bool(trust_env))


@functools.cache
def _built(verify: bool, trust_env: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(verify=verify, trust_env=trust_env)
