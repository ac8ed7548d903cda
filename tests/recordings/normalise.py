"""Raw exchanges -> the stored, comparable form of a recording.

Each exchange becomes one JSON object: its `step`, its `call` (`one.vm.action`, or `POST
/service/<document:service>/action`), its `request` (parameters after the session, the session
named by whose it is) and its `answer`:

- XML-RPC success: `{"ok": true, "int": ...}` / `"bool"` / `"text"`, or `"xml": [lines]` with
  `"forms": [form of each line's element]` (`element_forms`: how the platform wrote it);
- XML-RPC failure: `{"ok": false, "code": 2048, "message": "...", "resp_id": -1}`; a fault:
  `{"fault": -501, "message": "..."}`;
- HTTP: `{"status": 200, "json": [lines]}` or `{"status": 404, "text": "..."}`.

An XML or JSON body is a list of lines `/PATH = value` in document order (an element with
children is a line `/PATH` of its own; JSON keys sorted, as JSON objects have no order): the tag
tree, the order of elements and the values at once, and a readable diff in git. The elements alone
cannot say how an element was written, which a parser of the XML text sees the same either way
(`<X/>` or `<X></X>`, `<X>1</X>` or `<X><![CDATA[1]]></X>`): an XML answer's `forms` says it for
each line, read from the answer's text (`-` for a line that is no element of it).

What varies between two runs on the same site, or between two sites, is replaced:
- IDs: an ID of an object the run knows (`tests.recordings.wire.Bindings`) becomes its symbol
  (`image:os`); an unknown ID of a known kind `<id>` (99999, the missing object, stays); which tags
  hold IDs of which kind is `ID_TAGS` (and an object's own `ID`, the `ID`s listed under `VMS`,
  `IMAGES`, ...); in messages, a number after a kind word (`image 5`, `USER [3]`); request
  parameters by the method's signature (`PARAM_KINDS`).
- times (`TIME_TAGS`) `<time>` unless 0, LAST_POLL `<monitored>`; secrets (`SECRET_TAGS`, the
  passwords and sessions the run used) `<secret>`; the run's token `<run>`; UUIDs `<uuid>`; request
  sequence numbers `<seq>`; a value of a name tag (`NAME_TAGS`) that is exactly the name of a site
  object the run uses `<host:a>`; a site setting a created object copies (`Bindings.values`).
- objects the run did not create (the site's hosts, datastores, networks, apps, users): their tag
  tree only, no values (`/HOST/NAME`), repeated sibling trees once, lists (a host's VMs, a
  network's leases) as the element only, as what they hold is the site's. In a pool, the run's
  objects with their values, the site objects the run uses as `ITEM[host:a]` with their tree, the
  others left out (sites hold different ones); a line `/POOL (order by ID) = DESC|ASC` keeps the
  order of all. ACL rules: the run's and the platform's own (a fresh site's 0-5), not others'.
- in objects the run created, values taken from the site's own objects (`SITE_VALUES`: a NIC's
  addresses, a disk's datastore paths, the hosts' drivers in the history) `<site>` (`KEEP_VALUES`
  excepted); the VM's monitoring `MONITORED_SUBTREES` as the element only; where the site's
  scheduler placed a VM (`Bindings.placed`) `<placed>`; the site's configuration as a set of paths.
"""

from __future__ import annotations

import fnmatch
import json
import re
import xmlrpc.client
from dataclasses import dataclass
from typing import Any

from lxml import etree

from tests.recordings.wire import MISSING, Bindings, Exchange, Run

