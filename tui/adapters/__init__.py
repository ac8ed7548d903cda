"""Async clients for the cloud (pyone), the flow and marketplace APIs (httpx), vault and git."""
