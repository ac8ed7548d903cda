"""Cloud XML documents (lxml elements) into domain models.

One builder per kind, used both for pools (read while they arrive, `PoolStream`) and for single
objects, both parsed straight from the wire with lxml (2-6x less CPU than pyone's generated
bindings, and they keep what those bindings drop, such as ONEGATE_ENDPOINT).
Builders tolerate missing elements (defaults) and unknown state codes; a document whose root is
not the expected one, or a number element holding no number, raises `MalformedResponse`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

from lxml import etree

from tui.adapters.cloud_transport import MalformedResponse
from tui.domain.attributes import EMPTY_ATTRIBUTES, Attributes, AttrItem
from tui.domain.object_header import OWNED_FIELDS
from tui.domain.users import User
from tui.domain.vms import (
    VmSummary,
    new_vm_summary,
    service_from_name,
    state_names,
)

# The console's first screen needs only VMs and the user: the other models (permissions too) are
# imported by their builders on first use (~14 ms of its start-up).
if TYPE_CHECKING:  # pragma: no cover
    from tui.domain.acls import AclRule
    from tui.domain.datastores import Datastore
    from tui.domain.documents import Document
    from tui.domain.groups import Group
    from tui.domain.hosts import Host
    from tui.domain.images import ImageInfo
    from tui.domain.marketapps import MarketApp, Marketplace
    from tui.domain.networks import AddressRange, Vnet
    from tui.domain.permissions import Permissions
    from tui.domain.system import SystemConfig
    from tui.domain.vm_detail import Disk, HistoryRecord, Nic, VmDetail
    from tui.domain.vm_scan import VmPrefilter
    from tui.domain.vmtemplates import VmTemplate

Element = etree._Element
T = TypeVar("T")


# small readers -----------------------------------------------------------------------------
#: no number the platform keeps is longer (int() refuses over 4,300 digits; int(float()) of a long one overflows)
_NUMBER_MAX = 40


def _not_a_number(text: str) -> MalformedResponse:
    """A malformed number is an unreadable answer, never a silent 0 (a count, an ID or a state
    read as 0 would be believed: state 0 is INIT, ID 0 is oneadmin's or the first host's)."""
    if len(text) > _NUMBER_MAX:
        return MalformedResponse(f"a number of {len(text):,} characters where the platform's are at most {_NUMBER_MAX}")
    return MalformedResponse(f"{text!r} where the platform sends a number")


def _int(text: str | None, default: int = 0) -> int:
    """An integer element's text; `default` when it is missing or empty, `MalformedResponse` when
    it is not a number (a decimal one is truncated, as the platform's own readers do)."""
    if text is None or not text.strip():
        return default
    if len(text) > _NUMBER_MAX:
        raise _not_a_number(text)
    try:
        return int(text)
    except ValueError:
        try:
            return int(float(text))
        except (ValueError, OverflowError):  # garbage, or inf/nan
            raise _not_a_number(text) from None


def _opt_int(text: str | None) -> int | None:
    """An optional integer element's text: None when missing or empty, `MalformedResponse` when
    it is not an integer."""
    if text is None or not text.strip():
        return None
    if len(text) > _NUMBER_MAX:
        raise _not_a_number(text)
    try:
        return int(text)
    except ValueError:
        raise _not_a_number(text) from None


def _written_int(text: str | None) -> int | None:
    """An integer an owner writes in a template (a VM's USER_TEMPLATE SERVICE_ID, a network's MTU):
    None when missing or not an integer. The text is theirs, not the platform's answer, so a typo
    there makes that one value unknown rather than the whole read a malformed answer."""
    try:
        return _opt_int(text)
    except MalformedResponse:
        return None


def _float(text: str | None, default: float = 0.0) -> float:
    """A decimal element's text; `default` when missing or empty, `MalformedResponse` when it is
    not a finite number."""
    if text is None or not text.strip():
        return default
    if len(text) > _NUMBER_MAX:
        raise _not_a_number(text)
    try:
        value = float(text)
    except ValueError:
        raise _not_a_number(text) from None
    if not math.isfinite(value):
        raise _not_a_number(text)
    return value


def _texts(elem: Element) -> dict[str, str]:
    """Direct children without sub-elements, tag -> text (first occurrence wins)."""
    out: dict[str, str] = {}
    for child in elem:
        tag = cast(str, child.tag)  # parsed platform documents: string tags only
        if len(child) == 0 and tag not in out:
            out[tag] = child.text or ""
    return out


def _ids(elem: Element | None) -> tuple[int, ...]:
    """The <ID> children of a collection element such as VMS, GROUPS, CLUSTERS."""
    if elem is None:
        return ()
    return tuple(_int(child.text) for child in elem if child.tag == "ID")


def attributes(elem: Element | None) -> Attributes:
    """A TEMPLATE / USER_TEMPLATE element as `Attributes` (repeated names kept, in order)."""
    if elem is None:
        return EMPTY_ATTRIBUTES
    items: list[AttrItem] = []
    for child in elem:
        if not isinstance(child.tag, str):
            continue
        if len(child):
            items.append((child.tag, tuple((sub.tag, sub.text or "") for sub in child if isinstance(sub.tag, str))))
        else:
            items.append((child.tag, child.text or ""))
    return Attributes(tuple(items))


def permissions(elem: Element | None) -> Permissions:
    from tui.domain.permissions import PERMISSION_TAGS, Permissions

    if elem is None:
        return Permissions()
    values = _texts(elem)
    return Permissions(*(_int(values.get(name)) for name in PERMISSION_TAGS))


def expect_root(root: Element, tag: str) -> Element:
    if root.tag != tag:
        raise MalformedResponse(f"expected <{tag}>, got <{root.tag!s}>")
    return root


class _Head:
    """The header every object of the platform begins with, read once for every builder: ID, UID,
    GID, UNAME, GNAME, NAME and PERMISSIONS (`PoolObjectSQL`'s fields, each object's `to_xml`, e.g.
    `src/image/Image.cc`; `perms_to_xml` in `src/pool/PoolObjectSQL.cc` 385 at release-7.4.0).
    The root's tag is checked; its direct children's texts are `values` for the builder's own
    fields. A field is converted when a builder asks for it, so a record reads only the header
    fields it keeps (hosts and groups have no owner). `vm_summary`, the VM list's hot path, reads
    the same fields in its one pass over a VM's children instead."""

    __slots__ = ("elem", "values")

    def __init__(self, elem: Element, tag: str) -> None:
        self.elem = expect_root(elem, tag)
        self.values = _texts(elem)

    @property
    def id(self) -> int:
        return _int(self.values.get("ID"))

    @property
    def name(self) -> str:
        return self.values.get("NAME", "")

    @property
    def uid(self) -> int:
        return _int(self.values.get("UID"))

    @property
    def gid(self) -> int:
        return _int(self.values.get("GID"))

    @property
    def uname(self) -> str:
        return self.values.get("UNAME", "")

    @property
    def gname(self) -> str:
        return self.values.get("GNAME", "")

    @property
    def permissions(self) -> Permissions:
        return permissions(self.elem.find("PERMISSIONS"))

    def owned(self) -> dict[str, Any]:
        """The fields of `tui.domain.object_header.Owned`, for `**head.owned()` in a record built on it."""
        return {field: getattr(self, field) for field in OWNED_FIELDS}


def pool(root: Element, pool_tag: str, item_tag: str, build: Callable[[Element], T]) -> tuple[T, ...]:
    expect_root(root, pool_tag)
    return tuple(build(child) for child in root if child.tag == item_tag)


# VMs -------------------------------------------------------------------------------------------
#: a VM's children that are sections read below; every other child's text is kept by tag
_VM_SECTIONS = frozenset(("TEMPLATE", "USER_TEMPLATE", "HISTORY_RECORDS", "MONITORING"))
_NIC_TAGS = frozenset(("NIC", "NIC_ALIAS"))
_IP_TAGS = frozenset(("IP", "IP6_GLOBAL", "IP6"))
#: (STATE text, LCM_STATE text) -> (state, lcm_state, long name, short name): a few pairs recur
#: across a whole pool, so each is converted once (bounded: a hostile pool cannot grow it)
_VM_STATES: dict[tuple[str | None, str | None], tuple[int, int, str, str]] = {}
_VM_STATES_MAX = 1024


def _count(text: str | None) -> int:
    """`_int` with the common case first: plain decimal digits (what `int` reads the same way)."""
    if text is not None and text.isdecimal() and len(text) <= _NUMBER_MAX:
        return int(text)
    return _int(text)


def _vm_states(state_text: str | None, lcm_text: str | None) -> tuple[int, int, str, str]:
    key = (state_text, lcm_text)
    found = _VM_STATES.get(key)
    if found is None:
        state, lcm_state = _int(state_text), _int(lcm_text)
        found = (state, lcm_state, *state_names(state, lcm_state))
        if len(_VM_STATES) < _VM_STATES_MAX:
            _VM_STATES[key] = found
    return found


def vm_summary(vm: Element) -> VmSummary:
    """A VM element (short pool body or full) as a list row. The VM list's hot path (every VM of
    the pool on every refresh), written for speed: one plain loop over each element read (lxml's
    tag matcher of `iterchildren(*tags)` costs more to build than the few children it skips), the
    numbers' common case first, the state names once per distinct pair of codes. Where a tag repeats, the last one wins (TEMPLATE/NIC and NIC_ALIAS: every one's
    addresses, in order); a malformed number raises wherever it is read, as `_int` does."""
    values: dict[object, str | None] = {}  # tag -> text (no `cast` per child: a call each)
    template = user_template = history = monitoring = None
    for child in vm:
        tag = child.tag
        if tag in _VM_SECTIONS:
            if tag == "TEMPLATE":
                template = child
            elif tag == "MONITORING":
                monitoring = child
            elif tag == "HISTORY_RECORDS":
                history = child
            else:
                user_template = child
        else:
            values[tag] = child.text
    cpu, vcpu, memory, ips = _sizes_and_ips(template)
    host, host_id = _last_host(history)
    service_id, role = _service_role(user_template)
    cpu_usage, memory_usage = _usage(monitoring)
    return _summary(values.get("ID"), values.get("NAME") or "", values.get("UID"), values.get("GID"),
                    values.get("UNAME") or "", values.get("GNAME") or "", values.get("STATE"), values.get("LCM_STATE"),
                    values.get("STIME"), cpu, vcpu, memory, host, host_id, tuple(ips), cpu_usage, memory_usage,
                    service_id, role)


def _summary(vm_id: str | None, name: str, uid: str | None, gid: str | None, owner: str, group: str,
             state_text: str | None, lcm_text: str | None, stime: str | None, cpu: str | None, vcpu: str | None,
             memory: str | None, host: str, host_id: int | None, ips: tuple[str, ...], cpu_usage: float | None,
             memory_usage: int | None, service_id: int | None, role: str) -> VmSummary:
    """A `VmSummary` of a VM's texts (its numbers read here) and of the values read already
    (those whose absence means None); `vm_summary` and `vm_summary_page` both end here."""
    if service_id is None:
        service_id, name_role = service_from_name(name)
        role = role or name_role
    state, lcm_state, status, short = _vm_states(state_text, lcm_text)
    return new_vm_summary(
        id=_count(vm_id),
        name=name,
        uid=_count(uid),
        gid=_count(gid),
        owner=owner,
        group=group,
        state=state,
        lcm_state=lcm_state,
        status=status,
        state_name=short,
        host=host,
        host_id=host_id,
        ips=ips,
        cpu=_float(cpu),
        vcpu=_count(vcpu),
        memory_mb=_count(memory),
        cpu_usage=cpu_usage,
        memory_usage_kb=memory_usage,
        service_id=service_id,
        role_name=role,
        stime=_count(stime),
    )


# vm_summary's readers of one section each
def _sizes_and_ips(template: Element | None) -> tuple[str | None, str | None, str | None, list[str]]:
    """TEMPLATE's CPU, VCPU and MEMORY texts and its NICs' addresses."""
    cpu = vcpu = memory = None
    ips: list[str] = []
    if template is not None:
        for child in template:
            tag = child.tag
            if tag in _NIC_TAGS:
                for sub in child:
                    if sub.tag in _IP_TAGS:
                        ip = sub.text
                        if ip:
                            ips.append(ip)
            elif tag == "CPU":
                cpu = child.text
            elif tag == "VCPU":
                vcpu = child.text
            elif tag == "MEMORY":
                memory = child.text
    return cpu, vcpu, memory, ips


def _last_host(history: Element | None) -> tuple[str, int | None]:
    """The host name and ID of the last history record ("", None without one)."""
    host, host_id = "", None
    if history is not None and len(history):
        for sub in history[-1].iterchildren("HOSTNAME", "HID"):  # 2 of its ~10 children
            if sub.tag == "HOSTNAME":
                host = sub.text or ""
            else:
                host_id = _opt_int(sub.text)
    return host, host_id


def _service_role(user_template: Element | None) -> tuple[int | None, str]:
    """USER_TEMPLATE's SERVICE_ID and ROLE_NAME (OneFlow sets them on a service's VMs)."""
    service_id: int | None = None
    role = ""
    if user_template is not None:
        for child in user_template:
            tag = child.tag
            if tag == "SERVICE_ID":
                service_id = _written_int(child.text)
            elif tag == "ROLE_NAME":
                role = child.text or ""
    return service_id, role


def _usage(monitoring: Element | None) -> tuple[float | None, int | None]:
    """MONITORING's CPU and MEMORY (KB) usage, None where it is not monitored."""
    cpu_usage: float | None = None
    memory_usage: int | None = None
    if monitoring is not None:
        for child in monitoring:
            tag = child.tag
            if tag == "CPU":
                cpu_usage = _float(child.text)
            elif tag == "MEMORY":
                memory_usage = _count(child.text)
    return cpu_usage, memory_usage


def _nic(values: dict[str, str]) -> Nic:
    from tui.domain.vm_detail import Nic

    return Nic(
        nic_id=_int(values.get("NIC_ID")),
        network=values.get("NETWORK", ""),
        network_id=_opt_int(values.get("NETWORK_ID")),
        ip=values.get("IP", ""),
        ip6=values.get("IP6_GLOBAL", values.get("IP6", "")),
        mac=values.get("MAC", ""),
        bridge=values.get("BRIDGE", ""),
        attributes=values,
    )


def _disk(values: dict[str, str]) -> Disk:
    from tui.domain.vm_detail import Disk

    return Disk(
        disk_id=_int(values.get("DISK_ID")),
        image=values.get("IMAGE", ""),
        image_id=_opt_int(values.get("IMAGE_ID")),
        datastore_id=_opt_int(values.get("DATASTORE_ID")),
        size_mb=_opt_int(values.get("SIZE")),
        target=values.get("TARGET", ""),
        type=values.get("TYPE", ""),
        attributes=values,
    )


def _history(elem: Element) -> HistoryRecord:
    from tui.domain.vm_detail import HistoryRecord

    values = _texts(elem)
    return HistoryRecord(
        seq=_int(values.get("SEQ")),
        host_id=_int(values.get("HID"), -1),
        hostname=values.get("HOSTNAME", ""),
        datastore_id=_int(values.get("DS_ID"), -1),
        stime=_int(values.get("STIME")),
        etime=_int(values.get("ETIME")),
        action=_int(values.get("ACTION")),
    )


def vm_detail(vm: Element) -> VmDetail:
    from tui.domain.vm_detail import VmDetail

    head = _Head(vm, "VM")
    values = head.values
    template = attributes(vm.find("TEMPLATE"))
    history = vm.find("HISTORY_RECORDS")
    return VmDetail(
        summary=vm_summary(vm),
        prev_state=_int(values.get("PREV_STATE")),
        prev_lcm_state=_int(values.get("PREV_LCM_STATE")),
        etime=_int(values.get("ETIME")),
        deploy_id=values.get("DEPLOY_ID", ""),
        permissions=head.permissions,
        cpu_model=template.vector("CPU_MODEL").get("MODEL", ""),
        cpu_features=tuple(f.strip() for f in template.vector("CPU_MODEL").get("FEATURES", "").split(",") if f.strip()),
        nics=tuple(_nic(v) for v in template.vectors("NIC")),
        disks=tuple(_disk(v) for v in template.vectors("DISK")),
        context=next((value for key, value in template if key == "CONTEXT" and not isinstance(value, str)), ()),
        user_template=attributes(vm.find("USER_TEMPLATE")),
        template=template,
        history=tuple(_history(h) for h in history if h.tag == "HISTORY") if history is not None else (),
    )


# hosts -----------------------------------------------------------------------------------------
def host(elem: Element) -> Host:
    from tui.domain.hosts import Host, host_state_names

    head = _Head(elem, "HOST")
    values = head.values
    share_elem = elem.find("HOST_SHARE")
    share = _texts(share_elem) if share_elem is not None else {}
    template = attributes(elem.find("TEMPLATE"))
    features_text = template.get("KVM_CPU_FEATURES", "") if "KVM_CPU_FEATURES" in template else None
    state = _int(values.get("STATE"))
    return Host(
        id=head.id,
        name=head.name,
        state=state,
        state_name=host_state_names(state)[1],
        im_mad=values.get("IM_MAD", ""),
        vm_mad=values.get("VM_MAD", ""),
        cluster_id=_int(values.get("CLUSTER_ID")),
        cluster=values.get("CLUSTER", ""),
        arch=template.get("ARCH"),
        model_name=template.get("MODELNAME"),
        kvm_cpu_model=template.get("KVM_CPU_MODEL"),
        kvm_cpu_models=tuple(template.get("KVM_CPU_MODELS").split()),
        kvm_cpu_features=None if features_text is None else tuple(features_text.replace(",", " ").split()),
        hypervisor=template.get("HYPERVISOR"),
        total_cpu=_int(share.get("TOTAL_CPU")),
        used_cpu=_int(share.get("CPU_USAGE")),
        max_cpu=_int(share.get("MAX_CPU"), _int(share.get("TOTAL_CPU"))),
        total_mem_kb=_int(share.get("TOTAL_MEM")),
        used_mem_kb=_int(share.get("MEM_USAGE")),
        max_mem_kb=_int(share.get("MAX_MEM"), _int(share.get("TOTAL_MEM"))),
        running_vms=_int(share.get("RUNNING_VMS")),
        vm_ids=_ids(elem.find("VMS")),
        template=template,
    )


# images, templates, datastores -----------------------------------------------------------------
def image(elem: Element) -> ImageInfo:
    from tui.domain.images import ImageInfo, image_state_names

    head = _Head(elem, "IMAGE")
    values = head.values
    state = _int(values.get("STATE"))
    status, short = image_state_names(state)
    return ImageInfo(
        **head.owned(),
        state=state,
        status=status,
        state_name=short,
        type=_int(values.get("TYPE")),
        persistent=_int(values.get("PERSISTENT")) == 1,
        datastore_id=_int(values.get("DATASTORE_ID"), -1),
        datastore=values.get("DATASTORE", ""),
        size_mb=_int(values.get("SIZE")),
        format=values.get("FORMAT", ""),
        source=values.get("SOURCE", ""),
        path=values.get("PATH", ""),
        regtime=_int(values.get("REGTIME")),
        running_vms=_int(values.get("RUNNING_VMS")),
        vm_ids=_ids(elem.find("VMS")),
        permissions=head.permissions,
        attributes=attributes(elem.find("TEMPLATE")),
    )


def vm_template(elem: Element) -> VmTemplate:
    from tui.domain.vmtemplates import VmTemplate

    head = _Head(elem, "VMTEMPLATE")
    return VmTemplate(
        **head.owned(),
        regtime=_int(head.values.get("REGTIME")),
        permissions=head.permissions,
        template=attributes(elem.find("TEMPLATE")),
    )


def datastore(elem: Element) -> Datastore:
    from tui.domain.datastores import Datastore

    head = _Head(elem, "DATASTORE")
    values = head.values
    return Datastore(
        id=head.id,
        name=head.name,
        uname=head.uname,
        gname=head.gname,
        type=_int(values.get("TYPE")),
        state=_int(values.get("STATE")),
        ds_mad=values.get("DS_MAD", ""),
        tm_mad=values.get("TM_MAD", ""),
        total_mb=_int(values.get("TOTAL_MB")),
        free_mb=_int(values.get("FREE_MB")),
        used_mb=_int(values.get("USED_MB")),
        cluster_ids=_ids(elem.find("CLUSTERS")),
        image_ids=_ids(elem.find("IMAGES")),
        template=attributes(elem.find("TEMPLATE")),
    )


# users and groups ------------------------------------------------------------------------------
def user(elem: Element) -> User:
    head = _Head(elem, "USER")
    values = head.values
    return User(
        id=head.id,
        name=head.name,
        gid=head.gid,
        gname=head.gname,
        group_ids=_ids(elem.find("GROUPS")),
        auth_driver=values.get("AUTH_DRIVER", ""),
        enabled=_int(values.get("ENABLED"), 1) == 1,
        template=attributes(elem.find("TEMPLATE")),
    )


def group(elem: Element) -> Group:
    from tui.domain.groups import Group

    head = _Head(elem, "GROUP")
    return Group(
        id=head.id,
        name=head.name,
        user_ids=_ids(elem.find("USERS")),
        admin_ids=_ids(elem.find("ADMINS")),
        template=attributes(elem.find("TEMPLATE")),
    )


# networks --------------------------------------------------------------------------------------
def _address_range(elem: Element) -> AddressRange:
    from tui.domain.networks import AddressRange

    values = _texts(elem)
    return AddressRange(
        ar_id=_int(values.get("AR_ID")),
        type=values.get("TYPE", ""),
        ip=values.get("IP", ""),
        mac=values.get("MAC", ""),
        size=_int(values.get("SIZE")),
        used_leases=_int(values.get("USED_LEASES")),
        attributes=values,
    )


def vnet(elem: Element) -> Vnet:
    from tui.domain.networks import Vnet

    head = _Head(elem, "VNET")
    values = head.values
    template = attributes(elem.find("TEMPLATE"))
    ar_pool = elem.find("AR_POOL")
    return Vnet(
        **head.owned(),
        state=_int(values.get("STATE"), 1),
        bridge=values.get("BRIDGE", ""),
        bridge_type=values.get("BRIDGE_TYPE", ""),
        vn_mad=values.get("VN_MAD", ""),
        phydev=values.get("PHYDEV", ""),
        vlan_id=values.get("VLAN_ID", ""),
        mtu=_written_int(template.get("MTU")),
        guest_mtu=_written_int(template.get("GUEST_MTU")),
        used_leases=_int(values.get("USED_LEASES")),
        address_ranges=tuple(_address_range(ar) for ar in ar_pool if ar.tag == "AR") if ar_pool is not None else (),
        template=template,
    )


# marketplaces ----------------------------------------------------------------------------------
def marketplace(elem: Element) -> Marketplace:
    from tui.domain.marketapps import Marketplace

    head = _Head(elem, "MARKETPLACE")
    values = head.values
    return Marketplace(
        id=head.id,
        name=head.name,
        uname=head.uname,
        state=_int(values.get("STATE")),
        market_mad=values.get("MARKET_MAD", ""),
        zone_id=_int(values.get("ZONE_ID")),
        app_ids=_ids(elem.find("MARKETPLACEAPPS")),
        template=attributes(elem.find("TEMPLATE")),
    )


def marketapp(elem: Element) -> MarketApp:
    from tui.domain.marketapps import MarketApp, decode_apptemplate64

    head = _Head(elem, "MARKETPLACEAPP")
    values = head.values
    template = attributes(elem.find("TEMPLATE"))
    encoded = values.get("APPTEMPLATE64", "")
    return MarketApp(
        id=head.id,
        name=head.name,
        uname=head.uname,
        type=_int(values.get("TYPE")),
        state=_int(values.get("STATE")),
        version=values.get("VERSION", ""),
        description=values.get("DESCRIPTION", ""),
        marketplace_id=_int(values.get("MARKETPLACE_ID"), -1),
        marketplace=values.get("MARKETPLACE", ""),
        format=values.get("FORMAT", ""),
        size_mb=_int(values.get("SIZE")),
        md5=values.get("MD5", ""),
        source=values.get("SOURCE", ""),
        regtime=_int(values.get("REGTIME")),
        zone_id=_int(values.get("ZONE_ID")),
        origin_id=_int(values.get("ORIGIN_ID"), -1),
        apptemplate64=encoded,
        app_template=decode_apptemplate64(encoded),
        roles=tuple((v.get("NAME", ""), v.get("APP", "")) for v in template.vectors("ROLE")),
        disks=tuple((v.get("NAME", ""), v.get("APP", "")) for v in template.vectors("DISK")),
        template=template,
    )


# documents, ACLs, system -------------------------------------------------------------------------
def document(elem: Element) -> Document:
    from tui.domain.documents import Document, parse_body

    head = _Head(elem, "DOCUMENT")
    template = elem.find("TEMPLATE")
    body_elem = template.find("BODY") if template is not None else None
    body_text = (body_elem.text or "") if body_elem is not None else ""
    return Document(
        **head.owned(),
        type=_int(head.values.get("TYPE")),
        permissions=head.permissions,
        body_text=body_text,
        body=parse_body(body_text),
    )


def acl(elem: Element) -> AclRule:
    from tui.domain.acls import AclRule

    head = _Head(elem, "ACL")
    values = head.values

    def hex_field(name: str) -> int:
        text = values.get(name, "0").strip().lower()
        try:
            return int(text, 16)
        except ValueError:
            raise MalformedResponse(f"ACL {values.get('ID')}: {name} is not hexadecimal: {text!r}") from None

    return AclRule(
        id=head.id,
        user=hex_field("USER"),
        resource=hex_field("RESOURCE"),
        rights=hex_field("RIGHTS"),
        zone=hex_field("ZONE"),
        string=values.get("STRING", ""),
    )


def system_config(elem: Element) -> SystemConfig:
    from tui.domain.system import SystemConfig

    expect_root(elem, "OPENNEBULA_CONFIGURATION")
    attrs = attributes(elem)
    return SystemConfig(onegate_endpoint=attrs.get("ONEGATE_ENDPOINT"), attributes=attrs)


# the VM pool read in pages (tui.domain.vm_scan) -----------------------------------------------
def vm_summaries(batch: list[Element]) -> list[VmSummary]:
    """List rows of a batch of VM elements (`PoolStream`'s `take` for the VM list)."""
    return [vm_summary(vm) for vm in batch]


def vm_prefilter(wanted: "VmPrefilter") -> Callable[[Element], bool]:
    """Whether a VM element passes `wanted`: one compiled XPath per VM, evaluated in C, so that
    only those are built into models (a full VM body takes ~0.4 ms to build; the test a few
    microseconds). Every test is existential over repeated elements and uses `contains`, so it
    holds whenever the models' exact equality can (see VmPrefilter)."""
    tests: list[str] = []
    variables: dict[str, str] = {}
    for n, text in enumerate(wanted.texts):
        variables[f"t{n}"] = text
        tests.append(f"USER_TEMPLATE/ROLE_NAME[contains(., $t{n})] or TEMPLATE/ROLE_NAME[contains(., $t{n})]"
                     f" or NAME[contains(., $t{n})]")
    for n, name in enumerate(wanted.attributes):
        variables[f"a{n}"] = name
        tests.append(f"USER_TEMPLATE/*[name() = $a{n}] or TEMPLATE/*[name() = $a{n}]")
    if wanted.ids:
        variables["ids"] = "," + ",".join(str(i) for i in wanted.ids) + ","
        tests.append('contains($ids, concat(",", normalize-space(ID), ","))')
    if not tests:
        return lambda vm: False
    select = etree.XPath("boolean(self::VM[" + " or ".join(f"({test})" for test in tests) + "])")

    def matching(vm: Element) -> bool:
        return bool(select(vm, **variables))
    return matching


def vm_id(vm: Element) -> int:
    """The ID of a VM element of a pool (a VM without a numeric ID makes the page unreadable: it
    could not be placed among the pages)."""
    text = vm.findtext("ID")
    if text is None or not text.strip().lstrip("-").isdigit() or len(text) > 40:
        raise MalformedResponse(f"a VM of the pool has no numeric ID ({text!r})")
    return int(text)