#: the root tag of each object -> its kind
OBJECT_TAGS = {
    "VM": "vm", "IMAGE": "image", "VMTEMPLATE": "template", "HOST": "host", "DATASTORE": "datastore",
    "VNET": "vnet", "USER": "user", "GROUP": "group", "MARKETPLACE": "market", "MARKETPLACEAPP": "app",
    "DOCUMENT": "document", "ACL": "acl", "CLUSTER": "cluster", "ZONE": "zone",
}
#: a list element -> the kind of the IDs under it
LIST_TAGS = {
    "VMS": "vm", "IMAGES": "image", "USERS": "user", "ADMINS": "user", "GROUPS": "group", "CLUSTERS": "cluster",
    "DATASTORES": "datastore", "MARKETPLACEAPPS": "app", "HOSTS": "host", "VNETS": "vnet", "UPDATED_VMS": "vm",
    "OUTDATED_VMS": "vm", "UPDATING_VMS": "vm", "ERROR_VMS": "vm", "BACKUP_IDS": "image", "TEMPLATES": "template",
    # 7.4's group VLAN rules carry their group's ID (include/GroupVlans.h 35 at release-7.4.0)
    "VLAN_RULES": "group",
}
#: a tag (XML element or JSON key) holding an ID -> its kind
ID_TAGS = {
    "UID": "user", "GID": "group", "OWNER_ID": "user", "IMAGE_ID": "image", "TEMPLATE_ID": "template", "HID": "host",
    "HOST_ID": "host", "DS_ID": "datastore", "DATASTORE_ID": "datastore", "NETWORK_ID": "vnet", "VNET_ID": "vnet",
    "PARENT_NETWORK_ID": "vnet", "MARKETPLACE_ID": "market", "CLUSTER_ID": "cluster", "ZONE_ID": "zone",
    "VMID": "vm", "OID": "vm", "CID": "cluster", "FROM_APP": "app", "ORIGIN_ID": "image", "SERVICE_ID": "document", "SYSTEM_DS_ID": "datastore",
    # OneFlow's JSON
    "vm_template": "template", "template_id": "template", "deploy_id": "vm",
}
#: tags (or paths) holding a time in seconds
TIME_TAGS = {
    "STIME", "ETIME", "REGTIME", "MODTIME", "LAST_MON_TIME", "LAST_POLL", "TIMESTAMP", "PSTIME", "PETIME", "RSTIME",
    "RETIME", "ESTIME", "EETIME", "TIME", "EXPIRATION_TIME", "start_time", "timestamp", "registration_time",
}
SECRET_TAGS = {"PASSWORD", "TOKEN_PASSWORD", "TOKEN", "SESSION", "ONE_KEY"}
#: times that depend on when the site's monitoring last ran (a dummy frontend's VMs: never)
MONITOR_TIME_TAGS = {"LAST_POLL"}
#: numbers the platform counts up for its own bookkeeping (the request that changed a VM)
SEQUENCE_TAGS = {"REQUEST_ID"}
#: tags whose value, when it is exactly the name of a site object the run uses, becomes its symbol
NAME_TAGS = {"HOSTNAME", "DATASTORE", "NETWORK", "FROM_APP_NAME", "CLUSTER", "MARKETPLACE"}
#: where the site's scheduler put a VM the run did not place itself (a service's VMs)
PLACEMENT_TAGS = {"HID", "HOSTNAME", "HOST_ID"}
#: objects that are the site's configuration, not objects: their paths only, as a set
CONFIGURATION_TAGS = {"OPENNEBULA_CONFIGURATION"}
#: (parent, element) a site's own object carries once something happened to it before the run: an
#: address range's ALLOCATED, written at its first lease (src/vnm/AddressRange.cc 1415-1431)
HISTORY_TAGS = {("AR", "ALLOCATED")}
#: subtrees whose content depends on when monitoring ran: the element only
MONITORED_SUBTREES = ("/VM/MONITORING", "*/VM/MONITORING")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: in objects the run created: values that come from the site's own objects, by path pattern
SITE_VALUES = (
    "*/NIC/*", "*/NIC_DEFAULT/*", "*/CONTEXT/ETH*", "*/TEMPLATE/DISK/*", "*/HISTORY/VM_MAD", "*/HISTORY/TM_MAD",
    "*/HISTORY/DS_LOCATION", "*/DEPLOY_ID", "*/AR/*", "*/LEASES/*", "/IMAGE/PATH", "/IMAGE/SOURCE",
    "*/GRAPHICS/PORT", "/IMAGE/FORMAT", "/IMAGE/SIZE", "/IMAGE_POOL/IMAGE/FORMAT", "/IMAGE_POOL/IMAGE/SIZE",
    "/IMAGE_POOL/IMAGE/PATH", "/IMAGE_POOL/IMAGE/SOURCE",
)
#: ... but these, the same on every site, are compared
KEEP_VALUES = (
    "*/NIC/NAME", "*/NIC/NIC_ID", "*/DISK/DISK_ID", "*/DISK/IMAGE", "*/DISK/IMAGE_UNAME", "*/DISK/IMAGE_STATE",
    "*/DISK/CLONE", "*/DISK/READONLY", "*/DISK/SAVE",
)
#: monitoring figures
MONITORING = ("*/MONITORING/*",)

