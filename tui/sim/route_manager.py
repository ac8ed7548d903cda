"""The route manager's REST API inside a simulated route-manager VM, reached over real HTTP.

The appliance (6G-SANDBOX/marketplace-community `appliances/routemanager/`) runs
6G-SANDBOX/route-manager-api v0.2.0 with FastAPI on port 8172 (`appliance.sh` line 122,
`routemanager.yaml` line 7). Its bearer token comes from the VM: `configure_token`
(`appliance.sh` lines 141-163) reads `ONEAPP_ROUTEMANAGER_APITOKEN` from the VM's USER_TEMPLATE
through the gate; when neither that nor the CONTEXT value is set it generates one and publishes it
with `onegate vm update` (line 148); the API then takes it (`.env` APITOKEN, line 156).

A client reaches a VM's API the way a frontend on the default network would, through the embedded
site's one loopback port acting as an HTTP forward proxy: the request line carries the absolute URL
`http://<VM address>:8172/routes/` (`tui.sim.server` hands such requests here). The API answers
only while a VM holding that address RUNs and its appliance has configured the token; otherwise the
proxy answers 502, as a forward proxy does when the upstream refuses the connection.

The API, as route-manager-api v0.2.0 defines it (files under `app/`, lines at tag v0.2.0):
- every route needs `Authorization: Bearer <APITOKEN>` (`routers/routes.py` `Depends(bearer_token)`):
  a wrong token is 401 `Invalid or expired token` (`services/auth.py` lines 24-26); no bearer
  credentials is 403 `Not authenticated` (FastAPI 0.115's HTTPBearer, the version `uv.lock` pins);
- `GET /routes/`: 200 `{database_routes, system_routes}` (`routers/routes.py` lines 22-47);
- `PUT /routes/`: a route scheduled (`pending`, create_at in the future), added now (`active`, and
  in the system's table), or stored `expired`; 201, or 200 when the system already has it, 409 when
  the database does (lines 50-104);
- `DELETE /routes/` `{"to": ...}`: 200, 404 when absent (lines 107-140), kept in the deleted table;
- `PATCH /routes/`: update, back to `pending` (lines 143-162, `db/routes.py` lines 177-222);
- `GET /routes/deleted` (lines 165-184); `PATCH /routes/pause` and `/routes/activate` (186-272);
- the lifecycle loop (`services/lifecycle.py` lines 11-54) activates due routes and expires
  routes past delete_at every 10 s; here it runs before each request instead (coarser timing
  is not modelled);
- `/routes` without the slash redirects (Starlette's redirect_slashes, 307) to `/routes/`.
The database survives reboots of the VM (SQLite on its disk), and active routes are put back in
the system's table when the service starts (`services/routes.py` lines 15-41).
"""

from __future__ import annotations

import ipaddress
import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from tui.domain.one_states import LcmState, VmState
from tui.domain.template_text import scalar
from tui.sim.state import SimSite, SimVm

PORT = 8172
TOKEN_ATTRIBUTE = "ONEAPP_ROUTEMANAGER_APITOKEN"
#: the source's placeholder token (`.env` line 3, `core/config.py` line 17): what the API takes
#: when the appliance could not configure its own
PLACEHOLDER_TOKEN = "this_is_something_secret"
Response = tuple[int, dict[str, str], bytes]


@dataclass
class RouteManager:
    """One VM's route manager: its token and its SQLite tables."""

    vm_id: int
    token: str
    routes: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: list[dict[str, Any]] = field(default_factory=list)
    #: routes added to the system's table (`ip route add`), by destination
    system: dict[str, str] = field(default_factory=dict)
    #: the service answers (configured after the VM's boot)
    up: bool = False


def managers(site: SimSite) -> dict[int, RouteManager]:
    found: dict[int, RouteManager] = site.route_managers
    return found


def _context_value(vm: SimVm, name: str) -> str:
    for attr, value in vm.template:
        if attr == "CONTEXT" and isinstance(value, list):
            found = scalar(value, name, "")
            # a reference the instantiation filled with nothing stays unresolved here; the
            # platform leaves such a variable empty in the guest's context
            return "" if found.startswith("$") else found
    return ""


