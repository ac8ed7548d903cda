"""What every XML-RPC method of the simulated cloud shares: the method registry, the call context,
authorization, template parsing with the platform's errors, and pool filters and pagination.

Methods register with `@method("one.x.y", "iis", "b")`: the letters are the parameter types after
the session (i int, s string, b boolean), the second string the optional trailing ones. The
dispatcher (tui.sim.xmlrpc_api) checks types strictly, as xmlrpc-c does, before the handler runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol, Sequence, TypeVar

from tui.domain.error_codes import INTERNAL, XML_RPC_API
from tui.domain.permissions import Permissions
from tui.domain.template_text import Template, TemplateSyntaxError, parse_template
from tui.sim.acl import authorize, is_admin
from tui.sim.platform import invalid_name_chars
from tui.sim.rpc_errors import OneError, name_refusal, no_exists, not_authorized
from tui.sim.state import SimSite, SimUser

Handler = Callable[..., Any]


@dataclass(frozen=True)
class Method:
    name: str
    required: str
    optional: str
    handler: Handler


METHODS: dict[str, Method] = {}


def method(name: str, required: str = "", optional: str = "") -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        METHODS[name] = Method(name, required, optional, handler)
        return handler

    return register


class WireEscaped(str):
    """A success value already escaped for its XML-RPC <string> (cached VM bodies)."""


@dataclass
class Call:
    """One authenticated request: the site, the caller and the method name (for messages)."""

    site: SimSite
    user: SimUser
    method: str

    @property
    def admin(self) -> bool:
        return is_admin(self.user)

    @property
    def groups(self) -> set[int]:
        return set(self.user.groups) | {self.user.gid}

    def require(self, kind: str, op: str, obj: Any = None) -> None:
        """Raise the platform's AUTHORIZATION error unless the caller may do `op` on `obj`."""
        if obj is None:
            allowed = authorize(self.site, self.user, kind, op)
            oid = -1
        else:
            oid = obj.id
            allowed = authorize(
                self.site, self.user, kind, op, oid,
                getattr(obj, "uid", -1), getattr(obj, "gid", -1), getattr(obj, "perms", None),
            )
        if not allowed:
            raise not_authorized(self.user.id, op, kind, oid)

    def get(self, table: dict[int, Any], kind: str, oid: int, op: str) -> Any:
        """Object `oid` of `table` once the caller may do `op` on it; NO_EXISTS when there is none."""
        obj = table.get(oid)
        if obj is None:
            raise no_exists(kind, oid)
        self.require(kind, op, obj)
        return obj

    def can_use(self, kind: str, obj: Any) -> bool:
        return authorize(self.site, self.user, kind, "USE", obj.id, getattr(obj, "uid", -1),
                         getattr(obj, "gid", -1), getattr(obj, "perms", None))


# templates ------------------------------------------------------------------------------------

_XML_NAME = re.compile(r"^[A-Z_][A-Z0-9_.\-]*$")
#: characters XML 1.0 cannot carry, not even in CDATA
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def parse_text(text: str) -> Template:
    """Parse template text (or XML). A syntax error, or a name XML cannot hold, answers INTERNAL
    `Parse error: ...` as `Template::parse_str_or_xml` fails every allocate, instantiate and update
    (src/template/Template.cc; src/rm/api/SharedAPI.cc, ImageAPI.cc, TemplateAPI.cc). The detail
    after "Parse error: " is this site's own, not the platform's bison message."""
    try:
        attrs = parse_template(text)
    except TemplateSyntaxError as exc:
        raise OneError(INTERNAL, f"Parse error: {exc}") from exc
    for name, value in attrs:
        names = [name] + ([k for k, _ in value] if isinstance(value, list) else [])
        bad = next((n for n in names if not _XML_NAME.match(n)), None)
        if bad is not None:
            raise OneError(INTERNAL, f"Parse error: '{bad}' is not a valid attribute name")
        values = [v for _, v in value] if isinstance(value, list) else [value]
        if any(_NOT_XML.search(v) for v in values):
            raise OneError(INTERNAL, f"Parse error: a value of {name} holds a control character")
    return attrs


def merge_template(current: Template, new: Template) -> Template:
    """append=1: every attribute the new text names is erased, then the new ones are added; a vector
    with no values is not added again, so `NAME = [ ]` deletes NAME (`Template::merge`,
    src/template/Template.cc; `PoolObjectSQL::append_template`, src/pool/PoolObjectSQL.cc)."""
    named = {name for name, _ in new}
    kept = [a for a in current if a[0] not in named]
    return kept + [a for a in new if not (isinstance(a[1], list) and not a[1])]