#: a word naming a kind in the platform's messages -> the kind
MESSAGE_KINDS = {
    "vm": "vm", "virtual machine": "vm", "image": "image", "template": "template",
    "virtual machine template": "template", "user": "user", "group": "group", "marketplace": "market",
    "marketplaceapp": "app", "document": "document", "host": "host", "rule": "acl", "datastore": "datastore",
    "virtual network": "vnet", "network": "vnet", "service": "document", "service template": "document",
}
_MESSAGE_ID = re.compile(r"\b(" + "|".join(sorted(MESSAGE_KINDS, key=len, reverse=True)) + r")(\s*\[?|_)(\d+)\b",
                         re.IGNORECASE)
#: XML-RPC methods whose parameters are not (object ID, ...): the kind of each parameter after the session
PARAM_KINDS: dict[str, tuple[str | None, ...]] = {
    "one.vm.action": (None, "vm"),
    "one.vm.deploy": ("vm", "host", None, "datastore"),
    "one.template.instantiate": ("template",),
    "one.image.allocate": (None, "datastore"),
    "one.image.chown": ("image", "user", "group"),
    "one.template.chown": ("template", "user", "group"),
    "one.group.addadmin": ("group", "user"),
    "one.user.allocate": (None, None, None, "group"),
}
#: the kind of the object `one.<x>.*` acts on, and the kind of ID it answers
METHOD_KINDS = {
    "vm": "vm", "template": "template", "image": "image", "user": "user", "group": "group", "market": "market",
    "marketapp": "app", "document": "document", "acl": "acl", "vn": "vnet", "host": "host", "datastore": "datastore",
}
_ACL_SUBJECT = re.compile(r"([#@%])(\d+)")
_ACL_USER_FLAGS = {0x1: "user", 0x2: "group", 0x8: "cluster"}
_ACL_RESOURCE_TYPES = (
    (0x1000000000, "vm"), (0x2000000000, "host"), (0x4000000000, "vnet"), (0x8000000000, "image"),
    (0x10000000000, "user"), (0x20000000000, "template"), (0x40000000000, "group"), (0x100000000000, "datastore"),
    (0x200000000000, "cluster"), (0x400000000000, "document"), (0x800000000000, "zone"),
    (0x8000000000000, "market"), (0x10000000000000, "app"),
)


@dataclass
class Context:
    """What the normaliser knows of one run."""

    bindings: Bindings
    token: str
    sessions: dict[str, str]

    def symbol(self, kind: str, value: int) -> str | None:
        return self.bindings.ids.get((kind, value))

    def created(self, kind: str, value: int) -> bool:
        symbol = self.symbol(kind, value)
        return symbol is not None and symbol in self.bindings.created

    def text(self, value: str) -> str:
        """A string with the run's token, secrets and sessions replaced."""
        for secret, placeholder in sorted(self.sessions.items(), key=lambda kv: -len(kv[0])):
            value = value.replace(secret, placeholder)
        for secret, placeholder in sorted(self.bindings.strings.items(), key=lambda kv: -len(kv[0])):
            value = value.replace(secret, placeholder)
        return value.replace(self.token, "<run>")

    def id_value(self, kind: str, text: str) -> str:
        """An ID's text as its symbol, `<id>` when unknown (-1 and empty stay)."""
        stripped = text.strip()
        if not re.fullmatch(r"-?\d+", stripped) or int(stripped) < 0:
            return self.text(text)
        if int(stripped) == MISSING:
            return stripped
        return self.symbol(kind, int(stripped)) or "<id>"

    def message(self, text: str) -> str:
        """A message with the IDs it names after a kind word (`image 5`, `USER [3]`) as symbols."""
        def one(match: re.Match[str]) -> str:
            kind = MESSAGE_KINDS[match.group(1).lower()]
            symbol = self.symbol(kind, int(match.group(3)))
            return match.group(1) + match.group(2) + (symbol or match.group(3))
        return _MESSAGE_ID.sub(one, self.text(text))