def configure(site: SimSite, vm: SimVm, *, gate: bool) -> None:
    """The appliance's `configure_token` on a boot (appliance.sh lines 141-163)."""
    published = scalar(vm.user_template, TOKEN_ATTRIBUTE, "")
    given = _context_value(vm, TOKEN_ATTRIBUTE)
    manager = managers(site).get(vm.id)
    if not gate:  # no gate token: `onegate vm show` fails, errexit stops configure; the .env token stays
        token = manager.token if manager else PLACEHOLDER_TOKEN
    elif published:
        token = published
    elif given:
        token = given
    else:
        token = secrets.token_urlsafe(32)
        vm.user_template = [a for a in vm.user_template if a[0] != TOKEN_ATTRIBUTE] + [(TOKEN_ATTRIBUTE, token)]
        vm.touch()
    if manager is None:
        manager = managers(site)[vm.id] = RouteManager(vm.id, token)
    manager.token = token
    manager.up = True
    # load_database_routes_to_system: the active routes back in the system's table
    manager.system = {to: line for to, line in manager.system.items() if manager.routes.get(to, {}).get("active")}
    for route in manager.routes.values():
        if route["active"]:
            manager.system[route["to"]] = _system_line(route)


def _vm_address(vm: SimVm) -> str:
    for attr, value in vm.template:
        if attr == "NIC" and isinstance(value, list):
            ip = scalar(value, "IP", "")
            if ip:
                return ip
    return ""


def running(vm: SimVm) -> bool:
    return vm.state == VmState.ACTIVE and vm.lcm_state == LcmState.RUNNING


def find(site: SimSite, host: str, port: int) -> RouteManager | None:
    """The API listening on host:port now (None: nothing answers there)."""
    if port != PORT:
        return None
    for manager in managers(site).values():
        vm = site.vms.get(manager.vm_id)
        if vm is not None and manager.up and running(vm) and _vm_address(vm) == host:
            return manager
    return None


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode()


def _detail(status: int, detail: Any) -> Response:
    return _json(status, {"detail": detail})


def _invalid(loc: str, message: str, value: Any = None) -> Response:
    """FastAPI's request validation error (422) for the body field `loc`."""
    return _json(422, {"detail": [{"type": "value_error", "loc": ["body", loc], "msg": message, "input": value}]})


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(timezone.utc).isoformat() if value else None


def _system_line(route: dict[str, Any]) -> str:
    parts = [route["to"]]
    if route.get("via"):
        parts += ["via", route["via"]]
    if route.get("dev"):
        parts += ["dev", route["dev"]]
    return " ".join(parts)


def _system_routes(site: SimSite, vm: SimVm, manager: RouteManager) -> list[str]:
    """`ip route show` in the VM: its default route and its network, then the routes added."""
    lines: list[str] = []
    for attr, value in vm.template:
        if attr != "NIC" or not isinstance(value, list):
            continue
        ip = scalar(value, "IP", "")
        vnet = site.vnets.get(int(scalar(value, "NETWORK_ID", "-1") or -1))
        gateway = scalar(vnet.template, "GATEWAY", "") if vnet else ""
        mask = scalar(vnet.template, "NETWORK_MASK", "255.255.255.0") if vnet else "255.255.255.0"
        if gateway:
            lines.append(f"default via {gateway} dev eth0")
        if ip:
            network = ipaddress.ip_network(f"{ip}/{mask}", strict=False)
            lines.append(f"{network} dev eth0 proto kernel scope link src {ip}")
        break
    return lines + list(manager.system.values())


def _parse_time(data: dict[str, Any], name: str) -> tuple[datetime | None, str]:
    value = data.get(name)
    if value in (None, ""):
        return None, ""
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None, "Input should be a valid datetime"
    if parsed.tzinfo is None:
        # schemas/routes.py lines 43-44 and 50-51
        return None, f"Value error, Route {name} timestamp: '{parsed}' must include timezone information"
    return parsed, ""


