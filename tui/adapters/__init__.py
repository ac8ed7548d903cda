"""Async clients for the cloud (XML-RPC: documents read with lxml, writes through pyone), the flow and
marketplace APIs (httpx), vault and git."""