def normalise_run(run: Run) -> list[dict[str, Any]]:
    context = Context(run.bindings, run.token, run.sessions)
    return [normalise(context, exchange) for exchange in run.exchanges]


def normalise(context: Context, exchange: Exchange) -> dict[str, Any]:
    if exchange.kind == "xmlrpc":
        return _xmlrpc(context, exchange)
    return _http(context, exchange)


# XML-RPC ---------------------------------------------------------------------------------------
def _xmlrpc(context: Context, exchange: Exchange) -> dict[str, Any]:
    params, method = xmlrpc.client.loads(exchange.request)
    session, rest = params[0], params[1:]
    request = [context.sessions.get(session, "<session:other>")]
    if method == "one.acl.addrule":
        request += [_acl_param(context, method, i, str(v)) for i, v in enumerate(rest)]
    else:
        request += [_param(context, value, kind) for value, kind in zip(rest, _param_kinds(method, len(rest)), strict=True)]
    record: dict[str, Any] = {"step": exchange.step, "call": method, "request": request}
    try:
        (result,), _ = xmlrpc.client.loads(exchange.answer)
    except xmlrpc.client.Fault as fault:
        record["answer"] = {"fault": fault.faultCode, "message": context.message(fault.faultString)}
        return record
    record["answer"] = _result(context, method, list(result))
    if method == "one.vm.diskresize" and record["answer"].get("ok") and "int" in record["answer"]:
        record["answer"]["int"] = _disk_resize_answer(context, rest, result[1])
    return record


def _disk_resize_answer(context: Context, params: tuple[Any, ...], value: Any) -> Any:
    """`one.vm.diskresize(vm, disk, size)` answers the disk's ID before 7.4 and the VM's from 7.4 on
    (`success_response(did, att)`, src/rm/RequestManagerVirtualMachine.cc at release-7.0.2; from
    7.4 `response(ec, oid, att)`, src/rm/xml-rpc/VirtualMachineXRPC.cc; the embedded site:
    `tui.sim.platform.disk_resize_answers_vm_id`): the VM's ID becomes its symbol (`vm:a`), the
    disk's `disk:<id>` (a disk's ID is the same on every site). The scenario's VM never has its
    disk's ID, so the two cannot be mistaken."""
    if isinstance(value, int) and not isinstance(value, bool) and len(params) >= 2:
        if value == params[0]:
            return context.id_value("vm", str(value))
        if value == params[1]:
            return f"disk:{value}"
    return _param(context, value, "vm")


def _method_kind(method: str) -> str | None:
    parts = method.split(".")
    if len(parts) != 3 or parts[2] in ("info",) and parts[1].endswith("pool"):
        return None
    if method == "one.template.instantiate":
        return "vm"
    return METHOD_KINDS.get(parts[1])


def _acl_param(context: Context, method: str, index: int, value: str) -> str:
    if index == 0:
        return _acl_field(context, value, _ACL_USER_FLAGS)
    if index == 1:
        return _acl_resource(context, value)
    return value


def _param_kinds(method: str, count: int) -> list[str | None]:
    kinds = list(PARAM_KINDS.get(method, ()))
    if method not in PARAM_KINDS and not method.endswith(".allocate"):
        kinds = [METHOD_KINDS.get(method.split(".")[1]) if not method.split(".")[1].endswith("pool") else None]
    return (kinds + [None] * count)[:count]


def _param(context: Context, value: Any, kind: str | None) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return context.id_value(kind, str(value)) if kind and value >= 0 else value
    if isinstance(value, str):
        return _template_text(context, value)
    if isinstance(value, list):
        return [_param(context, v, kind) for v in value]
    return value


_TEMPLATE_ID = re.compile(r'(\b([A-Z_]+)\s*=\s*"?)(-?\d+)')


def _template_text(context: Context, text: str) -> str:
    """A template (or JSON) text sent in a request, its IDs as symbols."""
    def one(match: re.Match[str]) -> str:
        kind = ID_TAGS.get(match.group(2))
        return match.group(1) + (context.id_value(kind, match.group(3)) if kind else match.group(3))
    text = _TEMPLATE_ID.sub(one, text)
    if text.startswith("<TEMPLATE>") and "<BODY>" in text:  # a JSON document body
        text = re.sub(r'"(vm_template|template_id)":(\d+)', lambda m: f'"{m.group(1)}":"{context.id_value("template", m.group(2))}"', text)
    return context.text(text)