def _route(data: Any) -> tuple[dict[str, Any] | None, Response | None]:
    """The `Route` schema's checks (schemas/routes.py lines 8-56), as a stored row."""
    if not isinstance(data, dict):
        return None, _invalid("", "Input should be a valid dictionary", data)
    try:
        to = str(ipaddress.ip_network(str(data.get("to", "")), strict=False))
    except ValueError:
        return None, _invalid("to", "value is not a valid IPv4 or IPv6 network", data.get("to"))
    via = data.get("via") or None
    if via is not None:
        try:
            via = str(ipaddress.ip_address(str(via)))
        except ValueError:
            return None, _invalid("via", "value is not a valid IPv4 or IPv6 address", via)
    dev = data.get("dev") or None
    if not via and not dev:
        return None, _invalid("", "Value error, Route must include at least one of 'via' or 'dev'.", data)
    if dev and dev not in ("lo", "eth0"):
        return None, _invalid("", f"Value error, Route dev: '{dev}' is not a valid network interface. "
                                  "Valid interfaces are: ['lo', 'eth0']", data)
    create_at, problem = _parse_time(data, "create_at")
    if problem:
        return None, _invalid("create_at", problem, data.get("create_at"))
    delete_at, problem = _parse_time(data, "delete_at")
    if problem:
        return None, _invalid("delete_at", problem, data.get("delete_at"))
    now = _now()
    create_at = create_at or now
    if delete_at is not None and delete_at < now:
        return None, _invalid("", f"Value error, Route delete_at timestamp: '{delete_at}' has already passed", data)
    if delete_at is not None and delete_at < create_at:
        return None, _invalid("", f"Value error, Route delete_at timestamp: '{delete_at}' can't be set before "
                                  "create_at or present time", data)
    return {"to": to, "via": via, "dev": dev, "create_at": create_at, "delete_at": delete_at,
            "active": False, "status": None}, None


def _row(route: dict[str, Any]) -> dict[str, Any]:
    return {**route, "create_at": _iso(route["create_at"]), "delete_at": _iso(route["delete_at"])}


def _remove(manager: RouteManager, to: str, status: str) -> dict[str, Any]:
    route = manager.routes.pop(to)
    manager.deleted.append({"id": len(manager.deleted) + 1, "to": to, "via": route["via"], "dev": route["dev"],
                            "create_at": _iso(route["create_at"]), "delete_at": _iso(route["delete_at"]),
                            "removed_at": _iso(_now()), "status": status})
    return route


def _lifecycle(manager: RouteManager) -> None:
    """One pass of route_manager_loop (services/lifecycle.py lines 24-52)."""
    now = _now()
    for route in list(manager.routes.values()):
        if route["delete_at"] and route["delete_at"] <= now and route["status"] != "expired":
            _remove(manager, route["to"], "expired")
            if route["status"] != "paused":
                manager.system.pop(route["to"], None)
        elif (route["create_at"] <= now and (not route["delete_at"] or route["delete_at"] > now)
              and not route["active"] and route["status"] != "paused"):
            route["active"], route["status"] = True, "active"
            manager.system[route["to"]] = _system_line(route)


def _body(raw: bytes) -> tuple[Any, Response | None]:
    try:
        return json.loads(raw or b"null"), None
    except ValueError:
        return None, _json(422, {"detail": [{"type": "json_invalid", "loc": ["body", 0], "msg": "JSON decode error"}]})


def _to(data: Any) -> tuple[str, Response | None]:
    """The embedded `to` body field (`Body(embed=True)`, IPvAnyNetwork)."""
    value = data.get("to") if isinstance(data, dict) else None
    if value is None:
        return "", _json(422, {"detail": [{"type": "missing", "loc": ["body", "to"], "msg": "Field required"}]})
    try:
        return str(ipaddress.ip_network(str(value), strict=False)), None
    except ValueError:
        return "", _invalid("to", "value is not a valid IPv4 or IPv6 network", value)


