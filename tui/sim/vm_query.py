"""The VM pool's query argument (`one.vmpool.info` / `infoextended`, sixth parameter), per backend.

The platform (6.10.0-7.0.2 src/rm/RequestManagerPoolInfoFilter.cc `VirtualMachinePoolInfo::
request_execute` 298-384; 7.4.0 src/rm/api/VirtualMachinePoolAPI.cc `info` 37-113):

- A non-empty query on a backend without the JSON_QUERY feature is refused before anything else
  is looked at: INTERNAL "JSON query search is not supported by the SQL backend"
  (RequestManagerPoolInfoFilter.cc 304-310 / VirtualMachinePoolAPI.cc 37-42). sqlite never has
  the feature (src/sql/SqliteDB.cc 68 `{SqlFeature::JSON_QUERY, false}`), nor does any backend
  that keeps SqlDB's defaults (include/SqlDB.h 201).
- MySQL has it from 5.7.8, MariaDB from 10.2 (src/sql/MySqlDB.cc 255-295). The query is split at
  `&` into terms and each term at `=` (include/NebulaUtil.h `split` 149-174: empty parts dropped,
  each part read with `>>`, so it stops at the first blank); a term without `=` searches the whole
  body (key `*`). Each term becomes `JSON_UNQUOTE(JSON_EXTRACT(body_json, '$.<key>')) LIKE
  '%<value>%'` (RequestManagerPoolInfoFilter.cc 355-379; VirtualMachinePoolAPI.cc 84-108): the
  key is a JSON path from the document's root, whose one member is `VM`, so a user template
  attribute is `VM.USER_TEMPLATE.<NAME>` (the platform CLI's `onevm list --search`,
  src/cli/one_helper/onevm_helper.rb 160-166: `VM.NAME=abc&VM.TEMPLATE.DISK[*].IMAGE=db1`), and
  the value matches as a substring, `%` and `_` being LIKE's wildcards. A key such as
  `ROLE_NAME` names nothing at the root: JSON_EXTRACT is NULL and no VM matches. The terms are
  joined with AND, except that a term equal to the last one is not followed by AND (`key !=
  keys.back()`), which makes the SQL invalid: "Internal error" (dump, rc != 0).
- body_json is the VM as `VirtualMachine::to_json` writes it (src/vm/VirtualMachine.cc 2545-2587):
  a few scalars, TEMPLATE and USER_TEMPLATE as `Template::to_json` writes them
  (src/template/Template.cc 411-470: an attribute that appears once is a value, a repeated one,
  DISK and NIC are arrays; a vector is an object; src/common/Attribute.cc 115-143), and the
  history records (src/vm/History.cc `to_json` 340-370).

Not modelled: case folding (LIKE's case sensitivity follows the server's collation; JSON
function results are binary in MySQL 8, so matching here is case-sensitive), and the exact
spacing and key order of a JSON object or array that JSON_UNQUOTE prints (it only matters for a
value that spans a separator).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Callable

from tui.domain.error_codes import INTERNAL
from tui.sim.rpc_errors import OneError
from tui.sim.xml_render import history_parts, owner_names

if TYPE_CHECKING:  # pragma: no cover
    from tui.sim.state import SimSite, SimVm

#: the backends `SimConfig.db_backend` takes: sqlite (the platform's default) and mysql
DB_BACKENDS: tuple[str, ...] = ("sqlite", "mysql")
NOT_SUPPORTED = "JSON query search is not supported by the SQL backend"
#: what a query whose SQL the database refuses answers (RequestManagerPoolInfoFilter.cc `dump` 248-252)
SQL_FAILED = "Internal error"

_ARRAY_ATTRS = frozenset({"DISK", "NIC"})
_LEG = re.compile(r'\.(?:(?P<star>\*)|(?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)|"(?P<quoted>(?:[^"\\]|\\.)*)")'
                  r"|\[(?P<index>\*|\d+)\]")

Matcher = Callable[["SimSite", "SimVm"], bool]


def supports_json_query(backend: str) -> bool:
    return backend == "mysql"


def _split(text: str, delim: str) -> list[str]:
    """include/NebulaUtil.h `split<std::string>`: parts between delimiters, empty ones dropped,
    each cut at its first blank after leading blanks (`iss >> part`); an all-blank part dropped."""
    parts: list[str] = []
    for part in text.split(delim):
        words = part.split()
        if words:
            parts.append(words[0])
    return parts


def _template_json(attrs: Any) -> dict[str, Any]:
    """Template::to_json: names in the platform's (sorted multimap) order, a repeated name and
    DISK/NIC as arrays, a vector as an object of its pairs."""
    grouped: dict[str, list[Any]] = {}
    for name, value in attrs:
        entry: Any = value if isinstance(value, str) else {k: v for k, v in sorted(value) if k}
        grouped.setdefault(name, []).append(entry)
    return {name: (values[0] if len(values) == 1 and name not in _ARRAY_ATTRS else values)
            for name, values in sorted(grouped.items())}


def vm_json(site: "SimSite", vm: "SimVm") -> dict[str, Any]:
    """The VM's body_json (VirtualMachine::to_json), as a Python value."""
    uname, gname = owner_names(site, vm.uid, vm.gid)
    body: dict[str, Any] = {
        "ID": str(vm.id), "UID": str(vm.uid), "GID": str(vm.gid), "UNAME": uname, "GNAME": gname,
        "NAME": vm.name, "LAST_POLL": str(vm.last_poll), "STATE": str(vm.state), "LCM_STATE": str(vm.lcm_state),
        "PREV_STATE": str(vm.prev_state), "PREV_LCM_STATE": str(vm.prev_lcm_state), "RESCHED": str(vm.resched),
        "STIME": str(vm.stime), "ETIME": str(vm.etime), "DEPLOY_ID": vm.deploy_id,
        "TEMPLATE": _template_json(vm.template), "USER_TEMPLATE": _template_json(vm.user_template),
    }
    if vm.history:
        records = []
        for h in vm.history:
            cid, vm_mad, tm_mad = history_parts(site, h)
            # the times as the full XML body gives them (tui.sim.xml_render._history_full)
            records.append({
                "OID": str(vm.id), "SEQ": str(h.seq), "HOSTNAME": h.hostname, "HID": str(h.host_id),
                "CID": str(cid), "STIME": str(h.stime), "ETIME": str(h.etime), "VM_MAD": vm_mad, "TM_MAD": tm_mad,
                "DS_ID": str(h.ds_id), "PSTIME": str(h.stime), "PETIME": str(h.stime), "RSTIME": str(h.stime),
                "RETIME": str(h.etime), "ESTIME": str(h.etime), "EETIME": str(h.etime), "ACTION": str(h.action),
                "UID": str(vm.uid), "GID": str(vm.gid), "REQUEST_ID": "-1"})
        body["HISTORY_RECORDS"] = {"HISTORY": records}
    return {"VM": body}