def _result(context: Context, method: str, result: list[Any]) -> dict[str, Any]:
    ok = bool(result[0])
    kind = _method_kind(method)
    if not ok:
        code = result[2] if len(result) > 2 else None
        resp_id = result[3] if len(result) > 3 else None
        answer: dict[str, Any] = {"ok": False, "code": code, "message": context.message(str(result[1]))}
        if isinstance(resp_id, int):
            answer["resp_id"] = _param(context, resp_id, kind)
        return answer
    value = result[1]
    if isinstance(value, bool):
        return {"ok": True, "bool": value}
    if isinstance(value, int):
        return {"ok": True, "int": _param(context, value, kind)}
    if isinstance(value, str) and value.lstrip().startswith("<"):
        root = etree.fromstring(value.encode(), parser=etree.XMLParser(huge_tree=True, resolve_entities=False))
        mark_forms(root, element_forms(value))
        lines = xml_lines(context, root)
        return {"ok": True, "xml": lines, "forms": [line.form if isinstance(line, Line) else NO_FORM for line in lines]}
    return {"ok": True, "text": context.text(str(value))}


# HTTP (OneFlow) --------------------------------------------------------------------------------
def _http(context: Context, exchange: Exchange) -> dict[str, Any]:
    path = "/".join(_path_part(context, part) for part in exchange.path.split("?")[0].split("/"))
    record: dict[str, Any] = {"step": exchange.step, "call": f"{exchange.verb} {path}"}
    if exchange.request:
        try:
            body = json.loads(exchange.request)
        except ValueError:
            record["request"] = context.text(exchange.request.decode(errors="replace"))
        else:
            record["request"] = json_lines(context, body)
    answer: dict[str, Any] = {"status": exchange.status}
    text = exchange.answer.decode(errors="replace")
    try:
        data = json.loads(text) if text.strip() else None
    except ValueError:
        data = None
    if isinstance(data, (dict, list)):
        answer["json"] = json_lines(context, data)
    elif text.strip():
        answer["text"] = context.message(text.strip())
    record["answer"] = answer
    return record


def _path_part(context: Context, part: str) -> str:
    """A OneFlow path's part: an ID there is a document's (a service or a service template)."""
    if part.isdigit():
        symbol = context.symbol("document", int(part))
        return f"<{symbol}>" if symbol else part
    return part


def json_lines(context: Context, data: Any) -> list[str]:
    """A JSON answer as lines, through the XML path: keys become tags (sorted), lists repeat."""
    root = etree.Element("JSON")
    _json_into(root, data)
    lines = xml_lines(context, root[0] if len(root) == 1 and isinstance(data, dict) and len(data) == 1 else root)
    return lines


def _json_into(parent: etree._Element, data: Any, key: str | None = None) -> None:
    if isinstance(data, dict):
        node = etree.SubElement(parent, key) if key is not None else parent
        for name in sorted(data):
            _json_into(node, data[name], _tag(name))
        return
    if isinstance(data, list):
        for item in data:
            _json_into(parent, item, f"{key or 'item'}")
        if not data:
            node = etree.SubElement(parent, key or "item")
            node.set("empty-list", "1")
        return
    node = etree.SubElement(parent, key or "value")
    node.text = data if isinstance(data, str) else json.dumps(data)
    node.set("json", "str" if isinstance(data, str) else "raw")


def _tag(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][\w.-]*", name) else "_" + re.sub(r"\W", "_", name)


# How elements are written ------------------------------------------------------------------------
#: a line that is no element of the answer (a pool's order, a JSON body's keys)
NO_FORM = "-"
#: an element's form when it holds elements (whatever is between them: `children+text` when text is)
CHILDREN = "children"
_FORM = "{urn:sitetk:recordings}form"
_TOKEN = re.compile(r"<!\[CDATA\[.*?\]\]>|<!--.*?-->|<\?.*?\?>|<![^>]*>|<[^>]*>|[^<]+", re.DOTALL)


class Line(str):
    """A line of an XML answer that knows how its element was written (`element_forms`)."""

    form: str = NO_FORM


