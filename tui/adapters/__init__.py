"""Async clients for the cloud (XML-RPC, answers read with lxml), the flow and
marketplace APIs (httpx), vault and git."""

import sys

# httpx's package imports its command-line client (httpx/__init__.py at 0.28.1: `from ._main import
# main`, which imports click, pygments and rich's console, progress, syntax and table) whenever click
# is installed, and falls back to a stub on ImportError, as when the `httpx[cli]` extra is absent.
# No sitetk code runs that client: marking it absent (None in sys.modules makes its import raise
# ImportError) saves every process that talks HTTP (`market download`, `toolkit deploy`, ...)
# ~0.12 s of CPU (issue 23). setdefault: a process that imported it already keeps it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
