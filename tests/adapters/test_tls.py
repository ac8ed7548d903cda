"""The HTTP clients share one TLS context per verification setting (tui/adapters/tls.py)."""

from __future__ import annotations

import ssl

from tui.adapters.flow import FlowClient
from tui.adapters.marketplace import MarketplaceClient
from tui.adapters.tls import client_context


def test_one_context_per_setting_and_each_verifies_as_asked() -> None:
    assert client_context() is client_context(True, True)
    assert client_context().verify_mode is ssl.CERT_REQUIRED and client_context().check_hostname
    unverified = client_context(verify=False)
    assert unverified is not client_context() and unverified.verify_mode is ssl.CERT_NONE
    assert not unverified.check_hostname


async def test_clients_take_the_shared_context_instead_of_building_their_own() -> None:
    clients = [MarketplaceClient(), MarketplaceClient(verify_ssl=False),
               FlowClient("http://127.0.0.1:1", "u", "p"), FlowClient("http://127.0.0.1:1", "u", "p", verify_ssl=False)]
    try:
        contexts = [c._client._transport._pool._ssl_context for c in clients]  # type: ignore[attr-defined]
        assert contexts == [client_context(), client_context(False), client_context(), client_context(False)]
        assert contexts[0] is contexts[2] and contexts[1] is contexts[3]
    finally:
        for c in clients:
            await c.close()