def element_forms(text: str) -> list[str]:
    """How each element of an XML text is written, in document order: `<X/>` (an empty-element
    tag), `<X></X>` (start and end tag, nothing between), `text`, `cdata` (one CDATA section),
    `children` (elements, nothing else between), or what is between the tags joined by `+`
    (`text+cdata`, `children+text`). A parser gives the same tree for each way of writing an
    element; the platform writes each element one way (src/common/ObjectXML*, Template::to_xml,
    the objects' to_xml), so the form is compared like a value."""
    forms: list[str] = []
    open_: list[tuple[int, list[str]]] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token.startswith("<![CDATA["):
            if open_:
                open_[-1][1].append("cdata")
        elif token.startswith(("<!", "<?")):
            continue
        elif token.startswith("</"):
            index, parts = open_.pop()
            forms[index] = _form(parts)
        elif token.startswith("<"):
            if open_:
                open_[-1][1].append(CHILDREN)
            forms.append("<X/>")
            if not token.endswith("/>"):
                open_.append((len(forms) - 1, []))
        elif open_:
            open_[-1][1].append("text")
    return forms


def _form(parts: list[str]) -> str:
    if not parts:
        return "<X></X>"
    if CHILDREN in parts:
        return CHILDREN if set(parts) == {CHILDREN} else "children+text"
    return "+".join(parts)


def mark_forms(root: etree._Element, forms: list[str]) -> None:
    """Note on each element of `root` (parsed from the text `forms` was read from) its form."""
    elements = list(root.iter(etree.Element))
    if len(elements) != len(forms):
        raise ValueError(f"{len(elements)} elements parsed, {len(forms)} read as text")
    for element, form in zip(elements, forms, strict=True):
        element.set(_FORM, form)


def _line(element: etree._Element, text: str) -> str:
    """A line of `element`, with its form when the answer's text gave one (`mark_forms`)."""
    form = element.get(_FORM)
    if form is None:
        return text
    line = Line(text)
    line.form = form
    return line


# XML -------------------------------------------------------------------------------------------
def xml_lines(context: Context, root: etree._Element) -> list[str]:
    """An XML answer (an object, a pool, the ACL list) as lines."""
    tag = str(root.tag)
    if tag in CONFIGURATION_TAGS:
        return sorted(_shape(root, f"/{tag}"))
    if tag.endswith("_POOL") or tag in ("DOCUMENT_POOL", "JSON"):
        return _pool(context, root)
    return _object(context, root, f"/{tag}")


#: items of a pool that are not objects but belong to one (7.0 lists users' and groups' quotas apart,
#: 7.4 groups' VLAN rules too)
POOL_ITEM_TAGS = {("USER_POOL", "QUOTAS"): "user", ("GROUP_POOL", "QUOTAS"): "group", ("GROUP_POOL", "VLAN_RULES"): "group"}


def _own_id(context: Context, element: etree._Element, pool: str = "") -> tuple[str, int] | None:
    kind = POOL_ITEM_TAGS.get((pool, str(element.tag))) or OBJECT_TAGS.get(str(element.tag))
    text = (element.findtext("ID") or "").strip().strip('"')
    if kind is None or not re.fullmatch(r"\d+", text):
        return None
    return kind, int(text)


def _pool(context: Context, root: etree._Element) -> list[str]:
    """A pool: the run's objects with their values, the site objects the run uses (`[host:a]`) with
    their tag tree, the others left out (sites hold different ones); the order of all by ID."""
    lines = [_line(root, f"/{root.tag}")]
    items = [i for i in root if isinstance(i.tag, str)]
    main = items[0].tag if items else None
    ids = [int(t) for t in (str(i.findtext("ID") or "").strip().strip('"') for i in items if i.tag == main)
           if re.fullmatch(r"\d+", t)]
    if len(ids) > 1:
        # the platform lists by ID, ASC or DESC (API_LIST_ORDER): the order of every item, the site's too
        order = "DESC" if ids == sorted(ids, reverse=True) else "ASC" if ids == sorted(ids) else "unordered"
        lines.append(f"/{root.tag} (order by ID) = {order}")
    for item in items:
        own = _own_id(context, item, str(root.tag))
        if str(item.tag) == "ACL":
            if _acl_known(context, item):
                lines += _acl(context, item, f"/{root.tag}/ACL")
        elif own is None:
            if not len(item):
                lines += _values(context, item, f"/{root.tag}/{item.tag}", None)
            else:
                lines += sorted(_shape(item, f"/{root.tag}/{item.tag}"))
        elif context.created(*own):
            lines += _values(context, item, f"/{root.tag}/{item.tag}", own[0])
        elif context.symbol(*own):
            lines += _tags(item, f"/{root.tag}/{item.tag}[{context.symbol(*own)}]")
    return lines