def update_text(text: str) -> Template:
    """Parse the text of an `update` call: a parse error answers INTERNAL `Cannot update template.
    Parse error...` (`SharedAPI::update`, src/rm/api/SharedAPI.cc; 6.10 RequestManagerUpdateTemplate.cc)."""
    try:
        return parse_text(text)
    except OneError as exc:
        raise OneError(INTERNAL, f"Cannot update template. {exc.message}") from exc


def check_update_type(append: int) -> None:
    """`Wrong update type` (RPC_API) for anything but 0 and 1 (SharedAPI.cc, VirtualMachineAPI.cc)."""
    if append not in (0, 1):
        raise OneError(XML_RPC_API, "Wrong update type")


def apply_update(current: Template, text: str, append: int) -> Template:
    """update(..., append): 0 replaces the whole template, 1 merges (`merge_template`)."""
    new = update_text(text)
    return new if append == 0 else merge_template(current, new)


# permissions ----------------------------------------------------------------------------------


def chmod(perms: Permissions, values: Sequence[int]) -> Permissions:
    """`perms` with each of the nine values that is not -1 (unchanged) set."""
    if any(v not in (-1, 0, 1) for v in values):
        raise OneError(XML_RPC_API, "Wrong permissions: each value must be -1, 0 or 1.")
    given = [*values, *[-1] * (9 - len(values))]
    return Permissions(*(old if value == -1 else value for old, value in zip(perms.as_args(), given, strict=True)))


def chown(call: Call, obj: Any, uid: int, gid: int) -> None:
    site = call.site
    if uid >= 0 and uid not in site.users:
        raise no_exists("USER", uid)
    if gid >= 0 and gid not in site.groups:
        raise no_exists("GROUP", gid)
    if uid >= 0:
        obj.uid = uid
    if gid >= 0:
        obj.gid = gid


# pools ----------------------------------------------------------------------------------------

class Owned(Protocol):
    id: int
    uid: int
    gid: int


T = TypeVar("T", bound=Owned)


def filter_pool(call: Call, kind: str, objects: Iterable[T], flag: int, start: int = -1, end: int = -1) -> list[T]:
    """Pool filter (-4 primary group, -3 mine, -2 all, -1 mine + my groups, >=0 that user) and
    range, as the platform builds its SELECT (6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc
    `dump` 223-246, 7.4.0 src/rm/api/PoolSharedAPI.cc 149-171; src/pool/PoolSQL.cc `oid_filter`
    412-428 and `dump` 168-193; include/SqlDB.h `limit_string` 143-150):

    - `end < -1`: `LIMIT start, -end`: `start` is a row offset into the listing, `-end` the page
      size, no id range. `start` -1 gives `LIMIT -1,N`: sqlite reads a negative offset as 0;
      MySQL refuses the statement ("Internal error", `dump` rc != 0).
    - else `start != -1`: ids `start` and up, and up to `end` unless `end` is -1.
    - else (`start` -1): every object, whatever `end`.

    Listed by id, descending when the site's API_LIST_ORDER (oned.conf, `one.system.config`) is
    DESC in any case, else ascending (RequestManagerPoolInfoFilter.cc 228-237: `icasecmp(desc,
    "DESC")`); DESC when oned.conf does not set it (src/template/OpenNebulaTemplate.cc
    `set_conf_single("API_LIST_ORDER", "DESC")`, release-7.0.2 line 384)."""
    if flag < -4:
        raise OneError(XML_RPC_API, "Incorrect filter_flag.")
    me = call.user
    groups = call.groups
    admin = call.admin
    descending = call.site.lists_descending()
    ordered = sorted(objects, key=lambda o: o.id, reverse=descending)
    picked: list[T] = []
    for obj in ordered:
        uid, gid = obj.uid, obj.gid
        if flag == -3:
            keep = uid == me.id
        elif flag == -4:
            keep = gid == me.gid
        elif flag == -1:
            keep = uid == me.id or gid in groups
        elif flag == -2:
            keep = True
        else:
            keep = uid == flag
        if keep and (admin or uid == me.id or call.can_use(kind, obj)):
            picked.append(obj)
    if end < -1:
        if start < 0 and call.site.config.db_backend == "mysql":
            raise OneError(INTERNAL, "Internal error")
        offset = max(start, 0)
        return picked[offset: offset + (-end)]
    if start != -1:
        return [o for o in picked if o.id >= start and (end == -1 or o.id <= end)]
    return picked


def refuse_name(call: Call, name: str, code: int, prefix: str = "", extra_chars: str = "") -> None:
    """Raise the platform's refusal of an object name (`tui.sim.rpc_errors.name_refusal`)."""
    refusal = name_refusal(name, invalid_name_chars(call.site.config.one_version) + extra_chars, code, prefix)
    if refusal is not None:
        raise refusal
