"""The platform's XML-RPC error codes (the third item of a failed call's answer).

One table for both sides of the wire: the simulated cloud answers with them
(`tui.sim.rpc_errors`) and the cloud adapter phrases them (`tui.adapters.cloud_errors`).
"""

from __future__ import annotations

AUTHENTICATION = 0x0100
AUTHORIZATION = 0x0200
NO_EXISTS = 0x0400
ACTION = 0x0800
XML_RPC_API = 0x1000
INTERNAL = 0x2000
ALLOCATE = 0x4000
LOCKED = 0x8000