def _shape(element: etree._Element, path: str) -> set[str]:
    paths = {_line(element, path)}
    for child in element:
        if isinstance(child.tag, str):
            paths |= _shape(child, f"{path}/{child.tag}")
    return paths


def _object(context: Context, element: etree._Element, path: str) -> list[str]:
    own = _own_id(context, element)
    if str(element.tag) == "ACL":
        return _acl(context, element, path)
    if own is not None and not context.created(*own):
        return _tags(element, path)
    kind = own[0] if own else None
    return _values(context, element, path, kind)


def _tags(element: etree._Element, path: str) -> list[str]:
    """The tag tree alone, in order (an object of the site's own); siblings repeating the same tree
    (a host's PCI devices, a datastore's image IDs) once, as their number is the site's."""
    lines = [_line(element, path)]
    if str(element.tag) in LIST_TAGS or str(element.tag) == "LEASES":
        return lines  # which objects a site's own object lists (its VMs, images, leases) is the site's
    previous: list[str] = []
    for child in element:
        if isinstance(child.tag, str) and (str(element.tag), str(child.tag)) not in HISTORY_TAGS:
            block = _tags(child, f"{path}/{child.tag}")
            if block != previous:
                lines += block
            previous = block
    return lines


def _values(context: Context, element: etree._Element, path: str, kind: str | None, placed: bool = False) -> list[str]:
    own = _own_id(context, element)
    if own is not None and context.symbol(*own) in context.bindings.placed:
        placed = True
    children = [c for c in element if isinstance(c.tag, str)]
    if any(fnmatch.fnmatchcase(path, pattern) for pattern in MONITORED_SUBTREES):
        return [_line(element, path)]
    if children:
        lines = [_line(element, path)]
        list_kind = LIST_TAGS.get(str(element.tag))
        for child in children:
            if child.tag == "ID" and (list_kind or kind) and not len(child):
                value = context.id_value(list_kind or kind or "", child.text or "")
                lines.append(_line(child, f"{path}/ID = {json.dumps(value) if child.get('json') == 'str' else value}"))
            else:
                child_kind = OBJECT_TAGS.get(str(child.tag))
                own = _own_id(context, child)
                if own is not None and not context.created(*own):
                    lines += _tags(child, f"{path}/{child.tag}")
                else:
                    lines += _values(context, child, f"{path}/{child.tag}", child_kind, placed)
        return lines
    if element.get("empty-list"):
        return [f"{path} = []"]
    raw = (element.text or "").strip()
    if raw.startswith("{") and element.get("json") is None:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, dict):
            # a JSON text inside XML (a document's BODY): its keys and values as lines of their own
            node = etree.Element("BODY")
            _json_into(node, body)
            return [_line(element, f"{path} = {{json}}")] + _values(context, node, f"{path}/{{}}", None)[1:]
    return [_line(element, f"{path} = {_leaf(context, element, path, placed)}")]


def _leaf(context: Context, element: etree._Element, path: str, placed: bool = False) -> str:
    raw = element.text or ""
    quoted = element.get("json") == "str"
    tag = str(element.tag)
    if placed and tag in PLACEMENT_TAGS:
        value = "<placed>"
    elif tag in ID_TAGS:
        value = context.id_value(ID_TAGS[tag], raw)
    elif tag in NAME_TAGS and raw in context.bindings.names:
        value = context.bindings.names[raw]
    elif (tag, raw) in context.bindings.values:
        value = context.bindings.values[(tag, raw)]
    elif tag in MONITOR_TIME_TAGS:
        value = "<monitored>"
    elif tag in TIME_TAGS:
        value = "<time>" if raw.strip() not in ("", "0", "-1") else raw
    elif tag in SEQUENCE_TAGS:
        value = "<seq>" if raw.strip() not in ("", "-1") else raw
    elif _UUID.fullmatch(raw.strip()):
        value = "<uuid>"
    elif tag in SECRET_TAGS:
        value = "<secret>" if raw else raw
    elif any(fnmatch.fnmatchcase(path, pattern) for pattern in MONITORING):
        value = "<monitoring>"
    elif any(fnmatch.fnmatchcase(path, pattern) for pattern in SITE_VALUES) \
            and not any(fnmatch.fnmatchcase(path, pattern) for pattern in KEEP_VALUES):
        value = "<site>" if raw else raw
    else:
        value = context.message(raw)
    return json.dumps(value) if quoted else value