def handle(site: SimSite, manager: RouteManager, method: str, path: str, headers: Any, raw: bytes) -> Response:
    """One request to `manager`'s API (the module docstring); called under the site's lock."""
    vm = site.vms[manager.vm_id]
    if path == "/routes" or path.startswith("/routes?"):
        return 307, {"Location": f"http://{_vm_address(vm)}:{PORT}/routes/"}, b""
    known = {("GET", "/routes/"), ("PUT", "/routes/"), ("DELETE", "/routes/"), ("PATCH", "/routes/"),
             ("GET", "/routes/deleted"), ("PATCH", "/routes/pause"), ("PATCH", "/routes/activate")}
    if path not in {p for _, p in known}:
        return _detail(404, "Not Found")
    if (method, path) not in known:
        return _detail(405, "Method Not Allowed")
    scheme, _, credentials = (headers.get("Authorization") or "").partition(" ")
    if scheme.lower() != "bearer" or not credentials:
        return _detail(403, "Not authenticated")
    if credentials != manager.token:
        return _detail(401, "Invalid or expired token")
    _lifecycle(manager)
    if method == "GET" and path == "/routes/":
        return _json(200, {"database_routes": [_row(r) for r in manager.routes.values()],
                           "system_routes": _system_routes(site, vm, manager)})
    if method == "GET":
        return _json(200, {"deleted_routes": list(manager.deleted)})
    data, problem = _body(raw)
    if problem:
        return problem
    if method == "PUT":
        return _put(manager, data)
    to, problem = _to(data)
    if problem:
        return problem
    if method == "DELETE":
        if to not in manager.routes:
            return _detail(404, f"Route to {to} not found in the database.")
        if _remove(manager, to, "deleted")["active"]:
            manager.system.pop(to, None)
        return _json(200, {"message": "Route succesfully deleted"})
    if path == "/routes/":
        return _update(manager, to, data)
    return _pause_or_activate(manager, to, pause=path.endswith("/pause"))


def _put(manager: RouteManager, data: Any) -> Response:
    route, problem = _route(data)
    if problem or route is None:
        return problem or _detail(500, "Unexpected error while processing route.")
    now, to = _now(), route["to"]
    if route["create_at"] > now:
        if to in manager.routes:
            return _detail(409, f"A route to {to} already exists in the database.")
        manager.routes[to] = {**route, "status": "pending"}
    elif not route["delete_at"] or route["delete_at"] > now:
        if to in manager.system:  # `ip route add` answers "File exists"
            return _json(200, {"message": f"A route to {to} already exists in the system"})
        if to in manager.routes:  # the insert's IntegrityError is not caught on this path (line 78)
            return _detail(500, "Internal Server Error")
        manager.system[to] = _system_line(route)
        manager.routes[to] = {**route, "active": True, "status": "active"}
    else:
        if to in manager.routes:
            return _detail(409, f"A route to {to} already exists in the database.")
        manager.routes[to] = {**route, "status": "expired"}
    return _json(201, {"message": "Route succesfully added or scheduled"})


def _update(manager: RouteManager, to: str, data: dict[str, Any]) -> Response:
    route = manager.routes.get(to)
    if route is None:
        return _detail(404, f"Route {to} not found in the database.")
    if data.get("via") is not None:
        route["via"], route["dev"] = str(data["via"]), None
    elif data.get("dev") is not None:
        route["dev"], route["via"] = str(data["dev"]), None
    for name in ("create_at", "delete_at"):
        if data.get(name) is not None:
            value, problem = _parse_time(data, name)
            if problem:
                return _invalid(name, problem, data.get(name))
            route[name] = value
    route["status"], route["active"] = "pending", False
    return _json(200, {"message": f"Route {to} successfully updated"})


def _pause_or_activate(manager: RouteManager, to: str, *, pause: bool) -> Response:
    route = manager.routes.get(to)
    if route is None:
        # raised inside the handler's `try`, whose `except Exception` answers 500 (lines 223-225)
        return _detail(500, "Internal server error while pausing route.") if pause else _detail(
            500, "Internal server error while activating route.")
    now = _now()
    in_period = route["create_at"] <= now and (not route["delete_at"] or route["delete_at"] > now)
    if pause:
        if route["status"] != "active" or not route["active"] or not in_period:
            return _detail(500, "Internal server error while pausing route.")  # the 409 is caught as above
        manager.system.pop(to, None)
        route["active"], route["status"] = False, "paused"
        return _json(200, {"message": f"Route {to} successfully paused"})
    if route["status"] != "paused" or route["active"] or not in_period:
        return _detail(500, "Internal server error while activating route.")
    manager.system[to] = _system_line(route)
    route["active"], route["status"] = True, "active"
    return _json(200, {"message": f"Route {to} successfully re-activated"})