def _legs(key: str) -> list[tuple[str, str]] | None:
    """`$.<key>` as MySQL path legs ("member"/"index", name), None when it is not a valid path."""
    path = "." + key
    legs: list[tuple[str, str]] = []
    position = 0
    while position < len(path):
        match = _LEG.match(path, position)
        if match is None:
            return None
        if match.group("star"):
            legs.append(("member", "*"))
        elif match.group("ident") is not None:
            legs.append(("member", match.group("ident")))
        elif match.group("quoted") is not None:
            legs.append(("member", re.sub(r"\\(.)", r"\1", match.group("quoted"))))
        else:
            legs.append(("index", match.group("index")))
        position = match.end()
    return legs


def _extract(document: Any, legs: list[tuple[str, str]]) -> Any:
    """JSON_EXTRACT of one path: the value, or with a wildcard the list of every match; None (SQL
    NULL) when nothing matches."""
    wildcard = any(name == "*" for _, name in legs)
    found = [document]
    for kind, name in legs:
        step: list[Any] = []
        for value in found:
            if kind == "member" and isinstance(value, dict):
                step.extend(value.values() if name == "*" else [value[name]] if name in value else [])
            elif kind == "index":
                items = value if isinstance(value, list) else [value]  # a scalar reads as a one-item array
                step.extend(items if name == "*" else items[int(name):int(name) + 1])
        found = step
    if not found:
        return None
    return found if wildcard else found[0]


def _unquote(value: Any) -> str:
    """JSON_UNQUOTE: a string as it is, anything else as JSON text."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _like(pattern: str) -> re.Pattern[str]:
    """`LIKE '%<pattern>%'`: `%` any run, `_` any one character, `\\` escapes the next one."""
    out = [".*"]
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            out.append(re.escape(next(chars, "\\")))
        elif char == "%":
            out.append(".*")
        elif char == "_":
            out.append(".")
        else:
            out.append(re.escape(char))
    out.append(".*")
    return re.compile("".join(out), re.DOTALL)


def query_matcher(backend: str, query: str, state_filtered: bool) -> Matcher | None:
    """The VMs a non-empty `query` keeps on `backend` (None: every VM), or the platform's refusal
    raised as OneError. `state_filtered`: the call also filters by state (the AND that joins it)."""
    if not query:
        return None
    if not supports_json_query(backend):
        raise OneError(INTERNAL, NOT_SUPPORTED)
    terms = _split(query, "&")
    if not terms:
        # no term: `and_filter` ends with the " AND " put after the state test, or stays empty
        if state_filtered:
            raise OneError(INTERNAL, SQL_FAILED)
        return None
    tests: list[tuple[list[tuple[str, str]], re.Pattern[str]]] = []
    for index, term in enumerate(terms):
        if term == terms[-1] and index != len(terms) - 1:
            raise OneError(INTERNAL, SQL_FAILED)  # no AND after it: invalid SQL
        kv = _split(term, "=")
        if not kv:
            # "=" alone: the platform reads kv[0] and kv[1] of an empty vector (undefined
            # behaviour); answered as a failed query here
            raise OneError(INTERNAL, SQL_FAILED)
        key, value = ("*", kv[0]) if len(kv) == 1 else (kv[0], kv[1])
        legs = _legs(key)
        if legs is None:
            raise OneError(INTERNAL, SQL_FAILED)  # an invalid JSON path fails the statement
        tests.append((legs, _like(value)))

    def matches(site: "SimSite", vm: "SimVm") -> bool:
        document = vm_json(site, vm)
        for legs, pattern in tests:
            value = _extract(document, legs)
            if value is None or pattern.fullmatch(_unquote(value)) is None:
                return False
        return True
    return matches