def _acl_known(context: Context, element: etree._Element) -> bool:
    """A rule about the run's objects or the platform's own (a fresh site's rules), not one about
    objects of others (their IDs are the site's)."""
    words = _acl_string(context, (element.findtext("STRING") or "").strip()).split(" ")
    return not any(re.search(r"[#@%]\d", word) for word in words[:2])


def _acl(context: Context, element: etree._Element, path: str) -> list[str]:
    """An ACL rule: its ID and the IDs inside its fields as symbols."""
    lines = [_line(element, path)]
    for child in element:
        if not isinstance(child.tag, str):
            continue
        text = (child.text or "").strip()
        if child.tag == "ID":
            # a rule the run made is known by its symbol; one the platform made for the run's objects
            # (a group's VDC rules) has the site's next ID; a fresh site's own rules keep theirs (0-5)
            value = context.symbol("acl", int(text)) if text.isdigit() else None
            about_run = any(symbol in (element.findtext("STRING") and _acl_string(context, element.findtext("STRING") or ""))
                            for symbol in context.bindings.created)
            lines.append(_line(child, f"{path}/ID = {value or ('<id>' if about_run else text)}"))
        elif child.tag == "USER":
            lines.append(_line(child, f"{path}/USER = {_acl_field(context, text, _ACL_USER_FLAGS)}"))
        elif child.tag == "RESOURCE":
            lines.append(_line(child, f"{path}/RESOURCE = {_acl_resource(context, text)}"))
        elif child.tag == "STRING":
            lines.append(_line(child, f"{path}/STRING = {_acl_string(context, text)}"))
        else:
            lines.append(_line(child, f"{path}/{child.tag} = {text}"))
    return lines


def _acl_field(context: Context, text: str, flags: dict[int, str]) -> str:
    try:
        value = int(text, 16)
    except ValueError:
        return text
    oid, high = value & 0xFFFFFFFF, value >> 32
    kind = flags.get(high & 0xF)
    symbol = context.symbol(kind, oid) if kind else None
    return f"{value & ~0xFFFFFFFF:X}+{symbol}" if symbol else text


def _acl_resource(context: Context, text: str) -> str:
    try:
        value = int(text, 16)
    except ValueError:
        return text
    kind = None
    if (value >> 32) & 0x1:
        kind = next((k for bit, k in _ACL_RESOURCE_TYPES if value & bit), None)
    elif (value >> 32) & 0x2:
        kind = "group"
    elif (value >> 32) & 0x8:
        kind = "cluster"
    symbol = context.symbol(kind, value & 0xFFFFFFFF) if kind else None
    return f"{value & ~0xFFFFFFFF:X}+{symbol}" if symbol else text


def _acl_string(context: Context, text: str) -> str:
    words = text.split(" ")
    if len(words) >= 2:
        words[0] = _ACL_SUBJECT.sub(lambda m: _acl_id(context, m, "user"), words[0])
        resources, _, target = words[1].partition("/")
        first = resources.split("+")[0].lower()
        kinds = {"vm": "vm", "image": "image", "template": "template", "net": "vnet", "host": "host",
                 "datastore": "datastore", "document": "document", "marketplace": "market", "marketplaceapp": "app",
                 "group": "group", "user": "user"}
        words[1] = resources + "/" + _ACL_SUBJECT.sub(lambda m: _acl_id(context, m, kinds.get(first, "")), target)
    return " ".join(words)


def _acl_id(context: Context, match: re.Match[str], user_kind: str) -> str:
    kind = {"#": user_kind, "@": "group", "%": "cluster"}[match.group(1)]
    symbol = context.symbol(kind, int(match.group(2))) if kind else None
    return match.group(1) + (symbol or match.group(2))
